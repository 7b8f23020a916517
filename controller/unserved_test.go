package controller_test

import (
	"context"
	"strings"
	"testing"

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

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
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
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	waitCondition(t, c, key, v1.ConditionReady, metav1.ConditionTrue, nil)
	gadget := &unstructured.Unstructured{}
	gadget.SetAPIVersion(group + "/v1")
	gadget.SetKind("Gadget")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "g"}, gadget); err != nil {
		t.Errorf("Gadget not applied after its CRD appeared: %v", err)
	}
}
