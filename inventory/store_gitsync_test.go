package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// TestGitSyncStatusRoundTrip: what the agent writes to status reads back as
// the same inventory (pending entries included); an empty inventory leaves
// no status field; an entry that does not parse is an error, never dropped.
func TestGitSyncStatusRoundTrip(t *testing.T) {
	inv := largeInventory(3)
	inv.Entries[1].Pending, inv.Entries[1].UID = true, ""
	gs := &v1.GitSync{Status: v1.GitSyncStatus{Inventory: ToGitSyncStatus(inv)}}
	got, err := FromGitSyncStatus(gs)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(inv.Entries, got.Entries); d != "" {
		t.Errorf("round trip (-wrote +read):\n%s", d)
	}
	if s := ToGitSyncStatus(New()); s != nil {
		t.Errorf("empty inventory in status = %+v, want nil", s)
	}
	gs.Status.Inventory.Entries = append(gs.Status.Inventory.Entries, v1.InventoryEntry{ID: "not-a-key"})
	if _, err := FromGitSyncStatus(gs); err == nil {
		t.Error("an unparsable entry was dropped, want an error")
	}
}
