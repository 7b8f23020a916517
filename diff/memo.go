package diff

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/object"
)

// memoKey is what an in-sync verdict depends on besides the object's identity:
// the desired content and the live content it was compared with.
type memoKey struct {
	digest [sha256.Size]byte
	live   [sha256.Size]byte
}

// memo remembers, per object, the last (desired digest, live digest) a
// dry-run found in sync. One entry per object keeps it bounded by the
// number of objects; past size, an arbitrary entry is evicted.
type memo struct {
	mu      sync.Mutex
	size    int
	entries map[object.ID]memoKey
}

func newMemo(size int) *memo {
	return &memo{size: size, entries: make(map[object.ID]memoKey)}
}

func (m *memo) has(id object.ID, key memoKey) bool {
	if m.size <= 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got, ok := m.entries[id]
	return ok && got == key
}

func (m *memo) put(id object.ID, key memoKey) {
	if m.size <= 0 {
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

// keyOf returns the memo key for desired against live; ok is false when
// either cannot be hashed (it then is never memoised). encoding/json sorts
// map keys, so equal objects hash equally.
//
// The live digest leaves out what changes without changing the verdict: the
// resourceVersion, managedFields timestamps and status-subresource entries,
// and, when desired carries no status, the live status. So a Deployment
// whose status the controllers keep updating stays memoised, and a converged
// agent does not repeat its dry-runs on every pass.
func keyOf(desired, live *unstructured.Unstructured) (key memoKey, ok bool) {
	b, err := json.Marshal(desired.Object)
	if err != nil {
		return memoKey{}, false
	}
	l, err := json.Marshal(memoView(live, hasStatus(desired)))
	if err != nil {
		return memoKey{}, false
	}
	return memoKey{digest: sha256.Sum256(b), live: sha256.Sum256(l)}, true
}

func hasStatus(obj *unstructured.Unstructured) bool {
	_, ok := obj.Object["status"]
	return ok
}

// memoView is a shallow copy of live without the parts keyOf ignores.
func memoView(live *unstructured.Unstructured, keepStatus bool) map[string]any {
	view := make(map[string]any, len(live.Object))
	for k, v := range live.Object {
		if k == "status" && !keepStatus {
			continue
		}
		view[k] = v
	}
	meta, ok := live.Object["metadata"].(map[string]any)
	if !ok {
		return view
	}
	m := make(map[string]any, len(meta))
	for k, v := range meta {
		if k != "resourceVersion" && k != "managedFields" {
			m[k] = v
		}
	}
	var fields []any
	for _, f := range live.GetManagedFields() {
		if f.Subresource == "status" && !keepStatus {
			continue
		}
		f.Time = nil
		fields = append(fields, f)
	}
	m["managedFields"] = fields
	view["metadata"] = m
	return view
}
