package codecserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/streams"
)

// expander decrypts and expands the payloads of one /decode request,
// within its budgets.
type expander struct {
	ctx   context.Context
	store content.Store
	limit int
	// codec decrypts the payloads nested in a value (nil: they are
	// shown decoded only when plain).
	codec *codec.Codec
	// inflated is what the request's encrypted payloads may still
	// inflate to; response what its response's payloads may still hold;
	// filled what the payload being expanded took of it so far.
	inflated, response, filled int
	// err is the first budget spent (wrapping errTooBig): the payload
	// being expanded is abandoned.
	err error
	// read holds each blob read once per request: a value that names one
	// blob a thousand times reads it once.
	read map[string]filled
}

// open decrypts p within the request's inflated budget.
func (x *expander) open(p *commonpb.Payload) (*commonpb.Payload, error) {
	d, err := x.codec.DecodeWithin(p, x.inflated)
	if errors.Is(err, codec.ErrTooBig) {
		return nil, fmt.Errorf("the encrypted payloads inflate to more than %d bytes together (MaxInflated): ask for fewer at a time: %w", MaxInflated, errTooBig)
	}
	if err != nil {
		return nil, err
	}
	x.inflated -= size(d)
	return d, nil
}

// expand returns p with its references expanded (where agentrun's own
// types put them: envelope.go) and the payloads nested in it decoded, or p
// itself when it is not JSON, holds neither or is over maxExpand. A budget
// spent sets x.err.
func (x *expander) expand(p *commonpb.Payload) *commonpb.Payload {
	if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON || len(p.GetData()) > maxExpand {
		return p
	}
	x.filled = 0
	dec := json.NewDecoder(bytes.NewReader(p.GetData()))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return p
	}
	refs := envelopeRefs(p.GetData(), v)
	for _, ref := range refs {
		x.fill(ref)
	}
	if !x.unnest(v) && len(refs) == 0 || x.err != nil {
		return p
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return p
	}
	return &commonpb.Payload{Metadata: p.GetMetadata(), Data: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}
}

// unnest decodes the payloads nested in v (a stream's items, payload
// lists) in place, for display, saying whether it found any. It expands
// no reference: a nested payload is not one of agentrun's envelopes.
func (x *expander) unnest(v any) bool {
	if x.err != nil {
		return false
	}
	found := false
	switch v := v.(type) {
	case map[string]any:
		if item, ok := x.streamItem(v); ok {
			v["data"] = item
			found = true
		}
		for k, e := range v {
			if d, ok := x.nested(e); ok {
				v[k] = d
				found = true
			}
			found = x.unnest(v[k]) || found
		}
	case []any:
		for i, e := range v {
			if d, ok := x.nested(e); ok {
				v[i] = d
				found = true
			}
			found = x.unnest(v[i]) || found
		}
	}
	return found
}

// nested decodes e when it is a payload as protojson writes one inside a
// value ({"metadata": {"encoding": BASE64, ...}, "data": BASE64}): its
// JSON value, decrypted first when it is encrypted. Anything else, or a
// payload that does not decode, is left as it is.
func (x *expander) nested(e any) (any, bool) {
	m, ok := e.(map[string]any)
	if !ok || len(m) > 3 {
		return nil, false
	}
	md, ok := m["metadata"].(map[string]any)
	data, ok2 := m["data"].(string)
	if !ok || !ok2 {
		return nil, false
	}
	b, err := json.Marshal(map[string]any{"metadata": md, "data": data})
	if err != nil {
		return nil, false
	}
	var p commonpb.Payload
	if protojson.Unmarshal(b, &p) != nil {
		return nil, false
	}
	return x.value(&p)
}

// streamItem decodes the data of a stream item ({"topic": ..., "data":
// the base64 of a serialized payload}: a poll's answer, a stream's state
// carried across continue-as-new).
func (x *expander) streamItem(m map[string]any) (any, bool) {
	if _, ok := m["topic"].(string); !ok {
		return nil, false
	}
	data, ok := m["data"].(string)
	if !ok {
		return nil, false
	}
	p, err := streams.DecodePayload(data)
	if err != nil {
		return nil, false
	}
	return x.value(p)
}

// value is p's JSON value, decrypted first when it is encrypted (within
// the request's inflated budget: one spent sets x.err).
func (x *expander) value(p *commonpb.Payload) (any, bool) {
	if x.codec != nil && string(p.GetMetadata()[converter.MetadataEncoding]) == codec.Encoding {
		d, err := x.open(p)
		if errors.Is(err, errTooBig) {
			x.err = err
		}
		if err != nil {
			return nil, false
		}
		p = d
	}
	if len(p.GetData()) > maxExpand {
		return nil, false
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(p.GetData()))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

// fill sets ref's content (and content_cut), or content null and
// content_error.
func (x *expander) fill(ref map[string]any) {
	key, ok := ref["key"].(string)
	if _, done := ref["content"]; done || !ok || x.err != nil {
		return
	}
	f, ok := x.read[key]
	if !ok {
		f = x.get(key)
		if x.read == nil {
			x.read = map[string]filled{}
		}
		x.read[key] = f
	}
	if f.err != "" {
		ref["content"] = nil
		ref["content_error"] = f.err
		return
	}
	if x.filled+len(f.content) > x.response {
		x.err = fmt.Errorf("the decoded payloads hold more than %d bytes together with the values they refer to (MaxResponse): ask for fewer at a time: %w", MaxResponse, errTooBig)
		return
	}
	if f.cut != "" {
		ref["content_cut"] = f.cut
	}
	x.filled += len(f.content)
	ref["content"] = f.content
}

// filled is what a reference shows: content (cut says how, when it is),
// or err.
type filled struct{ content, cut, err string }

// get reads the blob under key, at most limit bytes of it shown.
func (x *expander) get(key string) filled {
	var b []byte
	err := errors.New("no content store configured")
	if x.store != nil {
		b, err = x.store.Get(x.ctx, key)
	}
	switch {
	case err == nil:
	case errors.Is(err, content.ErrNotFound):
		return filled{err: "missing: " + key}
	case errors.Is(err, content.ErrDamaged):
		return filled{err: "damaged: " + key}
	case errors.Is(err, content.ErrInvalidKey):
		return filled{err: "not a content key: " + key}
	default:
		return filled{err: "unreadable: " + oneLine(err.Error())}
	}
	if len(b) <= x.limit {
		return filled{content: string(b)}
	}
	n := x.limit
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return filled{content: string(b[:n]), cut: fmt.Sprintf("cut: the first %d of %d bytes; reconcile show --step prints it whole", n, len(b))}
}
