package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// webDeployment is a Deployment manifest with replicas and an image.
func webDeployment(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: %q}]}
`, replicas, image)
}

// waitAgentSees waits until the agent's cache holds the Deployment at the
// apiserver's resourceVersion, so the next reconcile decides from it, and
// returns that resourceVersion.
func (a *agent) waitAgentSees(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	want := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, want); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent's cache has the Deployment's change", func(ctx context.Context) (bool, error) {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("apps/v1")
		got.SetKind("Deployment")
		if err := a.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, nil
		}
		return got.GetResourceVersion() == want.ResourceVersion, nil
	})
	return want.ResourceVersion
}

// resyncWrites pokes key, waits for the reconcile and returns the writes
// the agent sent meanwhile.
func (a *agent) resyncWrites(t *testing.T, c client.Client, key client.ObjectKey, value string) (int64, []string) {
	t.Helper()
	done := a.reconciles(t, "success")
	writes, mark := a.count.writes.Load(), len(a.count.requests())
	poke(t, c, key, value)
	eventually(t, "resync reconcile", func(context.Context) (bool, error) { return a.reconciles(t, "success") > done, nil })
	return a.count.writes.Load() - writes, a.count.requests()[mark:]
}

// TestIgnoreRuleLetsAnHPAOwnReplicas is issue 27's "Done when": a
// Deployment gitsync created with Git's replicas is scaled by an HPA (the
// scale subresource, as the HPA controller writes it); under an ignore rule
// for /spec/replicas gitsync makes 0 writes on further reconciles, never
// resets the value, and still applies a Git change of another field.
// (Checked: without the rule the GitSync is Stalled on the conflict with
// hpa-controller and the resync never succeeds. How the ignored field is
// sent is proved in package apply: leaving it out while gitsync still owns
// it resets replicas to 1, sending the live value whoever owns it makes one
// write per HPA change.)
func TestIgnoreRuleLetsAnHPAOwnReplicas(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{"deploy/web.yaml": webDeployment(2, "nginx:1")})
	gs := newGitSync(ns, "app", r.url(), func(gs *v1.GitSync) {
		gs.Spec.Drift = &v1.DriftSpec{Ignore: []v1.DriftIgnoreRule{{
			Target: &v1.DriftTarget{Group: "apps", Kind: "Deployment"},
			Paths:  []string{"/spec/replicas"},
		}}}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	a.settle(t, c, key, 1)
	d := &appsv1.Deployment{}
	get := func() *appsv1.Deployment {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if n := *get().Spec.Replicas; n != 2 {
		t.Fatalf("created with %d replicas, want Git's 2", n)
	}

	// The HPA scales it.
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, d, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if err := c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("hpa-controller")); err != nil {
		t.Fatal(err)
	}
	a.waitAgentSees(t, c, ns, "web")
	for i := range 2 {
		if w, reqs := a.resyncWrites(t, c, key, fmt.Sprint("scaled-", i)); w != 0 {
			t.Errorf("resync %d after the HPA took replicas sent %d writes, want 0: %v", i, w, reqs)
		}
	}
	if n := *get().Spec.Replicas; n != 5 {
		t.Errorf("replicas %d after the resyncs, want the HPA's 5", n)
	}

	// Git changes the image: applied, replicas left to the HPA.
	commit := r.commit(map[string]string{"deploy/web.yaml": webDeployment(2, "nginx:2")})
	request(t, c, key, "image")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasSuffix(g.Status.LastAppliedRevision, commit)
	})
	got := get()
	if n, img := *got.Spec.Replicas, got.Spec.Template.Spec.Containers[0].Image; n != 5 || img != "nginx:2" {
		t.Errorf("after the image change: %d replicas, image %s; want 5 and nginx:2", n, img)
	}
	a.waitAgentSees(t, c, ns, "web")
	if w, reqs := a.resyncWrites(t, c, key, "after-image"); w != 0 {
		t.Errorf("resync after the image change sent %d writes, want 0: %v", w, reqs)
	}
}

// TestDetectOnlyReportsDrift: in spec.drift.mode Detect an edit of a managed
// object is reported (the Drifted condition naming the object and field, a
// Warning Event, the gitsync_drifted_object series) and left as it is,
// with no Secret value in any of them; a new revision is applied whole,
// which clears it. (Checked: with the Applier's detect-only branch removed
// the edit is reverted and the condition never turns True.)
func TestDetectOnlyReportsDrift(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	a := startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/app.yaml":    configMap("app", "v1"),
		"deploy/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: git-password}\n",
	})
	gs := newGitSync(ns, "app", r.url(), func(gs *v1.GitSync) {
		gs.Spec.Drift = &v1.DriftSpec{Mode: v1.DriftModeDetect}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionDrifted, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return meta.IsStatusConditionTrue(g.Status.Conditions, v1.ConditionReady)
	})

	// Out-of-band edits, as kubectl edit makes them.
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "edited"
	if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data["password"] = []byte("edited-password")
	if err := c.Update(ctx, secret, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, c, key, v1.ConditionDrifted, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		cond := meta.FindStatusCondition(g.Status.Conditions, v1.ConditionDrifted)
		return strings.Contains(cond.Message, "Secret/"+ns+"/creds")
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionDrifted)
	for _, want := range []string{"ConfigMap/" + ns + "/app (/data/value)", "Secret/" + ns + "/creds (/data/password)"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Drifted message %q does not name %q", cond.Message, want)
		}
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, v1.ConditionReady) {
		t.Errorf("drift in Detect mode is not a failure: Ready %+v", meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady))
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil || cm.Data["value"] != "edited" {
		t.Errorf("the edit was reverted: %v %v", cm.Data, err)
	}
	eventually(t, "a DriftDetected Event", func(context.Context) (bool, error) {
		return len(eventsWithReason(t, c, key, v1.ReasonDriftDetected)) > 0, nil
	})
	a.waitSeries(t, "gitsync_drifted_object", key, map[string]float64{"object=ConfigMap/" + ns + "/app": 1, "object=Secret/" + ns + "/creds": 1})
	for _, text := range append([]string{cond.Message}, eventNotes(eventsWithReason(t, c, key, v1.ReasonDriftDetected))...) {
		for _, value := range []string{"edited-password", "git-password", "ZWRpdGVkLXBhc3N3b3Jk", "Z2l0LXBhc3N3b3Jk"} {
			if strings.Contains(text, value) {
				t.Errorf("a Secret value in %q", text)
			}
		}
	}

	// A new revision is applied whole.
	commit := r.commit(map[string]string{"deploy/app.yaml": configMap("app", "v2")})
	request(t, c, key, "v2")
	waitCondition(t, c, key, v1.ConditionDrifted, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return strings.HasSuffix(g.Status.LastAppliedRevision, commit)
	})
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil || cm.Data["value"] != "v2" {
		t.Errorf("the new revision was not applied: %v %v", cm.Data, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret); err != nil || string(secret.Data["password"]) != "git-password" {
		t.Errorf("the new revision is applied whole: password %q, %v", secret.Data["password"], err)
	}
	a.waitSeries(t, "gitsync_drifted_object", key, map[string]float64{})
}

func eventNotes(evs []corev1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Message)
	}
	return out
}

// annotatedConfigMap is configMap with gitsync.dev/apply: policy.
func annotatedConfigMap(name, value, policy string) string {
	return strings.Replace(configMap(name, value), "metadata:\n", "metadata:\n  annotations:\n    "+v1.AnnotationApply+": "+policy+"\n", 1)
}

// TestApplyPolicyAndPrune: a create-only object is created, never updated
// and pruned when it leaves Git; a disabled one is never created or
// updated, and is pruned only if gitsync applied it before (it carries the
// owner labels); one someone else made survives leaving Git. (Checked:
// with a disabled entry never keeping its UID, the owned object is pruned
// as soon as it is annotated.)
func TestApplyPolicyAndPrune(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	ctx := context.Background()
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "theirs"}, Data: map[string]string{"value": "theirs"}}
	if err := c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/ours.yaml":   configMap("ours", "v1"),
		"deploy/seed.yaml":   annotatedConfigMap("seed", "v1", v1.ApplyCreateOnly),
		"deploy/theirs.yaml": annotatedConfigMap("theirs", "git", v1.ApplyDisabled),
		"deploy/absent.yaml": annotatedConfigMap("absent", "git", v1.ApplyDisabled),
	})
	gs := newGitSync(ns, "app", r.url())
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	value := func(name string) (string, bool) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return "", false
		}
		return cm.Data["value"], true
	}
	if _, ok := value("absent"); ok {
		t.Error("a disabled object was created")
	}
	if v, _ := value("theirs"); v != "theirs" {
		t.Errorf("theirs = %q, want left as it was", v)
	}

	// The create-only object is edited; the owned one is disabled and changed in Git.
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "seed"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "edited"
	if err := c.Update(ctx, cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	commit := r.commit(map[string]string{
		"deploy/ours.yaml": annotatedConfigMap("ours", "v2", v1.ApplyDisabled),
		"deploy/seed.yaml": annotatedConfigMap("seed", "v2", v1.ApplyCreateOnly),
	})
	request(t, c, key, "annotate")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasSuffix(g.Status.LastAppliedRevision, commit)
	})
	if v, _ := value("seed"); v != "edited" {
		t.Errorf("seed = %q, want the edit kept (create-only)", v)
	}
	if v, _ := value("ours"); v != "v1" {
		t.Errorf("ours = %q, want v1 (disabled: not updated)", v)
	}

	// Everything leaves Git but one object: what gitsync applied is pruned, theirs survives.
	commit = r.commit(map[string]string{"deploy/ours.yaml": "", "deploy/seed.yaml": "", "deploy/theirs.yaml": "", "deploy/absent.yaml": "",
		"deploy/other.yaml": configMap("other", "v1")})
	request(t, c, key, "remove")
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.HasSuffix(g.Status.LastAppliedRevision, commit)
	})
	for name, want := range map[string]bool{"ours": false, "seed": false, "theirs": true} {
		if _, ok := value(name); ok != want {
			t.Errorf("%s exists: %v, want %v", name, ok, want)
		}
	}
}
