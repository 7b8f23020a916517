package main

import (
	"strings"
	"testing"
)

// TestKubectlFlagsReachEveryCommand: kubectl's connection flags come from
// cli-runtime's ConfigFlags on the root command, so --as, --server and
// --request-timeout change what each command (run included) sends.
func TestKubectlFlagsReachEveryCommand(t *testing.T) {
	statusClient(t) // the GitSync CRD, for status
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cm.yaml": configMap("flags", "k", "v")})
	nobody := "system:serviceaccount:" + ns + ":nobody"

	// The administrator of the kubeconfig may list GitSyncs and diff ...
	wantCode(t, gitsyncIn(t, ns, "status"), 0)
	wantCode(t, gitsyncIn(t, ns, "diff", dir), 1)

	// ... an impersonated ServiceAccount without RBAC may not: the
	// apiserver names the identity --as gave.
	for _, args := range [][]string{
		{"status"},
		{"diff", dir},
		{"apply", dir},
	} {
		r := gitsyncIn(t, ns, append(args, "--as", nobody)...)
		if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, "forbidden") || !strings.Contains(out, nobody) {
			t.Errorf("%s --as %s: want a forbidden error naming the identity, got:\n%s", args[0], nobody, r)
		}
	}
	// run installs the CRD before anything else: as nobody it is refused.
	r := gitsync(t, "run", "--kubeconfig", env.Kubeconfig, "--as", nobody, "--install-crds",
		"--leader-elect=false", "--metrics-addr", "0", "--health-addr", "0", "--webhook-addr", "")
	if r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("run --as %s: want a forbidden error, got:\n%s", nobody, r)
	}

	// --server overrides the kubeconfig's server.
	r = gitsyncIn(t, ns, "status", "--server", "https://127.0.0.1:1")
	if r.code == 0 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("status --server https://127.0.0.1:1: want an error naming that server, got:\n%s", r)
	}
	// A malformed --request-timeout is refused as kubectl refuses it.
	r = gitsyncIn(t, ns, "status", "--request-timeout", "soon")
	if r.code == 0 || !strings.Contains(r.stderr, "timeout") {
		t.Errorf("status --request-timeout soon: want an error, got:\n%s", r)
	}
}
