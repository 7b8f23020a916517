package main

import (
	"strings"
	"testing"
)

// TestDiffURLGitErrorsSayWhatHappened: `gitsync diff --url` reports a Git
// mistake with the agent's classified message, once, plus how to give the
// CLI credentials when none were sent; no password is printed.
//
// Checked: with withCredentialsHint returning err unchanged, "no
// credentials" fails (no hint).
func TestDiffURLGitErrorsSayWhatHappened(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	const password = "pa55-w0rd-never-printed"
	server := serveAppRepo(t, "alice", password)
	url := server + "/app.git"
	good := []string{gitEnvUsername + "=alice", gitEnvPassword + "=" + password}

	for name, tc := range map[string]struct {
		env   []string
		args  []string
		words []string
	}{
		"no credentials": {nil, []string{"--url", url},
			[]string{"authentication required: the server asked for credentials and none were sent", "$" + gitEnvUsername}},
		"wrong password": {[]string{gitEnvUsername + "=alice", gitEnvPassword + "=wrong-" + password}, []string{"--url", url, "--branch", "main"},
			[]string{"authentication failed: the server rejected the username and password"}},
		"wrong branch": {good, []string{"--url", url, "--branch", "mian"},
			[]string{`branch "mian" not found; the remote has branches main (default main)`}},
		"wrong URL": {good, []string{"--url", server + "/nope.git", "--branch", "main"},
			[]string{server + "/nope.git: not found"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := gitsyncEnv(t, tc.env, append([]string{"diff", "--kubeconfig", env.Kubeconfig, "-n", ns}, tc.args...)...)
			wantCode(t, r, 2)
			for _, w := range tc.words {
				if n := strings.Count(r.stdout+r.stderr, w); n != 1 {
					t.Errorf("output says %q %d times, want once:\n%s", w, n, r)
				}
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Errorf("output leaks the password:\n%s", r)
			}
		})
	}
}
