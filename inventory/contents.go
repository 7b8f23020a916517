package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/object"
)

// ignoredKinds are never counted as a Namespace's contents: they record
// what happened rather than what runs, and vanish with the Namespace.
var ignoredKinds = map[schema.GroupKind]bool{
	{Kind: "Event"}:                         true,
	{Group: "events.k8s.io", Kind: "Event"}: true,
}

// systemObjects are created in every Namespace by Kubernetes itself.
var systemObjects = map[schema.GroupKind]string{
	{Kind: "ServiceAccount"}: "default",
	{Kind: "ConfigMap"}:      "kube-root-ca.crt",
}

// namespaceBlocked returns why Namespace ns must stay: the first object in
// it that is not about to be deleted by this plan ("" when none). Objects
// with a controller are skipped: their controller is listed and decides.
func namespaceBlocked(ctx context.Context, c client.Reader, disc discovery.ServerResourcesInterface, ns string, deleting map[object.ID]types.UID) (string, error) {
	lists, err := disc.ServerPreferredNamespacedResources()
	if err != nil {
		// A partial answer means some kinds could not be listed: the
		// Namespace might hold anything.
		return "", fmt.Errorf("discover namespaced kinds: %w", err)
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return "", err
		}
		for _, r := range list.APIResources {
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || ignoredKinds[gk] {
				continue
			}
			var found object.ID
			err := listMeta(ctx, c, gv.WithKind(r.Kind), ns, func(item *metav1.PartialObjectMetadata) bool {
				id := object.ID{Group: gv.Group, Kind: r.Kind, Namespace: ns, Name: item.Name}
				if isSystemOrDependent(id, item, deleting) {
					return false
				}
				if uid, ok := deleting[id]; ok && uid == item.UID {
					return false
				}
				found = id
				return true
			})
			if err != nil {
				return "", fmt.Errorf("list %s in Namespace %s: %w", gk, ns, err)
			}
			if found != (object.ID{}) {
				return fmt.Sprintf("Namespace still holds %s, which this sync does not prune", found), nil
			}
		}
	}
	return "", nil
}

func isSystemOrDependent(id object.ID, item *metav1.PartialObjectMetadata, deleting map[object.ID]types.UID) bool {
	if name, ok := systemObjects[id.GroupKind()]; ok && name == id.Name {
		return true
	}
	if metav1.GetControllerOf(item) != nil {
		return true
	}
	// The endpoints controller mirrors each Service into an Endpoints of the
	// same name, without an owner reference.
	if id.GroupKind() == (schema.GroupKind{Kind: "Endpoints"}) {
		svc := id
		svc.Kind = "Service"
		_, ok := deleting[svc]
		return ok
	}
	return false
}

// crdBlocked returns why CRD name must stay: the first of its custom
// resources that this plan does not delete ("" when none).
func crdBlocked(ctx context.Context, c client.Reader, name string, deleting map[object.ID]types.UID) (string, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(object.CRDKind.WithVersion("v1"))
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	gvk, err := servedKind(crd)
	if err != nil {
		return "", err
	}
	var found object.ID
	err = listMeta(ctx, c, gvk, "", func(item *metav1.PartialObjectMetadata) bool {
		id := object.ID{Group: gvk.Group, Kind: gvk.Kind, Namespace: item.Namespace, Name: item.Name}
		if uid, ok := deleting[id]; ok && uid == item.UID {
			return false
		}
		found = id
		return true
	})
	if err != nil {
		if isNoMatch(err) || apierrors.IsNotFound(err) {
			// Not served (yet, or any more): its custom resources cannot be
			// listed, which does not mean there are none.
			return fmt.Sprintf("CustomResourceDefinition's %s cannot be listed (kind not served)", gvk.Kind), nil
		}
		return "", fmt.Errorf("list %s: %w", gvk.GroupKind(), err)
	}
	if found != (object.ID{}) {
		return fmt.Sprintf("CustomResourceDefinition still has %s, which this sync does not prune", found), nil
	}
	return "", nil
}

// servedKind returns the kind a CRD defines at a served version, preferring
// the storage version.
func servedKind(crd *unstructured.Unstructured) (schema.GroupVersionKind, error) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var version string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); !served {
			continue
		}
		name, _ := m["name"].(string)
		if storage, _ := m["storage"].(bool); storage || version == "" {
			version = name
		}
	}
	if group == "" || kind == "" || version == "" {
		return schema.GroupVersionKind{}, errors.New("CustomResourceDefinition has no served version")
	}
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, nil
}

// listMeta lists the metadata of gvk's objects in ns ("" for all) page by
// page until visit returns true.
func listMeta(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, ns string, visit func(*metav1.PartialObjectMetadata) bool) error {
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns), client.Limit(500), client.Continue(cont)); err != nil {
			return err
		}
		for i := range list.Items {
			if visit(&list.Items[i]) {
				return nil
			}
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}
