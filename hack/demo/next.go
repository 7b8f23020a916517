package main

import (
	"fmt"
	"io"
	"strings"
)

// next is what the closing instructions name.
type next struct {
	kubeconfig, bin, dir string
	hookAddr             string // the agent's webhook listener
	repo                 *repo  // the guestbook repository and its work copy
	examplesURL          string
}

// Markers of the closing instructions' copy-paste blocks; demo_test.go runs
// the blocks they open, so the instructions stay true.
const (
	changeMarker  = "Change something yourself: edit, commit and push"
	webhookMarker = "# or send the push webhook, as a Git host would (needs curl and openssl):"
)

// printNext ends the demo with what to try, as exact commands: change
// something (edit, commit, push), then see it applied — by waiting for the
// poll, asking for a sync now, or sending the webhook a Git host would send.
func printNext(w io.Writer, n next) {
	kube := fmt.Sprintf("--kubeconfig %s -n %s", n.kubeconfig, demoNamespace)
	fmt.Fprintf(w, `
Everything is still running.

%[1]s:
  cd %[2]s
  sed -i.bak 's/replicas: 3/replicas: 1/' frontend-deployment.yaml && rm frontend-deployment.yaml.bak
  git commit -qam "Scale frontend to 1" && git push -q

Then see it applied, one of:
  # wait: the GitSync polls every minute
  # or sync now:
  %[3]s reconcile guestbook %[4]s
  # (or: kubectl %[4]s annotate gitsync guestbook --overwrite gitsync.dev/requested-at="$(date +%%s)")
  %[5]s
  BODY='{"ref":"refs/heads/main","after":"'"$(git -C %[2]s rev-parse HEAD)"'","repository":{"clone_url":"%[6]s"}}'
  SIG=$(printf '%%s' "$BODY" | openssl dgst -sha256 -hmac %[7]s | sed 's/^.* //')
  curl -sS -o /dev/null -w '%%{http_code}\n' http://%[8]s/hook/github -H 'X-GitHub-Event: push' -H "X-Hub-Signature-256: sha256=$SIG" -d "$BODY"

Follow it:
  %[3]s status %[4]s
  kubectl %[4]s get deployment frontend
  %[3]s ui %[4]s    # or look: a live page at http://127.0.0.1:7780/ (Ctrl-C stops it)

Every example is served too, at %[9]s:
  kubectl --kubeconfig %[10]s apply -k examples/gitsyncs-local%[12]s

Logs: %[11]s/*.log.  Stop it all with: make demo-down
`, changeMarker, n.repo.work, n.bin, kube, webhookMarker, n.repo.url, webhookSecret, n.hookAddr, n.examplesURL, n.kubeconfig, n.dir, otherAddrNote(n.examplesURL))
}

// otherAddrNote warns, when the Git server is not at the address
// examples/gitsyncs-local names, that its URLs need changing.
func otherAddrNote(examplesURL string) string {
	if strings.Contains(examplesURL, "//"+defaultGitAddr+"/") {
		return ""
	}
	return "\n  # (it names " + defaultGitAddr + ": run `kubectl kustomize` and change that address to this server's)"
}
