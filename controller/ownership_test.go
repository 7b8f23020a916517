package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// TestOneOwnerPerObject is the attack of a GitSync listing an object another
// GitSync applied: the thief neither relabels nor changes it, is not Ready
// with the owner named, and removing the object from the thief's repository
// deletes nothing. With both active nothing flaps. (Checked: without the
// ownership check in apply the thief relabels the ConfigMap, and removing
// it from the thief's repository deletes it.)
func TestOneOwnerPerObject(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()

	ownerRepo, thiefRepo := newRepo(t), newRepo(t)
	ownerRepo.commit(map[string]string{"deploy/shared.yaml": configMap("shared", "owner")})
	thiefRepo.commit(map[string]string{
		"deploy/shared.yaml": configMap("shared", "thief"),
		"deploy/own.yaml":    configMap("thief-own", "x"),
	})
	owner := newGitSync(ns, "owner", ownerRepo.url())
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	ownerKey := client.ObjectKeyFromObject(owner)
	waitCondition(t, c, ownerKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	before, err := getCM(t, c, ns, "shared")
	if err != nil {
		t.Fatal(err)
	}

	thief := newGitSync(ns, "thief", thiefRepo.url())
	if err := c.Create(ctx, thief); err != nil {
		t.Fatal(err)
	}
	thiefKey := client.ObjectKeyFromObject(thief)
	got := waitCondition(t, c, thiefKey, v1.ConditionReady, metav1.ConditionFalse, nil)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
	if ready.Reason != v1.ReasonOwnerConflict || !strings.Contains(ready.Message, "owned by GitSync "+ns+"/owner") {
		t.Errorf("thief Ready = %s %q, want reason %s naming the owner", ready.Reason, ready.Message, v1.ReasonOwnerConflict)
	}
	if _, err := getCM(t, c, ns, "thief-own"); err != nil {
		t.Errorf("the thief's own object was not applied: %v", err)
	}
	assertUntouched := func(when string) {
		t.Helper()
		cm, err := getCM(t, c, ns, "shared")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if cm.ResourceVersion != before.ResourceVersion || !object.OwnedBy(cm.Labels, "owner", ns) || cm.Data["value"] != "owner" {
			t.Fatalf("%s: shared ConfigMap changed: rv %s -> %s, labels %v, data %v", when, before.ResourceVersion, cm.ResourceVersion, cm.Labels, cm.Data)
		}
	}
	assertUntouched("after the thief's first sync")

	// Both active: further syncs of both change nothing.
	for _, value := range []string{"1", "2"} {
		stalledBefore := a.reconciles(t, "stalled")
		request(t, c, thiefKey, value)
		request(t, c, ownerKey, value)
		eventually(t, "the thief synced again", func(context.Context) (bool, error) {
			return a.reconciles(t, "stalled") > stalledBefore, nil
		})
		assertUntouched("after both synced again")
	}

	// The thief drops the object from its repository: it never owned it,
	// so nothing is deleted.
	thiefRepo.git("rm", "-q", "deploy/shared.yaml")
	thiefRepo.git("commit", "-q", "-m", "drop shared")
	request(t, c, thiefKey, "dropped")
	waitCondition(t, c, thiefKey, v1.ConditionReady, metav1.ConditionTrue, nil)
	assertUntouched("after the thief dropped it")
}

// TestGitSyncInItsOwnRepositorySurvivesItsRemoval: a repository holding its
// own GitSync (a self-managed sync) that then drops that file does not
// delete the GitSync, nor, through its finalizer, everything else; a
// PruneProtected event says why it is still there. (Checked: without the
// Self protection the GitSync is deleted and its ConfigMap pruned by the
// finalizer.)
func TestGitSyncInItsOwnRepositorySurvivesItsRemoval(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	gs := newGitSync(ns, "self", r.url())
	r.commit(map[string]string{
		"deploy/app.yaml":  configMap("app", "v1"),
		"deploy/self.yaml": gitSyncManifest(t, gs),
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return object.OwnedBy(g.Labels, "self", ns) // it applied itself
	})

	r.git("rm", "-q", "deploy/self.yaml")
	r.git("commit", "-q", "-m", "drop the GitSync itself")
	head := strings.TrimSpace(r.git("rev-parse", "HEAD"))
	request(t, c, key, "dropped")
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, head)
	})
	if !got.DeletionTimestamp.IsZero() {
		t.Fatalf("the GitSync is being deleted after its file left its repository")
	}
	if _, err := getCM(t, c, ns, "app"); err != nil {
		t.Errorf("the GitSync's objects did not survive: %v", err)
	}
	eventually(t, "a PruneProtected event naming the GitSync", func(ctx context.Context) (bool, error) {
		evs := &corev1.EventList{}
		if err := c.List(ctx, evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == v1.ReasonPruneProtected && strings.Contains(e.Message, "GitSync.gitsync.dev/"+ns+"/self") && strings.Contains(e.Message, "being synced") {
				return true, nil
			}
		}
		return false, nil
	})
}

// gitSyncManifest is gs as a user would commit it.
func gitSyncManifest(t *testing.T, gs *v1.GitSync) string {
	t.Helper()
	out := gs.DeepCopy()
	out.APIVersion, out.Kind = v1.GroupVersion.String(), "GitSync"
	data, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFinalizerObeysThePruneLimit: deleting a GitSync of many objects (as
// its parent's prune does in an app of apps when one file leaves Git) does
// not delete them all unannounced: the share limit holds the finalizer and
// says how to let it through; the prune-max-share annotation does. (Checked:
// with ForDeletion turning the limit off, as before, the objects are
// deleted at once.)
func TestFinalizerObeysThePruneLimit(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	files := map[string]string{}
	for i := range 12 {
		name := fmt.Sprintf("cm-%02d", i)
		files["deploy/"+name+".yaml"] = configMap(name, "1")
	}
	r.commit(files)
	gs := newGitSync(ns, "child", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	if err := c.Delete(ctx, gs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the finalizer refusing the mass deletion", func(ctx context.Context) (bool, error) {
		g := &v1.GitSync{}
		if err := c.Get(ctx, key, g); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionReady)
		return ready != nil && strings.Contains(ready.Message, "prune limit") || ready != nil && strings.Contains(ready.Message, v1.AnnotationPruneMaxShare), nil
	})
	for i := range 12 {
		if _, err := getCM(t, c, ns, fmt.Sprintf("cm-%02d", i)); err != nil {
			t.Fatalf("cm-%02d deleted although the prune limit refused: %v", i, err)
		}
	}

	g := &v1.GitSync{}
	if err := c.Get(ctx, key, g); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(g.DeepCopy())
	metav1.SetMetaDataAnnotation(&g.ObjectMeta, v1.AnnotationPruneMaxShare, "1")
	if err := c.Patch(ctx, g, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GitSync gone with its objects", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &v1.GitSync{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		cms := &corev1.ConfigMapList{}
		if err := c.List(ctx, cms, client.InNamespace(ns), client.HasLabels{v1.LabelName}); err != nil {
			return false, err
		}
		return len(cms.Items) == 0, nil
	})
}
