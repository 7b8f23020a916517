// Package inventory records which objects a sync applied and decides, safely,
// which of them may be pruned.
//
// Contract: an object is deleted only when it is in the previous inventory, is
// absent from the new one, still carries this sync's owner labels, its live
// UID equals the recorded one, and it is not annotated gitsync.dev/prune:
// disabled. Nothing is pruned unless the caller says fetch, render and apply
// of the new revision all succeeded; an empty desired inventory prunes only
// when allowed; more than MaxShare of the inventory at once is refused.
// Namespaces and CRDs are deleted only when allowed and only when they hold
// nothing this plan does not delete. Deletes carry UID and resourceVersion
// preconditions and run in reverse apply order (custom resources, namespaced
// objects, cluster objects, then Namespaces and CRDs), each stage waited for
// by watch with a bound. Failed deletions stay in the inventory and are
// retried; they are reported, never forgotten.
//
// The package never applies anything and never deletes an object it did not
// first read and check. Plan is read-only; Execute and Orphan write.
//
// Pending entries. A sync records the objects it is about to create before
// it applies them, as entries marked pending (no UID yet), so a crash or a
// failed save between apply and record leaves nothing carrying its owner
// labels outside its inventory. A pending entry still in the desired set is
// replaced by the applied entry; one that left it is pruned like any other,
// except that without a recorded UID it is deleted only while the live
// object carries exactly the owner's labels, with the live UID and
// resourceVersion as preconditions; absent, it is dropped.
//
// Stored forms. In a GitSync's status (written by the controller):
// status.inventory.entries[] = {"id": Key(), "v": version, "uid": uid} and,
// for a pending entry, {"id", "v", "pending": true} without "uid", where
// Key() is "namespace_name_group_kind" (namespace and group empty for
// cluster-scoped and core objects), sorted. In the CLI's ConfigMap
// "gitsync-inventory-<sync>" (label gitsync.dev/inventory: <sync>): the JSON
// of Inventory, {"entries":[{"id":{"group","kind","namespace","name"},"uid",
// "version","pending"}]}, gzip-compressed under binaryData
// "inventory.json.gz". "pending" is written only when true: an inventory
// stored before it existed has none, and every entry reads as recorded with
// its UID, exactly as before (an upgrade never prunes en masse).
package inventory
