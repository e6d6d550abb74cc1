package content_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/content/storetest"
)

func sealer(t *testing.T, ids ...string) *codec.Codec {
	t.Helper()
	var keys []codec.Key
	for _, id := range ids { // a key's bytes follow from its id
		keys = append(keys, codec.Key{ID: id, Bytes: bytes.Repeat([]byte{id[len(id)-1]}, codec.KeySize)})
	}
	c, err := codec.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSealedFileStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) content.Store {
		s, err := content.NewSealedFileStore(t.TempDir(), sealer(t, "k1"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// files returns the bytes of every file under dir.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSealedFileStoreAtRest: with a sealer, the files hold none of the
// blobs' text; the blobs read back whole, also after a rotation, and a
// store without the key says the blob is encrypted. Blobs kept plain
// before encryption was turned on still read.
func TestSealedFileStoreAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plainStore := newFileStore(t, dir)
	before := []byte("written before encryption: the orders database")
	oldKey, err := plainStore.Put(t.Context(), before)
	if err != nil {
		t.Fatal(err)
	}

	sealed, err := content.NewSealedFileStore(dir, sealer(t, "k1"))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte(strings.Repeat("Echo: the orders database holds 4 KB of tool output. ", 80))
	key, err := sealed.Put(t.Context(), secret)
	if err != nil || key != content.KeyOf(secret) {
		t.Fatalf("Put: %s, %v; want the key of the plaintext", key, err)
	}
	found := 0
	for path, b := range files(t, dir) {
		if !strings.HasSuffix(path, key[9:]) {
			continue
		}
		found++
		if bytes.Contains(b, []byte("orders")) || !codec.IsSealed(b) {
			t.Fatalf("%s holds the blob's text or is not sealed: %.80q", path, b)
		}
	}
	if found != 1 {
		t.Fatalf("found %d files of %s, want 1", found, key)
	}
	if got, err := sealed.Get(t.Context(), key); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if got, err := sealed.Get(t.Context(), oldKey); err != nil || !bytes.Equal(got, before) {
		t.Fatalf("Get of a blob kept plain: %q, %v", got, err)
	}
	rotated, err := content.NewSealedFileStore(dir, sealer(t, "k2", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Get(t.Context(), key); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Get after rotation: %d bytes, %v", len(got), err)
	}
	other, err := content.NewSealedFileStore(dir, sealer(t, "k3"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(t.Context(), key); err == nil || !strings.Contains(err.Error(), `key id "k1"`) || strings.Count(err.Error(), "\n") > 0 {
		t.Fatalf("Get under an unknown key id: %v, want an error naming k1", err)
	}
	if _, err := newFileStore(t, dir).Get(t.Context(), key); !errors.Is(err, content.ErrDamaged) || !strings.Contains(err.Error(), "encrypted blob and no key is configured") {
		t.Fatalf("Get without a key: %v", err)
	}
	// A Put under the same key writes nothing new: the bytes are equal.
	info, _ := os.Stat(filepath.Join(dir, key[7:9], key[9:]))
	if _, err := sealed.Put(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(filepath.Join(dir, key[7:9], key[9:])); !os.SameFile(info, again) {
		t.Fatal("a second Put of a sealed blob rewrote its file")
	}
}
