package apply_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/drift"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/livecache"
	"gitsync.dev/gitsync/object"
)

// webDeployment is the Deployment "web" with replicas and an image.
func webDeployment(t *testing.T, ns string, replicas int64, image string) *unstructured.Unstructured {
	t.Helper()
	d := obj(t, ns, strings.ReplaceAll(deployment, "SEL", "web"))
	if err := unstructured.SetNestedField(d.Object, replicas, "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = image
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustRule(t *testing.T, target drift.Target, paths ...string) drift.Rule {
	t.Helper()
	r, err := drift.NewRule("spec.drift.ignore[0]", target, "", paths)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scaleSubresource sets replicas through the scale subresource as manager,
// as the HPA controller does.
func scaleSubresource(t *testing.T, ns, name, manager string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, d, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = replicas
	if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

func liveReplicas(t *testing.T, d *unstructured.Unstructured) int64 {
	t.Helper()
	n, _, _ := unstructured.NestedInt64(getLive(t, d).Object, "spec", "replicas")
	return n
}

func liveImage(t *testing.T, d *unstructured.Unstructured) string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(getLive(t, d).Object, "spec", "template", "spec", "containers")
	return containers[0].(map[string]any)["image"].(string)
}

// TestIgnoreRuleLeavesReplicasToAnotherManager is issue 27's "Done when":
// gitsync creates a Deployment with Git's replicas, an HPA (the scale
// subresource) or another client takes spec.replicas, and under an ignore
// rule for /spec/replicas gitsync then writes nothing and never resets it,
// also when Git changes another field.
func TestIgnoreRuleLeavesReplicasToAnotherManager(t *testing.T) {
	for _, tt := range []struct {
		name string
		take func(t *testing.T, ns string)
	}{
		{name: "HPA through the scale subresource", take: func(t *testing.T, ns string) {
			scaleSubresource(t, ns, "web", "hpa-controller", 5)
		}},
		{name: "another client's update", take: func(t *testing.T, ns string) {
			live := getLive(t, webDeployment(t, ns, 0, ""))
			if err := unstructured.SetNestedField(live.Object, int64(5), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Update(context.Background(), live, client.FieldOwner("autoscaler")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "another manager's forced apply", take: func(t *testing.T, ns string) {
			forceApply(t, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": ns},
				"spec":     map[string]any{"replicas": int64(5)},
			}}, "scaler")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			opts := apply.DefaultOptions()
			opts.OwnerLabels = object.OwnerLabels("app", ns)
			opts.Ignore = drift.Rules{mustRule(t, drift.Target{Kind: "Deployment"}, "/spec/replicas")}
			f := newFixture(t, opts)

			// The object does not exist: it is created with Git's value.
			d := webDeployment(t, ns, 2, "nginx:1")
			cs := f.apply(t, d)
			e := entry(t, cs, "Deployment/"+ns+"/web")
			if e.Action != apply.Created || liveReplicas(t, d) != 2 {
				t.Fatalf("first apply: %s, replicas %d; want created with 2", e.Action, liveReplicas(t, d))
			}
			if want := []drift.Skip{{Path: "/spec/replicas", Rule: "spec.drift.ignore[0]", How: drift.Created}}; !cmp.Equal(want, e.Skips) {
				t.Errorf("skips %+v, want %+v", e.Skips, want)
			}

			tt.take(t, ns)
			f.waitCached(t, d)
			f.count.Reset()
			for range 2 {
				cs = f.apply(t, d)
				if e := entry(t, cs, "Deployment/"+ns+"/web"); e.Action != apply.Unchanged {
					t.Fatalf("after the other manager: %s (%v), want unchanged", e.Action, e.Err)
				}
			}
			if n := f.count.Mutating(); n != 0 {
				t.Errorf("%d writes after the other manager took replicas, want 0:\n%s", n, testenv.JoinRequests(f.count.Requests()))
			}
			if got := liveReplicas(t, d); got != 5 {
				t.Errorf("replicas %d, want the other manager's 5", got)
			}

			// Git changes another field: it is applied, replicas stay.
			d2 := webDeployment(t, ns, 2, "nginx:2")
			cs = f.apply(t, d2)
			if e := entry(t, cs, "Deployment/"+ns+"/web"); e.Action != apply.Configured || e.Err != nil {
				t.Fatalf("image change: %s (%v), want configured", e.Action, e.Err)
			}
			if got, img := liveReplicas(t, d), liveImage(t, d); got != 5 || img != "nginx:2" {
				t.Errorf("after the image change: replicas %d image %s, want 5 and nginx:2", got, img)
			}
			f.waitCached(t, d2)
			f.count.Reset()
			f.apply(t, d2)
			if n := f.count.Mutating(); n != 0 {
				t.Errorf("%d writes after the image change converged, want 0", n)
			}
		})
	}
}

// TestIgnoreRuleKeepsOwnedField: while gitsync still owns an ignored field
// (nobody else took it), leaving it out of the apply would make server-side
// apply remove it; the live value is sent instead, so neither a Git change
// of it nor a change of another field resets it.
func TestIgnoreRuleKeepsOwnedField(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.Ignore = drift.Rules{mustRule(t, drift.Target{Kind: "Deployment", Name: "web"}, "/spec/replicas")}
	f := newFixture(t, opts)
	d := webDeployment(t, ns, 3, "nginx:1")
	f.apply(t, d)
	f.waitCached(t, d)

	cs := f.apply(t, webDeployment(t, ns, 7, "nginx:2"))
	e := entry(t, cs, "Deployment/"+ns+"/web")
	if e.Action != apply.Configured {
		t.Fatalf("%s (%v), want configured (the image)", e.Action, e.Err)
	}
	if want := []drift.Skip{{Path: "/spec/replicas", Rule: "spec.drift.ignore[0]", How: drift.KeptLive, Differs: true}}; !cmp.Equal(want, e.Skips) {
		t.Errorf("skips %+v, want %+v", e.Skips, want)
	}
	if got := liveReplicas(t, d); got != 3 {
		t.Errorf("replicas %d, want 3 (kept; Git's 7 ignored)", got)
	}
	if img := liveImage(t, d); img != "nginx:2" {
		t.Errorf("image %s, want nginx:2", img)
	}
}

const webhookConfig = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: NS-hooks}
webhooks:
- name: a.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {namespace: NS, name: hooks, path: /a}
    caBundle: Cg==
- name: b.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {namespace: NS, name: hooks, path: /b}
    caBundle: Cg==
`

// TestIgnoreRuleCABundleOfEveryWebhook: "*" for any list index leaves the
// caBundle of every webhook to the injector that fills them.
func TestIgnoreRuleCABundleOfEveryWebhook(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.Ignore = drift.Rules{mustRule(t, drift.Target{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
		"/webhooks/*/clientConfig/caBundle")}
	f := newFixture(t, opts)
	hooks := obj(t, ns, webhookConfig)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), hooks) })
	f.apply(t, hooks)

	// The injector writes both bundles.
	live := getLive(t, hooks)
	webhooks, _, _ := unstructured.NestedSlice(live.Object, "webhooks")
	for _, w := range webhooks {
		w.(map[string]any)["clientConfig"].(map[string]any)["caBundle"] = "aW5qZWN0ZWQ="
	}
	if err := unstructured.SetNestedSlice(live.Object, webhooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(context.Background(), live, client.FieldOwner("cainjector")); err != nil {
		t.Fatal(err)
	}
	f.waitCached(t, hooks)
	f.count.Reset()
	cs := f.apply(t, hooks)
	if e := entry(t, cs, "MutatingWebhookConfiguration/"+ns+"-hooks"); e.Action != apply.Unchanged || len(e.Skips) != 2 {
		t.Fatalf("%s (%v) skips %+v, want unchanged with both bundles skipped", e.Action, e.Err, e.Skips)
	}
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("%d writes, want 0", n)
	}
	webhooks, _, _ = unstructured.NestedSlice(getLive(t, hooks).Object, "webhooks")
	for _, w := range webhooks {
		if got := w.(map[string]any)["clientConfig"].(map[string]any)["caBundle"]; got != "aW5qZWN0ZWQ=" {
			t.Errorf("caBundle %v, want the injector's", got)
		}
	}
}

// TestCreateOnly: a gitsync.dev/apply: create-only object is created when
// absent and never updated; one that exists without owner labels (which a
// cache of managed objects does not hold) is not overwritten either.
func TestCreateOnly(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", ns)
	f := newFixture(t, opts)
	createOnly := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.SetAnnotations(map[string]string{gitsyncv1.AnnotationApply: gitsyncv1.ApplyCreateOnly})
		return o
	}
	a := createOnly(cm(t, ns, "a", map[string]string{"k": "git"}))
	cs := f.apply(t, a)
	if e := entry(t, cs, "ConfigMap/"+ns+"/a"); e.Action != apply.Created {
		t.Fatalf("first apply: %s (%v), want created", e.Action, e.Err)
	}
	setField(t, ns, "a", "kubectl-edit", "k", "edited", false)
	f.waitCached(t, a)
	f.count.Reset()
	cs = f.apply(t, createOnly(cm(t, ns, "a", map[string]string{"k": "git-2"})))
	e := entry(t, cs, "ConfigMap/"+ns+"/a")
	if e.Action != apply.Unchanged || e.UID == "" || !strings.Contains(e.Reason, "create-only") {
		t.Errorf("second apply: %s uid %q reason %q, want unchanged with the live UID and the reason", e.Action, e.UID, e.Reason)
	}
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("%d writes, want 0", n)
	}
	if got := getLive(t, a).Object["data"].(map[string]any)["k"]; got != "edited" {
		t.Errorf("data.k %v, want the edit kept", got)
	}

	// An unlabelled object a label-selected cache misses.
	other := cm(t, ns, "other", map[string]string{"k": "theirs"})
	if err := env.Client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	managed := newManagedFixture(t, opts)
	cs = managed.apply(t, createOnly(cm(t, ns, "other", map[string]string{"k": "git"})))
	if e := entry(t, cs, "ConfigMap/"+ns+"/other"); e.Action != apply.Unchanged {
		t.Errorf("unlabelled existing object: %s (%v), want unchanged", e.Action, e.Err)
	}
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "other"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "theirs" || got.Labels[gitsyncv1.LabelName] != "" {
		t.Errorf("unlabelled object overwritten: data %v labels %v", got.Data, got.Labels)
	}
}

// TestApplyDisabled: a gitsync.dev/apply: disabled object is neither
// created nor updated; its entry keeps the live UID (its place in the
// inventory) only when gitsync applied it before, with its owner labels.
func TestApplyDisabled(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", ns)
	f := newFixture(t, opts)
	disabled := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.SetAnnotations(map[string]string{gitsyncv1.AnnotationApply: gitsyncv1.ApplyDisabled})
		return o
	}
	ours := cm(t, ns, "ours", map[string]string{"k": "v1"})
	f.apply(t, ours)
	theirs := cm(t, ns, "theirs", map[string]string{"k": "theirs"})
	if err := env.Client.Create(context.Background(), theirs); err != nil {
		t.Fatal(err)
	}
	f.waitCached(t, ours, theirs)

	f.count.Reset()
	cs := f.apply(t,
		disabled(cm(t, ns, "absent", nil)),
		disabled(cm(t, ns, "ours", map[string]string{"k": "v2"})),
		disabled(cm(t, ns, "theirs", map[string]string{"k": "git"})))
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("%d writes, want 0:\n%s", n, testenv.JoinRequests(f.count.Requests()))
	}
	for _, tc := range []struct {
		name    string
		wantUID bool
	}{{"absent", false}, {"ours", true}, {"theirs", false}} {
		e := entry(t, cs, "ConfigMap/"+ns+"/"+tc.name)
		if e.Action != apply.Ignored || (e.UID != "") != tc.wantUID || !strings.Contains(e.Reason, "disabled") {
			t.Errorf("%s: %s uid %q reason %q, want ignored (uid kept: %v)", tc.name, e.Action, e.UID, e.Reason, tc.wantUID)
		}
	}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "absent"}, &corev1.ConfigMap{}); err == nil {
		t.Error("disabled object was created")
	}
	if got := getLive(t, ours).Object["data"].(map[string]any)["k"]; got != "v1" {
		t.Errorf("ours data.k %v, want v1 (not updated)", got)
	}
	if cs.Err() != nil {
		t.Errorf("ignored objects are not failures: %v", cs.Err())
	}
}

// TestDetectOnly: with DetectOnly an object that differs from Git is
// reported Drifted with the fields (pointers, never values) and not
// written; a missing one too.
func TestDetectOnly(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", ns)
	f := newFixture(t, opts)
	a := cm(t, ns, "a", map[string]string{"k": "v"})
	secret := obj(t, ns, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: NS}, data: {password: c2VjcmV0LWdpdA==}}`)
	gone := cm(t, ns, "gone", nil)
	f.apply(t, a, secret, gone)
	setField(t, ns, "a", "kubectl-edit", "k", "edited", false)
	live := getLive(t, secret)
	live.Object["data"] = map[string]any{"password": "c2VjcmV0LWVkaXRlZA=="}
	if err := env.Client.Update(context.Background(), live, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	f.waitCached(t, a, secret)

	f.count.Reset()
	detect := f.applier.WithDrift(nil, true)
	cs, err := detect.Apply(context.Background(), []*unstructured.Unstructured{a, secret, gone})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("%d writes in detect-only, want 0:\n%s", n, testenv.JoinRequests(f.count.Requests()))
	}
	got := map[string][]string{}
	for _, e := range cs.Drifted() {
		got[e.Subject] = e.Fields
		if e.Reason != "" {
			got[e.Subject] = []string{e.Reason}
		}
	}
	want := map[string][]string{
		"ConfigMap/" + ns + "/a":    {"/data/k"},
		"Secret/" + ns + "/s":       {"/data/password"},
		"ConfigMap/" + ns + "/gone": {"missing from the cluster"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("drifted (-want +got):\n%s", d)
	}
	if v := getLive(t, a).Object["data"].(map[string]any)["k"]; v != "edited" {
		t.Errorf("data.k %v, want the edit left", v)
	}
	if e := entry(t, cs, "ConfigMap/"+ns+"/a"); e.UID == "" {
		t.Error("a drifted object keeps its UID (and its inventory entry)")
	}
	// The applier it was made from still corrects.
	cs = f.apply(t, a, secret, gone)
	if d := cmp.Diff(map[string]apply.Action{"ConfigMap/" + ns + "/a": apply.Configured, "Secret/" + ns + "/s": apply.Configured,
		"ConfigMap/" + ns + "/gone": apply.Created}, actions(cs)); d != "" {
		t.Errorf("correcting applier (-want +got):\n%s", d)
	}
}

// newManagedFixture is newFixture with the agent's cache: only objects
// carrying the owner label.
func newManagedFixture(t *testing.T, opts apply.Options) *fixture {
	t.Helper()
	f := &fixture{count: &testenv.RequestCounter{}}
	cfg := f.count.Wrap(env.Config)
	c, err := cache.New(cfg, cache.Options{DefaultLabelSelector: livecache.ManagedSelector()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	f.cache = c
	if f.applier, err = apply.New(cfg, c, opts); err != nil {
		t.Fatal(err)
	}
	return f
}
