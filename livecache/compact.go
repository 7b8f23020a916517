package livecache

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

// lastAppliedAnnotation is kubectl's client-side apply record: a copy of
// the whole object as last applied by kubectl, often the biggest field of
// an object adopted from a kubectl-managed cluster.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CompactLive is the informer cache's transform for managed objects
// (cache.Options.DefaultTransform): it drops what no reader of the cache
// uses and shares what many objects repeat, so each cached object costs
// less memory. On an *unstructured.Unstructured it
//   - keeps only the managedFields entries of gitsync's field manager
//     (v1.FieldManager), which the diff's local in-sync decision
//     reads, without their timestamps (the diff's memo ignores them too);
//     other managers' entries never decide a verdict (the dry-run compares
//     values and gitsync's own field set, and a field someone else took
//     over is missing from gitsync's entry);
//   - drops the last-applied-configuration annotation unless gitsync's own
//     entry owns it (the diff then leaves it out of its comparison, as an
//     apply that does not declare it never changes it);
//   - shares one copy of equal managedFields lists and of equal label maps
//     between objects (objects of one template and one GitSync have the
//     same), one empty map for every leaf of a FieldsV1 set, and one copy
//     of each short repeated string (map keys, label values, managedFields
//     names, kind, apiVersion, namespace, creation time), each table
//     bounded.
//
// Readers must treat cached objects as read-only, as they already must
// (the cache hands out deep copies; event handlers only read). Any other
// object (GitSyncs, typed objects, tombstones) is returned as it is. It is
// meant for objects fresh from the apiserver, which is what informers pass
// (never the objects already in their store); on its own output it changes
// nothing.
func CompactLive(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return obj, nil
	}
	ownsLastApplied := false
	if entries, ok := meta["managedFields"].([]any); ok {
		var kept []any
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			if entry == nil || entry["manager"] != v1.FieldManager {
				continue
			}
			slim := make(map[string]any, len(entry))
			for k, v := range entry {
				if k != "time" {
					slim[intern(k)] = v
				}
			}
			if fields, ok := slim["fieldsV1"].(map[string]any); ok {
				ownsLastApplied = ownsLastApplied || ownsAnnotation(fields, lastAppliedAnnotation)
			}
			kept = append(kept, slim)
		}
		if len(kept) == 0 {
			delete(meta, "managedFields")
		} else {
			meta["managedFields"] = share(kept, func() {
				for _, e := range kept {
					entry := e.(map[string]any)
					if fields, ok := entry["fieldsV1"].(map[string]any); ok {
						entry["fieldsV1"] = shareLeaves(fields)
					}
					internStrings(entry)
				}
			})
		}
	}
	if ann, ok := meta["annotations"].(map[string]any); ok && !ownsLastApplied {
		delete(ann, lastAppliedAnnotation)
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
	if l, ok := meta["labels"].(map[string]any); ok {
		meta["labels"] = share(l, func() { internKeys(l); internStrings(l) })
	}
	internKeys(u.Object)
	internFields(u.Object, "apiVersion", "kind")
	internFields(meta, "namespace", "creationTimestamp")
	return u, nil
}

// Bounds of the shared-value table: how many distinct values it keeps, and
// the largest (JSON bytes) it considers. Past them values are kept per
// object, as without the table.
const (
	shareMax = 16384
	shareLen = 2048
)

var (
	shareTable sync.Map // JSON → canonical value
	shareCount atomic.Int64
)

// share returns the table's copy of a value equal to v (equal JSON), or v
// itself after compact (which slims v in place) when the table has none;
// v then becomes the copy others share while the table has room.
func share[T any](v T, compact func()) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) > shareLen {
		compact()
		return v
	}
	key := string(b)
	if c, ok := shareTable.Load(key); ok {
		return c
	}
	compact()
	if shareCount.Load() >= shareMax {
		return v
	}
	c, loaded := shareTable.LoadOrStore(key, v)
	if !loaded {
		shareCount.Add(1)
	}
	return c
}

// ownsAnnotation reports whether a FieldsV1 set holds annotation name.
func ownsAnnotation(fields map[string]any, name string) bool {
	m, _ := fields["f:metadata"].(map[string]any)
	a, _ := m["f:annotations"].(map[string]any)
	_, ok := a["f:"+name]
	return ok
}

// emptyLeaf stands for every "{}" leaf of a cached FieldsV1 set. Nothing may
// write to it; a write would show as a field owned everywhere, which the
// diff's local path treats as not in sync (it asks the server), never the
// reverse.
var emptyLeaf = map[string]any{}

// shareLeaves replaces the empty maps under m with emptyLeaf and interns
// its keys.
func shareLeaves(m map[string]any) map[string]any {
	if len(m) == 0 {
		return emptyLeaf
	}
	internKeys(m)
	for k, v := range m {
		if child, ok := v.(map[string]any); ok {
			m[k] = shareLeaves(child)
		}
	}
	return m
}

// internStrings interns m's string values.
func internStrings(m map[string]any) {
	for k, v := range m {
		if s, ok := v.(string); ok {
			m[k] = internBox(s)
		}
	}
}

// internFields interns the string values of m's named fields: values many
// objects repeat (kind, apiVersion, namespace, a creation second).
func internFields(m map[string]any, names ...string) {
	for _, k := range names {
		if s, ok := m[k].(string); ok {
			m[k] = internBox(s)
		}
	}
}

// internKeys interns the keys of m and of the maps nested in it (not of
// lists): field names repeat across every object of a kind. Assigning to
// an existing string key stores the given key's bytes (the runtime updates
// string keys), so the map keeps the canonical copy.
func internKeys(m map[string]any) {
	for k, v := range m {
		if child, ok := v.(map[string]any); ok && len(child) > 0 {
			internKeys(child)
		}
		if c := intern(k); unsafe.StringData(c) != unsafe.StringData(k) {
			m[c] = v
		}
	}
}

// internMax bounds the intern table, so objects with ever-new names cannot
// grow it without end; past it, only strings already in it are shared.
// internLen is the longest string interned: longer ones are rarely
// repeated names.
const (
	internMax = 1 << 16
	internLen = 64
)

var (
	internTable sync.Map // string → string
	internCount atomic.Int64
)

// intern returns the table's copy of s, adding s while the table has room.
func intern(s string) string {
	return internBox(s).(string)
}

// internBox is intern for a string stored in an interface (a map value):
// the table's interface value itself, so objects share the boxed header
// too, not only the bytes.
func internBox(s string) any {
	if len(s) > internLen {
		return s
	}
	if c, ok := internTable.Load(s); ok {
		return c
	}
	if internCount.Load() >= internMax {
		return s
	}
	c, loaded := internTable.LoadOrStore(s, s)
	if !loaded {
		internCount.Add(1)
	}
	return c
}
