package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sealer encrypts the content of records at rest (package codec's Codec is
// one, with the payload keys). The format of a sealed record is in doc.go.
type Sealer interface {
	// SealRecord encrypts plain under the first key, bound to aad, with a
	// fresh nonce.
	SealRecord(aad string, plain []byte) ([]byte, error)
	// Open decrypts what SealRecord sealed for aad, with the key it names.
	Open(aad string, sealed []byte) ([]byte, error)
	// KeyIDs are the ids of the keys, the sealing one first.
	KeyIDs() []string
}

// KeyError is a sealed record whose key is not among the configured ones.
// Nothing of the run is returned.
type KeyError struct {
	// Run and Record (1-based) name the record; Key is the id it is
	// sealed under, Have the ids configured.
	Run    string
	Record int
	Key    string
	Have   []string
}

func (e *KeyError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("journal %s: record %d is sealed under key %s, and no keys are configured (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE)", e.Run, e.Record, e.Key)
	}
	return fmt.Sprintf("journal %s: record %d is sealed under key %s, which is not among AGENTRUN_CODEC_KEYS (have: %s)", e.Run, e.Record, e.Key, strings.Join(e.Have, ", "))
}

// withRun is err after op and the run ("load r1: ..."), or a *KeyError
// alone: it names the run itself, and says all a person needs.
func withRun(op, runID string, err error) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke
	}
	return fmt.Errorf("%s %s: %w", op, runID, err)
}

// sealedContent is the "sealed" member of a sealed record.
type sealedContent struct {
	Key  string `json:"key"`
	Data []byte `json:"data"` // base64 in JSON
}

// wireRecord is a record as a store keeps it: a plain Record, or the
// visible fields of a sealed one beside its sealed content.
type wireRecord struct {
	Record
	Sealed *sealedContent `json:"sealed,omitempty"`
}

// visible is the part of rec that stays readable when it is sealed: what
// the record is, its step and the step's flags, the fence's attempt, and
// when it was written. Every other field (and any field added later) is
// sealed.
func visible(rec Record) Record {
	return Record{Type: rec.Type, Step: rec.Step, Kind: rec.Kind, Idempotent: rec.Idempotent, Settles: rec.Settles, Attempt: rec.Attempt, At: rec.At}
}

// recordAAD binds a sealed record to its run, its position (1-based) and
// the key id its visible part names.
func recordAAD(runID string, n int, key string) string {
	return "agentrun journal record\n" + runID + "\n" + strconv.Itoa(n) + "\n" + key
}

// EncodeSealed returns the compact JSON of rec as record n (1-based) of the
// run, sealed by s: its visible fields and, under "sealed", the key id and
// rec's whole EncodeJSON sealed under that key. With s nil it is
// EncodeJSON. It refuses what EncodeJSON refuses.
func EncodeSealed(s Sealer, runID string, n int, rec Record) ([]byte, error) {
	payload, _, err := encodeSealed(s, runID, n, rec)
	return payload, err
}

// encodeSealed is EncodeSealed that also returns rec's plain JSON.
func encodeSealed(s Sealer, runID string, n int, rec Record) (payload, plain []byte, err error) {
	plain, err = EncodeJSON(rec)
	if err != nil || s == nil {
		return plain, plain, err
	}
	key := s.KeyIDs()[0]
	data, err := s.SealRecord(recordAAD(runID, n, key), plain)
	if err != nil {
		return nil, nil, fmt.Errorf("seal %s record %d: %w", rec.Type, n, err)
	}
	payload, err = encodeWire(wireRecord{Record: visible(rec), Sealed: &sealedContent{Key: key, Data: data}})
	return payload, plain, err
}

// DecodeSealed parses a record EncodeSealed or EncodeJSON wrote as record n
// (1-based) of the run, opening a sealed one with s. A sealed record whose
// key s lacks (or with s nil) is a *KeyError; one that does not open (a
// wrong key under its id, a changed byte, a record moved from another run
// or position) is an error wrapping ErrCorrupt.
func DecodeSealed(s Sealer, runID string, n int, payload []byte) (Record, error) {
	w, err := decodeWire(payload)
	if err != nil {
		return Record{}, fmt.Errorf("record %d: %v: %w", n, err, ErrCorrupt)
	}
	return openRecord(s, runID, n, w)
}

// openRecord returns the record w holds as record n of the run.
func openRecord(s Sealer, runID string, n int, w wireRecord) (Record, error) {
	if w.Sealed == nil {
		return w.Record, nil
	}
	var have []string
	if s != nil {
		have = s.KeyIDs()
	}
	if !slices.Contains(have, w.Sealed.Key) {
		return Record{}, &KeyError{Run: runID, Record: n, Key: w.Sealed.Key, Have: have}
	}
	plain, err := s.Open(recordAAD(runID, n, w.Sealed.Key), w.Sealed.Data)
	if err != nil {
		return Record{}, fmt.Errorf("journal %s: record %d does not open under key %s (a wrong key under that id, or the record was changed or moved): %v: %w", runID, n, w.Sealed.Key, err, ErrCorrupt)
	}
	rec, err := DecodeJSON(plain)
	if err != nil {
		return Record{}, fmt.Errorf("journal %s: record %d opens to a bad record: %v: %w", runID, n, err, ErrCorrupt)
	}
	// The visible fields are a copy for readers without the key: they
	// must say what the sealed record says.
	a, errA := encodeWire(wireRecord{Record: visible(rec)})
	b, errB := encodeWire(wireRecord{Record: w.Record})
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return Record{}, fmt.Errorf("journal %s: record %d: its visible fields %s differ from its sealed ones %s: %w", runID, n, b, a, ErrCorrupt)
	}
	return rec, nil
}

// encodeWire is EncodeJSON of a record as stored.
func encodeWire(w wireRecord) ([]byte, error) {
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(js.Bytes(), []byte("\n")), nil
}

// decodeWire parses a record as stored: a JSON object of a known type, and
// when sealed, with a key id and data, and no field but the visible ones.
func decodeWire(payload []byte) (wireRecord, error) {
	if len(payload) == 0 || payload[0] != '{' {
		return wireRecord{}, errors.New("record is not a JSON object")
	}
	var w wireRecord
	if err := json.Unmarshal(payload, &w); err != nil {
		return wireRecord{}, fmt.Errorf("bad record JSON: %v", err)
	}
	if !knownType(w.Type) {
		return wireRecord{}, fmt.Errorf("unknown record type %q", w.Type)
	}
	if w.Sealed != nil && (validKeyID(w.Sealed.Key) != nil || len(w.Sealed.Data) == 0) {
		return wireRecord{}, fmt.Errorf("sealed record without a valid key id and data (key %q, %d bytes)", w.Sealed.Key, len(w.Sealed.Data))
	}
	return w, nil
}

// validKeyID checks a sealed record's key id as package codec checks a
// key's: 1 to 64 letters, digits, '_', '-' or '.', so that it can be
// printed as it is.
func validKeyID(id string) error {
	if id == "" || len(id) > 64 {
		return errors.New("bad key id")
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return errors.New("bad key id")
		}
	}
	return nil
}
