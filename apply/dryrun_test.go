package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/object"
)

// TestApplyWithoutOwnerLabelsKeepsThem: objects a sync applied keep its owner
// labels when an Applier without OwnerLabels (a CLI apply without --name)
// applies the same manifests, or changed ones.
func TestApplyWithoutOwnerLabelsKeepsThem(t *testing.T) {
	ns := env.Namespace(t)
	owned := apply.DefaultOptions()
	owned.OwnerLabels = object.OwnerLabels("web", "prod")
	f := newFixture(t, owned)
	same, changed := cm(t, ns, "same", nil), cm(t, ns, "changed", nil)
	f.apply(t, same, changed)

	g := newFixture(t, apply.DefaultOptions())
	g.waitCached(t, same, changed)
	g.count.Reset()
	cs := g.apply(t, same, cm(t, ns, "changed", map[string]string{"a": "2"}))
	want := map[string]apply.Action{"ConfigMap/" + ns + "/same": apply.Unchanged, "ConfigMap/" + ns + "/changed": apply.Configured}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("apply without owner labels (-want +got):\n%s", d)
	}
	if n := g.count.Mutating(); n != 1 {
		t.Errorf("want 1 write (the changed ConfigMap), got %d:\n%s", n, testenv.JoinRequests(g.count.Requests()))
	}
	for _, o := range []*unstructured.Unstructured{same, changed} {
		if got := getLive(t, o).GetLabels(); !object.OwnedBy(got, "web", "prod") {
			t.Errorf("%s lost its owner labels: %v", o.GetName(), got)
		}
	}
}

// TestDryRunReportsRefusals: a dry run of a change fails its entry with the
// error the real apply would report, takes kubectl's fields back as the real
// apply would, and writes nothing.
func TestDryRunReportsRefusals(t *testing.T) {
	tests := []struct {
		name string
		// setup runs against the applied Deployment "web" (selector "one").
		setup        func(t *testing.T, ns string)
		desired      func(t *testing.T, ns string) *unstructured.Unstructured
		force        bool
		wantAction   apply.Action
		wantErr      func(error) bool
		wantTookOver []string
		wantRecreate bool
	}{
		{name: "immutable field", desired: selector("two"), wantAction: apply.Failed,
			wantErr: func(err error) bool {
				var ie *apply.ImmutableError
				return errors.As(err, &ie) && slicesContain(ie.Fields, "spec.selector")
			}},
		{name: "immutable field recreated with force", desired: selector("two"), force: true,
			wantAction: apply.Configured, wantRecreate: true},
		{name: "invalid value", desired: replicas(-1), wantAction: apply.Failed, wantErr: apierrors.IsInvalid},
		{name: "conflict with another manager", setup: scaleAs("hpa-controller"), desired: replicas(5),
			wantAction: apply.Failed, wantErr: func(err error) bool {
				var ce *apply.ConflictError
				return errors.As(err, &ce) && cmp.Equal(ce.Managers(), []string{"hpa-controller"})
			}},
		{name: "kubectl's field is taken back", setup: scaleAs("kubectl"), desired: replicas(5),
			wantAction: apply.Configured, wantTookOver: []string{"kubectl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			web := selector("one")(t, ns)
			newFixture(t, apply.DefaultOptions()).apply(t, web)
			if tt.setup != nil {
				tt.setup(t, ns)
			}
			before := getLive(t, web)

			opts := apply.DefaultOptions()
			opts.DryRun, opts.Force = true, tt.force
			f := newFixture(t, opts)
			f.count.Reset()
			e := f.apply(t, tt.desired(t, ns)).Entries[0]
			if e.Action != tt.wantAction {
				t.Fatalf("action %s (err %v), want %s", e.Action, e.Err, tt.wantAction)
			}
			if tt.wantErr != nil {
				if e.Err == nil || !tt.wantErr(e.Err) {
					t.Errorf("error %v (%T) is not the one the real apply reports", e.Err, errors.Unwrap(e.Err))
				}
				if want := "Deployment/" + ns + "/web would fail: "; e.Err != nil && !strings.HasPrefix(e.Err.Error(), want) {
					t.Errorf("error %q should start with %q", e.Err, want)
				}
			} else if e.Err != nil {
				t.Errorf("unexpected error %v", e.Err)
			}
			if d := cmp.Diff(tt.wantTookOver, e.TookOver); d != "" {
				t.Errorf("TookOver (-want +got):\n%s", d)
			}
			if e.Recreated != tt.wantRecreate {
				t.Errorf("Recreated = %v, want %v", e.Recreated, tt.wantRecreate)
			}
			if n := f.count.Mutating(); n != 0 {
				t.Errorf("dry run made %d mutating requests:\n%s", n, testenv.JoinRequests(f.count.Requests()))
			}
			after := getLive(t, web)
			if after.GetResourceVersion() != before.GetResourceVersion() || after.GetUID() != before.GetUID() {
				t.Errorf("dry run changed the object: resourceVersion %s → %s, UID %s → %s",
					before.GetResourceVersion(), after.GetResourceVersion(), before.GetUID(), after.GetUID())
			}
		})
	}
}

// selector returns the Deployment "web" with the given selector.
func selector(sel string) func(t *testing.T, ns string) *unstructured.Unstructured {
	return func(t *testing.T, ns string) *unstructured.Unstructured {
		return obj(t, ns, strings.ReplaceAll(deployment, "SEL", sel))
	}
}

// replicas returns the Deployment "web" (selector "one") with spec.replicas set.
func replicas(n int64) func(t *testing.T, ns string) *unstructured.Unstructured {
	return func(t *testing.T, ns string) *unstructured.Unstructured {
		d := selector("one")(t, ns)
		if err := unstructured.SetNestedField(d.Object, n, "spec", "replicas"); err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// scaleAs sets the Deployment's replicas to 3 with a forced server-side apply
// as manager, which then owns the field.
func scaleAs(manager string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		t.Helper()
		patch := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": ns},
			"spec":     map[string]any{"replicas": int64(3)},
		}}
		forceApply(t, patch, manager)
	}
}

// TestDryRunValidatesNewObjects: a dry run sends objects that do not exist
// to the apiserver as a dry-run create, so one it would reject fails with the
// reason, while objects in a Namespace the same run creates are still
// reported as created.
func TestDryRunValidatesNewObjects(t *testing.T) {
	ns := env.Namespace(t)
	opts := apply.DefaultOptions()
	opts.DryRun = true
	f := newFixture(t, opts)
	badSvc := obj(t, ns, `
apiVersion: v1
kind: Service
metadata: {name: bad, namespace: NS}
spec:
  ports: [{port: 700000}]
`)
	newNS := obj(t, ns, "{apiVersion: v1, kind: Namespace, metadata: {name: NS-new}}")
	inNewNS := cm(t, ns+"-new", "inside", nil)
	inMissingNS := cm(t, ns+"-nowhere", "lost", nil)
	cs := f.apply(t, cm(t, ns, "good", nil), badSvc, inNewNS, newNS, inMissingNS)

	want := map[string]apply.Action{
		"ConfigMap/" + ns + "/good":         apply.Created,
		"Service/" + ns + "/bad":            apply.Failed,
		"Namespace/" + ns + "-new":          apply.Created,
		"ConfigMap/" + ns + "-new/inside":   apply.Created,
		"ConfigMap/" + ns + "-nowhere/lost": apply.Failed,
	}
	if d := cmp.Diff(want, actions(cs)); d != "" {
		t.Fatalf("actions (-want +got):\n%s", d)
	}
	e := entry(t, cs, "Service/"+ns+"/bad")
	if !apierrors.IsInvalid(e.Err) || !strings.HasPrefix(e.Err.Error(), "Service/"+ns+"/bad would fail: ") || !strings.Contains(e.Err.Error(), "700000") {
		t.Errorf("error %v should be the apiserver's rejection of port 700000", e.Err)
	}
	if e := entry(t, cs, "ConfigMap/"+ns+"-nowhere/lost"); !apierrors.IsNotFound(e.Err) {
		t.Errorf("object in a Namespace nobody creates: error %v, want not found", e.Err)
	}
	if n := f.count.Mutating(); n != 0 {
		t.Errorf("dry run made %d mutating requests:\n%s", n, testenv.JoinRequests(f.count.Requests()))
	}
	if n := f.count.DryRuns.Load(); n < 4 {
		t.Errorf("want a dry-run per new object, got %d:\n%s", n, testenv.JoinRequests(f.count.Requests()))
	}
}

// TestCreateRejectedByServerWithoutDryRun: outside a dry run a missing object
// is not validated beforehand; the create itself reports the rejection.
func TestCreateRejectedByServerWithoutDryRun(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, apply.DefaultOptions())
	bad := obj(t, ns, "{apiVersion: v1, kind: Service, metadata: {name: bad, namespace: NS}, spec: {ports: [{port: 700000}]}}")
	f.count.Reset()
	e := f.apply(t, bad).Entries[0]
	if e.Action != apply.Failed || !apierrors.IsInvalid(e.Err) || !strings.Contains(e.Err.Error(), "apply failed") {
		t.Errorf("action %s (%v), want failed as invalid", e.Action, e.Err)
	}
	if n := f.count.DryRuns.Load(); n != 0 {
		t.Errorf("the agent path made %d dry-runs, want 0:\n%s", n, testenv.JoinRequests(f.count.Requests()))
	}
}

// forceApply server-side applies patch as manager, taking its fields.
func forceApply(t *testing.T, patch *unstructured.Unstructured, manager string) {
	t.Helper()
	if err := env.Client.Patch(context.Background(), patch, client.Apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}
