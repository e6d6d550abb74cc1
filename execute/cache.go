package execute

import (
	"container/list"
	"sync"

	"github.com/agentrun/agentrun/agent"
)

// Bounds of an executor's caches.
const (
	// maxCachedConversations bounds the conversations kept resolved, in
	// bytes of their messages' text and arguments (a conversation shares
	// its text with the one it grew from, so this overcounts).
	maxCachedConversations = 256 << 20
	// maxCachedBytes bounds the values kept from the store.
	maxCachedBytes = 64 << 20
	// maxCachedSpecs bounds the tool specs kept decoded, in bytes of
	// their encoded form.
	maxCachedSpecs = 16 << 20
)

// conversationCost is what a resolved conversation counts against
// maxCachedConversations: its text and arguments, and its slice.
func conversationCost(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		n += 128 + len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Args)
		}
	}
	return n
}

// cache is what an executor keeps between steps: resolved conversations by
// node key, values by key and decoded tool specs by key. Keys are content
// hashes, so an entry is never stale.
type cache struct {
	heads *lru[[]agent.Message]
	blobs *lru[[]byte]
	specs *lru[[]agent.ToolSpec]
}

func newCache() *cache {
	return &cache{heads: newLRU[[]agent.Message](maxCachedConversations), blobs: newLRU[[]byte](maxCachedBytes),
		specs: newLRU[[]agent.ToolSpec](maxCachedSpecs)}
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

// remove drops key if it is there.
func (l *lru[V]) remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.byKey[key]; ok {
		l.order.Remove(el)
		delete(l.byKey, key)
		l.cost -= el.Value.(*entry[V]).cost
	}
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
