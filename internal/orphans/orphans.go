// Package orphans finds, for fault tests, objects that carry a GitSync's
// owner labels but are recorded in no inventory: what "no orphan, whatever
// fails" forbids.
package orphans

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/object"
)

// Find returns one line per object carrying the owner labels of a GitSync in
// ns (in any namespace, of any listable kind, cluster-scoped ones included)
// that is neither being deleted nor recorded in that GitSync's status
// inventory with its UID. An entry without a UID (a pending one) records any
// object of its ID. The inventory is read as plain JSON, so every entry of
// whatever status format counts.
func Find(ctx context.Context, cfg *rest.Config, ns string) ([]string, error) {
	recorded, err := Recorded(ctx, cfg, ns)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sel := v1.LabelNamespace + "=" + ns + "," + v1.LabelName
	var orphans []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue
			}
			items, err := mc.Resource(gv.WithResource(res.Name)).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", res.Name, err)
			}
			for _, it := range items.Items {
				if it.DeletionTimestamp != nil {
					continue
				}
				id := object.ID{Group: gv.Group, Kind: res.Kind, Namespace: it.Namespace, Name: it.Name}
				owner := it.Labels[v1.LabelName]
				if uid, ok := recorded[owner][id.Key()]; !ok || (uid != "" && uid != it.UID) {
					orphans = append(orphans, fmt.Sprintf("%s (uid %s, owner GitSync %s/%s, recorded uid %q)", id, it.UID, ns, owner, uid))
				}
			}
		}
	}
	return orphans, nil
}

// Recorded returns, per GitSync name in ns, the inventory keys its status
// lists with their UIDs: every JSON object below status.inventory that has
// an "id".
func Recorded(ctx context.Context, cfg *rest.Config, ns string) (map[string]map[string]types.UID, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := dc.Resource(v1.GroupVersion.WithResource("gitsyncs")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]types.UID{}
	for _, gs := range list.Items {
		ids := map[string]types.UID{}
		inv, _, _ := unstructured.NestedFieldNoCopy(gs.Object, "status", "inventory")
		collectIDs(inv, ids)
		out[gs.GetName()] = ids
	}
	return out, nil
}

func collectIDs(v any, into map[string]types.UID) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["id"].(string); ok {
			uid, _ := v["uid"].(string)
			into[id] = types.UID(uid)
		}
		for _, x := range v {
			collectIDs(x, into)
		}
	case []any:
		for _, x := range v {
			collectIDs(x, into)
		}
	}
}
