package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/internal/gitsynctest"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestTrace: gitsync trace names the GitSync that manages an object, the
// revision it applied and the file and document of that revision that
// define the object: the applied commit's, even after the branch moved on
// (the object moved to another file in a commit not applied yet). An object
// of nobody's exits 1 and says so; -o json carries the same answer.
func TestTrace(t *testing.T) {
	ns := env.Namespace(t)
	startRun(t, ns, "--leader-elect=false")
	c := gitsyncClient(t)
	repo := gittest.NewRepo(t, t.TempDir())
	commit1 := repo.Commit("one", map[string]string{
		"deploy/a.yaml":    configMap("a", "value", "1"),
		"deploy/more.yaml": configMap("b", "value", "1") + "---\n" + configMap("c", "value", "1"),
	})
	web := gitsynctest.New(ns, "web", repo.URL()) // interval 1h: only commit1 is applied
	poll(t, "create the GitSync (CRD installed by the agent)", func(ctx context.Context) (bool, error) {
		return c.Create(ctx, web.DeepCopy()) == nil, nil
	})
	waitApplied(t, c, client.ObjectKeyFromObject(web), commit1)
	// c moves to its own file at the branch's head; the agent has not seen it.
	repo.Commit("two", map[string]string{
		"deploy/more.yaml": configMap("b", "value", "1"),
		"deploy/c.yaml":    configMap("c", "value", "1"),
	})

	r := gitsyncIn(t, ns, "trace", "configmap/c")
	wantCode(t, r, 0)
	t.Logf("gitsync trace configmap/c:\n%s", r.stdout)
	for _, want := range []string{
		"ConfigMap/" + ns + "/c",
		"GitSync   " + ns + "/web (listed in its inventory)",
		"main@sha1:" + commit1,
		"deploy/more.yaml",
		"document 2",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("trace of c lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r.stdout, "deploy/c.yaml") {
		t.Errorf("trace of c names the head's file, not the applied revision's:\n%s", r)
	}

	r = gitsyncIn(t, ns, "trace", "ConfigMap/a", "-o", "json")
	wantCode(t, r, 0)
	var got traced
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r)
	}
	if got.Manager != "gitsync" || got.GitSync != ns+"/web" || !got.InInventory || !strings.HasPrefix(got.File, "deploy/a.yaml") ||
		!strings.Contains(got.Revision, commit1) {
		t.Errorf("trace of a: %+v", got)
	}

	// Nobody's ConfigMap: exit 1, said plainly.
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"}}
	if err := c.Create(context.Background(), mine); err != nil {
		t.Fatal(err)
	}
	r = gitsyncIn(t, ns, "trace", "cm/by-hand")
	wantCode(t, r, 1)
	if !strings.Contains(r.stdout, "not managed by gitsync") {
		t.Errorf("trace of an unmanaged object:\n%s", r)
	}
	// An object that does not exist, and a kind that does not: errors.
	wantCode(t, gitsyncIn(t, ns, "trace", "configmap/absent"), 2)
	wantCode(t, gitsyncIn(t, ns, "trace", "frobnicator/x"), 2)
}
