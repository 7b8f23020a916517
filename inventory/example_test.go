package inventory_test

import (
	"fmt"

	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

// The stale objects of a sync are those of the previous inventory that the
// new revision no longer has; Plan checks each live before anything goes.
func ExampleInventory_Diff() {
	web := object.ID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "web"}
	cfg := object.ID{Kind: "ConfigMap", Namespace: "prod", Name: "web-config"}
	old := inventory.New(inventory.Entry{ID: web, UID: "u1"}, inventory.Entry{ID: cfg, UID: "u2"})
	desired := inventory.New(inventory.Entry{ID: web, UID: "u1"})
	for _, e := range old.Diff(desired) {
		fmt.Println(e.ID, e.ID.Key(), inventory.StageOf(e.ID))
	}
	// Output: ConfigMap/prod/web-config prod_web-config__ConfigMap namespaced objects
}
