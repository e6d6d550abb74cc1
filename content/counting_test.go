package content_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/content/storetest"
)

func TestCountingConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) content.Store { return &content.Counting{Store: content.NewMemStore()} })
}

func TestCountingStats(t *testing.T) {
	t.Parallel()
	c := &content.Counting{Store: content.NewMemStore()}
	a, b := []byte("aaaa"), []byte("bbbbbbbbbb")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for _, data := range [][]byte{a, b, a} { // a second Put of a counts too
				if _, err := c.Put(t.Context(), data); err != nil {
					t.Error(err)
				}
			}
			if _, err := c.Get(t.Context(), content.KeyOf(b)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Failed calls do not count.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Put(ctx, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v", err)
	}
	if _, err := c.Get(t.Context(), content.KeyOf([]byte("absent"))); !errors.Is(err, content.ErrNotFound) {
		t.Fatalf("Get of an absent blob: %v", err)
	}
	if _, err := c.Get(t.Context(), "bogus"); !errors.Is(err, content.ErrInvalidKey) {
		t.Fatalf("Get of a bogus key: %v", err)
	}
	want := content.Stats{Puts: 30, Gets: 10, BytesPut: 10 * (4 + 10 + 4), BytesGot: 10 * 10}
	if got := c.Stats(); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}
