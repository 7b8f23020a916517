package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/gittest"
	"gitsync.dev/gitsync/object"
)

// TestDiffExitCodes walks one ConfigMap through missing (1), in sync (0),
// drifted (1) and an invalid manifest (2).
func TestDiffExitCodes(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"app.yaml": configMap("app", "color", "blue")})

	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/app (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("missing object: change lines (-want +got):\n%s\n%s", diff, r)
	}

	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 0)
	if got := changeLines(r.stdout); len(got) != 0 {
		t.Errorf("after apply: want no changes, got %q\n%s", got, r)
	}

	writeFiles(t, dir, map[string]string{"app.yaml": configMap("app", "color", "green")})
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"~ ConfigMap/" + ns + "/app (configure)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("drifted object: change lines (-want +got):\n%s\n%s", diff, r)
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("colour codes written to a pipe:\n%q", r.stdout)
	}
	for _, want := range []string{`-  color: blue`, `+  color: green`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("unified diff lacks %q:\n%s", want, r)
		}
	}

	writeFiles(t, dir, map[string]string{"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"})
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "broken.yaml") {
		t.Errorf("invalid manifest: error does not name the file:\n%s", r)
	}
}

// TestDiffErrorExitsTwo: flag errors, a missing directory and an unreachable
// cluster are errors (2), not differences.
func TestDiffErrorExitsTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"app.yaml": configMap("app", "k", "v")})
	for name, args := range map[string][]string{
		"unknown flag":    {"diff", dir, "--no-such-flag"},
		"no source":       {"diff"},
		"missing dir":     {"diff", dir + "/nope", "--kubeconfig", env.Kubeconfig},
		"bad output":      {"diff", dir, "-o", "xml"},
		"ref without url": {"diff", dir, "--tag", "v1"},
		"no cluster":      {"diff", dir, "--kubeconfig", "/nonexistent/kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			r := gitsync(t, args...)
			wantCode(t, r, 2)
			if !strings.Contains(r.stderr, "error:") {
				t.Errorf("want an error message on stderr:\n%s", r)
			}
		})
	}
}

// TestApplyThenDiffInSync applies a realistic mixed set (Deployment,
// Service, ConfigMap, Secret with stringData, CRD and a custom resource with a
// defaulted field) and expects the diff right after to find nothing.
func TestApplyThenDiffInSync(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := fixture(t, "mixed", ns)

	r := gitsyncIn(t, ns, "diff", dir, "--name", "shop")
	wantCode(t, r, 1)
	want := []string{
		"+ ConfigMap/" + ns + "/app-config (create)",
		"+ Secret/" + ns + "/app-secret (create)",
		"+ Service/" + ns + "/web (create)",
		"+ Deployment/" + ns + "/web (create)",
		"+ CustomResourceDefinition/widgets." + ns + ".example.com (create)",
		"+ Widget." + ns + ".example.com/" + ns + "/gadget (create)",
	}
	slices.Sort(want)
	got := changeLines(r.stdout)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("before apply (-want +got):\n%s\n%s", diff, r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--name", "shop")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "6 created") {
		t.Errorf("apply summary lacks \"6 created\":\n%s", r)
	}

	r = gitsyncIn(t, ns, "diff", dir, "--name", "shop", "-v")
	wantCode(t, r, 0)
	if got := changeLines(r.stdout); len(got) != 0 {
		t.Errorf("apply then diff: want no differences, got %q\n%s", got, r)
	}
	if n := len(lines(r.stdout, "  ")); n != 6 {
		t.Errorf("-v: want 6 unchanged lines, got %d\n%s", n, r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--name", "shop")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "6 unchanged") {
		t.Errorf("second apply: want \"6 unchanged\":\n%s", r)
	}
}

// TestDiffJSON checks -o json is a list of {subject, action, diff}.
func TestDiffJSON(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "1"), "b.yaml": configMap("b", "k", "1")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "j"), 0)
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "2"), "b.yaml": "", "c.yaml": configMap("c", "k", "1")})

	r := gitsyncIn(t, ns, "diff", dir, "--name", "j", "-o", "json")
	wantCode(t, r, 1)
	var got []struct {
		Subject string `json:"subject"`
		Action  string `json:"action"`
		Diff    string `json:"diff"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, r)
	}
	actions := map[string]string{}
	for _, e := range got {
		actions[e.Subject] = e.Action
		if e.Action == "configure" && !strings.Contains(e.Diff, `+  k: "2"`) {
			t.Errorf("%s: diff lacks the new value:\n%s", e.Subject, e.Diff)
		}
	}
	want := map[string]string{
		"ConfigMap/" + ns + "/a": "configure",
		"ConfigMap/" + ns + "/b": "prune",
		"ConfigMap/" + ns + "/c": "create",
	}
	if diff := cmp.Diff(want, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

// TestDiffMasksSecrets: a Secret's value appears in no output, neither in
// plain text nor base64, whether it is created or changed.
func TestDiffMasksSecrets(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	secret := func(v string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  token: " + v + "\n"
	}
	const oldValue, newValue = "old-plaintext-tok3n", "new-plaintext-tok3n"
	leaks := func(t *testing.T, r result) {
		t.Helper()
		for _, v := range []string{oldValue, newValue} {
			for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
				if strings.Contains(r.stdout+r.stderr, form) {
					t.Errorf("output leaks %q:\n%s", form, r)
				}
			}
		}
	}
	writeFiles(t, dir, map[string]string{"secret.yaml": secret(oldValue)})
	for _, args := range [][]string{{"-v"}, {"-o", "json", "-v"}} {
		r := gitsyncIn(t, ns, append([]string{"diff", dir}, args...)...)
		wantCode(t, r, 1)
		leaks(t, r)
	}
	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)

	writeFiles(t, dir, map[string]string{"secret.yaml": secret(newValue)})
	for _, args := range [][]string{nil, {"-o", "json"}} {
		r := gitsyncIn(t, ns, append([]string{"diff", dir}, args...)...)
		wantCode(t, r, 1)
		leaks(t, r)
		if !strings.Contains(r.stdout, "***") {
			t.Errorf("want the changed value shown masked:\n%s", r)
		}
	}
	r := gitsyncIn(t, ns, "apply", dir, "--dry-run")
	wantCode(t, r, 0)
	leaks(t, r)
}

// TestDiffUncommittedChanges: a local directory is read as it is on disk,
// while --url reads only what was committed.
func TestDiffUncommittedChanges(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	repo := t.TempDir()
	gittest.NewRepo(t, repo).Commit("app", map[string]string{"deploy/app.yaml": configMap("app", "color", "blue")})
	wantCode(t, gitsyncIn(t, ns, "apply", repo+"/deploy"), 0)

	writeFiles(t, repo, map[string]string{
		"deploy/app.yaml": configMap("app", "color", "red"),   // modified, not committed
		"deploy/new.yaml": configMap("new", "color", "green"), // untracked
	})
	r := gitsyncIn(t, ns, "diff", repo+"/deploy")
	wantCode(t, r, 1)
	want := []string{"+ ConfigMap/" + ns + "/new (create)", "~ ConfigMap/" + ns + "/app (configure)"}
	if diff := cmp.Diff(want, changeLines(r.stdout)); diff != "" {
		t.Errorf("local directory (-want +got):\n%s\n%s", diff, r)
	}
	if !strings.Contains(r.stdout, "+  color: red") {
		t.Errorf("uncommitted edit not in the diff:\n%s", r)
	}

	r = gitsyncIn(t, ns, "diff", "--url", "file://"+repo, "--path", "deploy")
	wantCode(t, r, 0)
}

// TestDiffImmutableChange: a change the server refuses even as a dry run
// is a failure with the reason, in text and JSON, and exits as an error (like
// kubectl diff); apply --dry-run fails too.
func TestDiffImmutableChange(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	immutable := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: " + v + "\n"
	}
	writeFiles(t, dir, map[string]string{"a.yaml": immutable("v1")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)
	writeFiles(t, dir, map[string]string{"a.yaml": immutable("v2")})

	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if want := "! ConfigMap/" + ns + "/frozen (would fail: immutable field data changed"; !strings.Contains(r.stdout, want) {
		t.Errorf("diff of an immutable change lacks %q:\n%s", want, r)
	}
	if got := changeLines(r.stdout); len(got) != 0 {
		t.Errorf("a refused change is no create or configure: %q\n%s", got, r)
	}

	r = gitsyncIn(t, ns, "diff", dir, "-o", "json")
	wantCode(t, r, 2)
	var got []diffEntry
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, r)
	}
	if len(got) != 1 || got[0].Action != "failed" || !strings.HasPrefix(got[0].Reason, "would fail: immutable field data changed") {
		t.Errorf("JSON entry %+v, want failed with the reason\n%s", got, r)
	}

	r = gitsyncIn(t, ns, "apply", dir, "--dry-run")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "! ConfigMap/"+ns+"/frozen (would fail: immutable field data changed") {
		t.Errorf("apply --dry-run of an immutable change:\n%s", r)
	}

	r = gitsyncIn(t, ns, "apply", dir)
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/frozen failed: immutable field data changed") {
		t.Errorf("apply of an immutable change:\n%s", r)
	}
}

// TestDiffValidatesNewObjects: a new object the apiserver would reject is a
// failure naming the object and the reason (2), as the apply then fails; a
// valid one is a create (1).
func TestDiffValidatesNewObjects(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	bad := map[string]string{
		"svc.yaml":     "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\nspec:\n  ports:\n  - port: 700000\n",
		"unknown.yaml": configMap("unknown", "k", "v") + "unknownField: x\n",
	}
	writeFiles(t, dir, bad)
	writeFiles(t, dir, map[string]string{"ok.yaml": configMap("ok", "k", "v")})
	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	for _, want := range []string{
		"! Service/" + ns + "/bad (would fail: invalid: ",
		"spec.ports[0].port: Invalid value: 700000",
		"! ConfigMap/" + ns + "/unknown (would fail: ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stdout, "unknownField") {
		t.Errorf("diff does not name the unknown field:\n%s", r)
	}
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/ok (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("change lines (-want +got):\n%s\n%s", diff, r)
	}

	for name := range bad {
		writeFiles(t, dir, map[string]string{name: ""})
	}
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"+ ConfigMap/" + ns + "/ok (create)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("valid new object (-want +got):\n%s\n%s", diff, r)
	}
}

// TestDiffConflicts: a field taken by kubectl edit is drift that apply takes
// back, so diff shows a configure; a field another controller owns would fail
// the apply (2), unless apply --dry-run --force previews taking it.
func TestDiffConflicts(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("edited", "color", "blue")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir), 0)
	c := testClient(t)
	key := client.ObjectKey{Namespace: ns, Name: "edited"}
	live := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), key, live); err != nil {
		t.Fatal(err)
	}
	live.Data["color"] = "red"
	if err := c.Update(context.Background(), live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}

	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 1)
	if diff := cmp.Diff([]string{"~ ConfigMap/" + ns + "/edited (configure)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("kubectl edit: change lines (-want +got):\n%s\n%s", diff, r)
	}
	if !strings.Contains(r.stdout, "+  color: blue") {
		t.Errorf("diff lacks the value taken back:\n%s", r)
	}

	if err := c.Get(context.Background(), key, live); err != nil {
		t.Fatal(err)
	}
	live.Data["color"] = "green"
	if err := c.Update(context.Background(), live, client.FieldOwner("some-operator")); err != nil {
		t.Fatal(err)
	}
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if want := "! ConfigMap/" + ns + "/edited (would fail: conflict with field manager \"some-operator\" owns .data.color"; !strings.Contains(r.stdout, want) {
		t.Errorf("other manager: diff lacks %q:\n%s", want, r)
	}
	r = gitsyncIn(t, ns, "apply", dir, "--dry-run", "--force")
	wantCode(t, r, 0)
	if diff := cmp.Diff([]string{"~ ConfigMap/" + ns + "/edited (configure)"}, changeLines(r.stdout)); diff != "" {
		t.Errorf("apply --dry-run --force: change lines (-want +got):\n%s\n%s", diff, r)
	}
}

// TestDiffWithoutNameKeepsOwnerLabels: objects applied with --name are in
// sync for a diff without it, and an apply without it leaves their owner
// labels alone.
func TestDiffWithoutNameKeepsOwnerLabels(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "v")})
	wantCode(t, gitsyncIn(t, ns, "apply", dir, "--name", "web"), 0)

	r := gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "In sync") {
		t.Errorf("diff without --name:\n%s", r)
	}

	writeFiles(t, dir, map[string]string{"a.yaml": configMap("a", "k", "changed")})
	r = gitsyncIn(t, ns, "apply", dir)
	wantCode(t, r, 0)
	live := &corev1.ConfigMap{}
	if err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, live); err != nil {
		t.Fatal(err)
	}
	if live.Data["k"] != "changed" || !object.CLIOwner(ns, "web").Owns(live.Labels) {
		t.Errorf("apply without --name: data %v, labels %v; want the change and sync web's owner labels", live.Data, live.Labels)
	}
	wantCode(t, gitsyncIn(t, ns, "diff", dir, "--name", "web"), 0)
}
