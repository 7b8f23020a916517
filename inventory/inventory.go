package inventory

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"gitsync.dev/gitsync/object"
)

// Entry is one object a sync applied.
type Entry struct {
	ID object.ID `json:"id"`
	// UID is the live object's UID when it was applied; an object with the
	// same ID and another UID was recreated by someone else and is not ours.
	UID types.UID `json:"uid"`
	// Version is the API version the object was applied as. It is only a
	// fallback: readers resolve the version through a RESTMapper when they
	// have one, because a version can stop being served.
	Version string `json:"version,omitempty"`
	// Pending marks an object recorded before it was applied, so it has no
	// UID yet: it may exist (the apply ran, its record did not) or not. A
	// pending object is pruned only while it carries exactly the owner's
	// labels, with its live UID as the delete precondition. An entry without
	// the marker is never pending, whatever its UID: an inventory stored
	// before pending entries existed reads as it always did.
	Pending bool `json:"pending,omitempty"`
}

// Inventory is the set of objects a sync applied, sorted by ID with each ID at
// most once. Build it with New so the order holds; the
// methods rely on it.
type Inventory struct {
	Entries []Entry `json:"entries"`
}

// New returns an inventory of entries, sorted and deduplicated; of entries
// sharing an ID the last one wins.
func New(entries ...Entry) *Inventory {
	out := make([]Entry, len(entries))
	copy(out, entries)
	// A stable sort keeps equal IDs in input order, so the last one wins below.
	slices.SortStableFunc(out, func(a, b Entry) int { return compareIDs(a.ID, b.ID) })
	deduped := out[:0]
	for _, e := range out {
		if n := len(deduped); n > 0 && deduped[n-1].ID == e.ID {
			deduped[n-1] = e
			continue
		}
		deduped = append(deduped, e)
	}
	return &Inventory{Entries: deduped}
}

// Len returns the number of entries; a nil inventory is empty.
func (inv *Inventory) Len() int {
	if inv == nil {
		return 0
	}
	return len(inv.Entries)
}

// IDs returns the IDs in order.
func (inv *Inventory) IDs() []object.ID {
	ids := make([]object.ID, inv.Len())
	for i := range ids {
		ids[i] = inv.Entries[i].ID
	}
	return ids
}

// Get returns the entry for id.
func (inv *Inventory) Get(id object.ID) (Entry, bool) {
	if inv == nil {
		return Entry{}, false
	}
	i, ok := slices.BinarySearchFunc(inv.Entries, id, func(e Entry, id object.ID) int { return compareIDs(e.ID, id) })
	if !ok {
		return Entry{}, false
	}
	return inv.Entries[i], true
}

// Has reports whether id is in the inventory.
func (inv *Inventory) Has(id object.ID) bool {
	_, ok := inv.Get(id)
	return ok
}

// UID returns the recorded UID of id, or "" when id is not in the inventory.
func (inv *Inventory) UID(id object.ID) types.UID {
	e, _ := inv.Get(id)
	return e.UID
}

// Diff returns the entries of inv whose IDs are not in other: with inv the
// previous inventory and other the desired one, the stale objects. An ID in
// both is not stale, whatever its UIDs.
func (inv *Inventory) Diff(other *Inventory) []Entry {
	var stale []Entry
	for _, e := range inv.entries() {
		if !other.Has(e.ID) {
			stale = append(stale, e)
		}
	}
	return stale
}

// Union returns the entries of both inventories; for an ID in both, other's
// entry wins (it is the newer one when other is the desired inventory).
func (inv *Inventory) Union(other *Inventory) *Inventory {
	return New(append(slices.Clone(inv.entries()), other.entries()...)...)
}

func (inv *Inventory) entries() []Entry {
	if inv == nil {
		return nil
	}
	return inv.Entries
}

func compareIDs(a, b object.ID) int {
	return cmp.Or(
		cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}
