package codec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
)

// TestSealBlob: a sealed blob holds none of its text, opens to it, is the
// same bytes each time under one key (a store compares bytes), opens after
// rotation, and fails clearly under an unknown key id, a wrong key, damage
// or another address.
func TestSealBlob(t *testing.T) {
	t.Parallel()
	plain := []byte("the orders database: " + secret)
	addr := content.KeyOf(plain)
	a := mustNew(t, key("a", 1))
	sealed, err := a.Seal(addr, plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("orders")) || !codec.IsSealed(sealed) {
		t.Fatalf("sealed blob %q", sealed)
	}
	if again, _ := a.Seal(addr, plain); !bytes.Equal(again, sealed) {
		t.Fatal("sealing one blob twice gave different bytes")
	}
	if other, _ := a.Seal(content.KeyOf([]byte("x")), []byte("x")); bytes.Equal(other[:len(sealed)/2], sealed[:len(sealed)/2]) {
		t.Fatal("two blobs share a nonce")
	}
	rotated := mustNew(t, key("b", 2), key("a", 1))
	if got, err := rotated.Open(addr, sealed); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open under [b, a]: %q, %v", got, err)
	}
	underB, _ := rotated.Seal(addr, plain)
	var unknown *codec.UnknownKeyError
	if _, err := a.Open(addr, underB); !errors.As(err, &unknown) || unknown.ID != "b" || errors.Is(err, content.ErrDamaged) {
		t.Fatalf("open under an unknown key id: %v, want an UnknownKeyError naming b, not damage", err)
	}
	wrong := mustNew(t, key("a", 9))
	if got, err := wrong.Open(addr, sealed); !errors.Is(err, codec.ErrAuth) || !errors.Is(err, content.ErrDamaged) || got != nil {
		t.Fatalf("open under a wrong key: %q, %v", got, err)
	}
	damaged := append([]byte(nil), sealed...)
	damaged[len(damaged)-3] ^= 0x40
	if _, err := a.Open(addr, damaged); !errors.Is(err, content.ErrDamaged) {
		t.Fatalf("open damaged: %v", err)
	}
	if _, err := a.Open(content.KeyOf([]byte("other")), sealed); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("open for another address: %v", err)
	}
	if _, err := a.Open(addr, []byte(codec.BlobMagic+"\x05ab")); !errors.Is(err, content.ErrDamaged) {
		t.Fatalf("open truncated: %v", err)
	}
}

// TestSealRecord: a record seals under a fresh nonce each time (one aad
// can hold two values), opens with Open under its aad only, and after
// rotation.
func TestSealRecord(t *testing.T) {
	t.Parallel()
	plain := []byte(`{"type":"run.completed","answer":"` + secret + `"}`)
	a := mustNew(t, key("a", 1))
	one, err := a.SealRecord("run-1 3", plain)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := a.SealRecord("run-1 3", plain)
	if bytes.Contains(one, []byte(secret)) || !codec.IsSealed(one) || bytes.Equal(one, two) {
		t.Fatalf("sealed records %q and %q: want sealed, no text, different nonces", one, two)
	}
	rotated := mustNew(t, key("b", 2), key("a", 1))
	for _, s := range [][]byte{one, two} {
		if got, err := rotated.Open("run-1 3", s); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("open: %q, %v", got, err)
		}
	}
	if _, err := a.Open("run-1 4", one); !errors.Is(err, codec.ErrAuth) {
		t.Fatalf("open under another aad: %v, want ErrAuth", err)
	}
}
