package postgres_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	contentstoretest "github.com/agentrun/agentrun/content/storetest"
)

func testCodec(t *testing.T, id string, fill byte) *codec.Codec {
	t.Helper()
	c, err := codec.New([]codec.Key{{ID: id, Bytes: bytes.Repeat([]byte{fill}, codec.KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSealedContentConformance(t *testing.T) {
	t.Parallel()
	contentstoretest.Run(t, func(t *testing.T) content.Store {
		db, _ := open(t)
		return db.SealedContent(testCodec(t, "k1", 1))
	})
}

// TestSealedContentAtRest: with a sealer, the row holds none of the
// blob's text; the blob reads back whole; a row kept plain before still
// reads; a store without the key says the blob is encrypted.
func TestSealedContentAtRest(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	before := []byte("kept plain: the orders database")
	oldKey, err := db.Content().Put(t.Context(), before)
	if err != nil {
		t.Fatal(err)
	}
	s := db.SealedContent(testCodec(t, "k1", 1))
	secret := []byte(strings.Repeat("Echo: the orders database holds 4 KB of tool output. ", 80))
	key, err := s.Put(t.Context(), secret)
	if err != nil || key != content.KeyOf(secret) {
		t.Fatalf("Put: %s, %v", key, err)
	}
	var stored []byte
	query(t, u, `SELECT data FROM agentrun_content WHERE key = '`+key+`'`, &stored)
	if bytes.Contains(stored, []byte("orders")) || !codec.IsSealed(stored) {
		t.Fatalf("the row holds the blob's text or is not sealed: %.80q", stored)
	}
	if got, err := s.Get(t.Context(), key); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if got, err := s.Get(t.Context(), oldKey); err != nil || !bytes.Equal(got, before) {
		t.Fatalf("Get of a row kept plain: %q, %v", got, err)
	}
	if _, err := db.Content().Get(t.Context(), key); !errors.Is(err, content.ErrDamaged) || !strings.Contains(err.Error(), "no key is configured") {
		t.Fatalf("Get without a key: %v", err)
	}
	if _, err := db.SealedContent(testCodec(t, "k2", 2)).Get(t.Context(), key); err == nil || !strings.Contains(err.Error(), `key id "k1"`) {
		t.Fatalf("Get under another key id: %v", err)
	}
}
