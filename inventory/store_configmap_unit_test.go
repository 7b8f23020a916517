package inventory

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/uuid"

	"gitsync.dev/gitsync/object"
)

// largeInventory has n entries with random UIDs, as a big sync would.
func largeInventory(n int) *Inventory {
	es := make([]Entry, n)
	for i := range es {
		es[i] = Entry{
			ID:      object.ID{Group: "apps", Kind: "Deployment", Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("service-%05d", i)},
			UID:     uuid.NewUUID(),
			Version: "v1",
		}
	}
	return New(es...)
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			inv := largeInventory(n)
			data, err := encodeInventory(inv, MaxConfigMapBytes)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeInventory(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(inv.Entries, got.Entries); diff != "" && n > 0 {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			t.Logf("%d entries: %d bytes compressed", n, len(data))
		})
	}
}

func TestEncodeTooLarge(t *testing.T) {
	inv := largeInventory(1000)
	_, err := encodeInventory(inv, 10<<10)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("encode 1000 entries into 10 KiB: got %v, want a *TooLargeError", err)
	}
	if tooLarge.Entries != 1000 || tooLarge.Limit != 10<<10 || tooLarge.Bytes <= tooLarge.Limit {
		t.Errorf("TooLargeError = %+v", *tooLarge)
	}
}
