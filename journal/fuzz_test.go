package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/operator"
)

// FuzzDecode checks that decodeLine never panics and that whatever it
// accepts is written back by encodeRecord as a line that decodes to the same
// record. Records are compared by their encoding (so `[]` and an absent
// list, or `[1, 2]` and `[1,2]`, are equal) and, once canonical, exactly.
func FuzzDecode(f *testing.F) {
	for i := range 7 {
		line, err := encodeRecord(storeTestRecord(i))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	reconcile, err := encodeRecord(Record{Type: SignalRecord, Signal: &operator.Signal{
		Name: operator.SignalReconcile, Step: hand.TicketStep, Outcome: operator.OutcomeDone, Result: "ticket T-1 exists",
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(reconcile)
	f.Add(reconcile[:len(reconcile)/2]) // torn
	f.Add([]byte("00000000 {\"type\":\"signal\"}\n"))
	f.Add([]byte("not json at all\n"))
	f.Add([]byte(""))

	f.Fuzz(func(t *testing.T, line []byte) {
		r1, err := decodeLine(line)
		if err != nil {
			return
		}
		enc1, err := encodeRecord(r1)
		if err != nil {
			t.Fatalf("decoded %q into a record that does not encode: %v", line, err)
		}
		r2, err := decodeLine(enc1)
		if err != nil {
			t.Fatalf("re-encoded %q as %q, which does not decode: %v", line, enc1, err)
		}
		enc2, err := encodeRecord(r2)
		if err != nil {
			t.Fatalf("record of %q does not encode again: %v", enc1, err)
		}
		if !bytes.Equal(enc1, enc2) {
			t.Fatalf("decoded %q; re-encoding gives %q, then %q", line, enc1, enc2)
		}
		r3, err := decodeLine(enc2)
		if err != nil || !reflect.DeepEqual(r2, r3) {
			j2, _ := json.Marshal(r2)
			j3, _ := json.Marshal(r3)
			t.Fatalf("canonical line %q decodes to %s, then %s (%v)", enc1, j2, j3, err)
		}
	})
}

// checksumLine returns the journal line of the JSON text js, whatever it is.
func checksumLine(js string) string {
	return fmt.Sprintf("%08x %s\n", crc32.Checksum([]byte(js), castagnoli), js)
}

// TestCodecFormat pins the line format: CRC-32C, lowercase hex, compact JSON
// without HTML escaping.
func TestCodecFormat(t *testing.T) {
	t.Parallel()
	if got := crc32.Checksum([]byte("123456789"), castagnoli); got != 0xe3069283 {
		t.Fatalf("CRC of the check string = %08x, want e3069283 (CRC-32C)", got)
	}
	rec := Record{Type: RunStarted, Input: agent.UserMessages("hello")}
	line, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "23abd875 {\"type\":\"run.started\",\"input\":[{\"role\":\"user\",\"content\":\"hello\"}]}\n"; string(line) != want {
		t.Fatalf("encodeRecord = %q, want %q", line, want)
	}
	rec = Record{Type: StepCompleted, Step: "s", Result: json.RawMessage(`{ "a" : "<b>&" }`)}
	line, err = encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if want := checksumLine(`{"type":"step.completed","step":"s","result":{"a":"<b>&"}}`); string(line) != want {
		t.Fatalf("encodeRecord = %q, want %q", line, want)
	}
}

// TestDecodeErrors checks that decodeLine says what is wrong.
func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good := checksumLine(`{"type":"run.completed","answer":"done"}`)
	rec, err := decodeLine([]byte(good))
	if err != nil || !reflect.DeepEqual(rec, Record{Type: RunCompleted, Answer: "done"}) {
		t.Fatalf("decodeLine(%q) = %+v, %v", good, rec, err)
	}
	cases := []struct {
		line, want string
	}{
		{"", "line too short (0 bytes)"},
		{"abc\n", "line too short (3 bytes)"},
		{"0123456789{}\n", "no space after the checksum"},
		{strings.ToUpper(good[:crcDigits]) + good[crcDigits:], "is not 8 lowercase hex digits"},
		{"zzzzzzzz {}\n", `checksum "zzzzzzzz" is not 8 lowercase hex digits`},
		{"00000000 {}\n", "checksum mismatch: line says 00000000, record has "},
		{checksumLine(`{"type":"signal"}` + "\n" + `{}`), "newline inside the record"},
		{checksumLine(`[1,2]`), "record is not a JSON object"},
		{checksumLine(` {"type":"signal"}`), "record is not a JSON object"},
		{checksumLine(`{"type":"signal"`), "bad record JSON: "},
		{checksumLine(`{"type":"signal"} x`), "bad record JSON: "},
		{checksumLine(`{"type":7}`), "bad record JSON: "},
		{checksumLine(`{"type":"bogus"}`), `unknown record type "bogus"`},
		{checksumLine(`{}`), `unknown record type ""`},
	}
	for _, c := range cases {
		_, err := decodeLine([]byte(c.line))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("decodeLine(%q) = %v, want an error containing %q", c.line, err, c.want)
		}
	}
	_, err = encodeRecord(Record{Type: "bogus"})
	if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), `unknown type "bogus"`) {
		t.Errorf("encodeRecord of an unknown type = %v, want operator.ErrInvalid naming it", err)
	}
}

// TestFuzzDecodeCorpus checks that the committed seed corpus holds what its
// file names say: a good line of each kind, and the bad ones.
func TestFuzzDecodeCorpus(t *testing.T) {
	t.Parallel()
	bad := map[string]bool{"torn": true, "bad_checksum": true, "not_json": true}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	if err != nil {
		t.Fatal(err)
	}
	good := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		quoted, ok := strings.CutPrefix(string(b), "go test fuzz v1\n[]byte(")
		quoted, ok2 := strings.CutSuffix(quoted, ")\n")
		line, err := strconv.Unquote(quoted)
		if !ok || !ok2 || err != nil {
			t.Fatalf("%s: not a one-value []byte corpus file (%v)", file, err)
		}
		_, err = decodeLine([]byte(line))
		if name := filepath.Base(file); bad[name] != (err != nil) {
			t.Errorf("%s: decodeLine = %v", name, err)
		} else if err == nil {
			good++
		}
	}
	if len(files) != 9 || good != 6 {
		t.Fatalf("%d corpus files, %d good; want 9, 6", len(files), good)
	}
}
