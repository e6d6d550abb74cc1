package codec_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/codec"
)

func key(id string, fill byte) codec.Key {
	return codec.Key{ID: id, Bytes: bytes.Repeat([]byte{fill}, codec.KeySize)}
}

func mustNew(t *testing.T, keys ...codec.Key) *codec.Codec {
	t.Helper()
	c, err := codec.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const secret = "look up the orders database and open a ticket"

func plain(t *testing.T) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"prompt": secret})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRoundTrip: an encrypted payload holds none of its text, names its
// key, and decodes to the payload it was, metadata included.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := mustNew(t, key("a", 1))
	in := []*commonpb.Payload{plain(t), {Metadata: map[string][]byte{"encoding": []byte("binary/null")}}}
	enc, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range enc {
		md := e.GetMetadata()
		if string(md["encoding"]) != codec.Encoding || string(md[codec.MetadataKeyID]) != "a" || string(md[codec.MetadataCipher]) != codec.Cipher {
			t.Fatalf("metadata %q", md)
		}
	}
	if bytes.Contains(enc[0].GetData(), []byte("orders")) {
		t.Fatal("the encrypted payload holds its text")
	}
	a, _ := c.Encode(in[:1])
	if bytes.Equal(a[0].GetData(), enc[0].GetData()) {
		t.Fatal("two encryptions of one payload are equal: the nonce is not fresh")
	}
	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &got); err != nil || got["prompt"] != secret {
		t.Fatalf("decoded %v, %v", got, err)
	}
	if string(dec[1].GetMetadata()["encoding"]) != "binary/null" {
		t.Fatalf("decoded %v", dec[1])
	}
}

// TestRotation: payloads written under A read with [B, A], and new ones
// are written under B.
func TestRotation(t *testing.T) {
	t.Parallel()
	old := mustNew(t, key("a", 1))
	enc, err := old.Encode([]*commonpb.Payload{plain(t)})
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustNew(t, key("b", 2), key("a", 1))
	if _, err := rotated.Decode(enc); err != nil {
		t.Fatalf("read under [b, a]: %v", err)
	}
	enc2, _ := rotated.Encode([]*commonpb.Payload{plain(t)})
	if id := string(enc2[0].GetMetadata()[codec.MetadataKeyID]); id != "b" {
		t.Fatalf("written under %q, want b", id)
	}
	var unknown *codec.UnknownKeyError
	if _, err := old.Decode(enc2); !errors.As(err, &unknown) || unknown.ID != "b" || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("old codec reading b: %v, want an UnknownKeyError naming b", err)
	}
}

// TestWrongKey: a payload under id a read with another key under id a,
// a damaged payload, and one whose key id was rewritten are ErrAuth, and
// nothing is returned.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	c := mustNew(t, key("a", 1), key("b", 2))
	enc, _ := c.Encode([]*commonpb.Payload{plain(t)})
	other := mustNew(t, key("a", 9))
	if got, err := other.Decode(enc); !errors.Is(err, codec.ErrAuth) || got != nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("wrong key: %v, %v", got, err)
	}
	damaged := &commonpb.Payload{Metadata: enc[0].GetMetadata(), Data: append([]byte(nil), enc[0].GetData()...)}
	damaged.Data[len(damaged.Data)-1] ^= 1
	if _, err := c.Decode([]*commonpb.Payload{damaged}); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("damaged: %v", err)
	}
	relabeled := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte(codec.Encoding), codec.MetadataKeyID: []byte("b"), codec.MetadataCipher: []byte(codec.Cipher)}, Data: enc[0].GetData()}
	if _, err := c.Decode([]*commonpb.Payload{relabeled}); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("relabeled: %v", err)
	}
	short := &commonpb.Payload{Metadata: enc[0].GetMetadata(), Data: []byte("x")}
	if _, err := c.Decode([]*commonpb.Payload{short}); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("short: %v", err)
	}
}

// TestPassthrough: payloads that are not encrypted decode unchanged, so
// histories recorded without a codec replay.
func TestPassthrough(t *testing.T) {
	t.Parallel()
	c := mustNew(t, key("a", 1))
	p := plain(t)
	dec, err := c.Decode([]*commonpb.Payload{p, nil})
	if err != nil || dec[0] != p {
		t.Fatalf("decode of a plain payload: %v, %v", dec, err)
	}
	dc := codec.DataConverter(c)
	var got map[string]string
	if err := dc.FromPayload(p, &got); err != nil || got["prompt"] != secret {
		t.Fatalf("data converter on a plain payload: %v, %v", got, err)
	}
}

// TestFailureConverter: a failure's message and stack trace travel
// encrypted and come back whole.
func TestFailureConverter(t *testing.T) {
	t.Parallel()
	fc := codec.FailureConverter(mustNew(t, key("a", 1)))
	f := fc.ErrorToFailure(temporal.NewApplicationError("denied: "+secret, "Denied"))
	if strings.Contains(f.GetMessage(), "orders") || f.GetEncodedAttributes() == nil || bytes.Contains(f.GetEncodedAttributes().GetData(), []byte("orders")) {
		t.Fatalf("failure in plain text: %v", f)
	}
	err := fc.FailureToError(f)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !strings.Contains(app.Error(), secret) || app.Type() != "Denied" {
		t.Fatalf("decoded failure %v", err)
	}
	if codec.DataConverter(nil) != converter.GetDefaultDataConverter() || codec.FailureConverter(nil) != temporal.GetDefaultFailureConverter() {
		t.Fatal("without a codec, the converters are not the sdk's defaults")
	}
}

// TestBadKeys: each bad key setting is a one-line error naming the key
// id, never the key's text.
func TestBadKeys(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	for _, tc := range []struct{ in, want string }{
		{"a:" + short, `key "a" is 16 bytes after base64 decoding, want 32`},
		{"a:not*base64", `key "a" is not standard base64`},
		{"a" + good, `without ':'`},
		{"a:" + good + ",", `an empty entry`},
		{"a b:" + good, `key id "a b"`},
		{":" + good, `key id ""`},
	} {
		_, err := codec.ParseKeys(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), short) || strings.Contains(err.Error(), good) {
			t.Errorf("ParseKeys(%q): %v, want one line containing %q", tc.in, err, tc.want)
		}
	}
	keys, err := codec.ParseKeys(" b:" + good + " , a:" + good)
	if err != nil || len(keys) != 2 || keys[0].ID != "b" {
		t.Fatalf("ParseKeys: %v, %v", keys, err)
	}
	if _, err := codec.New(keys); err != nil {
		t.Fatal(err)
	}
	dup, _ := codec.ParseKeys("a:" + good + ",a:" + good)
	if _, err := codec.New(dup); err == nil || !strings.Contains(err.Error(), `two keys have the id "a"`) {
		t.Fatalf("two keys with one id: %v", err)
	}
	if _, err := codec.New(nil); err == nil {
		t.Fatal("no keys: no error")
	}
	if _, err := codec.New([]codec.Key{{ID: "a", Bytes: []byte("short")}}); err == nil || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("a short key: %v", err)
	}

	file := "# keys\n\nb:" + good + "\n a:" + good + "\n"
	if keys, err := codec.ParseKeyFile([]byte(file)); err != nil || len(keys) != 2 || keys[1].ID != "a" {
		t.Fatalf("ParseKeyFile: %v, %v", keys, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"# nothing\n", "no keys"},
		{"b:" + good + "\nnonsense\n", "line 2: an entry without ':'"},
		{"b:" + short + "\n", `line 1: key "b" is 16 bytes`},
	} {
		_, err := codec.ParseKeyFile([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseKeyFile(%q): %v, want one line containing %q", tc.in, err, tc.want)
		}
	}
}

// benchPayloads are ten JSON payloads of about 1 KB of text each, like a
// step's input and result.
func benchPayloads(b *testing.B) []*commonpb.Payload {
	b.Helper()
	var ps []*commonpb.Payload
	for i := range 10 {
		p, err := converter.GetDefaultDataConverter().ToPayload(map[string]string{"content": strings.Repeat(fmt.Sprintf("word %d of the answer, ", i), 45)})
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// BenchmarkEncode encrypts ten 1 KB payloads.
func BenchmarkEncode(b *testing.B) {
	c := testCodec(b)
	ps := benchPayloads(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(ps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode decrypts ten 1 KB payloads.
func BenchmarkDecode(b *testing.B) {
	c := testCodec(b)
	enc, err := c.Encode(benchPayloads(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func testCodec(b *testing.B) *codec.Codec {
	c, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{3}, codec.KeySize)}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// TestDecodeWithin: DecodeWithin decodes a payload that inflates to its
// bound and refuses one byte less with codec.ErrTooBig; a plain payload passes.
func TestDecodeWithin(t *testing.T) {
	c, err := codec.New([]codec.Key{{ID: "k1", Bytes: bytes.Repeat([]byte{1}, codec.KeySize)}})
	if err != nil {
		t.Fatal(err)
	}
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: make([]byte, 1<<20)}
	enc, err := c.Encode([]*commonpb.Payload{p})
	if err != nil {
		t.Fatal(err)
	}
	n := proto.Size(p)
	if d, err := c.DecodeWithin(enc[0], n); err != nil || !proto.Equal(d, p) {
		t.Fatalf("DecodeWithin(%d): %v", n, err)
	}
	if _, err := c.DecodeWithin(enc[0], n-1); !errors.Is(err, codec.ErrTooBig) {
		t.Fatalf("DecodeWithin(%d): %v, want codec.ErrTooBig", n-1, err)
	}
	if d, err := c.DecodeWithin(p, 0); err != nil || d != p {
		t.Fatalf("DecodeWithin of a plain payload: %v", err)
	}
}
