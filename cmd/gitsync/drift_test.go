package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

func webDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`, replicas)
}

// annotated returns a ConfigMap manifest carrying gitsync.dev/apply: policy.
func annotated(name, value, policy string) string {
	return strings.Replace(configMap(name, "k", value), "metadata:\n", "metadata:\n  annotations:\n    "+gitsyncv1.AnnotationApply+": "+policy+"\n", 1)
}

// TestDiffExplainsWhatItSkips: with --ignore-field, a field an HPA took is
// neither shown nor reverted, and diff says which rule skipped it; a
// create-only object that exists and a disabled one are listed with the
// annotation that leaves them. (Checked: without --ignore-field the same
// diff fails on the conflict with hpa-controller.)
func TestDiffExplainsWhatItSkips(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"web.yaml":  webDeployment(2),
		"once.yaml": annotated("once", "v1", gitsyncv1.ApplyCreateOnly),
		"left.yaml": annotated("left", "v1", gitsyncv1.ApplyDisabled),
	})
	rule := "--ignore-field=Deployment.apps=/spec/replicas"
	r := gitsyncIn(t, ns, "apply", dir, rule)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "ConfigMap/"+ns+"/left ignored (gitsync.dev/apply: disabled (left alone))") {
		t.Errorf("apply does not say the disabled object was left:\n%s", r)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "left"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("disabled ConfigMap: want not created, got %v", err)
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, d, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("hpa-controller")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"web.yaml": webDeployment(3), "once.yaml": annotated("once", "v2", gitsyncv1.ApplyCreateOnly)})

	r = gitsyncIn(t, ns, "diff", dir, rule)
	wantCode(t, r, 0)
	for _, want := range []string{
		"  Deployment/" + ns + "/web (unchanged)\n    # /spec/replicas: left alone by --ignore-field[0] (left to its owner; Git's value differs)\n",
		"  ConfigMap/" + ns + "/once (unchanged: gitsync.dev/apply: create-only (exists; never updated))\n",
		"  ConfigMap/" + ns + "/left (ignored: gitsync.dev/apply: disabled (left alone))\n",
		"In sync: 2 unchanged, 1 ignored.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff lacks %q:\n%s", want, r)
		}
	}
	r = gitsyncIn(t, ns, "diff", dir, rule, "-o", "json")
	if !strings.Contains(r.stdout, `"skipped": [`) || !strings.Contains(r.stdout, `"action": "ignored"`) {
		t.Errorf("JSON lacks the skipped fields or the ignored action:\n%s", r)
	}

	// Without the rule the HPA's field is a conflict.
	r = gitsyncIn(t, ns, "diff", dir)
	wantCode(t, r, 2)
	if !strings.Contains(r.stdout+r.stderr, "hpa-controller") {
		t.Errorf("without the rule: want the conflict with hpa-controller:\n%s", r)
	}

	wantCode(t, gitsyncIn(t, ns, "apply", dir, rule), 0)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil || *d.Spec.Replicas != 5 {
		t.Errorf("after apply with the rule: replicas %v (%v), want the HPA's 5", d.Spec.Replicas, err)
	}
	once := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "once"}, once); err != nil || once.Data["k"] != "v1" {
		t.Errorf("create-only ConfigMap updated: %v %v", once.Data, err)
	}
}

// TestDiffGitSyncHonoursItsDriftRules: diff --gitsync previews with the
// GitSync's spec.drift.ignore, as the agent applies.
func TestDiffGitSyncHonoursItsDriftRules(t *testing.T) {
	t.Parallel()
	f := newPreviewFixture(t)
	gs := &gitsyncv1.GitSync{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, gs); err != nil {
		t.Fatal(err)
	}
	gs.Spec.Drift = &gitsyncv1.DriftSpec{Ignore: []gitsyncv1.DriftIgnoreRule{{
		Target: &gitsyncv1.DriftTarget{Kind: "ConfigMap", Name: "changed"}, Paths: []string{"/data/k"}}}}
	if err := f.c.Update(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	r := gitsync(t, "diff", "--gitsync", f.ns+"/web", f.repo, "--kubeconfig", env.Kubeconfig)
	wantCode(t, r, 1)
	if strings.Contains(r.stdout, "/changed (configure)") {
		t.Errorf("the ignored field is shown as a change:\n%s", r)
	}
	want := "  ConfigMap/" + f.target + "/changed (unchanged)\n    # /data/k: left alone by spec.drift.ignore[0] (live value kept; Git's value differs)\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("diff lacks %q:\n%s", want, r)
	}
}
