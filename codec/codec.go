package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// The metadata of an encrypted payload (see the package doc's Format).
const (
	// Encoding is the encoding of an encrypted payload.
	Encoding = "binary/encrypted"
	// MetadataKeyID is the metadata key naming the key a payload was
	// encrypted with.
	MetadataKeyID = "encryption-key-id"
	// MetadataCipher is the metadata key naming the format, Cipher.
	MetadataCipher = "encryption-cipher"
	// Cipher is the one format this package writes and reads.
	Cipher = "AES256GCM-ZLIB-V1"
	// KeySize is the size of a key: AES-256.
	KeySize = 32
	// nonceSize is the size of GCM's standard nonce.
	nonceSize = 12
	// maxKeyID bounds a key id's length.
	maxKeyID = 64
)

// ErrAuth is a payload that does not open under the key it names: the key
// under that id is not the one it was written with, or its bytes were
// damaged. Nothing of such a payload is returned.
var ErrAuth = errors.New("payload does not decrypt: wrong key for its key id, or damaged bytes")

// UnknownKeyError is a payload encrypted under a key id the Codec does not
// hold.
type UnknownKeyError struct {
	// ID is the payload's key id; Have the ids the Codec holds.
	ID   string
	Have []string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("payload encrypted under key id %q, which is not among the configured keys (%s): add that key (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE)", e.ID, strings.Join(e.Have, ", "))
}

// IsKeyError says whether err is a payload that the keys cannot decrypt:
// an unknown key id or ErrAuth.
func IsKeyError(err error) bool {
	var unknown *UnknownKeyError
	return errors.Is(err, ErrAuth) || errors.As(err, &unknown)
}

// Key is one encryption key.
type Key struct {
	// ID names the key in each payload it encrypts.
	ID string
	// Bytes is the AES-256 key, KeySize bytes.
	Bytes []byte
}

// Codec is a converter.PayloadCodec that encrypts with its first key and
// decrypts with any of its keys. It is safe for concurrent use.
type Codec struct {
	first string
	aeads map[string]cipher.AEAD
	ids   []string
	// nonceKeys derive the nonces of sealed blobs, one per key id.
	nonceKeys map[string][]byte
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a Codec of keys, which encrypts with keys[0]. It refuses no
// keys, a key id that is empty, too long or has other characters than
// letters, digits, '_', '-' and '.', a key that is not KeySize bytes, and
// two keys with one id.
func New(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	c := &Codec{first: keys[0].ID, aeads: map[string]cipher.AEAD{}, nonceKeys: map[string][]byte{}}
	for _, k := range keys {
		if err := validID(k.ID); err != nil {
			return nil, err
		}
		if len(k.Bytes) != KeySize {
			return nil, fmt.Errorf("key %q is %d bytes, want %d (AES-256): make one with `openssl rand -base64 32`", k.ID, len(k.Bytes), KeySize)
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("two keys have the id %q: give each key its own id", k.ID)
		}
		block, err := aes.NewCipher(k.Bytes)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
		mac := hmac.New(sha256.New, k.Bytes)
		mac.Write([]byte("agentrun content nonce"))
		c.nonceKeys[k.ID] = mac.Sum(nil)
		c.ids = append(c.ids, k.ID)
	}
	return c, nil
}

// KeyIDs are the ids of the Codec's keys, the encrypting one first.
func (c *Codec) KeyIDs() []string { return append([]string(nil), c.ids...) }

func validID(id string) error {
	if id == "" || len(id) > maxKeyID {
		return fmt.Errorf("key id %q: want 1 to %d letters, digits, '_', '-' or '.'", id, maxKeyID)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("key id %q: want 1 to %d letters, digits, '_', '-' or '.'", id, maxKeyID)
		}
	}
	return nil
}

// Encode encrypts each payload under the first key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		e, err := c.encode(p)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (c *Codec) encode(p *commonpb.Payload) (*commonpb.Payload, error) {
	plain, err := proto.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encrypt payload: %w", err)
	}
	z, err := compress(plain)
	if err != nil {
		return nil, fmt.Errorf("encrypt payload: %w", err)
	}
	aead := c.aeads[c.first]
	data := make([]byte, nonceSize, nonceSize+len(z)+aead.Overhead())
	if _, err := rand.Read(data); err != nil {
		return nil, fmt.Errorf("encrypt payload: nonce: %w", err)
	}
	data = aead.Seal(data, data, z, []byte(c.first))
	return &commonpb.Payload{
		Metadata: map[string][]byte{
			converter.MetadataEncoding: []byte(Encoding),
			MetadataKeyID:              []byte(c.first),
			MetadataCipher:             []byte(Cipher),
		},
		Data: data,
	}, nil
}

// Decode decrypts each encrypted payload with the key it names and leaves
// the others as they are. An encrypted payload it cannot decrypt (an
// unknown key id, a wrong key, damage) is a converter.WorkflowTaskFailureError
// wrapping the reason: in a worker it fails the workflow task, which
// Temporal retries, and never the run, so a worker that lacks a key holds
// its runs until it has the key instead of failing them. Elsewhere it is
// an ordinary error with the reason's text; errors.As and errors.Is see
// the reason (*UnknownKeyError, ErrAuth).
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		d, err := c.decode(p, maxPlain)
		if err != nil {
			return nil, converter.NewWorkflowTaskFailureError(err)
		}
		out[i] = d
	}
	return out, nil
}

// maxPlain bounds a decrypted payload's inflated size: Temporal refuses
// payloads far smaller (2 MiB by default), so more is a damaged or hostile
// payload, not one of ours.
const maxPlain = 256 << 20

// ErrTooBig is an encrypted payload that inflates to more bytes than its
// decoder allows: maxPlain (256 MiB), or DecodeWithin's bound.
var ErrTooBig = errors.New("it inflates to more than the bound")

// DecodeWithin decodes one payload as Decode does (an unencrypted one
// passes as it is), refusing to inflate it to more than max bytes (and
// never more than 256 MiB): more is an error wrapping ErrTooBig. It lets a
// server bound what the payloads of one request inflate to together; the
// errors are the reasons themselves, not workflow task failures.
func (c *Codec) DecodeWithin(p *commonpb.Payload, max int) (*commonpb.Payload, error) {
	return c.decode(p, min(max, maxPlain))
}

func (c *Codec) decode(p *commonpb.Payload, max int) (*commonpb.Payload, error) {
	md := p.GetMetadata()
	if string(md[converter.MetadataEncoding]) != Encoding {
		return p, nil
	}
	id := string(md[MetadataKeyID])
	if cph := string(md[MetadataCipher]); cph != Cipher {
		return nil, fmt.Errorf("decrypt payload under key id %q: cipher %q, want %q", id, cph, Cipher)
	}
	aead, ok := c.aeads[id]
	if !ok {
		return nil, &UnknownKeyError{ID: id, Have: c.KeyIDs()}
	}
	data := p.GetData()
	if len(data) < nonceSize+aead.Overhead() {
		return nil, fmt.Errorf("decrypt payload under key id %q: %w", id, ErrAuth)
	}
	z, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("decrypt payload under key id %q: %w", id, ErrAuth)
	}
	plain, err := inflate(z, max)
	if err != nil {
		return nil, fmt.Errorf("decrypt payload under key id %q: %w", id, err)
	}
	var out commonpb.Payload
	if err := proto.Unmarshal(plain, &out); err != nil {
		return nil, fmt.Errorf("decrypt payload under key id %q: %w", id, err)
	}
	return &out, nil
}

// DataConverter is the sdk's default data converter with c encoding every
// payload; with c nil, the default itself.
func DataConverter(c *Codec) converter.DataConverter {
	if c == nil {
		return converter.GetDefaultDataConverter()
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// FailureConverter is the sdk's default failure converter over
// DataConverter(c), which with c set also encodes failures' messages and
// stack traces (they travel as an encrypted payload; the history shows
// "Encoded failure"); with c nil, the default itself.
func FailureConverter(c *Codec) converter.FailureConverter {
	if c == nil {
		return temporal.GetDefaultFailureConverter()
	}
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          DataConverter(c),
		EncodeCommonAttributes: true,
	})
}

// ParseKeys reads keys in the form "id1:BASE64,id2:BASE64" (spaces around
// entries are ignored), in order.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, errors.New(`an empty entry: want "id1:BASE64,id2:BASE64"`)
		}
		k, err := parseKey(entry)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// ParseKeyFile reads keys from a key file's contents: one "id:BASE64" a
// line, in order; blank lines and lines starting with '#' are skipped.
// Errors name the line.
func ParseKeyFile(b []byte) ([]Key, error) {
	var keys []Key
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parseKey(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New(`no keys: want one "id:BASE64" a line`)
	}
	return keys, nil
}

// parseKey reads one "id:BASE64", never echoing the key's text.
func parseKey(s string) (Key, error) {
	id, b64, ok := strings.Cut(s, ":")
	id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
	if !ok {
		return Key{}, errors.New(`an entry without ':': want "id:BASE64", BASE64 being 32 bytes in standard base64`)
	}
	if err := validID(id); err != nil {
		return Key{}, err
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return Key{}, fmt.Errorf("key %q is not standard base64: want 32 bytes in standard base64, e.g. from `openssl rand -base64 32`", id)
	}
	if len(b) != KeySize {
		return Key{}, fmt.Errorf("key %q is %d bytes after base64 decoding, want %d (AES-256): make one with `openssl rand -base64 32`", id, len(b), KeySize)
	}
	return Key{ID: id, Bytes: b}, nil
}
