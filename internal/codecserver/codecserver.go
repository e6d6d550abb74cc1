package codecserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
)

// DefaultLimit bounds each expanded value.
const DefaultLimit = 64 << 10

// maxBody bounds a request's body: the UI sends a few payloads at a time,
// each at most Temporal's payload limit (2 MiB by default). MaxPayloads
// bounds their number (read.go).
const maxBody = 64 << 20

// MaxInflated bounds what the encrypted payloads of one /decode request
// inflate to, together, the payloads nested in their values included:
// the codec's own bound is per payload (256 MiB), so without this ten
// copies of one small payload that inflates to 40 MiB took the server
// past 2 GB. A request over it is refused (413) before more is inflated:
// Temporal keeps no payload over 2 MiB by default, so 64 MiB is a page of
// a history many times over, and a sealed zip bomb only once.
const MaxInflated = 64 << 20

// MaxResponse bounds the data of a /decode response's payloads together,
// the expanded values included, counted as they are read: a request over
// it is refused (413) before the rest is read.
const MaxResponse = 64 << 20

// maxExpand bounds a decoded payload whose references are expanded: a
// larger one (none of agentrun's: Temporal refuses them) is returned
// decrypted as it is, since taking its JSON apart costs many times its size.
const maxExpand = 4 << 20

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
	// Addr is the address the server listens on, HOST:PORT: a request's
	// Host may name it, and /encode without a token is open to the Web
	// UI's origin only when it is a loopback address. "": loopback, on
	// any port.
	Addr string
	// Origins are the Web UI origins admitted, "*" for any; a request
	// with another Origin header is refused.
	Origins []string
	// Hosts are the further names a request's Host header may hold, each
	// HOST (any port) or HOST:PORT.
	Hosts []string
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
	return &handler{o: o, loopback: o.Addr == "" || IsLoopback(o.Addr)}
}

type handler struct {
	o Options
	// loopback: the server listens on a loopback address.
	loopback bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	if !h.hostAdmitted(r.Host) {
		http.Error(w, h.hostRefusal(r.Host), http.StatusForbidden)
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" {
		if !h.originAdmitted(origin) {
			http.Error(w, fmt.Sprintf("origin %q is not admitted: AGENTRUN_CODEC_ORIGINS admits %s", oneLine(origin), strings.Join(h.o.Origins, ", ")), http.StatusForbidden)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Authorization-Extras, Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if h.o.Token != "" && !h.tokenPresented(r) {
		http.Error(w, "missing or wrong bearer token: send Authorization: Bearer TOKEN (AGENTRUN_CODEC_TOKEN)", http.StatusUnauthorized)
		return
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
	list, refused := readList(w, r)
	if refused != nil {
		http.Error(w, refused.text, refused.code)
		return
	}
	// An /encode of no payloads seals nothing: the temporal CLI sends one
	// ({}) for a query without input, and gets it back from anyone.
	if !decode && len(list.Payloads) > 0 && !h.mayEncode(origin) {
		http.Error(w, "/encode is for an authenticated caller: with AGENTRUN_CODEC_TOKEN set, send Authorization: Bearer TOKEN; without one, only a Web UI origin named in AGENTRUN_CODEC_ORIGINS may encode, on a loopback listen address", http.StatusForbidden)
		return
	}
	var out []*commonpb.Payload
	var err error
	if decode {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		defer cancel()
		out, err = h.decode(ctx, list.Payloads)
	} else {
		out, err = h.encode(list.Payloads)
	}
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errTooBig) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, oneLine(err.Error()), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&commonpb.Payloads{Payloads: out}) //nolint:errcheck // the client is gone
}

// errTooBig is a request whose payloads inflate to more than MaxInflated,
// or whose response would hold more than MaxResponse.
var errTooBig = errors.New("too big")

func (h *handler) encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if h.o.Codec == nil {
		return payloads, nil
	}
	return h.o.Codec.Encode(payloads)
}

// decode decrypts each payload and, in one that decrypted under a key,
// expands the references. With keys configured, a payload that is not
// encrypted is returned as it is: anyone may write one, naming any blob,
// so only what a key holder sealed is expanded. Without keys (plain runs),
// every payload is expanded.
func (h *handler) decode(ctx context.Context, payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	x := &expander{ctx: ctx, store: h.o.Content, limit: h.o.Limit, codec: h.o.Codec,
		inflated: MaxInflated, response: MaxResponse}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		sealed := string(p.GetMetadata()[converter.MetadataEncoding]) == codec.Encoding
		if sealed && h.o.Codec != nil {
			d, err := x.open(p)
			if err != nil {
				return nil, fmt.Errorf("payload %d: %w", i, err)
			}
			p = d
		}
		if sealed || h.o.Codec == nil {
			p = x.expand(p)
			if x.err != nil {
				return nil, fmt.Errorf("payload %d: %w", i, x.err)
			}
		}
		if x.response -= len(p.GetData()); x.response < 0 {
			return nil, fmt.Errorf("the decoded payloads hold more than %d bytes together (MaxResponse): ask for fewer at a time: %w", MaxResponse, errTooBig)
		}
		out[i] = p
	}
	return out, nil
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// size is what p inflated from: its serialized size.
func size(p *commonpb.Payload) int { return proto.Size(p) }
