package codec

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
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
	mac := hmac.New(sha256.New, c.nonceKeys[c.first])
	mac.Write([]byte(addr))
	return c.seal(mac.Sum(nil)[:nonceSize], addr, plain)
}

// SealRecord encrypts a value that aad does not determine (a journal
// record's content, bound to its run and position) under the first key:
// the format of a sealed blob with a random nonce, so that two values
// sealed under one aad (a torn record written again) never share a
// nonce. Open opens it.
func (c *Codec) SealRecord(aad string, plain []byte) ([]byte, error) {
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal %s: nonce: %w", aad, err)
	}
	return c.seal(nonce, aad, plain)
}

// seal is the one sealing of blobs and records: magic, key id, nonce and
// AES-256-GCM-Seal(zlib(plain), aad) under the first key.
func (c *Codec) seal(nonce []byte, aad string, plain []byte) ([]byte, error) {
	z, err := compress(plain)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", aad, err)
	}
	id := c.first
	aead := c.aeads[id]
	out := make([]byte, 0, len(BlobMagic)+1+len(id)+nonceSize+len(z)+aead.Overhead())
	out = append(out, BlobMagic...)
	out = append(out, byte(len(id)))
	out = append(out, id...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, z, []byte(aad)), nil
}

// IsSealed says whether b begins as a sealed blob does.
func IsSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(BlobMagic)) }

// Open decrypts a blob Seal (or SealRecord) made for addr, with the key it names: an
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
