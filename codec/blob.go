package codec

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/agentrun/agentrun/content"
)

// BlobMagic begins every sealed blob (see the package doc's Blobs).
const BlobMagic = content.SealedMagic

var _ content.Sealer = (*Codec)(nil)

// Seal encrypts a content-store blob under the first key, bound to addr,
// the blob's content address (content.KeyOf of plain). Equal blobs seal to
// equal bytes under one key: the nonce is derived from the key and addr,
// so a store can tell that a blob is already there by comparing bytes,
// and a nonce is never used with two different plaintexts.
func (c *Codec) Seal(addr string, plain []byte) ([]byte, error) {
	z, err := compress(plain)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", addr, err)
	}
	id := c.first
	aead := c.aeads[id]
	mac := hmac.New(sha256.New, c.nonceKeys[id])
	mac.Write([]byte(addr))
	nonce := mac.Sum(nil)[:nonceSize]
	out := make([]byte, 0, len(BlobMagic)+1+len(id)+nonceSize+len(z)+aead.Overhead())
	out = append(out, BlobMagic...)
	out = append(out, byte(len(id)))
	out = append(out, id...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, z, []byte(addr)), nil
}

// IsSealed says whether b begins as a sealed blob does.
func IsSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(BlobMagic)) }

// Open decrypts a blob Seal made for addr, with the key it names: an
// *UnknownKeyError for a key id the Codec lacks, ErrAuth (and
// content.ErrDamaged) for a blob that does not open (a wrong key, damaged
// bytes, or a blob sealed for another address).
func (c *Codec) Open(addr string, sealed []byte) ([]byte, error) {
	if !IsSealed(sealed) {
		return nil, fmt.Errorf("open %s: not a sealed blob: %w: %w", addr, content.ErrDamaged, ErrAuth)
	}
	rest := sealed[len(BlobMagic):]
	if len(rest) < 1 || len(rest) < 1+int(rest[0])+nonceSize {
		return nil, fmt.Errorf("open %s: truncated: %w: %w", addr, content.ErrDamaged, ErrAuth)
	}
	id := string(rest[1 : 1+int(rest[0])])
	rest = rest[1+int(rest[0]):]
	aead, ok := c.aeads[id]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", addr, &UnknownKeyError{ID: id, Have: c.KeyIDs()})
	}
	z, err := aead.Open(nil, rest[:nonceSize], rest[nonceSize:], []byte(addr))
	if err != nil {
		return nil, fmt.Errorf("open %s under key id %q: %w: %w", addr, id, content.ErrDamaged, ErrAuth)
	}
	plain, err := inflate(z, maxPlain)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w: %w", addr, content.ErrDamaged, err)
	}
	return plain, nil
}
