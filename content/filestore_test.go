package content_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/content/storetest"
)

func TestFileStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) content.Store { return newFileStore(t, t.TempDir()) })
}

func newFileStore(t *testing.T, dir string) *content.FileStore {
	t.Helper()
	s, err := content.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, s content.Store, data []byte) string {
	t.Helper()
	key, err := s.Put(t.Context(), data)
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", len(data), err)
	}
	return key
}

func assertGet(t *testing.T, s content.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(t.Context(), key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %.40q, %v; want %.40q", key, got, err, want)
	}
}

// blobPath is where the package documentation says a blob lives.
func blobPath(dir, key string) string {
	return filepath.Join(dir, key[len("sha256:"):][:2], key[len("sha256:")+2:])
}

// assertDir fails unless dir holds exactly the named entries.
func assertDir(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
}

func assertPerm(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %#o, want %#o", path, got, want)
	}
}

func TestFileStoreLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "a", "blobs")
	s := newFileStore(t, dir)
	data := []byte("hello, world")
	key := put(t, s, data)

	path := filepath.Join(dir, "09", "ca7e4eaa6e8ae9c7d261167129184883644d07dfba7cbfbc4c8a2e08360d5b")
	if path != blobPath(dir, key) {
		t.Fatalf("key %s: blob path %s, want %s", key, blobPath(dir, key), path)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("blob file = %q, %v; want %q", got, err, data)
	}
	assertDir(t, dir, "09")
	assertDir(t, filepath.Dir(path), filepath.Base(path)) // no temporary file left
	assertPerm(t, path, 0o600)
	assertPerm(t, filepath.Dir(path), 0o700)
	assertPerm(t, dir, 0o700)
	assertPerm(t, filepath.Join(root, "a"), 0o700)
}

// TestFileStoreDamagedFile: a blob file that does not hold the blob's bytes
// (torn by a crash on a file system that broke its promises, damaged by a
// disk, edited by hand) is never returned as content, and the next Put of
// the right bytes repairs it.
func TestFileStoreDamagedFile(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789abcdef"), 300)
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 1
	for _, c := range []struct {
		name   string
		stored []byte
	}{
		{"torn", data[:len(data)/2]},
		{"empty", nil},
		{"one bit flipped", flipped},
		{"extra bytes", append(bytes.Clone(data), "garbage"...)},
		{"zeros", make([]byte, len(data))},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := newFileStore(t, dir)
			key := put(t, s, data)
			path := blobPath(dir, key)
			if err := os.WriteFile(path, c.stored, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(t.Context(), key)
			if !errors.Is(err, content.ErrDamaged) || got != nil {
				t.Fatalf("Get of a damaged blob = %.40q, %v; want nil, ErrDamaged", got, err)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name the key", err)
			}
			if again := put(t, s, data); again != key {
				t.Fatalf("Put returned %s, want %s", again, key)
			}
			assertGet(t, s, key, data)
			assertDir(t, filepath.Dir(path), filepath.Base(path))
		})
	}
}

// TestFileStoreTempFiles: temporary files left by a crash are not blobs,
// and do not disturb the Puts and Gets of the blobs next to them.
func TestFileStoreTempFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newFileStore(t, dir)
	data := []byte("a blob whose Put crashed before the rename")
	key := content.KeyOf(data)
	shard := filepath.Dir(blobPath(dir, key))
	if err := os.Mkdir(shard, 0o700); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{".tmp-123", ".tmp-" + filepath.Base(blobPath(dir, key))}
	for _, name := range leftovers {
		if err := os.WriteFile(filepath.Join(shard, name), data[:10], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Get(t.Context(), key); !errors.Is(err, content.ErrNotFound) {
		t.Fatalf("Get with only a temporary file = %q, %v; want ErrNotFound", got, err)
	}
	put(t, s, data)
	assertGet(t, s, key, data)
	assertDir(t, shard, append(leftovers, filepath.Base(blobPath(dir, key)))...)
}

// TestFileStoreSharedFolder: two FileStores on one folder (as two processes
// would have) put the same blobs concurrently; all Puts succeed, both
// stores read every blob, and no temporary file is left.
func TestFileStoreSharedFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stores := []*content.FileStore{newFileStore(t, dir), newFileStore(t, dir)}
	blob := func(i int) []byte { return fmt.Appendf(nil, "blob %d %s", i, bytes.Repeat([]byte{'x'}, 4096)) }
	const blobs = 8
	var wg sync.WaitGroup
	for w := range 16 {
		s := stores[w%2]
		wg.Go(func() {
			for i := range blobs {
				if _, err := s.Put(t.Context(), blob(i)); err != nil {
					t.Errorf("writer %d: Put %d: %v", w, i, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range blobs {
		key := content.KeyOf(blob(i))
		for _, s := range stores {
			assertGet(t, s, key, blob(i))
		}
		entries, err := os.ReadDir(filepath.Dir(blobPath(dir, key)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				t.Errorf("temporary file %s left behind", e.Name())
			}
		}
	}
}

func TestNewFileStoreNotADirectory(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := content.NewFileStore(file); err == nil {
		t.Fatal("NewFileStore of a regular file succeeded")
	}
}
