package source

import "container/list"

// lru is a least-recently-used map bounded by entry count and by the sum of
// the sizes callers declare. It is not safe for concurrent use.
type lru[V any] struct {
	maxEntries int
	maxBytes   int64 // 0 means unbounded
	bytes      int64
	order      *list.List // front = most recent
	items      map[string]*list.Element
}

type lruEntry[V any] struct {
	key  string
	val  V
	size int64
}

func newLRU[V any](maxEntries int, maxBytes int64) *lru[V] {
	return &lru[V]{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func (l *lru[V]) get(key string) (V, bool) {
	el, ok := l.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*lruEntry[V]).val, true
}

// add stores val and evicts the least recently used entries until both
// bounds hold. A value larger than maxBytes on its own is not stored.
func (l *lru[V]) add(key string, val V, size int64) {
	if l.maxBytes > 0 && size > l.maxBytes {
		return
	}
	if el, ok := l.items[key]; ok {
		e := el.Value.(*lruEntry[V])
		l.bytes += size - e.size
		e.val, e.size = val, size
		l.order.MoveToFront(el)
	} else {
		l.items[key] = l.order.PushFront(&lruEntry[V]{key: key, val: val, size: size})
		l.bytes += size
	}
	for l.order.Len() > 1 && (l.order.Len() > l.maxEntries || (l.maxBytes > 0 && l.bytes > l.maxBytes)) {
		oldest := l.order.Back()
		e := oldest.Value.(*lruEntry[V])
		l.order.Remove(oldest)
		delete(l.items, e.key)
		l.bytes -= e.size
	}
}

func (l *lru[V]) len() int { return l.order.Len() }
