package diff

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/inventory"
)

// memoKey is what an in-sync verdict depends on besides the object's identity:
// the desired content and the live version it was compared with.
type memoKey struct {
	digest          [sha256.Size]byte
	resourceVersion string
}

// memo remembers, per object, the last (desired digest, live resourceVersion)
// a dry-run found in sync. One entry per object keeps it bounded by the
// number of objects; past size, an arbitrary entry is evicted.
type memo struct {
	mu      sync.Mutex
	size    int
	entries map[inventory.ObjectID]memoKey
}

func newMemo(size int) *memo {
	return &memo{size: size, entries: make(map[inventory.ObjectID]memoKey)}
}

func (m *memo) has(id inventory.ObjectID, key memoKey) bool {
	if m.size <= 0 || key.resourceVersion == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got, ok := m.entries[id]
	return ok && got == key
}

func (m *memo) put(id inventory.ObjectID, key memoKey) {
	if m.size <= 0 || key.resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[id]; !ok && len(m.entries) >= m.size {
		for old := range m.entries {
			delete(m.entries, old)
			break
		}
	}
	m.entries[id] = key
}

// keyOf returns the memo key for desired against live; ok is false when the
// desired object cannot be hashed (it then is never memoised). encoding/json
// sorts map keys, so equal objects hash equally.
func keyOf(desired, live *unstructured.Unstructured) (key memoKey, ok bool) {
	b, err := json.Marshal(desired.Object)
	if err != nil {
		return memoKey{}, false
	}
	return memoKey{digest: sha256.Sum256(b), resourceVersion: live.GetResourceVersion()}, true
}
