package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"gitsync.dev/gitsync/object"
)

// TestSharedNamespaceSurvives: a Namespace of ours that holds a foreign
// object is kept even when Namespaces may be pruned; our object in it goes.
func TestSharedNamespaceSurvives(t *testing.T) {
	home := env.Namespace(t)
	c := watchClient(t)
	shared := createNamespace(t, object.OwnerLabels(owner, home))
	mine := oursIn(t, home, shared.ID.Name, "mine")
	createCM(t, shared.ID.Name, "theirs", nil, nil)
	anchor := ours(t, home, "anchor")
	opts := testOptions(t, home)
	opts.AllowNamespaces = true

	res, err := prune(t, c, New(anchor, shared, mine), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := map[string]Action{shared.ID.String(): ActionKept, mine.ID.String(): ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if got := reasons(res)[shared.ID.String()]; !strings.Contains(got, "/theirs") {
		t.Errorf("reason %q does not name the foreign object", got)
	}
	if !exists(t, shared) {
		t.Error("shared Namespace deleted")
	}
}

// TestNamespaceOnlyOursPrunedWhenAllowed: a Namespace holding only objects
// this sync prunes (plus what Kubernetes puts in every Namespace) is kept
// unless AllowNamespaces, then deleted after its contents.
func TestNamespaceOnlyOursPrunedWhenAllowed(t *testing.T) {
	home := env.Namespace(t)
	c := watchClient(t)
	nsEntry := createNamespace(t, object.OwnerLabels(owner, home))
	inside := oursIn(t, home, nsEntry.ID.Name, "inside")
	anchor := ours(t, home, "anchor")
	waitForSystemObjects(t, nsEntry.ID.Name)
	opts := testOptions(t, home)

	res, err := prune(t, c, New(anchor, nsEntry, inside), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute without AllowNamespaces: %v", err)
	}
	if got := actions(res)[nsEntry.ID.String()]; got != ActionKept || !exists(t, nsEntry) {
		t.Fatalf("without AllowNamespaces: action %q, exists %v; want kept", got, exists(t, nsEntry))
	}

	// A later sync that may prune Namespaces, with the Namespace recorded again.
	opts.AllowNamespaces = true
	inner := oursIn(t, home, nsEntry.ID.Name, "inner")
	res, err = prune(t, c, New(anchor, nsEntry, inner), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute with AllowNamespaces: %v", err)
	}
	want := map[string]Action{nsEntry.ID.String(): ActionPruned, inner.ID.String(): ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if order := subjects(res); len(order) == 0 || order[len(order)-1] != nsEntry.ID.String() {
		t.Errorf("Namespace was not deleted last: %v", order)
	}
	if exists(t, nsEntry) {
		t.Error("Namespace still exists")
	}
}

// waitForSystemObjects waits until the controller-manager has put the
// objects every Namespace gets into ns, so the test sees a real Namespace.
func waitForSystemObjects(t *testing.T, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for gk, name := range systemObjects {
			e := Entry{ID: object.ID{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: name}, Version: "v1"}
			if _, err := getMeta(ctx, env.Client, e.ID.GroupKind().WithVersion("v1"), e.ID); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("Namespace %s never got its default objects: %v", ns, err)
	}
}

// TestCRDAndItsResources: custom resources go in the first stage, the CRD
// only when allowed and last; a CRD with a foreign custom resource stays.
func TestCRDAndItsResources(t *testing.T) {
	home := env.Namespace(t)
	c := watchClient(t)
	anchor := ours(t, home, "anchor")
	crd := createCRD(t, object.OwnerLabels(owner, home))
	widget := createWidget(t, crd, home, "w1", object.OwnerLabels(owner, home))
	opts := testOptions(t, home)

	res, err := prune(t, c, New(anchor, crd.entry, widget), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute without AllowCRDs: %v", err)
	}
	want := map[string]Action{crd.entry.ID.String(): ActionKept, widget.ID.String(): ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("without AllowCRDs, actions (-want +got):\n%s", diff)
	}
	if !exists(t, crd.entry) {
		t.Fatal("CRD deleted without AllowCRDs")
	}

	// With a foreign custom resource, even an allowed CRD stays.
	opts.AllowCRDs = true
	foreign := createWidget(t, crd, home, "foreign", nil)
	res, err = prune(t, c, New(anchor, crd.entry), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute with a foreign CR: %v", err)
	}
	if got := reasons(res)[crd.entry.ID.String()]; !strings.Contains(got, "/foreign") || !exists(t, crd.entry) {
		t.Fatalf("with a foreign CR: reason %q, CRD exists %v; want kept naming the CR", got, exists(t, crd.entry))
	}

	// Once only ours remain, custom resources go first, then the CRD. Had
	// the CRD gone first, the cascade would have left the CR "absent".
	if err := c.Delete(context.Background(), widgetObject(crd, foreign)); err != nil {
		t.Fatal(err)
	}
	w2 := createWidget(t, crd, home, "w2", object.OwnerLabels(owner, home))
	res, err = prune(t, c, New(anchor, crd.entry, w2), New(anchor), opts)
	if err != nil {
		t.Fatalf("Execute with AllowCRDs: %v", err)
	}
	if diff := cmp.Diff([]string{w2.ID.String(), crd.entry.ID.String()}, subjects(res)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	want = map[string]Action{crd.entry.ID.String(): ActionPruned, w2.ID.String(): ActionPruned}
	if diff := cmp.Diff(want, actions(res)); diff != "" {
		t.Errorf("with AllowCRDs, actions (-want +got):\n%s", diff)
	}
	if exists(t, crd.entry) {
		t.Error("CRD still exists")
	}
}

// testCRD is a CRD made for one test, with a random group.
type testCRD struct {
	entry Entry
	group string
}

func createCRD(t *testing.T, labels map[string]string) testCRD {
	t.Helper()
	ctx := context.Background()
	group := rand.String(6) + ".example.com"
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: labels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, clientKey(crd.Name), crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD never established: %v", err)
	}
	return testCRD{
		entry: Entry{ID: object.ID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: crd.Name}, UID: crd.UID, Version: "v1"},
		group: group,
	}
}

func widgetObject(crd testCRD, e Entry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(crd.group + "/v1")
	u.SetKind("Widget")
	u.SetNamespace(e.ID.Namespace)
	u.SetName(e.ID.Name)
	return u
}

func createWidget(t *testing.T, crd testCRD, ns, name string, labels map[string]string) Entry {
	t.Helper()
	e := Entry{ID: object.ID{Group: crd.group, Kind: "Widget", Namespace: ns, Name: name}, Version: "v1"}
	u := widgetObject(crd, e)
	u.SetLabels(labels)
	if err := watchClient(t).Create(context.Background(), u); err != nil {
		t.Fatalf("create Widget: %v", err)
	}
	e.UID = u.GetUID()
	return e
}

// subjects lists the subjects of the result's pruned entries in the order
// they were handled.
func subjects(res *PruneResult) []string {
	var out []string
	for _, e := range res.Entries {
		if e.Action == ActionPruned {
			out = append(out, e.ID.String())
		}
	}
	return out
}
