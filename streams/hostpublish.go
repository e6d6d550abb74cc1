package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// The publish signal's side of the host: taking a batch in whole, deduplicated
// by publisher sequence, or refusing it with a Rejected record.

// MaxRejected is how many rejected signals Host.Rejected keeps (the latest).
const MaxRejected = 20

// Rejected is a publish signal the host refused: nothing of it entered the
// log and its sequence was not recorded.
type Rejected struct {
	// PublisherID and Sequence are the batch's, when they could be read.
	PublisherID string
	Sequence    int64
	// Reason says what was wrong.
	Reason string
	// Payload is the start of the signal's data (at most 200 bytes).
	Payload string
}

// Rejected returns the latest publish signals the host refused (at most
// MaxRejected), oldest first.
func (h *Host) Rejected() []Rejected { return append([]Rejected(nil), h.rejected...) }

// Rejects returns how many publish signals the host refused in this run.
func (h *Host) Rejects() int { return h.rejects }

// Duplicates returns how many publish batches the host dropped in this run
// as duplicates (a sequence not above the publisher's last one).
func (h *Host) Duplicates() int { return h.duplicates }

// receivePending takes in the publish signals already delivered.
func (h *Host) receivePending() {
	if h.receiving {
		return
	}
	h.receiving = true
	defer func() { h.receiving = false }()
	for {
		var raw converter.RawValue
		if !h.signals.ReceiveAsync(&raw) {
			return
		}
		h.receive(raw)
	}
}

// receive applies one publish signal: the whole batch, or nothing and a
// Rejected record. It never panics and never blocks.
func (h *Host) receive(raw converter.RawValue) {
	in, entries, err := decodePublish(raw.Payload())
	if err != nil {
		h.reject(in, raw, err)
		return
	}
	if in.PublisherID != "" {
		if in.Sequence <= h.seqs[in.PublisherID] {
			h.duplicates++
			return
		}
		h.seqs[in.PublisherID] = in.Sequence
		h.seen[in.PublisherID] = float64(workflow.Now(h.ctx).UnixMilli()) / 1000
	}
	h.log = append(h.log, entries...)
}

// decodePublish reads and checks a publish signal's payload. On an error it
// returns what it could read of the envelope.
func decodePublish(p *commonpb.Payload) (PublishInput, []entry, error) {
	var in PublishInput
	if p == nil || len(p.GetData()) == 0 {
		return in, nil, errors.New("no payload")
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return in, nil, fmt.Errorf("payload encoding %q, want %q", enc, converter.MetadataEncodingJSON)
	}
	data := bytes.TrimSpace(p.GetData())
	if len(data) == 0 || data[0] != '{' {
		return in, nil, errors.New("payload is not a JSON object")
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, nil, fmt.Errorf("payload: %w", err)
	}
	entries := make([]entry, 0, len(in.Items))
	for i, it := range in.Items {
		pl, err := DecodePayload(it.Data)
		if err != nil {
			return in, nil, fmt.Errorf("item %d (topic %q): %w", i, it.Topic, err)
		}
		// Kept in canonical form: the deterministic serialization, whose
		// padded base64 every language's decoder reads.
		data, err := marshalPayload(pl)
		if err != nil {
			return in, nil, fmt.Errorf("item %d (topic %q): %w", i, it.Topic, err)
		}
		entries = append(entries, entry{topic: it.Topic, data: data})
	}
	return in, entries, nil
}

func (h *Host) reject(in PublishInput, raw converter.RawValue, err error) {
	r := Rejected{PublisherID: in.PublisherID, Sequence: in.Sequence, Reason: err.Error()}
	if p := raw.Payload(); p != nil {
		r.Payload = clip(p.GetData(), 200)
	}
	h.rejects++
	h.rejected = append(h.rejected, r)
	if n := len(h.rejected); n > MaxRejected {
		h.rejected = append([]Rejected(nil), h.rejected[n-MaxRejected:]...)
	}
	workflow.GetLogger(h.ctx).Warn("rejected stream publish signal",
		"publisher_id", r.PublisherID, "sequence", r.Sequence, "reason", r.Reason)
	if h.cfg.OnReject != nil {
		h.cfg.OnReject(r)
	}
}

// clip returns at most n bytes of b as valid UTF-8.
func clip(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1]
	}
	return string(b)
}
