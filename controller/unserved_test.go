package controller_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestKindNotServedIsNotReady: a custom resource whose CRD is not in the
// cluster (it comes from another GitSync, not applied yet) is skipped, so
// the GitSync is not Ready and says why; it is retried and becomes Ready
// once the CRD exists, without a new commit.
func TestKindNotServedIsNotReady(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	startAgent(t, agentOptions{namespace: ns})
	group := rand.String(6) + ".example.com"
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/a.yaml":      configMap("a", "1"),
		"deploy/gadget.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 3\n",
	})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.RetryInterval = &metav1.Duration{Duration: 2e9}
	})
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return g.Status.LastAttemptedRevision != ""
	})
	msg := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady).Message
	if !strings.Contains(msg, "Gadget") || got.Status.LastAppliedRevision != "" {
		t.Errorf("Ready message %q / lastAppliedRevision %q: want the skipped kind named and no applied revision", msg, got.Status.LastAppliedRevision)
	}

	createCRD(t, c, testCRD(group, "Gadget"))
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	gadget := &unstructured.Unstructured{}
	gadget.SetAPIVersion(group + "/v1")
	gadget.SetKind("Gadget")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, gadget); err != nil {
		t.Errorf("Gadget not applied after its CRD appeared: %v", err)
	}
}

// TestUnservedKindIsNotAbsent: custom resources in the inventory whose CRD
// stops serving its version are neither deleted nor forgotten when they
// leave Git: they stay in the inventory, the GitSync is not Ready and says
// the kind is not served, and once it is served again they are pruned.
// Checked by restoring the old rule in inventory's inspect (a kind not
// served counts as absent): the entry leaves the inventory, the GitSync
// turns Ready and the Gadget is never pruned.
func TestUnservedKindIsNotAbsent(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	startAgent(t, agentOptions{namespace: ns})
	group := rand.String(6) + ".example.com"
	crd := testCRD(group, "Gadget")
	createCRD(t, c, crd)
	r := newRepo(t)
	r.commit(map[string]string{
		"deploy/a.yaml":      configMap("a", "1"),
		"deploy/gadget.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 3\n",
	})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.RetryInterval = &metav1.Duration{Duration: 2e9}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	gadgetID := ns + "_g_" + group + "_Gadget"

	setServed(t, c, crd, false)
	commit := r.commit(map[string]string{"deploy/gadget.yaml": ""})
	request(t, c, key, "gadget removed")
	got := waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionFalse, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAttemptedRevision, commit)
	})
	if msg := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady).Message; !strings.Contains(msg, "kind not served") || !strings.Contains(msg, "Gadget") {
		t.Errorf("Ready message %q: want the Gadget named as kind not served", msg)
	}
	if !inInventory(got, gadgetID) {
		t.Errorf("inventory %+v lost the Gadget whose kind is not served", got.Status.Inventory)
	}

	setServed(t, c, crd, true)
	got = waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, func(g *v1.GitSync) bool {
		return strings.Contains(g.Status.LastAppliedRevision, commit)
	})
	if inInventory(got, gadgetID) {
		t.Errorf("inventory %+v still lists the pruned Gadget", got.Status.Inventory)
	}
	gadget := &unstructured.Unstructured{}
	gadget.SetAPIVersion(group + "/v1")
	gadget.SetKind("Gadget")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g"}, gadget); !apierrors.IsNotFound(err) {
		t.Errorf("Gadget not pruned once served again: %v", err)
	}
}

// testCRD is a namespaced kind in group, version v1, keeping any fields:
// plural is kind in lower case plus "s".
func testCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	lower := strings.ToLower(kind)
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: lower + "s." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: lower + "s", Singular: lower, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

// createCRD creates crd, deletes it when the test ends, and waits until its
// kind is served.
func createCRD(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	eventually(t, crd.Spec.Names.Kind+" kind served", func(ctx context.Context) (bool, error) {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(crd.Spec.Group + "/v1")
		l.SetKind(crd.Spec.Names.ListKind)
		return c.List(ctx, l) == nil, nil
	})
}

// setServed switches the Gadget CRD's only version on or off and waits
// until the apiserver answers for the kind accordingly.
func setServed(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, served bool) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[0].Served = served
	if err := c.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Gadget served="+map[bool]string{true: "true", false: "false"}[served], func(ctx context.Context) (bool, error) {
		err := servedGadgets(ctx, c, crd.Spec.Group, "default")
		return (err == nil) == served, nil
	})
}

// servedGadgets lists Gadgets in ns: nil when the kind is served.
func servedGadgets(ctx context.Context, c client.Client, group, ns string) error {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(group + "/v1")
	list.SetKind("GadgetList")
	return c.List(ctx, list, client.InNamespace(ns))
}

func inInventory(gs *v1.GitSync, id string) bool {
	if gs.Status.Inventory == nil {
		return false
	}
	for _, e := range gs.Status.Inventory.Entries {
		if e.ID == id {
			return true
		}
	}
	return false
}

// TestUnservedKindHoldsTheFinalizer: a GitSync deleted while a custom
// resource of its inventory has a kind that is not served keeps its
// finalizer and says why, instead of forgetting the object; once the kind
// is served again the object is pruned and the GitSync goes. Checked by
// restoring the old rule in inventory's inspect (not served counts as
// absent): the GitSync is gone at once and the Gadget survives it.
func TestUnservedKindHoldsTheFinalizer(t *testing.T) {
	c := setup(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	startAgent(t, agentOptions{namespace: ns})
	group := rand.String(6) + ".example.com"
	crd := testCRD(group, "Gadget")
	createCRD(t, c, crd)
	r := newRepo(t)
	r.commit(map[string]string{"deploy/gadget.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata:\n  name: g\n"})
	gs := newGitSync(ns, "app", r.url(), func(g *v1.GitSync) {
		g.Spec.RetryInterval = &metav1.Duration{Duration: 2e9}
	})
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(gs)
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)

	setServed(t, c, crd, false)
	if err := c.Delete(ctx, gs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "finalizer held, naming the kind not served", func(ctx context.Context) (bool, error) {
		got := &v1.GitSync{}
		if err := c.Get(ctx, key, got); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
		return cond != nil && strings.Contains(cond.Message, "not served") && strings.Contains(cond.Message, "Gadget"), nil
	})

	setServed(t, c, crd, true)
	eventually(t, "GitSync gone once its Gadget is pruned", func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, key, &v1.GitSync{})), nil
	})
	gadget := &unstructured.Unstructured{}
	gadget.SetAPIVersion(group + "/v1")
	gadget.SetKind("Gadget")
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g"}, gadget); !apierrors.IsNotFound(err) {
		t.Errorf("Gadget not pruned by the finalizer: %v", err)
	}
}
