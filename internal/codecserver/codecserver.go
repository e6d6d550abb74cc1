package codecserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/streams"
)

// DefaultLimit bounds each expanded value.
const DefaultLimit = 64 << 10

// maxBody bounds a request's body: the UI sends a few payloads at a time,
// each at most Temporal's payload limit (2 MiB by default).
const maxBody = 64 << 20

// readTimeout bounds reading the blobs of one request.
const readTimeout = 30 * time.Second

// Options configure Handler.
type Options struct {
	// Codec decrypts and encrypts; nil: payloads pass as they are (the
	// server still expands references of plain runs).
	Codec *codec.Codec
	// Content is the content store references are read from; nil: they
	// are shown as not readable.
	Content content.Store
	// Origins are the Web UI origins admitted by CORS, "*" for any.
	Origins []string
	// Token, when set, is the bearer token every request must carry.
	Token string
	// Limit bounds each expanded value, in bytes; 0: DefaultLimit.
	Limit int
}

// Handler returns the codec server's http.Handler.
func Handler(o Options) http.Handler {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	return &handler{o: o}
}

type handler struct{ o Options }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && h.admits(origin) {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Add("Vary", "Origin")
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if h.o.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.o.Token)) != 1 {
			http.Error(w, "missing or wrong bearer token: send Authorization: Bearer TOKEN (AGENTRUN_CODEC_TOKEN)", http.StatusUnauthorized)
			return
		}
	}
	decode := strings.HasSuffix(r.URL.Path, "/decode")
	if !decode && !strings.HasSuffix(r.URL.Path, "/encode") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		http.Error(w, r.Method+" "+r.URL.Path+": want POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "read the body: "+oneLine(err.Error()), http.StatusBadRequest)
		return
	}
	var list commonpb.Payloads
	if err := protojson.Unmarshal(body, &list); err != nil {
		http.Error(w, `not a payload list ({"payloads": [...]}): `+oneLine(err.Error()), http.StatusBadRequest)
		return
	}
	var codecs []converter.PayloadCodec
	if h.o.Codec != nil {
		codecs = append(codecs, h.o.Codec)
	}
	if decode {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		defer cancel()
		// Decoding runs the codecs first to last: decrypt, then expand.
		codecs = append(codecs, &expander{ctx: ctx, store: h.o.Content, limit: h.o.Limit, codec: h.o.Codec})
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	converter.NewPayloadCodecHTTPHandler(codecs...).ServeHTTP(&oneLineErrors{ResponseWriter: w}, r)
}

func (h *handler) admits(origin string) bool {
	return slices.Contains(h.o.Origins, "*") || slices.Contains(h.o.Origins, strings.TrimRight(origin, "/"))
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// oneLineErrors passes a response through, but an error's text (the sdk
// handler's http.Error) to its first line.
type oneLineErrors struct {
	http.ResponseWriter
	status int
}

func (o *oneLineErrors) WriteHeader(code int) {
	o.status = code
	o.ResponseWriter.WriteHeader(code)
}

func (o *oneLineErrors) Write(b []byte) (int, error) {
	if o.status >= 400 {
		if _, err := o.ResponseWriter.Write([]byte(oneLine(string(b)) + "\n")); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return o.ResponseWriter.Write(b)
}

// refFields are the fields of agentrun's values that hold an agent.Ref.
var refFields = []string{"content_ref", "args_ref"}

// expander is a PayloadCodec whose Decode expands references; its Encode
// changes nothing.
type expander struct {
	ctx   context.Context
	store content.Store
	limit int
	// codec decrypts the payloads nested in a value (nil: they are
	// shown decoded only when plain).
	codec *codec.Codec
}

func (x *expander) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) { return p, nil }

func (x *expander) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		out[i] = x.expand(p)
	}
	return out, nil
}

// expand returns p with its references expanded, or p itself when it is
// not JSON or holds none.
func (x *expander) expand(p *commonpb.Payload) *commonpb.Payload {
	if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(p.GetData()))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return p
	}
	if !x.walk(v) {
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

// walk expands the references in v and the payloads nested in it (a
// stream's items, payload lists), saying whether it found any.
func (x *expander) walk(v any) bool {
	found := false
	switch v := v.(type) {
	case map[string]any:
		for _, f := range refFields {
			if ref, ok := v[f].(map[string]any); ok {
				if key, ok := ref["key"].(string); ok {
					x.fill(ref, key)
					found = true
				}
			}
		}
		if item, ok := x.streamItem(v); ok {
			v["data"] = item
			found = true
		}
		for k, e := range v {
			if d, ok := x.nested(e); ok {
				v[k] = d
				found = true
			}
			found = x.walk(v[k]) || found
		}
	case []any:
		for i, e := range v {
			if d, ok := x.nested(e); ok {
				v[i] = d
				found = true
			}
			found = x.walk(v[i]) || found
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

// value is p's JSON value, decrypted first when it is encrypted.
func (x *expander) value(p *commonpb.Payload) (any, bool) {
	if x.codec != nil {
		d, err := x.codec.Decode([]*commonpb.Payload{p})
		if err != nil {
			return nil, false
		}
		p = d[0]
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
func (x *expander) fill(ref map[string]any, key string) {
	if _, done := ref["content"]; done {
		return
	}
	var b []byte
	err := errors.New("no content store configured")
	if x.store != nil {
		b, err = x.store.Get(x.ctx, key)
	}
	if err != nil {
		ref["content"] = nil
		switch {
		case errors.Is(err, content.ErrNotFound):
			ref["content_error"] = "missing: " + key
		case errors.Is(err, content.ErrDamaged):
			ref["content_error"] = "damaged: " + key
		case errors.Is(err, content.ErrInvalidKey):
			ref["content_error"] = "not a content key: " + key
		default:
			ref["content_error"] = "unreadable: " + oneLine(err.Error())
		}
		return
	}
	if len(b) > x.limit {
		n := x.limit
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		ref["content_cut"] = fmt.Sprintf("cut: the first %d of %d bytes; reconcile show --step prints it whole", n, len(b))
		b = b[:n]
	}
	ref["content"] = string(b)
}
