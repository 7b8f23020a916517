package controller_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// TestMonorepoPush: five GitSyncs follow five paths of one repository on a
// Git server. A push changing one path, announced to all five at once (as
// a webhook does), costs the server one ls-remote and one fetch, not one
// ls-remote per GitSync; every GitSync records the new revision, and only
// the one whose objects changed gets an event.
//
// Checked: with resolve sharing off (a flight per call) the server sees
// 5 ls-remotes; with the RevisionApplied case as before, the four others
// get a RevisionApplied event.
func TestMonorepoPush(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	r := newRepo(t)
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("apps/%d/cm.yaml", i)] = configMap(fmt.Sprint("cm-", i), "one")
	}
	r.commit(files)
	root, name := filepath.Split(r.dir)
	srv := gittest.New(t, root, gittest.Options{})
	url := srv.URL + "/" + name
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	var keys []client.ObjectKey
	for i := range 5 {
		gs := newGitSync(ns, fmt.Sprint("app-", i), url, func(g *v1.GitSync) { g.Spec.Source.Path = fmt.Sprint("apps/", i) })
		if err := c.Create(ctx, gs); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, client.ObjectKeyFromObject(gs))
	}
	for _, k := range keys {
		waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, nil)
	}

	commit := r.commit(map[string]string{"apps/0/cm.yaml": configMap("cm-0", "two")})
	srv.ResetCounts()
	at := time.Now()
	for _, k := range keys {
		a.rec.TriggerAt(k, at)
	}
	for _, k := range keys {
		waitCondition(t, c, k, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
			return strings.Contains(g.Status.LastAppliedRevision, commit)
		})
	}
	// Every fetch starts with an info/refs too: one ls-remote + one fetch.
	if refs, packs := srv.ListRefs.Load(), srv.UploadPack.Load(); refs != 2 || packs != 1 {
		t.Errorf("one push for 5 GitSyncs: %d info/refs and %d upload-packs, want 2 and 1", refs, packs)
	}

	// A sentinel: app-1 fails afterwards, and its Warning is emitted after
	// any event of the push (one reconciler, one event broadcaster).
	gs := &v1.GitSync{}
	if err := c.Get(ctx, keys[1], gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Source.Path = "apps/none"
	if err := c.Update(ctx, gs); err != nil {
		t.Fatal(err)
	}
	var notes []string
	eventually(t, "events up to app-1's sentinel", func(ctx context.Context) (bool, error) {
		evs := &eventsv1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		notes = notes[:0]
		sentinel := false
		for _, e := range evs.Items {
			if strings.Contains(e.Note, commit) && e.Type == corev1.EventTypeNormal {
				notes = append(notes, e.Regarding.Name+" "+e.Reason)
			}
			sentinel = sentinel || (e.Regarding.Name == "app-1" && e.Type == corev1.EventTypeWarning)
		}
		return sentinel, nil
	})
	if len(notes) != 1 || notes[0] != "app-0 Applied" {
		t.Errorf("events naming the pushed commit: %v, want only app-0's Applied", notes)
	}
}
