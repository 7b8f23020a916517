// Package apply applies desired objects with server-side apply (field manager
// "gitsync") in stages: CRDs, Namespaces and cluster-wide classes first, then
// everything else, in parallel within a stage.
//
// Contract: the result is a ChangeSet with one entry per object; one failing
// object fails only its entry; an unchanged object is not written. Conflicts
// with other field managers are reported, never overridden, unless forced.
// Apply never deletes; pruning belongs to package inventory.
package apply
