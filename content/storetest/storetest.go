// Package storetest is the conformance suite of content.Store: every
// backend (FileStore, MemStore, and any later one such as a PostgreSQL
// store) runs it from its own tests:
//
//	func TestMyStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) content.Store { return newMyStore(t) })
//	}
//
// The suite checks the contract of content.Store that holds without
// crashes or faults; each backend tests its own durability and damage
// handling besides.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/content"
)

// Run runs the conformance suite as parallel subtests of t. open returns a
// new, empty store for one subtest; it may use t.TempDir and t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) content.Store) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, c := range samples() {
			key := put(t, s, c.data)
			if want := content.KeyOf(c.data); key != want {
				t.Errorf("Put(%s) = %s, want KeyOf = %s", c.name, key, want)
			}
			if err := content.ValidKey(key); err != nil {
				t.Errorf("Put(%s) returned an invalid key: %v", c.name, err)
			}
		}
		// Read back after all puts, so that no put overwrote another.
		for _, c := range samples() {
			assertGet(t, s, content.KeyOf(c.data), c.data)
		}
	})

	t.Run("PutTwice", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		data := []byte("the same bytes, twice")
		first, second := put(t, s, data), put(t, s, data)
		if first != second {
			t.Fatalf("two Puts of the same bytes returned %s and %s", first, second)
		}
		assertGet(t, s, first, data)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		put(t, s, []byte("something else"))
		key := content.KeyOf([]byte("never stored"))
		got, err := s.Get(t.Context(), key)
		if !errors.Is(err, content.ErrNotFound) {
			t.Fatalf("Get of a key never stored = %q, %v; want ErrNotFound", got, err)
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name the key %s", err, key)
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		valid := content.KeyOf([]byte("x"))
		hexPart := strings.TrimPrefix(valid, "sha256:")
		for _, key := range []string{
			"",
			"sha256:",
			hexPart,             // no prefix
			"sha1:" + hexPart,   // wrong prefix
			"SHA256:" + hexPart, // uppercase prefix
			"sha256:" + strings.ToUpper(hexPart),
			valid[:len(valid)-1], // short
			valid + "0",          // long
			valid + "\n",
			" " + valid,
			"sha256:" + strings.Repeat("g", 64),
			"sha256:../../etc/passwd",
			"sha256:" + hexPart[:2] + "/" + hexPart[3:],
			"sha256:" + strings.Repeat("../", 21) + "a",
		} {
			got, err := s.Get(t.Context(), key)
			if !errors.Is(err, content.ErrInvalidKey) {
				t.Errorf("Get(%q) = %q, %v; want ErrInvalidKey", key, got, err)
			}
			if err := content.ValidKey(key); !errors.Is(err, content.ErrInvalidKey) {
				t.Errorf("ValidKey(%q) = %v, want ErrInvalidKey", key, err)
			}
		}
	})

	t.Run("ConcurrentPutsOfOneKey", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		data := bytes.Repeat([]byte("one blob, many writers\n"), 500)
		want := content.KeyOf(data)
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				key, err := s.Put(t.Context(), data)
				if err != nil || key != want {
					t.Errorf("goroutine %d: Put = %s, %v; want %s, nil", g, key, err, want)
				}
			})
		}
		wg.Wait()
		assertGet(t, s, want, data)
	})

	t.Run("ConcurrentPutsOfDistinctKeys", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const goroutines, each = 16, 8
		blob := func(g, i int) []byte {
			return fmt.Appendf(nil, "goroutine %d, blob %d\n%s", g, i, bytes.Repeat([]byte{byte(i)}, 100*g))
		}
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					if _, err := s.Put(t.Context(), blob(g, i)); err != nil {
						t.Errorf("goroutine %d: Put %d: %v", g, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for g := range goroutines {
			for i := range each {
				assertGet(t, s, content.KeyOf(blob(g, i)), blob(g, i))
			}
		}
	})

	t.Run("Copies", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		want := []byte("do not touch")
		data := bytes.Clone(want)
		key := put(t, s, data)
		data[0] = 'D' // the caller's slice is the caller's
		got := assertGet(t, s, key, want)
		got[0] = 'D' // so is what Get returned
		assertGet(t, s, key, want)
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		stored := []byte("stored before the cancel")
		key := put(t, s, stored)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		data := []byte("put after the cancel")
		if got, err := s.Put(ctx, data); !errors.Is(err, context.Canceled) {
			t.Errorf("Put with a cancelled context = %s, %v; want context.Canceled", got, err)
		}
		if got, err := s.Get(ctx, key); !errors.Is(err, context.Canceled) {
			t.Errorf("Get with a cancelled context = %q, %v; want context.Canceled", got, err)
		}
		// The cancelled Put stored nothing; the store still works.
		if got, err := s.Get(t.Context(), content.KeyOf(data)); !errors.Is(err, content.ErrNotFound) {
			t.Errorf("Get after a cancelled Put = %q, %v; want ErrNotFound", got, err)
		}
		assertGet(t, s, key, stored)
	})
}

type sample struct {
	name string
	data []byte
}

// samples are the blobs of RoundTrip.
func samples() []sample {
	rng := rand.New(rand.NewPCG(1, 2))
	mib := make([]byte, 1<<20)
	for i := range mib {
		mib[i] = byte(rng.Uint32())
	}
	return []sample{
		{"empty", []byte{}},
		{"small", []byte("hello, world")},
		{"binary", []byte("\x00a\nb\r\n\x00\x00\xff\xfe{\"json\": true}\n\x00")},
		{"1 MiB", mib},
	}
}

// put stores data in s and returns its key, failing t on error.
func put(t *testing.T, s content.Store, data []byte) string {
	t.Helper()
	key, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", len(data), err)
	}
	return key
}

// assertGet fails t unless s holds want under key, and returns what Get
// returned.
func assertGet(t *testing.T, s content.Store, key string, want []byte) []byte {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %d bytes %.40q, want %d bytes %.40q", key, len(got), got, len(want), want)
	}
	return got
}
