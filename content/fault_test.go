package content

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// errInjected is the error of an injected fault.
var errInjected = errors.New("injected fault")

// faultFS is the real file system with one-shot faults, and counts of what
// the store did through it.
type faultFS struct {
	mu           sync.Mutex
	writeFail    bool // the next write writes writePartial bytes, then fails
	writePartial int
	syncFail     bool   // the next file fsync fails (after the write)
	renameFail   bool   // the next rename fails
	dirSyncFail  string // the next fsync of this directory fails
	temps        int    // temporary files created
	dirSyncs     map[string]int
}

// take returns the value of a one-shot fault and clears it.
func take[T comparable](f *faultFS, fault *T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := *fault
	var zero T
	*fault = zero
	return v
}

func (f *faultFS) createTemp(dir, pattern string) (storeFile, error) {
	file, err := osFS{}.createTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.temps++
	f.mu.Unlock()
	return &faultFile{storeFile: file, fs: f}, nil
}

func (f *faultFS) rename(oldpath, newpath string) error {
	if take(f, &f.renameFail) {
		return errInjected
	}
	return osFS{}.rename(oldpath, newpath)
}

func (f *faultFS) syncDir(dir string) error {
	f.mu.Lock()
	fail := f.dirSyncFail == dir
	if fail {
		f.dirSyncFail = ""
	} else {
		if f.dirSyncs == nil {
			f.dirSyncs = make(map[string]int)
		}
		f.dirSyncs[dir]++
	}
	f.mu.Unlock()
	if fail {
		return errInjected
	}
	return osFS{}.syncDir(dir)
}

func (f *faultFS) counts(dir string) (temps, dirSyncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.temps, f.dirSyncs[dir]
}

type faultFile struct {
	storeFile
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	fail, partial := f.fs.writeFail, f.fs.writePartial
	f.fs.writeFail = false
	f.fs.mu.Unlock()
	if !fail {
		return f.storeFile.Write(p)
	}
	n, err := f.storeFile.Write(p[:min(partial, len(p))])
	if err != nil {
		return n, err
	}
	return n, errInjected
}

func (f *faultFile) Sync() error {
	if take(f.fs, &f.fs.syncFail) {
		return errInjected
	}
	return f.storeFile.Sync()
}

func newFaultStore(t *testing.T) (*FileStore, *faultFS) {
	t.Helper()
	ffs := &faultFS{}
	s, err := newFileStore(t.TempDir(), ffs)
	if err != nil {
		t.Fatal(err)
	}
	return s, ffs
}

// TestFileStoreFaults: a Put whose write, fsync, rename or directory fsync
// fails returns the error, removes its temporary file, and leaves either
// what was there before or the right bytes: Get never returns other bytes.
// Putting again succeeds.
func TestFileStoreFaults(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("tool result\n"), 100)
	key := KeyOf(data)
	const (
		before = "before" // the blob is as it was before the Put
		stored = "stored" // the blob holds data
	)
	faults := []struct {
		name   string
		inject func(s *FileStore, f *faultFS)
		after  string
	}{
		{"partial write", func(_ *FileStore, f *faultFS) { f.writeFail, f.writePartial = true, 10 }, before},
		{"failed write", func(_ *FileStore, f *faultFS) { f.writeFail = true }, before},
		{"file fsync", func(_ *FileStore, f *faultFS) { f.syncFail = true }, before},
		{"rename", func(_ *FileStore, f *faultFS) { f.renameFail = true }, before},
		{"shard fsync", func(s *FileStore, f *faultFS) { f.dirSyncFail, _ = s.path(key) }, stored},
		{"store dir fsync", func(s *FileStore, f *faultFS) { f.dirSyncFail = s.dir }, before},
	}
	for _, fault := range faults {
		for _, prior := range []struct {
			name   string
			file   []byte // the blob file before the Put; nil for none
			getErr error  // what Get returns for it
		}{
			{"absent", nil, ErrNotFound},
			{"damaged", data[:len(data)-1], ErrDamaged},
		} {
			t.Run(fault.name+"/"+prior.name, func(t *testing.T) {
				t.Parallel()
				s, ffs := newFaultStore(t)
				shard, path := s.path(key)
				if prior.file != nil {
					if err := os.Mkdir(shard, dirPerm); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, prior.file, filePerm); err != nil {
						t.Fatal(err)
					}
				}
				fault.inject(s, ffs)
				if got, err := s.Put(t.Context(), data); !errors.Is(err, errInjected) || !strings.Contains(err.Error(), key) {
					t.Fatalf("Put with a failing %s = %s, %v; want the injected error, naming the key", fault.name, got, err)
				}
				got, err := s.Get(t.Context(), key)
				switch {
				case fault.after == stored && (err != nil || !bytes.Equal(got, data)):
					t.Fatalf("Get after the failed Put = %.40q, %v; want the blob", got, err)
				case fault.after == before && (!errors.Is(err, prior.getErr) || got != nil):
					t.Fatalf("Get after the failed Put = %.40q, %v; want nil, %v", got, err, prior.getErr)
				}
				assertNoTemp(t, shard)

				if k, err := s.Put(t.Context(), data); err != nil || k != key {
					t.Fatalf("Put after the fault = %s, %v; want %s, nil", k, err, key)
				}
				if got, err := s.Get(t.Context(), key); err != nil || !bytes.Equal(got, data) {
					t.Fatalf("Get after the second Put = %.40q, %v; want the blob", got, err)
				}
				assertNoTemp(t, shard)
			})
		}
	}
}

func assertNoTemp(t *testing.T, shard string) {
	t.Helper()
	entries, err := os.ReadDir(shard)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left in %s", e.Name(), shard)
		}
	}
}

// TestFileStoreSyncs: what each Put writes and fsyncs. A Put of a blob that
// is there writes nothing but still fsyncs the shard directory; the store's
// directory is fsynced once per shard and FileStore.
func TestFileStoreSyncs(t *testing.T) {
	t.Parallel()
	s, ffs := newFaultStore(t)
	data := []byte("hello, world")
	shard, _ := s.path(KeyOf(data))
	check := func(what string, wantTemps, wantShard, wantDir int) {
		t.Helper()
		temps, shardSyncs := ffs.counts(shard)
		_, dirSyncs := ffs.counts(s.dir)
		if temps != wantTemps || shardSyncs != wantShard || dirSyncs != wantDir {
			t.Fatalf("after %s: %d temporary files, %d shard fsyncs, %d store dir fsyncs; want %d, %d, %d",
				what, temps, shardSyncs, dirSyncs, wantTemps, wantShard, wantDir)
		}
	}
	check("NewFileStore of an existing directory", 0, 0, 0)
	if _, err := s.Put(t.Context(), data); err != nil {
		t.Fatal(err)
	}
	check("the first Put", 1, 1, 1)
	if _, err := s.Put(t.Context(), data); err != nil {
		t.Fatal(err)
	}
	check("a second Put", 1, 2, 1)
	if _, err := s.Put(t.Context(), []byte("hello, world!")); err != nil { // shard 68
		t.Fatal(err)
	}
	check("a Put into another shard", 2, 2, 2)

	// Another FileStore (another process) fsyncs the shard's entry once:
	// the first one may not have yet.
	s2, err := newFileStore(s.dir, ffs)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s2.Put(t.Context(), data); err != nil {
			t.Fatal(err)
		}
	}
	check("two Puts through another FileStore", 2, 4, 3)
}

func TestNewFileStoreSyncs(t *testing.T) {
	t.Parallel()
	ffs := &faultFS{dirSyncFail: t.TempDir()}
	dir := filepath.Join(ffs.dirSyncFail, "a", "b")
	if _, err := newFileStore(dir, ffs); !errors.Is(err, errInjected) {
		t.Fatalf("newFileStore with a failing dir fsync = %v, want the injected error", err)
	}
	// Without faults it fsyncs the parent of each directory it created.
	ffs = &faultFS{}
	root := t.TempDir()
	dir = filepath.Join(root, "c", "d", "e")
	if _, err := newFileStore(dir, ffs); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{root: 1, filepath.Join(root, "c"): 1, filepath.Join(root, "c", "d"): 1}
	if !maps.Equal(ffs.dirSyncs, want) {
		t.Fatalf("directory fsyncs creating c/d/e: %v, want %v", ffs.dirSyncs, want)
	}
	if _, err := newFileStore(dir, ffs); err != nil || !maps.Equal(ffs.dirSyncs, want) {
		t.Fatalf("newFileStore of an existing dir: %v, fsyncs %v; want nil, none more", err, ffs.dirSyncs)
	}
}
