package codecserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
)

// TestPlainPayloadIsNotExpanded: with keys configured, a payload that is
// not encrypted, made by hand to name a blob of the content store as a
// tool step's result does ({"content": "", "content_ref": {"key":
// "sha256:..."}}), comes back exactly as it was
// sent: the blob's text is not in the answer. The same value encrypted
// under the key is expanded. Without keys (plain runs) a plain payload is
// expanded as before.
func TestPlainPayloadIsNotExpanded(t *testing.T) {
	srv, cdc, store := setup(t, "", 0)
	const secret = "the text of a tool's output, sealed in the content store"
	key, err := store.Put(t.Context(), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	forged := &commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     []byte(`{"content":"","content_ref":{"key":"` + key + `"}}`), // a tool step's result
	}
	code, out, _ := post(t, srv.URL+"/decode", "", list(t, forged))
	got := unlist(t, out)
	if code != http.StatusOK || len(got) != 1 || !proto.Equal(got[0], forged) || strings.Contains(string(out), "content store") {
		t.Fatalf("a plain payload naming a blob: %d %s; want it back as it was, without the blob's text", code, out)
	}
	sealed, err := cdc.Encode([]*commonpb.Payload{forged})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = post(t, srv.URL+"/decode", "", list(t, sealed...))
	if code != http.StatusOK || !strings.Contains(string(unlist(t, out)[0].Data), `"content":"`+secret+`"`) {
		t.Fatalf("the same value encrypted: %d %s; want the reference expanded", code, out)
	}

	// Plain runs: no keys, a plain store; plain payloads are expanded.
	plainStore, err := content.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, err = plainStore.Put(t.Context(), []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	plain := serve(t, Options{Content: plainStore, Origins: []string{origin}})
	forged.Data = []byte(`{"content":"","content_ref":{"key":"` + key + `"}}`)
	code, out, _ = post(t, plain.URL+"/decode", "", list(t, forged))
	if code != http.StatusOK || !strings.Contains(string(unlist(t, out)[0].Data), `"content":"`+secret+`"`) {
		t.Fatalf("without keys: %d %s; want the plain payload's reference expanded", code, out)
	}
}

// TestDecodeBoundsInflation: ten copies of one encrypted payload of about
// 40 KB that inflates to 40 MiB of zeros, in one /decode, are refused (413,
// one line naming MaxInflated) once the request's payloads inflate past
// MaxInflated together, and the request allocates a bounded amount on the
// way, no more than for two copies (80 MiB), which are refused too; before
// the bound, 10 x 40 MiB were inflated and answered: 2.6 GB. One copy is
// answered. A payload whose
// references expand past MaxResponse is refused the same way.
func TestDecodeBoundsInflation(t *testing.T) {
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{7}, codec.KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := content.NewSealedFileStore(t.TempDir(), cdc)
	if err != nil {
		t.Fatal(err)
	}
	bomb, err := cdc.Encode([]*commonpb.Payload{{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/plain")},
		Data:     make([]byte, 40<<20),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(bomb[0].Data); n > 64<<10 {
		t.Fatalf("the sealed payload is %d bytes, want a small one", n)
	}
	h := Handler(Options{Codec: cdc, Content: store, Addr: "127.0.0.1:8234"})
	decode := func(ps ...*commonpb.Payload) (*httptest.ResponseRecorder, uint64) {
		body := list(t, ps...)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/decode", bytes.NewReader(body))
		req.Host = "127.0.0.1:8234"
		h.ServeHTTP(w, req)
		runtime.ReadMemStats(&after)
		return w, after.TotalAlloc - before.TotalAlloc
	}
	// The bound on what a refused request allocates: MaxInflated
	// inflated, as much again for the buffers that grow while inflating
	// and the copy of the payload's data, and some.
	const allocBound = memScale * 4 * MaxInflated
	var allocs []uint64
	for _, copies := range []int{10, 2} {
		ps := make([]*commonpb.Payload, copies)
		for i := range ps {
			ps[i] = bomb[0]
		}
		w, alloc := decode(ps...)
		t.Logf("%d copies: %d, %d MiB allocated", copies, w.Code, alloc>>20)
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "MaxInflated") {
			t.Errorf("%d copies: %d %.200q, want 413 naming MaxInflated", copies, w.Code, w.Body.String())
		}
		oneLineText(t, fmt.Sprintf("%d copies", copies), w.Body.String())
		if alloc > allocBound {
			t.Errorf("%d copies: the request allocated %d MiB, want at most %d MiB", copies, alloc>>20, allocBound>>20)
		}
		allocs = append(allocs, alloc)
	}
	if allocs[0] > allocs[1]+memScale*16<<20 {
		t.Errorf("10 copies allocated %d MiB, 2 copies %d MiB: want no more for more copies", allocs[0]>>20, allocs[1]>>20)
	}
	// One copy is answered: 40 MiB inflated, then 53 MiB of base64
	// written through the JSON encoders' buffers.
	if w, alloc := decode(bomb[0]); w.Code != http.StatusOK || alloc > memScale*6*MaxInflated {
		t.Errorf("one copy: %d, %d MiB allocated; want 200 within %d MiB", w.Code, alloc>>20, memScale*6*MaxInflated>>20)
	}

	// References that expand past MaxResponse: a model step's reply of
	// 1,100 tool calls whose arguments refer to one 64 KiB blob (68 MiB
	// expanded), in one small encrypted payload.
	key, err := store.Put(t.Context(), bytes.Repeat([]byte("x"), DefaultLimit))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Repeat(`{"id":"c","name":"lookup","args_ref":{"key":"`+key+`","size":65536}},`, 1100)
	many, err := cdc.Encode([]*commonpb.Payload{{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     []byte(`{"message":{"role":"assistant","tool_calls":[` + strings.TrimSuffix(calls, ",") + `]},"usage":{"input_tokens":1,"output_tokens":1}}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	w, alloc := decode(many...)
	t.Logf("1,100 references: %d, %d MiB allocated", w.Code, alloc>>20)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "MaxResponse") {
		t.Errorf("1,100 references of 64 KiB: %d %.200q, want 413 naming MaxResponse", w.Code, w.Body.String())
	}
}

// emptyPayloads is a payload list of n empty payloads: 3 bytes each.
func emptyPayloads(n int) []byte {
	return []byte(`{"payloads":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}`)
}

// TestDecodeBoundsCount: a request of MaxPayloads empty payloads is
// answered, one more is refused (413, one line naming MaxPayloads), on
// /decode and /encode; a 64 MiB body of them (22 million) is refused the
// same way having allocated under 16 MiB, where the whole list was built
// and answered before the bound (3.3 GB in the codec server).
func TestDecodeBoundsCount(t *testing.T) {
	srv, _, _ := setup(t, "", 0)
	for _, path := range []string{"/decode", "/encode"} {
		code, out, _ := post(t, srv.URL+path, "", emptyPayloads(MaxPayloads))
		if code != http.StatusOK || len(unlist(t, out)) != MaxPayloads {
			t.Errorf("%s of %d payloads: %d %.200q, want 200 and %d payloads", path, MaxPayloads, code, out, MaxPayloads)
		}
		code, out, _ = post(t, srv.URL+path, "", emptyPayloads(MaxPayloads+1))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(out), "more than 10000 payloads (MaxPayloads)") {
			t.Errorf("%s of %d payloads: %d %.200q, want 413 naming MaxPayloads", path, MaxPayloads+1, code, out)
		}
		oneLineText(t, path, string(out))
	}

	n := (maxBody - len(`{"payloads":[]}`) + 1) / 3
	body := emptyPayloads(n)
	h := Handler(Options{Addr: "127.0.0.1:8234"})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/decode", bytes.NewReader(body))
	req.Host = "127.0.0.1:8234"
	h.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d empty payloads (%d bytes): %d, %d KiB allocated", n, len(body), w.Code, alloc>>10)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "MaxPayloads") {
		t.Errorf("%d empty payloads: %d %.200q, want 413 naming MaxPayloads", n, w.Code, w.Body.String())
	}
	if alloc > memScale*16<<20 {
		t.Errorf("%d empty payloads: the request allocated %d MiB, want at most %d MiB", n, alloc>>20, memScale*16)
	}
}
