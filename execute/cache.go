package execute

import (
	"container/list"
	"sync"

	"github.com/agentrun/agentrun/agent"
)

// Bounds of an executor's caches.
const (
	// maxCachedMessages bounds the messages of the conversations kept
	// resolved (their text is shared between the conversations of a run).
	maxCachedMessages = 200_000
	// maxCachedBytes bounds the values kept from the store.
	maxCachedBytes = 64 << 20
)

// cache is what an executor keeps between steps: resolved conversations by
// node key and values by key. Keys are content hashes, so an entry is never
// stale.
type cache struct {
	heads *lru[[]agent.Message]
	blobs *lru[[]byte]
}

func newCache() *cache {
	return &cache{heads: newLRU[[]agent.Message](maxCachedMessages), blobs: newLRU[[]byte](maxCachedBytes)}
}

// lru is a least-recently-used map bounded by the summed cost of its
// entries; safe for concurrent use. Values are shared, never modified.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	cost  int
	order *list.List // of *entry[V], most recent first
	byKey map[string]*list.Element
}

type entry[V any] struct {
	key  string
	val  V
	cost int
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (l *lru[V]) get(key string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*entry[V]).val, true
}

func (l *lru[V]) put(key string, val V, cost int) {
	if cost > l.max {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.byKey[key]; ok {
		l.order.MoveToFront(el)
		return
	}
	l.byKey[key] = l.order.PushFront(&entry[V]{key: key, val: val, cost: cost})
	l.cost += cost
	for l.cost > l.max {
		el := l.order.Back()
		e := el.Value.(*entry[V])
		l.order.Remove(el)
		delete(l.byKey, e.key)
		l.cost -= e.cost
	}
}
