package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gitsync.dev/gitsync/agent"
)

// TestMissingNamespaceSaidOnce is the examples README's own command against a
// cluster without the guestbook namespace: each object is listed once on
// stdout, and stderr says once what is wrong and what to do (it used to
// repeat every object's failure there).
func TestMissingNamespaceSaidOnce(t *testing.T) {
	t.Parallel()
	const ns = "guestbook" // no test of this package creates it
	subjects := []string{
		"Service/guestbook/frontend", "Service/guestbook/redis-follower", "Service/guestbook/redis-leader",
		"Deployment/guestbook/frontend", "Deployment/guestbook/redis-follower", "Deployment/guestbook/redis-leader",
	}
	wantErr := "error: namespace guestbook does not exist: create it, or add a Namespace manifest\n"

	r := gitsyncIn(t, ns, "diff", "../../examples/guestbook")
	wantCode(t, r, 2)
	var want []string
	for _, s := range subjects {
		want = append(want, "! "+s+" (would fail: namespace guestbook does not exist)")
	}
	want = append(want, "Differences: 6 failed.")
	if d := cmp.Diff(want, outputLines(r.stdout)); d != "" {
		t.Errorf("diff stdout (-want +got):\n%s\n%s", d, r)
	}
	if d := cmp.Diff(wantErr, r.stderr); d != "" {
		t.Errorf("diff stderr (-want +got):\n%s", d)
	}

	r = gitsyncIn(t, ns, "apply", "../../examples/guestbook")
	wantCode(t, r, 1)
	want = nil
	for _, s := range subjects {
		want = append(want, s+" failed: namespace guestbook does not exist")
	}
	want = append(want, "6 failed")
	if d := cmp.Diff(want, outputLines(r.stdout)); d != "" {
		t.Errorf("apply stdout (-want +got):\n%s\n%s", d, r)
	}
	if d := cmp.Diff(wantErr, r.stderr); d != "" {
		t.Errorf("apply stderr (-want +got):\n%s", d)
	}
}

// TestFailureMessages: each mistake a person makes in a manifest is one line
// on stdout that says it in their words (field path and expected type, the
// kind and version, the duration), and one summary line on stderr.
func TestFailureMessages(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := agent.InstallCRD(ctx, env.Config, env.Scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, manifest, want string
	}{
		{
			name:     "misspelt kind",
			manifest: "apiVersion: v1\nkind: ConfigMapp\nmetadata:\n  name: a\n",
			want: "! ConfigMapp/" + ns + "/a (skipped: unknown kind ConfigMapp in v1: the cluster does not serve it; " +
				"check the spelling, or install its CustomResourceDefinition)",
		},
		{
			name:     "number where a string is expected",
			manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  port: 8080\n",
			want:     "! ConfigMap/" + ns + "/a (would fail: invalid: .data.port: expected string, got number)",
		},
		{
			name: "interval without a unit",
			manifest: "apiVersion: gitsync.dev/v1alpha1\nkind: GitSync\nmetadata:\n  name: a\nspec:\n" +
				"  source: {url: https://git.example.com/app.git}\n  interval: \"5\"\n",
			want: "! GitSync.gitsync.dev/" + ns + "/a (would fail: invalid: spec.interval: \"5\" is not a duration such as 30s, 5m or 1h30m)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.yaml": tt.manifest})
			r := gitsyncIn(t, ns, "diff", dir)
			wantCode(t, r, 2)
			if d := cmp.Diff([]string{tt.want, "Differences: 1 failed."}, outputLines(r.stdout)); d != "" {
				t.Errorf("stdout (-want +got):\n%s\n%s", d, r)
			}
			if d := cmp.Diff("error: 1 object would fail\n", r.stderr); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
		})
	}
	// apply says the outcome once: "skipped: unknown kind …", not
	// "skipped: skipped: unknown kind …".
	t.Run("apply of a misspelt kind", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"a.yaml": tests[0].manifest})
		r := gitsyncIn(t, ns, "apply", dir)
		want := "ConfigMapp/" + ns + "/a skipped: unknown kind ConfigMapp in v1: the cluster does not serve it; " +
			"check the spelling, or install its CustomResourceDefinition"
		if !slices.Contains(outputLines(r.stdout), want) {
			t.Errorf("stdout lacks %q:\n%s", want, r)
		}
	})
}

// TestYAMLErrorLine: a YAML error names the file and the line of the
// problem, once.
func TestYAMLErrorLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"bad.yaml": configMap("a", "k", "v") +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n data:\n  k: v\n"})
	r := gitsync(t, "diff", dir)
	wantCode(t, r, 2)
	// the parser stops at line 11, where the mapping " data:" breaks began
	want := "error: render " + dir + ": bad.yaml:11: document 2: invalid YAML: did not find expected key\n"
	if d := cmp.Diff(want, r.stderr); d != "" {
		t.Errorf("stderr (-want +got):\n%s\n%s", d, r)
	}
}

// outputLines returns the lines of s.
func outputLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
