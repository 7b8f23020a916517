package controller_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestPatchesOnHelmOutput: spec.patches (strategic merge and JSON 6902),
// spec.images and spec.commonMetadata change a Helm chart's output before it
// is applied; the patched chart is in sync after the apply (a resync writes
// nothing); a patch whose target matches nothing stalls the GitSync naming
// the patch, and the objects keep their last good state.
//
// Checked by dropping postRender from render.Render: the Deployment is
// applied as the chart renders it (1 replica, nginx:1.27, no env).
func TestPatchesOnHelmOutput(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	r := newRepo(t)
	r.commit(chartFiles())
	gs := newGitSync(ns, "shop", r.url(), func(g *v1.GitSync) {
		g.Spec.Patches = []v1.Patch{
			{Target: &v1.PatchSelector{Kind: "Deployment", Name: "shop-.*"}, Patch: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: any
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - {name: MODE, value: patched}
`},
			{Target: &v1.PatchSelector{Group: "apps", Kind: "Deployment"}, Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 3}]`},
		}
		g.Spec.Images = []v1.Image{{Name: "nginx", NewName: "mirror.example/nginx", NewTag: "1.27.1"}}
		g.Spec.CommonMetadata = &v1.CommonMetadata{Labels: map[string]string{"team": "shop"},
			Annotations: map[string]string{"example.com/owner": "platform"}}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, d); err != nil {
		t.Fatal(err)
	}
	web := d.Spec.Template.Spec.Containers[0]
	if *d.Spec.Replicas != 3 || web.Image != "mirror.example/nginx:1.27.1" || len(web.Env) != 1 || web.Env[0].Value != "patched" || len(web.Ports) != 1 {
		t.Errorf("Deployment as applied: replicas %d, image %s, env %v, ports %v; want 3, the override, MODE=patched and the chart's port",
			*d.Spec.Replicas, web.Image, web.Env, web.Ports)
	}
	if d.Labels["team"] != "shop" || d.Annotations["example.com/owner"] != "platform" || d.Labels[v1.LabelName] != "shop" {
		t.Errorf("Deployment metadata: labels %v annotations %v", d.Labels, d.Annotations)
	}
	if _, ok := d.Spec.Template.Labels["team"]; ok {
		t.Errorf("pod template got the common label: %v", d.Spec.Template.Labels)
	}
	svc := &corev1.Service{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Labels["team"] != "shop" {
		t.Errorf("Service labels %v", svc.Labels)
	}
	if _, ok := svc.Spec.Selector["team"]; ok {
		t.Errorf("Service selector got the common label: %v", svc.Spec.Selector)
	}

	t.Run("patched chart resyncs with no write", func(t *testing.T) {
		a.settle(t, c, key, 1)
		done := a.reconciles(t, "success")
		writes, mark := a.count.writes.Load(), len(a.count.requests())
		poke(t, c, key, "resync")
		eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
		if w := a.count.writes.Load() - writes; w != 0 {
			t.Errorf("resync of a patched chart sent %d writes, want 0: %v", w, a.count.requests()[mark:])
		}
	})

	t.Run("a target that matches nothing stalls and keeps the last good state", func(t *testing.T) {
		cur := &v1.GitSync{}
		if err := c.Get(context.Background(), key, cur); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Patches[1].Target.Name = "web"
		cur.Spec.Patches[1].Patch = `[{"op": "replace", "path": "/spec/replicas", "value": 5}]`
		if err := c.Patch(context.Background(), cur, patch); err != nil {
			t.Fatal(err)
		}
		got := waitCondition(t, c, key, v1.ConditionStalled, metav1.ConditionTrue, nil)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionStalled)
		if cond.Reason != v1.ReasonRenderFailed || !strings.Contains(cond.Message, "spec.patches[1]: its target group=apps,kind=Deployment,name=web matches no rendered object") {
			t.Errorf("Stalled = %s %q, want %s naming spec.patches[1]", cond.Reason, cond.Message, v1.ReasonRenderFailed)
		}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-guestbook"}, d); err != nil || *d.Spec.Replicas != 3 {
			t.Errorf("Deployment after a failed patch: %v, %v; want it kept with 3 replicas", d.Spec.Replicas, err)
		}
	})
}
