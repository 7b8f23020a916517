package apply_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

const configMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: NAME, namespace: NS}
data: {a: "1", b: "2"}
`

func cm(t *testing.T, ns, name string, data map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := obj(t, ns, strings.Replace(configMap, "NAME", name, 1))
	if data != nil {
		d := map[string]any{}
		for k, v := range data {
			d[k] = v
		}
		u.Object["data"] = d
	}
	return u
}

func TestApplyActions(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", "gitsync-system")
	f := newFixture(t, opts)
	svc := obj(t, ns, `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NS}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`)
	a, b := cm(t, ns, "a", nil), cm(t, ns, "b", nil)

	cs := f.apply(t, a, b, svc)
	want := map[string]apply.Action{"ConfigMap/" + ns + "/a": apply.Created, "ConfigMap/" + ns + "/b": apply.Created, "Service/" + ns + "/web": apply.Created}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("first apply (-want +got):\n%s", d)
	}
	if got := getLive(t, a).GetLabels(); got[gitsyncv1.LabelName] != "app" || got[gitsyncv1.LabelNamespace] != "gitsync-system" {
		t.Errorf("owner labels not stamped: %v", got)
	}
	if e := entry(t, cs, "ConfigMap/"+ns+"/a"); e.UID != getLive(t, a).GetUID() {
		t.Errorf("entry UID %q, live UID %q", e.UID, getLive(t, a).GetUID())
	}
	f.waitCached(t, a, b, svc)

	b2 := cm(t, ns, "b", map[string]string{"a": "1", "b": "changed"})
	cs = f.apply(t, a, b2, svc)
	want["ConfigMap/"+ns+"/a"], want["ConfigMap/"+ns+"/b"], want["Service/"+ns+"/web"] = apply.Unchanged, apply.Configured, apply.Unchanged
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("second apply (-want +got):\n%s", d)
	}
	if got := getLive(t, b2).Object["data"]; !cmp.Equal(got, b2.Object["data"]) {
		t.Errorf("b not configured: %v", got)
	}
	if cs.Summary() != "1 configured, 2 unchanged" {
		t.Errorf("Summary() = %q", cs.Summary())
	}
}

func TestFieldRemovedFromGitIsRemoved(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	before := cm(t, ns, "c", map[string]string{"keep": "1", "drop": "2"})
	before.SetLabels(map[string]string{"tier": "web"})
	f.apply(t, before)
	f.waitCached(t, before)

	after := cm(t, ns, "c", map[string]string{"keep": "1"})
	cs := f.apply(t, after)
	if e := cs.Entries[0]; e.Action != apply.Configured {
		t.Fatalf("action %s (%v), want configured", e.Action, e.Err)
	}
	live := getLive(t, after)
	if d := cmp.Diff(map[string]any{"keep": "1"}, live.Object["data"]); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if _, ok := live.GetLabels()["tier"]; ok {
		t.Errorf("label removed from Git still live: %v", live.GetLabels())
	}
}

// setField writes data[key]=value on a ConfigMap as manager, with an update
// (like kubectl edit) or a forced apply (like another controller).
func setField(t *testing.T, ns, name, manager, key, value string, asApply bool) {
	t.Helper()
	ctx := context.Background()
	if asApply {
		patch := cm(t, ns, name, map[string]string{key: value})
		if err := env.Client.Patch(ctx, patch, client.Apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		return
	}
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, live); err != nil {
		t.Fatal(err)
	}
	live.Data[key] = value
	if err := env.Client.Update(ctx, live, client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

func TestConflicts(t *testing.T) {
	tests := []struct {
		name         string
		manager      string
		asApply      bool
		force        bool
		wantAction   apply.Action
		wantValue    string
		wantTookOver []string
	}{
		{name: "other manager is reported and left alone", manager: "hpa-controller", asApply: true,
			wantAction: apply.Failed, wantValue: "theirs"},
		{name: "other manager is overridden with force", manager: "hpa-controller", asApply: true, force: true,
			wantAction: apply.Configured, wantValue: "1"},
		{name: "kubectl edit is taken back", manager: "kubectl-edit",
			wantAction: apply.Configured, wantValue: "1", wantTookOver: []string{"kubectl-edit"}},
		{name: "kubectl server-side apply is taken back", manager: "kubectl", asApply: true,
			wantAction: apply.Configured, wantValue: "1", wantTookOver: []string{"kubectl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			f := newFixture(t, apply.DefaultOptions())
			desired := cm(t, ns, "x", map[string]string{"a": "1"})
			f.apply(t, desired)
			setField(t, ns, "x", tt.manager, "a", "theirs", tt.asApply)
			f.waitCached(t, desired)

			opts := apply.DefaultOptions()
			opts.Force = tt.force
			g := newFixture(t, opts)
			cs := g.apply(t, desired)
			e := cs.Entries[0]
			if e.Action != tt.wantAction {
				t.Fatalf("action %s (err %v), want %s", e.Action, e.Err, tt.wantAction)
			}
			if got := getLive(t, desired).Object["data"].(map[string]any)["a"]; got != tt.wantValue {
				t.Errorf("live data.a = %v, want %s", got, tt.wantValue)
			}
			if d := cmp.Diff(tt.wantTookOver, e.TookOver); d != "" {
				t.Errorf("TookOver (-want +got):\n%s", d)
			}
			if tt.wantAction != apply.Failed {
				return
			}
			var ce *apply.ConflictError
			if !errors.As(e.Err, &ce) {
				t.Fatalf("error %v is not a *ConflictError", e.Err)
			}
			if d := cmp.Diff([]apply.Conflict{{Manager: tt.manager, Field: ".data.a"}}, ce.Conflicts); d != "" {
				t.Errorf("conflicts (-want +got):\n%s", d)
			}
			if msg := e.Err.Error(); !strings.HasPrefix(msg, "ConfigMap/"+ns+"/x apply failed: ") || !strings.Contains(msg, tt.manager) {
				t.Errorf("error %q should name the object and the manager", msg)
			}
			if cs.Err() == nil {
				t.Error("ChangeSet.Err() is nil with a failed entry")
			}
		})
	}
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  selector: {matchLabels: {app: SEL}}
  template:
    metadata: {labels: {app: SEL}}
    spec: {containers: [{name: web, image: nginx}]}
`

func TestImmutableField(t *testing.T) {
	tests := []struct {
		name       string
		annotation bool
		force      bool
		wantAction apply.Action
	}{
		{name: "reported", wantAction: apply.Failed},
		{name: "recreated with annotation", annotation: true, wantAction: apply.Configured},
		{name: "recreated with force", force: true, wantAction: apply.Configured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			opts := apply.DefaultOptions()
			opts.Force = tt.force
			f := newFixture(t, opts)
			v1 := obj(t, ns, strings.ReplaceAll(deployment, "SEL", "one"))
			f.apply(t, v1)
			oldUID := getLive(t, v1).GetUID()
			f.waitCached(t, v1)

			v2 := obj(t, ns, strings.ReplaceAll(deployment, "SEL", "two"))
			if tt.annotation {
				v2.SetAnnotations(map[string]string{gitsyncv1.AnnotationRecreate: "enabled"})
			}
			e := f.apply(t, v2).Entries[0]
			if e.Action != tt.wantAction {
				t.Fatalf("action %s (err %v), want %s", e.Action, e.Err, tt.wantAction)
			}
			live := getLive(t, v2)
			if tt.wantAction == apply.Failed {
				var ie *apply.ImmutableError
				if !errors.As(e.Err, &ie) || !slicesContain(ie.Fields, "spec.selector") {
					t.Fatalf("error %v is not an *ImmutableError on spec.selector", e.Err)
				}
				if live.GetUID() != oldUID {
					t.Error("object was recreated without opt-in")
				}
				return
			}
			if !e.Recreated || live.GetUID() == oldUID || e.UID != live.GetUID() {
				t.Errorf("not recreated: Recreated=%v old UID %s, live UID %s, entry UID %s", e.Recreated, oldUID, live.GetUID(), e.UID)
			}
		})
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestInvalidObjectFailsOnlyItsEntry(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	var calls, last, total atomic.Int64
	opts.Progress = func(done, n int) {
		calls.Add(1)
		total.Store(int64(n))
		for { // keep the highest count seen: workers report concurrently
			prev := last.Load()
			if int64(done) <= prev || last.CompareAndSwap(prev, int64(done)) {
				break
			}
		}
	}
	f := newFixture(t, opts)
	var objs []*unstructured.Unstructured
	for _, n := range []string{"ok-1", "ok-2", "ok-3", "ok-4"} {
		objs = append(objs, cm(t, ns, n, nil))
	}
	objs = append(objs, cm(t, ns, "bad", map[string]string{"not a key!": "x"}))
	cs := f.apply(t, objs...)
	want := map[string]apply.Action{}
	for _, o := range objs {
		want["ConfigMap/"+ns+"/"+o.GetName()] = apply.Created
	}
	want["ConfigMap/"+ns+"/bad"] = apply.Failed
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	if got := len(cs.Failed()); got != 1 {
		t.Errorf("Failed() has %d entries, want 1", got)
	}
	if err := cs.Err(); err == nil || !strings.Contains(err.Error(), "ConfigMap/"+ns+"/bad apply failed") {
		t.Errorf("Err() = %v", err)
	}
	// Progress counted every object, the failed one too, out of the set.
	if calls.Load() != 5 || last.Load() != 5 || total.Load() != 5 {
		t.Errorf("Progress: %d calls, last done %d of %d; want 5, 5 of 5", calls.Load(), last.Load(), total.Load())
	}
}

const crd = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.GROUP}
spec:
  group: GROUP
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

const widget = `
apiVersion: GROUP/v1
kind: Widget
metadata: {name: w1, namespace: NS}
spec: {size: 3}
`

func TestCRDAndCustomResourceInOneSet(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".example.com"
	f := newFixture(t, apply.DefaultOptions())
	w := obj(t, ns, strings.ReplaceAll(widget, "GROUP", group))
	c := obj(t, ns, strings.ReplaceAll(crd, "GROUP", group))
	nsObj := obj(t, ns, "{apiVersion: v1, kind: Namespace, metadata: {name: NS-extra}}")
	w2 := obj(t, ns+"-extra", strings.ReplaceAll(widget, "GROUP", group))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), c)
		_ = env.Client.Delete(context.Background(), nsObj)
	})

	cs := f.apply(t, w, w2, c, nsObj) // the custom resources first: staging must reorder
	for _, e := range cs.Entries {
		if e.Action != apply.Created {
			t.Errorf("%s: %s (%v), want created", e.Subject, e.Action, e.Err)
		}
	}
	if got := getLive(t, w).Object["spec"]; !cmp.Equal(got, map[string]any{"size": int64(3)}) {
		t.Errorf("widget spec %v", got)
	}
	// The CRD is new in this run, so no Widget can exist: their live reads
	// are skipped and no informer for widgets is started mid-apply.
	if log := testenv.JoinRequests(f.count.Requests()); strings.Contains(log, "GET") && strings.Contains(log, "/widgets?") {
		t.Errorf("Widgets were listed or watched while their CRD was new:\n%s", log)
	}

	// Applied again, the Widgets are read (the CRD now exists) and unchanged.
	f.waitCached(t, w, w2, c, nsObj)
	cs = f.apply(t, w, w2, c, nsObj)
	for _, e := range cs.Entries {
		if e.Action != apply.Unchanged {
			t.Errorf("second apply %s: %s (%v), want unchanged", e.Subject, e.Action, e.Err)
		}
	}
}

func TestCustomResourceSkippedWhenCRDFails(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".example.com"
	f := newFixture(t, apply.DefaultOptions())
	bad := obj(t, ns, strings.ReplaceAll(crd, "GROUP", group))
	bad.SetName("wrong-name." + group) // must be <plural>.<group>: invalid
	w := obj(t, ns, strings.ReplaceAll(widget, "GROUP", group))
	other := cm(t, ns, "unrelated", nil)

	cs := f.apply(t, bad, w, other)
	want := map[string]apply.Action{
		"CustomResourceDefinition/wrong-name." + group: apply.Failed,
		"Widget." + group + "/" + ns + "/w1":           apply.Skipped,
		"ConfigMap/" + ns + "/unrelated":               apply.Created,
	}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	if e := entry(t, cs, "Widget."+group+"/"+ns+"/w1"); e.Err == nil || !strings.Contains(e.Err.Error(), "CustomResourceDefinition/wrong-name."+group) {
		t.Errorf("skip reason %v should name the CRD", e.Err)
	}
}

func TestUnknownKindIsSkipped(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	cs := f.apply(t, obj(t, ns, "{apiVersion: nowhere.example.com/v1, kind: Gadget, metadata: {name: g, namespace: NS}}"))
	if e := cs.Entries[0]; e.Action != apply.Skipped || e.Err == nil {
		t.Errorf("action %s (%v), want skipped with a reason", e.Action, e.Err)
	}
}

func TestSecretValuesNeverShown(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.Diff = true
	f := newFixture(t, opts)
	secret := func(value string, immutable bool) *unstructured.Unstructured {
		s := obj(t, ns, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: NS}, type: Opaque}`)
		s.Object["stringData"] = map[string]any{"password": value}
		if immutable {
			s.Object["immutable"] = true
		}
		return s
	}
	check := func(e apply.Entry, values ...string) {
		t.Helper()
		text := e.Diff
		if e.Err != nil {
			text += e.Err.Error()
		}
		for _, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("%s entry shows a secret value:\n%s", e.Action, text)
			}
		}
	}
	e := f.apply(t, secret("hunter2-first", true)).Entries[0]
	if e.Action != apply.Created || e.Diff == "" {
		t.Fatalf("create: action %s, diff %q, err %v", e.Action, e.Diff, e.Err)
	}
	check(e, "hunter2-first", "aHVudGVyMi1maXJzdA") // and its base64
	f.waitCached(t, secret("", false))

	e = f.apply(t, secret("hunter2-second", true)).Entries[0] // immutable Secret: the change is refused
	if e.Action != apply.Failed {
		t.Fatalf("change of an immutable Secret: action %s, want failed", e.Action)
	}
	check(e, "hunter2-first", "hunter2-second", "aHVudGVyMi1maXJzdA", "aHVudGVyMi1zZWNvbmQ")
}

func TestDryRunWritesNothing(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.DryRun = true
	f := newFixture(t, opts)
	group := ns + ".example.com"
	c := obj(t, ns, strings.ReplaceAll(crd, "GROUP", group))
	w := obj(t, ns, strings.ReplaceAll(widget, "GROUP", group))
	cs := f.apply(t, cm(t, ns, "d", nil), c, w)
	for _, e := range cs.Entries {
		if e.Action != apply.Created {
			t.Errorf("%s: %s (%v), want created", e.Subject, e.Action, e.Err)
		}
	}
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("dry run made %d mutating requests", n)
	}
}

func TestPruneDisabledObjectIsApplied(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	o := cm(t, ns, "kept", nil)
	o.SetAnnotations(map[string]string{gitsyncv1.AnnotationPrune: gitsyncv1.PruneDisabled})
	if e := f.apply(t, o).Entries[0]; e.Action != apply.Created {
		t.Fatalf("action %s (%v), want created", e.Action, e.Err)
	}
	getLive(t, o)
}

func TestReapplyUnchangedMakesNoRequests(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.OwnerLabels = object.OwnerLabels("app", "gitsync-system")
	f := newFixture(t, opts)
	var objs []*unstructured.Unstructured
	for _, n := range []string{"r1", "r2", "r3", "r4", "r5"} {
		objs = append(objs, cm(t, ns, n, nil))
	}
	objs = append(objs, obj(t, ns, strings.ReplaceAll(deployment, "SEL", "web")),
		obj(t, ns, `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: NS}, stringData: {k: v}}`),
		obj(t, ns, `{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: NS}}`))
	f.apply(t, objs...)
	f.waitCached(t, objs...)

	// First re-apply: nothing is written. The Secret's stringData cannot be
	// compared locally, so diff may dry-run it once and memoise the answer.
	f.count.Reset()
	cs := f.apply(t, objs...)
	for _, e := range cs.Entries {
		if e.Action != apply.Unchanged {
			t.Errorf("%s: %s (%v), want unchanged", e.Subject, e.Action, e.Err)
		}
	}
	if mut := f.count.Mutating(); mut != 0 {
		t.Errorf("re-apply made %d mutating requests, want 0:\n%s", mut, testenv.JoinRequests(f.count.Requests()))
	}

	// Steady state: caches and memo are warm, so not a single request.
	f.count.Reset()
	cs = f.apply(t, objs...)
	if got := cs.Summary(); got != "8 unchanged" {
		t.Errorf("second re-apply: %s", got)
	}
	if all := f.count.All.Load(); all != 0 {
		t.Errorf("re-apply with warm caches made %d requests, want 0:\n%s", all, testenv.JoinRequests(f.count.Requests()))
	}

	// Without a cache (the CLI) reads cost requests, but nothing is written.
	c := &testenv.RequestCounter{}
	direct, err := apply.New(c.Wrap(env.Config), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	cs, err = direct.Apply(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.Summary(); got != "8 unchanged" {
		t.Errorf("direct re-apply: %s", got)
	}
	if mut := c.Mutating(); mut != 0 {
		t.Errorf("direct re-apply made %d mutating requests, want 0:\n%s", mut, testenv.JoinRequests(c.Requests()))
	}
}
