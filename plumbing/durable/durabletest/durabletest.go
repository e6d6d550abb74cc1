// Package durabletest holds the test fake of the durable file seam: the
// real file system with one-shot faults, shared by the tests of the
// journal's and the content store's FileStore.
package durabletest

import (
	"errors"
	"maps"
	"os"
	"sync"

	"github.com/agentrun/agentrun/plumbing/durable"
)

// ErrInjected is the error of an injected fault.
var ErrInjected = errors.New("injected fault")

// FaultFS is the real file system (durable.OS) with one-shot faults, and
// counts of what the store did through it. Set a fault's field before the
// call that should fail; the fault fires once and clears itself. It is
// safe for concurrent use by the store.
type FaultFS struct {
	mu sync.Mutex

	WriteFail    bool   // the next write writes WritePartial bytes, then fails
	WritePartial int    //
	SyncFail     bool   // the next file fsync fails (after the write)
	ReadFail     bool   // the next read from a file fails
	RenameFail   bool   // the next rename fails
	DirSyncFail  string // the next fsync of this directory fails

	temps    int            // temporary files created
	dirSyncs map[string]int // directory fsyncs done, by directory
}

var _ durable.FS = (*FaultFS)(nil)

// take returns the value of a one-shot fault and clears it.
func take[T comparable](f *FaultFS, fault *T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := *fault
	var zero T
	*fault = zero
	return v
}

// OpenFile opens a file whose writes, reads and fsyncs can fail.
func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (durable.File, error) {
	file, err := durable.OS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// CreateTemp creates a temporary file whose writes, reads and fsyncs can
// fail, and counts it.
func (f *FaultFS) CreateTemp(dir, pattern string) (durable.File, error) {
	file, err := durable.OS{}.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.temps++
	f.mu.Unlock()
	return &faultFile{File: file, fs: f}, nil
}

// Rename renames, or fails when RenameFail is set.
func (f *FaultFS) Rename(oldpath, newpath string) error {
	if take(f, &f.RenameFail) {
		return ErrInjected
	}
	return durable.OS{}.Rename(oldpath, newpath)
}

// SyncDir fsyncs dir and counts it, or fails when DirSyncFail names dir.
func (f *FaultFS) SyncDir(dir string) error {
	f.mu.Lock()
	fail := f.DirSyncFail != "" && f.DirSyncFail == dir
	if fail {
		f.DirSyncFail = ""
	} else {
		if f.dirSyncs == nil {
			f.dirSyncs = make(map[string]int)
		}
		f.dirSyncs[dir]++
	}
	f.mu.Unlock()
	if fail {
		return ErrInjected
	}
	return durable.OS{}.SyncDir(dir)
}

// Temps returns the number of temporary files created.
func (f *FaultFS) Temps() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.temps
}

// DirSyncs returns the number of successful fsyncs of each directory.
func (f *FaultFS) DirSyncs() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.dirSyncs)
}

// DirSyncCount returns the number of successful directory fsyncs, of all
// directories.
func (f *FaultFS) DirSyncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.dirSyncs {
		n += c
	}
	return n
}

type faultFile struct {
	durable.File
	fs *FaultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	fail, partial := f.fs.WriteFail, f.fs.WritePartial
	f.fs.WriteFail = false
	f.fs.mu.Unlock()
	if !fail {
		return f.File.Write(p)
	}
	n, err := f.File.Write(p[:min(partial, len(p))])
	if err != nil {
		return n, err
	}
	return n, ErrInjected
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if take(f.fs, &f.fs.ReadFail) {
		return 0, ErrInjected
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	if take(f.fs, &f.fs.SyncFail) {
		return ErrInjected
	}
	return f.File.Sync()
}
