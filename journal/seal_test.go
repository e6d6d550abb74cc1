package journal_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/journal/storetest"
	"github.com/agentrun/agentrun/operator"
)

func testCodec(t testing.TB, ids ...string) *codec.Codec {
	t.Helper()
	var keys []codec.Key
	for _, id := range ids {
		keys = append(keys, codec.Key{ID: id, Bytes: bytes.Repeat([]byte(id[len(id)-1:]), codec.KeySize)})
	}
	c, err := codec.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sealedStore(t *testing.T, dir string, sealer journal.Sealer) *journal.FileStore {
	t.Helper()
	s, err := journal.NewSealedFileStore(dir, sealer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealedFileStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) journal.Store {
		return sealedStore(t, filepath.Join(t.TempDir(), "journal"), testCodec(t, "k1"))
	})
}

// secrets are the texts of secretRecords, none of which may be on disk.
var secrets = []string{"the orders database", "data owner", "TICKET-41", "ask Maria", "purge the archive", "quota exceeded for Maria"}

// secretRecords is a journal whose every content field holds a secret.
func secretRecords() []journal.Record {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	return []journal.Record{
		{Type: journal.RunStarted, Input: agent.UserMessages("who owns the orders database?"), Budget: &agent.Budget{MaxTurns: 9}},
		{Type: journal.StepCompleted, Step: "llm/1", Kind: agent.KindModel, At: at, Result: json.RawMessage(`{"text":"","tool_calls":[{"name":"create_ticket","args":{"title":"find the data owner"}}]}`),
			Gates: map[string]agent.Gate{"tool/1/0/create_ticket": {Verdict: agent.RequireApproval, Kind: agent.KindWrite}}},
		{Type: journal.StepStarted, Step: "tool/1/0/create_ticket", Kind: agent.KindWrite, Attempt: &fence.Attempt{Generation: 1, Number: 1, Worker: "w1", Deadline: at.Add(time.Minute)}},
		{Type: journal.StepCompleted, Step: "tool/1/0/create_ticket", Kind: agent.KindWrite, At: at, Result: json.RawMessage(`{"content":"filed as TICKET-41"}`)},
		{Type: journal.SignalRecord, Signal: &operator.Signal{Name: operator.SignalMessage, Content: "ask Maria"}},
		{Type: journal.StepProbed, Step: "tool/1/0/create_ticket", Probe: &agent.ProbeAnswer{Tool: "find_ticket", Verdict: agent.ProbeFound, Result: json.RawMessage(`{"content":"purge the archive"}`)}},
		{Type: journal.RunStopped, At: at, Stopped: &journal.Stop{Step: "llm/2", Attempts: 3, Error: "quota exceeded for Maria"}},
		{Type: journal.RunCompleted, Answer: "the data owner is Maria"},
	}
}

// TestSealedAtRest: with a sealer, the journal file holds none of the
// records' content (plain or base64), but their types and step names; the
// records read back whole, also by a new store and after the keys rotated;
// a store without the key, or with other keys, says in one error which
// key id of which record it lacks, and returns nothing.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := secretRecords()
	s := sealedStore(t, dir, testCodec(t, "k1"))
	if err := s.Append("run-1", 0, recs[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("run-1", 3, recs[3:]...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range secrets {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("the journal file holds %q", form)
			}
		}
	}
	for _, seen := range []string{`"type":"step.started"`, `"step":"tool/1/0/create_ticket"`, `"kind":"write"`, `"worker":"w1"`, `"key":"k1"`} {
		if !bytes.Contains(data, []byte(seen)) {
			t.Errorf("the journal file lacks the visible %s:\n%s", seen, data)
		}
	}
	if n := bytes.Count(data, []byte(`"sealed":`)); n != len(recs) {
		t.Errorf("%d sealed records, want %d", n, len(recs))
	}
	for name, store := range map[string]*journal.FileStore{
		"the writer":  s,
		"a new store": sealedStore(t, dir, testCodec(t, "k1")),
		"rotated":     sealedStore(t, dir, testCodec(t, "k2", "k1")),
	} {
		got, err := store.Load("run-1")
		if err != nil || !reflect.DeepEqual(got, recs) {
			t.Errorf("%s: Load = %+v, %v; want the records", name, got, err)
		}
	}

	for _, c := range []struct {
		name   string
		sealer journal.Sealer
		want   string
	}{
		{"no keys", nil, "journal run-1: record 1 is sealed under key k1, and no keys are configured (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE)"},
		{"another key", testCodec(t, "k2"), "journal run-1: record 1 is sealed under key k1, which is not among AGENTRUN_CODEC_KEYS (have: k2)"},
	} {
		store := sealedStore(t, dir, c.sealer)
		got, err := store.Load("run-1")
		var ke *journal.KeyError
		if !errors.As(err, &ke) || ke.Key != "k1" || ke.Record != 1 || got != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load = %d records, %v; want a KeyError saying %q", c.name, len(got), err, c.want)
		}
		// An append refuses too, and drops nothing (the last line is not
		// a torn tail).
		err = store.Append("run-1", len(recs), journal.Record{Type: journal.RunCancelled})
		if !errors.As(err, &ke) {
			t.Errorf("%s: Append = %v, want a KeyError", c.name, err)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, "run-1.jsonl")); !bytes.Equal(after, data) {
			t.Errorf("%s: the file changed", c.name)
		}
	}

	// A record of a rotated-out key names that key, and its position.
	rotated := sealedStore(t, dir, testCodec(t, "k2", "k1"))
	if err := rotated.Append("run-1", len(recs), journal.Record{Type: journal.RunCancelled}); err != nil {
		t.Fatal(err)
	}
	_, err = sealedStore(t, dir, testCodec(t, "k2")).Load("run-1")
	if err == nil || !strings.Contains(err.Error(), "record 1 is sealed under key k1, which is not among AGENTRUN_CODEC_KEYS (have: k2)") {
		t.Errorf("Load with k1 retired = %v", err)
	}
	last, _ := os.ReadFile(filepath.Join(dir, "run-1.jsonl"))
	if !bytes.HasSuffix(bytes.TrimSuffix(last, []byte("\n")), []byte(`}}`)) || !bytes.Contains(last[len(data):], []byte(`"key":"k2"`)) {
		t.Errorf("the new record is not sealed under k2: %s", last[len(data):])
	}
}

// TestPlainJournalWithKeys: a journal written plain reads the same with
// keys set, and a sealed store appends to it: old records stay plain, new
// ones are sealed, and all read back.
func TestPlainJournalWithKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := secretRecords()
	plain := sealedStore(t, dir, nil)
	if err := plain.Append("run-1", 0, recs[:4]...); err != nil {
		t.Fatal(err)
	}
	s := sealedStore(t, dir, testCodec(t, "k1"))
	if got, err := s.Load("run-1"); err != nil || !reflect.DeepEqual(got, recs[:4]) {
		t.Fatalf("Load of a plain journal with a key = %+v, %v", got, err)
	}
	if err := s.Append("run-1", 4, recs[4:]...); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "run-1.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		if sealed := strings.Contains(line, `"sealed":`); sealed != (i >= 4) {
			t.Errorf("line %d sealed = %v: %s", i+1, sealed, line)
		}
	}
	if got, err := sealedStore(t, dir, testCodec(t, "k1")).Load("run-1"); err != nil || !reflect.DeepEqual(got, recs) {
		t.Fatalf("Load of the mixed journal = %+v, %v", got, err)
	}
	if _, err := plain.Load("run-1"); err == nil || !strings.Contains(err.Error(), "record 5 is sealed under key k1") {
		t.Fatalf("Load of the mixed journal without a key = %v, want record 5 named", err)
	}
}

// TestSealedTampered: a sealed record moved to another run or position,
// or whose visible fields were changed (with a new checksum), does not
// load: ErrCorrupt, nothing returned.
func TestSealedTampered(t *testing.T) {
	t.Parallel()
	cdc := testCodec(t, "k1")
	recs := secretRecords()
	var lines [][]byte
	for i, rec := range recs {
		payload, err := journal.EncodeSealed(cdc, "run-1", i+1, rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, payload)
	}
	if got, err := journal.DecodeSealed(cdc, "run-1", 3, lines[2]); err != nil || !reflect.DeepEqual(got, recs[2]) {
		t.Fatalf("DecodeSealed = %+v, %v", got, err)
	}
	for name, c := range map[string]struct {
		run     string
		n       int
		payload []byte
	}{
		"another run":      {"run-2", 3, lines[2]},
		"another position": {"run-1", 4, lines[2]},
		"a changed step":   {"run-1", 3, bytes.Replace(lines[2], []byte("tool/1/0/create_ticket"), []byte("tool/1/0/create_tickex"), 1)},
		"an added answer":  {"run-1", 3, bytes.Replace(lines[2], []byte(`"type":"step.started"`), []byte(`"type":"step.started","answer":"x"`), 1)},
	} {
		got, err := journal.DecodeSealed(cdc, c.run, c.n, c.payload)
		if !errors.Is(err, journal.ErrCorrupt) || !reflect.DeepEqual(got, journal.Record{}) {
			t.Errorf("%s: DecodeSealed = %+v, %v; want ErrCorrupt", name, got, err)
		}
	}
	if _, err := journal.DecodeJSON(lines[0]); err == nil || !strings.Contains(err.Error(), "sealed under key k1") {
		t.Errorf("DecodeJSON of a sealed record = %v", err)
	}
}
