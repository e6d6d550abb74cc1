package streams_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/codec"
)

// The keys of the codec cross-checks: k1 and k2, and a k1 that is not k1.
var (
	key1     = codec.Key{ID: "k1", Bytes: bytes.Repeat([]byte{0x11}, codec.KeySize)}
	key2     = codec.Key{ID: "k2", Bytes: bytes.Repeat([]byte{0x22}, codec.KeySize)}
	wrongKey = codec.Key{ID: "k1", Bytes: bytes.Repeat([]byte{0x33}, codec.KeySize)}
)

// keysEnv is the environment that gives stream.js keys, as
// AGENTRUN_CODEC_KEYS.
func keysEnv(keys ...codec.Key) []string {
	var entries []string
	for _, k := range keys {
		entries = append(entries, k.ID+":"+base64.StdEncoding.EncodeToString(k.Bytes))
	}
	return []string{"AGENTRUN_CODEC_KEYS=" + strings.Join(entries, ","), "AGENTRUN_CODEC_KEY_FILE="}
}

func newCodec(t *testing.T, keys ...codec.Key) *codec.Codec {
	t.Helper()
	c, err := codec.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// end waits for the run to exit and returns its output lines, its stderr
// and how it exited.
func (r *tsRun) end() ([]string, string, error) {
	<-r.read
	err := r.cmd.Wait()
	return r.lines, r.stderr.String(), err
}

// codecValues are the values the cross-checks encrypt.
var codecValues = []string{`"a"`, `42`, `{"k":[1,"é ✓"],"n":null}`, `"` + strings.Repeat("lorem ipsum ", 400) + `"`}

// goSealed is each of codecValues as Go's codec encrypts it (with the
// default data converter under it, as agentrun's programs do), serialized
// and in base64, as stream.js open reads it.
func goSealed(t *testing.T, c *codec.Codec) []string {
	t.Helper()
	dc := codec.DataConverter(c)
	var out []string
	for _, v := range codecValues {
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			t.Fatal(err)
		}
		p, err := dc.ToPayload(x)
		if err != nil {
			t.Fatal(err)
		}
		if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != codec.Encoding {
			t.Fatalf("Go's codec made a %q payload of %s, want %s", enc, v, codec.Encoding)
		}
		out = append(out, marshalB64(t, p))
	}
	return out
}

func marshalB64(t *testing.T, p *commonpb.Payload) string {
	t.Helper()
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func unmarshalB64(t *testing.T, s string) *commonpb.Payload {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("stream.js seal printed %q: %v", s, err)
	}
	var p commonpb.Payload
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatalf("stream.js seal printed %q: %v", s, err)
	}
	return &p
}

// openedValues renders codecValues as stream.js open prints them.
func openedValues(t *testing.T) []string {
	t.Helper()
	var want []string
	for _, v := range codecValues {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(v)); err != nil {
			t.Fatal(err)
		}
		want = append(want, `{"encoding":"json/plain","value":`+b.String()+`}`)
	}
	return want
}

// TestTypeScriptCodecReadsGo: payloads that Go's codec encrypted (under
// k1) decode in node with codec.js (stream.js open) to the values Go
// encrypted, with a key list holding k1 first or second (decrypt with
// any); a plain payload passes through codec.js unchanged, with keys and
// without.
func TestTypeScriptCodecReadsGo(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	sealed := goSealed(t, newCodec(t, key1))
	want := openedValues(t)
	for _, keys := range [][]codec.Key{{key1}, {key2, key1}} {
		lines := startTSEnv(t, t.Context(), node, keysEnv(keys...), append([]string{"open"}, sealed...)...).wait(t)
		if !slices.Equal(lines, want) {
			t.Fatalf("node with keys %v opened Go's payloads as\n%s\nwant\n%s", keyIDs(keys), strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	}
	plain, err := converter.GetDefaultDataConverter().ToPayload(map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{keysEnv(key1), noKeys} {
		lines := startTSEnv(t, t.Context(), node, env, "open", marshalB64(t, plain)).wait(t)
		if !slices.Equal(lines, []string{`{"encoding":"json/plain","value":{"n":1}}`}) {
			t.Fatalf("node with %q opened a plain payload as %q, want it unchanged", env[0], lines)
		}
	}
}

func keyIDs(keys []codec.Key) []string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// TestGoCodecReadsTypeScript: payloads that codec.js encrypted in node
// (stream.js seal, with keys k2 then k1) carry exactly the format's
// metadata, naming k2, and a fresh nonce each; Go's codec holding k1 and
// k2 decodes them to the values node sealed, and one holding only k1
// refuses them naming k2. Without keys, codec.js leaves payloads plain.
func TestGoCodecReadsTypeScript(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	args := append(append([]string{"seal"}, codecValues...), codecValues[0])
	lines := startTSEnv(t, t.Context(), node, keysEnv(key2, key1), args...).wait(t)
	if len(lines) != len(codecValues)+1 {
		t.Fatalf("stream.js seal printed %d lines, want %d:\n%s", len(lines), len(codecValues)+1, strings.Join(lines, "\n"))
	}
	dc := codec.DataConverter(newCodec(t, key1, key2))
	var nonces []string
	for i, line := range lines {
		p := unmarshalB64(t, line)
		md := p.GetMetadata()
		wantMD := map[string]string{converter.MetadataEncoding: codec.Encoding, codec.MetadataKeyID: "k2", codec.MetadataCipher: codec.Cipher}
		if len(md) != len(wantMD) {
			t.Fatalf("payload %d has metadata %q, want %q", i, md, wantMD)
		}
		for k, v := range wantMD {
			if string(md[k]) != v {
				t.Fatalf("payload %d has metadata %s=%q, want %q", i, k, md[k], v)
			}
		}
		if len(p.GetData()) < 12+16 {
			t.Fatalf("payload %d is %d bytes, want a nonce, a ciphertext and a tag", i, len(p.GetData()))
		}
		nonces = append(nonces, string(p.GetData()[:12]))
		var got any
		if err := dc.FromPayload(p, &got); err != nil {
			t.Fatalf("Go cannot decode node's payload %d: %v", i, err)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(args[1+i])); err != nil {
			t.Fatal(err)
		}
		if string(b) != want.String() {
			t.Fatalf("Go decoded node's payload %d as %s, want %s", i, b, want.String())
		}
	}
	slices.Sort(nonces)
	if len(slices.Compact(nonces)) != len(lines) {
		t.Fatal("node sealed two payloads with one nonce")
	}

	var unknown *codec.UnknownKeyError
	_, err := newCodec(t, key1).Decode([]*commonpb.Payload{unmarshalB64(t, lines[0])})
	if !errors.As(err, &unknown) || unknown.ID != "k2" {
		t.Fatalf("Go with k1 only decoded node's k2 payload: %v; want an UnknownKeyError naming k2", err)
	}

	plain := startTSEnv(t, t.Context(), node, noKeys, "seal", `"a"`).wait(t)
	if len(plain) != 1 || string(unmarshalB64(t, plain[0]).GetMetadata()[converter.MetadataEncoding]) != "json/plain" {
		t.Fatalf("stream.js seal without keys printed %q, want a plain json/plain payload", plain)
	}
}

// TestTypeScriptCodecRefuses: codec.js never returns garbage. An encrypted
// payload it cannot open fails stream.js with an error naming the key id
// and prints nothing: no keys, another key id, a wrong key under the id,
// a key id changed in the metadata (it is authenticated), damaged bytes,
// an unknown cipher. Bad key settings fail naming the variable. And Go
// refuses a damaged payload node sealed as ErrAuth.
func TestTypeScriptCodecRefuses(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	sealed := goSealed(t, newCodec(t, key1))[0]
	p := unmarshalB64(t, sealed)
	withMD := func(k, v string) string {
		q := proto.Clone(p).(*commonpb.Payload)
		q.Metadata[k] = []byte(v)
		return marshalB64(t, q)
	}
	damaged := proto.Clone(p).(*commonpb.Payload)
	damaged.Data[len(damaged.Data)/2] ^= 1
	keyFile := filepath.Join(t.TempDir(), "keys")

	cases := []struct {
		name    string
		env     []string
		payload string
		want    string
	}{
		{"no keys", noKeys, sealed, `payload encrypted under key id "k1", and no keys are configured`},
		{"another key id", keysEnv(key2), sealed, `payload encrypted under key id "k1", which is not among the configured keys (k2)`},
		{"a wrong key", keysEnv(wrongKey), sealed, `decrypt payload under key id "k1": payload does not decrypt`},
		{"key id changed", keysEnv(key1, key2), withMD(codec.MetadataKeyID, "k2"), `decrypt payload under key id "k2": payload does not decrypt`},
		{"damaged", keysEnv(key1), marshalB64(t, damaged), `decrypt payload under key id "k1": payload does not decrypt`},
		{"unknown cipher", keysEnv(key1), withMD(codec.MetadataCipher, "AES256GCM-V0"), `decrypt payload under key id "k1": cipher "AES256GCM-V0", want "AES256GCM-ZLIB-V1"`},
		{"short key", []string{"AGENTRUN_CODEC_KEYS=k1:" + base64.StdEncoding.EncodeToString(make([]byte, 16)), "AGENTRUN_CODEC_KEY_FILE="}, sealed, `AGENTRUN_CODEC_KEYS: key "k1" is 16 bytes after base64 decoding, want 32`},
		{"two keys one id", keysEnv(key1, wrongKey), sealed, `AGENTRUN_CODEC_KEYS: two keys have the id "k1"`},
		{"both variables", append(keysEnv(key1), "AGENTRUN_CODEC_KEY_FILE="+keyFile), sealed, `AGENTRUN_CODEC_KEYS and AGENTRUN_CODEC_KEY_FILE are both set`},
		{"missing key file", []string{"AGENTRUN_CODEC_KEYS=", "AGENTRUN_CODEC_KEY_FILE=" + keyFile}, sealed, `AGENTRUN_CODEC_KEY_FILE ` + keyFile + `: ENOENT`},
	}
	for _, c := range cases {
		lines, stderr, err := startTSEnv(t, t.Context(), node, c.env, "open", c.payload).end()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || len(lines) != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: stream.js open exited with %v, printed %q, stderr:\n%s\nwant exit 1, nothing printed, an error containing %q", c.name, err, lines, stderr, c.want)
		}
	}

	nodeSealed := startTSEnv(t, t.Context(), node, keysEnv(key1), "seal", `"a"`).wait(t)
	q := unmarshalB64(t, nodeSealed[0])
	q.Data[len(q.Data)-1] ^= 1
	if _, err := newCodec(t, key1).Decode([]*commonpb.Payload{q}); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("Go decoded node's damaged payload: %v; want ErrAuth", err)
	}
}

// TestTypeScriptCodecTypeChecks type-checks codec.js (// @ts-check, JSDoc
// types) strictly with the pinned TypeScript compiler against the pinned
// @temporalio/common: AgentrunCodec implements its PayloadCodec interface.
func TestTypeScriptCodecTypeChecks(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	tsc := exec.Command(node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "--noEmit", "--allowJs", "--checkJs", "--strict",
		"--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--skipLibCheck", "--types", "node", "codec.js")
	tsc.Dir = tsDir
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("codec.js does not type-check: %v\n%s", err, out)
	}
}

// docVector reads a "name  HEX" line of docs/privacy.md's test vector.
func docVector(t *testing.T, doc []byte, name string) []byte {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +([0-9a-f]+)$`).FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/privacy.md's test vector has no %q line", name)
	}
	b, err := hex.DecodeString(string(m[1]))
	if err != nil {
		t.Fatalf("docs/privacy.md's test vector: %s: %v", name, err)
	}
	return b
}

// TestPrivacyDocTestVector: the test vector of docs/privacy.md's wire
// format is right: its nonce begins its data, its plaintext inflates to
// its proto(P), which is the payload {encoding: json/plain} "hi"; Go's
// codec and codec.js (given the vector's AGENTRUN_CODEC_KEYS line) both
// decode its data to that payload.
func TestPrivacyDocTestVector(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	doc, err := os.ReadFile("../docs/privacy.md")
	if err != nil {
		t.Fatal(err)
	}
	key, data, nonce := docVector(t, doc, "key"), docVector(t, doc, "data"), docVector(t, doc, "nonce")
	plaintext, protoP := docVector(t, doc, "plaintext"), docVector(t, doc, "proto(P)")
	if !bytes.HasPrefix(data, nonce) || len(data) != len(nonce)+len(plaintext)+16 {
		t.Fatalf("the vector's data is %d bytes, want its nonce, a ciphertext as long as its plaintext (%d) and a 16-byte tag", len(data), len(plaintext))
	}
	zr, err := zlib.NewReader(bytes.NewReader(plaintext))
	if err != nil {
		t.Fatal(err)
	}
	inflated, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(inflated, protoP) {
		t.Fatalf("the vector's plaintext inflates to %x (%v), want its proto(P) %x", inflated, err, protoP)
	}
	p := &commonpb.Payload{Metadata: map[string][]byte{
		converter.MetadataEncoding: []byte(codec.Encoding), codec.MetadataKeyID: []byte("k1"), codec.MetadataCipher: []byte(codec.Cipher),
	}, Data: data}
	out, err := newCodec(t, codec.Key{ID: "k1", Bytes: key}).Decode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatalf("Go cannot decode the vector: %v", err)
	}
	want := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: []byte(`"hi"`)}
	if !proto.Equal(out[0], want) {
		t.Fatalf("Go decodes the vector to %v, want %v", out[0], want)
	}
	var P commonpb.Payload
	if err := proto.Unmarshal(protoP, &P); err != nil || !proto.Equal(&P, want) {
		t.Fatalf("the vector's proto(P) is %v (%v), want %v", &P, err, want)
	}
	setting := regexp.MustCompile(`(?m)^setting +(AGENTRUN_CODEC_KEYS=k1:\S+)$`).FindSubmatch(doc)
	if setting == nil || string(setting[1]) != keysEnv(codec.Key{ID: "k1", Bytes: key})[0] {
		t.Fatalf("the vector's setting line %q does not give its key", setting)
	}
	lines := startTSEnv(t, t.Context(), node, []string{string(setting[1]), "AGENTRUN_CODEC_KEY_FILE="}, "open", marshalB64(t, p)).wait(t)
	if !slices.Equal(lines, []string{`{"encoding":"json/plain","value":"hi"}`}) {
		t.Fatalf("codec.js decodes the vector to %q, want json/plain \"hi\"", lines)
	}
}
