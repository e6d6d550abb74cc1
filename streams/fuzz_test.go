package streams

import (
	"encoding/base64"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodePublish: no signal payload makes the host's decoder panic; an
// accepted batch has one canonical item per entry, each of which decodes.
func FuzzDecodePublish(f *testing.F) {
	good, _ := EncodePayload(&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"a"`)})
	for _, s := range []string{
		`{"items":[{"topic":"events","data":"` + good + `"}],"publisher_id":"p","sequence":1}`,
		`{"items":null}`, `null`, `[]`, `{"items":[{"data":"@@"}]}`, `{"sequence":1e99}`, `{"items":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: data}
		in, entries, err := decodePublish(p)
		if err != nil {
			return
		}
		if len(entries) != len(in.Items) {
			t.Fatalf("%d entries for %d items", len(entries), len(in.Items))
		}
		for i, e := range entries {
			pl, err := DecodePayload(e.wire())
			if err != nil {
				t.Fatalf("entry %d kept undecodable data: %v", i, err)
			}
			if again, _ := EncodePayload(pl); again != e.wire() {
				t.Fatalf("entry %d is not canonical", i)
			}
		}
	})
}

// FuzzDecodePayload: DecodePayload never panics, and what it accepts
// encodes back to the same payload.
func FuzzDecodePayload(f *testing.F) {
	good, _ := EncodePayload(&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: []byte{0, 1, 2}})
	f.Add(good)
	f.Add(base64.RawStdEncoding.EncodeToString([]byte("\x0a\x04\x0a\x02ab")))
	f.Add("====")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePayload(s)
		if err != nil {
			return
		}
		enc, err := EncodePayload(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodePayload(enc)
		if err != nil || !proto.Equal(p, back) {
			t.Fatalf("round trip: %v, %v vs %v", err, p, back)
		}
	})
}
