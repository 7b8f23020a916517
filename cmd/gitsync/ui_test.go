package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/browsertest"
	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/gittest"
)

// uiArtifacts is where the web view's screenshots are kept (bin/ is not
// committed); GITSYNC_UPDATE_DOCS=1 also copies them to docs/images.
var uiArtifacts = filepath.Join("..", "..", "bin", "test-artifacts", "ui")

// TestUI drives the web view in a real headless Chromium against the
// running agent: the list loads with each GitSync's state, the keyboard
// alone reaches a GitSync's page, the page follows a push live (no
// reload), a branch's preview shows its change with the Secret masked, the
// actions suspend and resume as the user, and no page ever holds a Secret
// value, plain or base64.
func TestUI(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	repo := gittest.NewRepo(t, t.TempDir())
	// value3 is a variable from a Secret (spec.substituteFrom) the branch
	// substitutes into a ConfigMap: only the process's redactor knows it.
	const value1, value2, value3 = "ui-first-secret-7c1f", "ui-branch-secret-9d2e", "ui-variable-secret-4b8a"
	vars := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vars"}, StringData: map[string]string{"DB_PASSWORD": value3}}
	if err := c.Create(context.Background(), vars); err != nil {
		t.Fatal(err)
	}
	commit1 := repo.Commit("one", map[string]string{
		"deploy/a.yaml":     configMap("a", "value", "1"),
		"deploy/creds.yaml": secretManifest("creds", value1),
	})
	web := gitsynctest.New(ns, "web", repo.URL(), func(gs *gitsyncv1.GitSync) {
		gs.Spec.SubstituteFrom = []gitsyncv1.SubstituteReference{{Kind: "Secret", Name: "vars"}}
	})
	broken := gitsynctest.New(ns, "broken", repo.URL(), func(gs *gitsyncv1.GitSync) { gs.Spec.Source.Path = "absent" })
	poll(t, "create GitSyncs (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, web.DeepCopy()) == nil, nil
	})
	if err := c.Create(context.Background(), broken); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, c, client.ObjectKeyFromObject(web), commit1)
	// A branch that changes the ConfigMap and the Secret, to preview.
	repo.Branch("feature")
	repo.Commit("feature", map[string]string{
		"deploy/a.yaml":     configMap("a", "value", "from-feature-${DB_PASSWORD}"),
		"deploy/creds.yaml": secretManifest("creds", value2),
	})
	repo.Checkout("main")

	base := startUI(t, ns)
	b := browsertest.Start(t, 1280, 860)
	var pages []string
	keep := func() { pages = append(pages, b.HTML()) }
	webRow, brokenRow := "gs--"+ns+"--web", "gs--"+ns+"--broken"

	// The list: both GitSyncs, web Ready at commit1, broken Failed.
	b.Open(base + "/")
	b.WaitFor("web Ready at commit1 in the list", time.Minute, `var a = document.getElementById(arguments[0]);
		if (!a) return false; var row = a.closest("tr"); return row.querySelector(".state").innerText === "Ready" && row.innerText.indexOf(arguments[1]) >= 0;`, webRow, commit1[:12])
	b.WaitFor("broken Failed in the list", 2*time.Minute, `var a = document.getElementById(arguments[0]);
		return !!a && a.closest("tr").querySelector(".state").innerText === "Failed";`, brokenRow)
	keep()
	shot(t, b, "list")

	// The keyboard alone: j moves through the rows (sorted by name), Enter opens.
	b.Press("j")
	if got := b.Focused(); got != brokenRow {
		t.Fatalf("j focused %q, want the first row %q", got, brokenRow)
	}
	b.Press("j")
	if got := b.Focused(); got != webRow {
		t.Fatalf("j again focused %q, want %q", got, webRow)
	}
	b.Press("k", "j", browsertest.KeyEnter)
	b.WaitFor("Enter opens web's page", time.Minute, `return location.pathname === arguments[0] && !!document.getElementById("objects");`, "/gitsyncs/"+ns+"/web")
	for _, want := range []string{"ConfigMap", "Secret", "creds", "Current"} {
		if got := b.Text("#objects"); !strings.Contains(got, want) {
			t.Errorf("the object tree lacks %q:\n%s", want, got)
		}
	}
	if got := b.Text("#history"); !strings.Contains(got, commit1[:12]) || !strings.Contains(got, "Succeeded") {
		t.Errorf("the history lacks commit1:\n%s", got)
	}
	keep()
	shot(t, b, "gitsync")

	// Live: a push, applied by the agent, reaches the open page without a
	// reload (a reload would drop the mark).
	b.Run(nil, `window.gitsyncMark = true; return null;`)
	commit2 := repo.Commit("two", map[string]string{"deploy/a.yaml": configMap("a", "value", "2")})
	wantCode(t, gitsyncIn(t, ns, "reconcile", "web"), 0)
	b.WaitFor("the open page shows commit2", 2*time.Minute, `return window.gitsyncMark === true &&
		document.getElementById("revision").title.indexOf(arguments[0]) >= 0 &&
		document.getElementById("history").innerText.indexOf(arguments[1]) >= 0;`, commit2, commit2[:12])
	keep()

	// The preview of a branch, typed and submitted with the keyboard.
	b.Run(nil, `document.getElementById("branch").focus(); return null;`)
	b.Press("feature", browsertest.KeyEnter)
	b.WaitFor("the preview of feature", 2*time.Minute, `var d = document.getElementById("diff"); return !!d && d.innerText.indexOf("from-feature") >= 0;`)
	diff := b.Text("#diff")
	for _, want := range []string{"ConfigMap/" + ns + "/a", "Secret/" + ns + "/creds", "***"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the preview lacks %q:\n%s", want, diff)
		}
	}
	keep()
	shot(t, b, "preview")

	// Actions, as the user: suspend and resume by their buttons.
	b.Open(base + "/gitsyncs/" + ns + "/web")
	b.Run(nil, `document.getElementById("suspend").focus(); return null;`)
	b.Press(browsertest.KeyEnter)
	b.WaitFor("the suspend notice", time.Minute, `var n = document.getElementById("notice"); return !!n && n.innerText.indexOf("Suspended") === 0;`)
	if !getSpec(t, c, ns, "web").Suspend {
		t.Fatal("the Suspend button did not set spec.suspend")
	}
	b.WaitFor("the page shows Suspended and offers Resume", time.Minute, `return !!document.getElementById("resume") && document.querySelector("#gs-title .state").innerText === "Suspended";`)
	keep()
	b.Run(nil, `document.getElementById("resume").focus(); return null;`)
	b.Press(browsertest.KeyEnter)
	b.WaitFor("the resume notice", time.Minute, `var n = document.getElementById("notice"); return !!n && n.innerText.indexOf("Resumed") === 0;`)
	if getSpec(t, c, ns, "web").Suspend {
		t.Fatal("the Resume button did not clear spec.suspend")
	}
	// Esc goes back to the list.
	b.Press(browsertest.KeyEscape)
	b.WaitFor("Esc back to the list", time.Minute, `return location.pathname === "/" && !!document.getElementById(arguments[0]);`, webRow)
	keep()

	// No page held a Secret value, in any encoding the object carries.
	for _, v := range []string{value1, value2, value3} {
		for _, enc := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			for i, p := range pages {
				if strings.Contains(p, enc) {
					t.Errorf("page %d holds the Secret value %q", i, enc)
				}
			}
		}
	}
}

// secretManifest is a Secret of one password, as a manifest.
func secretManifest(name, password string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\nstringData:\n  password: " + password + "\n"
}

var servingAt = regexp.MustCompile(`at (http://\S+)/ `)

// startUI runs gitsync ui for ns on a free loopback port and returns its
// address once it serves; it is stopped when the test ends.
func startUI(t *testing.T, ns string) string {
	t.Helper()
	cmd := exec.Command(bin, "ui", "--kubeconfig", env.Kubeconfig, "-n", ns, "--address", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingAt.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("gitsync ui stderr:\n%s", stderr.String())
		}
	})
	select {
	case u := <-url:
		return u
	case <-exited:
		t.Fatalf("gitsync ui exited before serving:\n%s", stderr.String())
	}
	return ""
}

// shot keeps a screenshot of the page as a test artifact.
func shot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	p := b.Screenshot(uiArtifacts, "ui-"+name)
	t.Logf("screenshot %s", p)
	if os.Getenv("GITSYNC_UPDATE_DOCS") == "" {
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join("..", "..", "docs", "images")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "ui-"+name+".png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
