package rules

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
)

// Cache compiles each distinct rule set (and dependsOn readyExpr) once: GitSyncs that carry the same
// rules (or none besides the agent's) share one Set, and a reconcile of an
// unchanged GitSync compiles nothing. A set that failed to compile is kept
// with its error, so a broken rule is not compiled again at every retry.
// Safe for concurrent use.
type Cache struct {
	max int

	mu   sync.Mutex
	sets map[[sha256.Size]byte]cached
}

type cached struct {
	set   *Set
	ready *ReadyExpr
	err   error
}

func cacheKey(data []byte) [sha256.Size]byte { return sha256.Sum256(data) }

// NewCache returns a Cache holding at most size rule sets (at least 1);
// past that, one is dropped for each new one.
func NewCache(size int) *Cache {
	return &Cache{max: max(size, 1), sets: map[[sha256.Size]byte]cached{}}
}

// Compile returns the compiled Set of rs (Compile's result), from the
// cache when the same rules, in the same order, were compiled before.
func (c *Cache) Compile(rs []Rule) (*Set, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(rs)
	if err != nil {
		return nil, err
	}
	key := cacheKey(data)
	c.mu.Lock()
	hit, ok := c.sets[key]
	c.mu.Unlock()
	if ok {
		return hit.set, hit.err
	}
	set, err := Compile(rs)
	c.put(key, cached{set: set, err: err})
	return set, err
}

// put keeps v under key, dropping another entry when the cache is full.
func (c *Cache) put(key [sha256.Size]byte, v cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sets) >= c.max {
		for k := range c.sets {
			delete(c.sets, k)
			break
		}
	}
	c.sets[key] = v
}

// Len is the number of rule sets held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sets)
}
