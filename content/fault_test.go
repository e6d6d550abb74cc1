package content

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/plumbing/durable/durabletest"
)

func newFaultStore(t *testing.T) (*FileStore, *durabletest.FaultFS) {
	t.Helper()
	ffs := &durabletest.FaultFS{}
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
		inject func(s *FileStore, f *durabletest.FaultFS)
		after  string
	}{
		{"partial write", func(_ *FileStore, f *durabletest.FaultFS) { f.WriteFail, f.WritePartial = true, 10 }, before},
		{"failed write", func(_ *FileStore, f *durabletest.FaultFS) { f.WriteFail = true }, before},
		{"file fsync", func(_ *FileStore, f *durabletest.FaultFS) { f.SyncFail = true }, before},
		{"rename", func(_ *FileStore, f *durabletest.FaultFS) { f.RenameFail = true }, before},
		{"shard fsync", func(s *FileStore, f *durabletest.FaultFS) { f.DirSyncFail, _ = s.path(key) }, stored},
		{"store dir fsync", func(s *FileStore, f *durabletest.FaultFS) { f.DirSyncFail = s.dir }, before},
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
				if got, err := s.Put(t.Context(), data); !errors.Is(err, durabletest.ErrInjected) || !strings.Contains(err.Error(), key) {
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
		temps, shardSyncs, dirSyncs := ffs.Temps(), ffs.DirSyncs()[shard], ffs.DirSyncs()[s.dir]
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
	ffs := &durabletest.FaultFS{DirSyncFail: t.TempDir()}
	dir := filepath.Join(ffs.DirSyncFail, "a", "b")
	if _, err := newFileStore(dir, ffs); !errors.Is(err, durabletest.ErrInjected) {
		t.Fatalf("newFileStore with a failing dir fsync = %v, want the injected error", err)
	}
	// Without faults it fsyncs the parent of each directory it created.
	ffs = &durabletest.FaultFS{}
	root := t.TempDir()
	dir = filepath.Join(root, "c", "d", "e")
	if _, err := newFileStore(dir, ffs); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{root: 1, filepath.Join(root, "c"): 1, filepath.Join(root, "c", "d"): 1}
	if !maps.Equal(ffs.DirSyncs(), want) {
		t.Fatalf("directory fsyncs creating c/d/e: %v, want %v", ffs.DirSyncs(), want)
	}
	if _, err := newFileStore(dir, ffs); err != nil || !maps.Equal(ffs.DirSyncs(), want) {
		t.Fatalf("newFileStore of an existing dir: %v, fsyncs %v; want nil, none more", err, ffs.DirSyncs())
	}
}
