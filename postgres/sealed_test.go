package postgres_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	contentstoretest "github.com/agentrun/agentrun/content/storetest"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/journal"
	journalstoretest "github.com/agentrun/agentrun/journal/storetest"
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

func TestSealedJournalConformance(t *testing.T) {
	t.Parallel()
	journalstoretest.Run(t, func(t *testing.T) journal.Store {
		db, _ := open(t)
		return db.SealedJournal(testCodec(t, "k1", 1))
	})
}

func TestSealedGuardConformance(t *testing.T) {
	t.Parallel()
	journalstoretest.Run(t, func(t *testing.T) journal.Store {
		db, _ := open(t)
		return db.SealedGuard(testCodec(t, "k1", 1))
	})
}

// TestSealedJournalAtRest: with a sealer, the journal's rows hold none of
// the records' content, and read back whole; rows kept plain before still
// read; a store without the key, or with another, names the record and
// the key id it lacks.
func TestSealedJournalAtRest(t *testing.T) {
	t.Parallel()
	db, u := open(t)
	started := journal.Record{Type: journal.RunStarted, Input: agent.UserMessages("who owns the orders database?")}
	done := journal.Record{Type: journal.StepCompleted, Step: hand.LookupStep, Kind: agent.KindRead, Result: agent.EncodeToolResult(agent.ToolResult{Content: "the data owner is Maria"})}
	if err := db.Guard().Append("run-1", 0, started); err != nil {
		t.Fatal(err)
	}
	s := db.SealedGuard(testCodec(t, "k1", 1))
	if err := s.Append("run-1", 1, done); err != nil {
		t.Fatal(err)
	}
	var row []byte
	query(t, u, `SELECT record FROM agentrun_journal WHERE journal = 'temporal' AND run_id = 'run-1' AND seq = 1`, &row)
	if bytes.Contains(row, []byte("Maria")) || !bytes.Contains(row, []byte(`"step":"tool/1/0/lookup","kind":"read","sealed":{"key":"k1"`)) {
		t.Fatalf("the row holds the record's text or is not sealed: %s", row)
	}
	if got, err := s.Load("run-1"); err != nil || !reflect.DeepEqual(got, []journal.Record{started, done}) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	for sealer, want := range map[journal.Sealer]string{
		nil:                   "journal run-1: record 2 is sealed under key k1, and no keys are configured",
		testCodec(t, "k2", 2): "journal run-1: record 2 is sealed under key k1, which is not among AGENTRUN_CODEC_KEYS (have: k2)",
	} {
		var ke *journal.KeyError
		if got, err := db.SealedGuard(sealer).Load("run-1"); !errors.As(err, &ke) || !strings.HasPrefix(err.Error(), want) || got != nil {
			t.Errorf("Load without the key = %d records, %v; want %q", len(got), err, want)
		}
	}
	if _, err := db.SealedJournal(testCodec(t, "k1", 1)).Load("run-1"); err != nil {
		t.Fatal(err) // the local journal of the same run id is another one
	}
}
