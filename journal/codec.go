package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/agentrun/agentrun/operator"
)

// The line format is described in doc.go:
//
//	<8 lowercase hex digits: CRC-32C of JSON> <space> <compact JSON> \n

// castagnoli is the CRC-32C table; the checksum covers the JSON bytes only.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	crcDigits    = 8             // hex digits of the checksum
	lineOverhead = crcDigits + 2 // checksum, space and newline
)

// knownType reports whether t is one of the eight record types.
func knownType(t RecordType) bool {
	switch t {
	case RunStarted, StepStarted, StepCompleted, SignalRecord, RunCompleted, RunCancelled, StepProbed, RunStopped:
		return true
	}
	return false
}

const knownTypes = "run.started, step.started, step.completed, step.probed, signal, run.completed, run.cancelled, run.stopped"

// encodeRecord returns rec as one journal line, newline included. It refuses
// (with an error wrapping operator.ErrInvalid) a record of unknown type or one that
// does not encode, so that nothing Load would reject is ever written.
func encodeRecord(rec Record) ([]byte, error) {
	return appendRecord(nil, rec)
}

// appendRecord appends the line of rec to dst.
func appendRecord(dst []byte, rec Record) ([]byte, error) {
	payload, err := EncodeJSON(rec)
	if err != nil {
		return dst, err
	}
	return appendLine(dst, payload), nil
}

// appendLine appends the line of a record's JSON, payload, to dst.
func appendLine(dst, payload []byte) []byte {
	dst = fmt.Appendf(dst, "%08x ", crc32.Checksum(payload, castagnoli))
	dst = append(dst, payload...)
	return append(dst, '\n')
}

// EncodeJSON returns the compact JSON of rec, exactly as a FileStore writes
// it after the checksum: no newline, HTML characters unescaped. It refuses,
// with an error wrapping operator.ErrInvalid, a record of unknown type or one that
// does not encode (a Result that is not JSON, for instance), so that a store
// never writes what DecodeJSON would reject. Other stores (PostgreSQL) keep
// records in this encoding too.
func EncodeJSON(rec Record) ([]byte, error) {
	if !knownType(rec.Type) {
		return nil, fmt.Errorf("%w record: unknown type %q; want one of %s", operator.ErrInvalid, rec.Type, knownTypes)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetEscapeHTML(false) // keep tool output such as "<b>" readable; JSON escapes control characters anyway
	if err := enc.Encode(rec); err != nil {
		return nil, fmt.Errorf("%w %s record: %v", operator.ErrInvalid, rec.Type, err)
	}
	return bytes.TrimSuffix(js.Bytes(), []byte("\n")), nil // Encode ends with a newline; compact JSON has no other
}

// DecodeJSON parses a plain record encoded by EncodeJSON: a JSON object
// that decodes into a Record of one of the known types. A sealed record is
// refused: DecodeSealed opens it. Its errors are short and lowercase.
func DecodeJSON(payload []byte) (Record, error) {
	w, err := decodeWire(payload)
	if err != nil {
		return Record{}, err
	}
	if w.Sealed != nil {
		return Record{}, fmt.Errorf("record is sealed under key %s", w.Sealed.Key)
	}
	return w.Record, nil
}

// decodeLine parses one plain journal line (see decodeWireLine).
func decodeLine(line []byte) (Record, error) {
	w, err := decodeWireLine(line)
	if err != nil {
		return Record{}, err
	}
	if w.Sealed != nil {
		return Record{}, fmt.Errorf("record is sealed under key %s", w.Sealed.Key)
	}
	return w.Record, nil
}

// decodeWireLine parses one journal line, with or without its final
// newline. It checks the checksum, that the JSON is an object that decodes
// into a record as stored (plain or sealed, not opened), and that the
// record's type is known. Its errors are short and lowercase, meant to
// follow a position ("line 3 (byte 412): ").
func decodeWireLine(line []byte) (wireRecord, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if len(line) < lineOverhead-1+2 { // checksum, space and at least "{}"
		return wireRecord{}, fmt.Errorf("line too short (%d bytes)", len(line))
	}
	if line[crcDigits] != ' ' {
		return wireRecord{}, errors.New("no space after the checksum")
	}
	sum := line[:crcDigits]
	for _, c := range sum {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return wireRecord{}, fmt.Errorf("checksum %q is not 8 lowercase hex digits", sum)
		}
	}
	want, _ := strconv.ParseUint(string(sum), 16, 32) // checked above: cannot fail
	payload := line[crcDigits+1:]
	if bytes.IndexByte(payload, '\n') >= 0 {
		return wireRecord{}, errors.New("newline inside the record")
	}
	if got := crc32.Checksum(payload, castagnoli); uint32(want) != got {
		return wireRecord{}, fmt.Errorf("checksum mismatch: line says %s, record has %08x", sum, got)
	}
	return decodeWire(payload)
}
