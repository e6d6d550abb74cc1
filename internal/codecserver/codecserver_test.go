package codecserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/streams"
)

const origin = "http://localhost:8233"

func setup(t *testing.T, token string, limit int) (*httptest.Server, *codec.Codec, content.Store) {
	srv, cdc, store, _ := setupIn(t, token, limit)
	return srv, cdc, store
}

func setupIn(t *testing.T, token string, limit int) (*httptest.Server, *codec.Codec, content.Store, string) {
	t.Helper()
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{7}, codec.KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := content.NewSealedFileStore(dir, cdc)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Codec: cdc, Content: store, Origins: []string{origin}, Token: token, Limit: limit})
	return srv, cdc, store, dir
}

// serve starts a server of Handler(o) on a loopback port, o.Addr set to
// its address unless o sets one.
func serve(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	if o.Addr == "" {
		o.Addr = srv.Listener.Addr().String()
	}
	srv.Config.Handler = Handler(o)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, token string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), resp.Header
}

func list(t *testing.T, ps ...*commonpb.Payload) []byte {
	t.Helper()
	b, err := json.Marshal(&commonpb.Payloads{Payloads: ps})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unlist(t *testing.T, b []byte) []*commonpb.Payload {
	t.Helper()
	var ps commonpb.Payloads
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return ps.Payloads
}

func jsonPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRoundTrip: /encode encrypts under the key exactly as the codec does
// (the codec decodes it back to the input), /decode decrypts it back, and
// /encode expands nothing, even a payload holding a reference.
func TestRoundTrip(t *testing.T) {
	srv, cdc, store := setup(t, "", 0)
	key, err := store.Put(t.Context(), []byte("the whole referenced text"))
	if err != nil {
		t.Fatal(err)
	}
	in := jsonPayload(t, agent.ToolResult{ContentRef: &agent.Ref{Key: key, Size: 25, Preview: "the whole"}})
	code, out, _ := post(t, srv.URL+"/encode", "", list(t, in))
	if code != http.StatusOK {
		t.Fatalf("encode: %d %s", code, out)
	}
	enc := unlist(t, out)
	if len(enc) != 1 || string(enc[0].Metadata[converter.MetadataEncoding]) != codec.Encoding {
		t.Fatalf("encode: %s", out)
	}
	back, err := cdc.Decode(enc)
	if err != nil || !bytes.Equal(back[0].Data, in.Data) {
		t.Fatalf("the codec decodes /encode's output to %q, %v; want the input %q", back[0].GetData(), err, in.Data)
	}
	code, out, _ = post(t, srv.URL+"/decode", "", list(t, enc...))
	if code != http.StatusOK {
		t.Fatalf("decode: %d %s", code, out)
	}
	dec := unlist(t, out)
	if !strings.Contains(string(dec[0].Data), `"content":"the whole referenced text"`) {
		t.Fatalf("decode: %s, want the reference expanded", dec[0].Data)
	}
	// A plain payload passes /decode as it is.
	plain := jsonPayload(t, "hello")
	if code, out, _ = post(t, srv.URL+"/decode", "", list(t, plain)); code != http.StatusOK || !bytes.Equal(unlist(t, out)[0].Data, plain.Data) {
		t.Fatalf("decode plain: %d %s", code, out)
	}
}

// TestCORSAndToken: a preflight from the UI's origin is answered with the
// headers the UI sends allowed, without the token; a request without the
// token, or with another, is 401; with it, 200.
func TestCORSAndToken(t *testing.T) {
	srv, _, _ := setup(t, "s3cret", 0)
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-namespace")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	for _, want := range []string{"Authorization", "Content-Type", "X-Namespace"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("preflight allows headers %q, want %s among them", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	body := list(t, jsonPayload(t, "hello"))
	if code, out, _ := post(t, srv.URL+"/decode", "", body); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s, want 401", code, out)
	}
	if code, out, _ := post(t, srv.URL+"/decode", "wrong", body); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s, want 401", code, out)
	}
	code, out, hdr := post(t, srv.URL+"/decode", "s3cret", body)
	if code != http.StatusOK || hdr.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("with the token: %d %s %v", code, out, hdr)
	}
	// Another origin's preflight is refused, without CORS headers.
	req, _ = http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another origin's preflight: %d, Access-Control-Allow-Origin %q; want 403 and none", resp.StatusCode, got)
	}
}

// TestBadBody: a body that is not a payload list is 400 with a one-line
// reason.
func TestBadBody(t *testing.T) {
	srv, _, _ := setup(t, "", 0)
	for _, body := range []string{"", "not json", `[1,2]`, `{"payloads": 3}`, `{"other": []}`} {
		for _, path := range []string{"/decode", "/encode"} {
			code, out, _ := post(t, srv.URL+path, "", []byte(body))
			text := strings.TrimSuffix(string(out), "\n")
			if code != http.StatusBadRequest || strings.Contains(text, "\n") || !strings.HasPrefix(text, "not a payload list") {
				t.Errorf("%s %q: %d %q, want 400 and one line saying it is not a payload list", path, body, code, out)
			}
		}
	}
	// An encrypted payload under an unknown key: 400 naming the key id.
	other, _ := codec.New([]codec.Key{{ID: "k9", Bytes: bytes.Repeat([]byte{9}, codec.KeySize)}})
	enc, _ := other.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	code, out, _ := post(t, srv.URL+"/decode", "", list(t, enc...))
	if code != http.StatusBadRequest || !strings.Contains(string(out), `"k9"`) || strings.Count(string(out), "\n") > 1 {
		t.Fatalf("unknown key: %d %q", code, out)
	}
}

// TestExpansion: a reference whose value is longer than the limit comes
// back cut on the limit with a marker; a missing blob and a damaged one
// come back as such, content null, never guessed (each a tool step's
// result); args_ref in a model step's reply's tool calls are expanded too.
func TestExpansion(t *testing.T) {
	srv, cdc, store, dir := setupIn(t, "", 100)
	long := strings.Repeat("é", 80) // 160 bytes
	longKey, _ := store.Put(t.Context(), []byte(long))
	args := `{"topic":"` + strings.Repeat("x", 50) + `"}`
	argsKey, _ := store.Put(t.Context(), []byte(args))
	missing := content.KeyOf([]byte("never stored"))
	damaged, _ := store.Put(t.Context(), []byte("a blob whose file is overwritten"))
	h := strings.TrimPrefix(damaged, "sha256:")
	if err := os.WriteFile(filepath.Join(dir, h[:2], h[2:]), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	reply := agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant,
		ToolCalls: []agent.ToolCall{{ID: "c1", Name: "lookup", ArgsRef: &agent.Ref{Key: argsKey, Size: len(args)}}}}}
	results := []agent.ToolResult{
		{ContentRef: &agent.Ref{Key: longKey, Size: len(long), Preview: "é"}},
		{ContentRef: &agent.Ref{Key: missing, Size: 12}},
		{ContentRef: &agent.Ref{Key: damaged, Size: 32}},
	}
	enc, err := cdc.Encode([]*commonpb.Payload{jsonPayload(t, results[0]), jsonPayload(t, reply), jsonPayload(t, results[1]), jsonPayload(t, results[2])})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := post(t, srv.URL+"/decode", "", list(t, enc...))
	if code != http.StatusOK {
		t.Fatalf("decode: %d %s", code, out)
	}
	type shownRef struct {
		Key, Content *string
		ContentCut   string `json:"content_cut"`
		ContentError string `json:"content_error"`
	}
	var got [3]struct {
		ContentRef *shownRef `json:"content_ref"`
	}
	var gotReply struct {
		Message struct {
			ToolCalls []struct {
				ArgsRef struct{ Content string } `json:"args_ref"`
			} `json:"tool_calls"`
		}
	}
	dec := unlist(t, out)
	for i, p := range [][]byte{dec[0].Data, dec[2].Data, dec[3].Data} {
		if err := json.Unmarshal(p, &got[i]); err != nil || got[i].ContentRef == nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	if err := json.Unmarshal(dec[1].Data, &gotReply); err != nil || len(gotReply.Message.ToolCalls) != 1 {
		t.Fatalf("%v: %s", err, dec[1].Data)
	}
	cut := got[0].ContentRef
	if cut.Content == nil || *cut.Content != strings.Repeat("é", 50) || !strings.Contains(cut.ContentCut, "the first 100 of 160 bytes") {
		t.Errorf("long value: %+v, want its first 100 bytes and a cut marker", cut)
	}
	if c := gotReply.Message.ToolCalls[0].ArgsRef.Content; c != args {
		t.Errorf("args_ref: %q, want %q", c, args)
	}
	if m := got[1].ContentRef; m.Content != nil || m.ContentError != "missing: "+missing {
		t.Errorf("missing blob: %+v, want content null and content_error %q", m, "missing: "+missing)
	}
	if d := got[2].ContentRef; d.Content != nil || d.ContentError != "damaged: "+damaged {
		t.Errorf("damaged blob: %+v, want content null and content_error %q", d, "damaged: "+damaged)
	}
	if !strings.Contains(string(dec[2].Data), `"content":null`) {
		t.Errorf("missing blob: want \"content\":null in %s", out)
	}
}

// BenchmarkDecodeHistory decodes, through the handler, the payloads of a
// 100-event history: 100 encrypted tool results, a third of them holding
// a 4 KB reference to expand.
func BenchmarkDecodeHistory(b *testing.B) {
	cdc, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{7}, codec.KeySize)}})
	if err != nil {
		b.Fatal(err)
	}
	store, err := content.NewSealedFileStore(b.TempDir(), cdc)
	if err != nil {
		b.Fatal(err)
	}
	var plain []*commonpb.Payload
	for i := range 100 {
		r := agent.ToolResult{Content: fmt.Sprintf("Echo: %d short", i)}
		if i%3 == 0 {
			text := strings.Repeat(fmt.Sprintf("Echo: %d lorem ipsum ", i), 200)
			key, err := store.Put(b.Context(), []byte(text))
			if err != nil {
				b.Fatal(err)
			}
			r = agent.ToolResult{ContentRef: &agent.Ref{Key: key, Size: len(text), Preview: text[:120]}}
		}
		p, err := converter.GetDefaultDataConverter().ToPayload(r)
		if err != nil {
			b.Fatal(err)
		}
		plain = append(plain, p)
	}
	enc, err := cdc.Encode(plain)
	if err != nil {
		b.Fatal(err)
	}
	body, err := json.Marshal(&commonpb.Payloads{Payloads: enc})
	if err != nil {
		b.Fatal(err)
	}
	h := Handler(Options{Codec: cdc, Content: store, Addr: "127.0.0.1:8234"})
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/decode", bytes.NewReader(body))
		req.Host = "127.0.0.1:8234"
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// TestNestedPayloads: /decode also shows the payloads nested inside a
// value, as the Web UI cannot: a stream poll's items (base64 of a
// serialized payload) and a list of payloads as protojson, encrypted or
// not, come back as their JSON values; a "data" that is no payload is
// left as it is.
func TestNestedPayloads(t *testing.T) {
	srv, cdc, _ := setup(t, "", 0)
	item, err := streams.EncodePayload(jsonPayload(t, map[string]string{"type": "step.started", "step": "llm/1"}))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := cdc.Encode([]*commonpb.Payload{jsonPayload(t, map[string]string{"answer": "the secret plan"})})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := protojson.Marshal(inner[0])
	if err != nil {
		t.Fatal(err)
	}
	var innerJSON any
	if err := json.Unmarshal(listed, &innerJSON); err != nil {
		t.Fatal(err)
	}
	poll := map[string]any{"items": []any{
		map[string]any{"topic": "events", "data": item, "offset": 0},
		map[string]any{"topic": "notes", "data": "not a payload"},
	}, "next_offset": 1}
	enc, err := cdc.Encode([]*commonpb.Payload{jsonPayload(t, poll), jsonPayload(t, []any{innerJSON})})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := post(t, srv.URL+"/decode", "", list(t, enc...))
	if code != http.StatusOK {
		t.Fatalf("decode: %d %s", code, out)
	}
	got := unlist(t, out)
	if s := string(got[0].Data); !strings.Contains(s, `"data":{"step":"llm/1","type":"step.started"}`) || !strings.Contains(s, `"data":"not a payload"`) {
		t.Errorf("poll answer decoded as %s; want the item's event and the other data as it was", s)
	}
	if s := string(got[1].Data); s != `[{"answer":"the secret plan"}]` {
		t.Errorf("payload list decoded as %s; want the inner value", s)
	}
}
