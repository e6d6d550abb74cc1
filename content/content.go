package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Store keeps immutable blobs by key.
type Store interface {
	// Put stores data and returns KeyOf(data). It is idempotent: putting
	// bytes that are already there is harmless, and concurrent puts of the
	// same bytes (from goroutines or from processes sharing a folder) are
	// safe. A Put that returned nil survives a crash; one that returned an
	// error may or may not have stored the blob, and may be retried.
	Put(ctx context.Context, data []byte) (string, error)
	// Get returns the bytes stored under key. It returns an error wrapping
	// ErrNotFound when there are none, and one wrapping ErrDamaged when the
	// stored bytes do not hash to key (it never returns damaged bytes).
	// Errors name the key.
	Get(ctx context.Context, key string) ([]byte, error)
}

// Sealer encrypts blobs at rest (package codec's Codec is one). Seal
// returns the bytes a store keeps for the blob plain under its key addr;
// equal blobs must seal to equal bytes (so a store can compare what it
// holds), and every sealed form begins with SealedMagic. Open reverses
// Seal; bytes that do not open under the key they name are an error
// wrapping ErrDamaged.
type Sealer interface {
	Seal(addr string, plain []byte) ([]byte, error)
	Open(addr string, sealed []byte) ([]byte, error)
}

// SealedMagic begins every sealed blob, and no blob a store keeps plain
// can be taken for one: a store reads stored bytes that hash to their key
// as a plain blob first.
const SealedMagic = "agentrun-sealed-blob-v1\n"

// seal returns the bytes to store for data under key: data itself without
// a sealer.
func seal(s Sealer, key string, data []byte) ([]byte, error) {
	if s == nil {
		return data, nil
	}
	return s.Seal(key, data)
}

// Unseal returns the blob under key from the bytes a store holds: the
// bytes themselves when they hash to key (a blob kept plain, e.g. before
// encryption was turned on), else what s opens them to, checked against
// key. where names the place in errors; without s, a sealed blob is an
// error wrapping ErrDamaged that says a key is needed.
func Unseal(s Sealer, key, where string, stored []byte) ([]byte, error) {
	got := KeyOf(stored)
	switch {
	case got == key:
		return stored, nil
	case !strings.HasPrefix(string(stored[:min(len(stored), len(SealedMagic))]), SealedMagic):
		return nil, fmt.Errorf("get %s: %s holds %d bytes of %s: %w", key, where, len(stored), got, ErrDamaged)
	case s == nil:
		return nil, fmt.Errorf("get %s: %s holds an encrypted blob and no key is configured (AGENTRUN_CODEC_KEYS or AGENTRUN_CODEC_KEY_FILE): %w", key, where, ErrDamaged)
	}
	plain, err := s.Open(key, stored)
	if err != nil {
		return nil, fmt.Errorf("get %s: %s: %w", key, where, err)
	}
	if got := KeyOf(plain); got != key {
		return nil, fmt.Errorf("get %s: %s decrypts to %d bytes of %s: %w", key, where, len(plain), got, ErrDamaged)
	}
	return plain, nil
}

// Errors of the store.
var (
	// ErrNotFound: no blob is stored under the key.
	ErrNotFound = errors.New("blob not found")
	// ErrDamaged: the stored bytes do not hash to the key. A Put of the
	// right bytes repairs the blob.
	ErrDamaged = errors.New("blob is damaged")
	// ErrInvalidKey: the key is not "sha256:" followed by 64 lowercase hex
	// digits.
	ErrInvalidKey = errors.New("invalid content key")
)

const (
	keyPrefix = "sha256:"
	keyLen    = len(keyPrefix) + 2*sha256.Size
	keyFormat = `"sha256:" followed by 64 lowercase hex digits`
	// maxQuotedKey bounds how much of a bad key an error message quotes.
	maxQuotedKey = 80
)

// KeyOf returns the key of a blob: "sha256:" followed by the 64 lowercase
// hex digits of the SHA-256 of data.
func KeyOf(data []byte) string {
	sum := sha256.Sum256(data)
	return keyPrefix + hex.EncodeToString(sum[:])
}

// ValidKey returns nil for a well-formed key, else an error wrapping
// ErrInvalidKey that says what a key looks like. A valid key is a safe file
// name: it holds no path separator and no dot.
func ValidKey(key string) error {
	hexPart, ok := strings.CutPrefix(key, keyPrefix)
	if ok && len(key) == keyLen && isLowerHex(hexPart) {
		return nil
	}
	quoted := key
	if len(quoted) > maxQuotedKey {
		quoted = quoted[:maxQuotedKey] + "..."
	}
	return fmt.Errorf("%w %q (%d bytes): want %s", ErrInvalidKey, quoted, len(key), keyFormat)
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
