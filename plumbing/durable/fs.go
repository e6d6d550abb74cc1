package durable

import (
	"io"
	"os"
)

// FS is the file seam under the durable stores: they open, create, rename
// and fsync through it, so that a test can fail the next write, read,
// fsync or rename, or write only part of the bytes (see
// durabletest.FaultFS). OS is the real file system.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// CreateTemp creates a new file in dir for reading and writing, with
	// mode 0600 and a unique name made from pattern, as os.CreateTemp does.
	CreateTemp(dir, pattern string) (File, error)
	// Rename renames a file as os.Rename does.
	Rename(oldpath, newpath string) error
	// SyncDir fsyncs a directory, making its entries durable.
	SyncDir(dir string) error
}

// File is an open file; *os.File is one. Sync fsyncs it.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	Fd() uintptr // for flock(2)
}

// OS is the real file system.
type OS struct{}

var _ FS = OS{}

// OpenFile calls os.OpenFile.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// CreateTemp calls os.CreateTemp.
func (OS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// Rename calls os.Rename.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// SyncDir calls SyncDir.
func (OS) SyncDir(dir string) error { return SyncDir(dir) }

// SyncDir fsyncs the directory dir, making its entries (files created,
// renamed or removed in it) durable. It is the one routine that fsyncs a
// directory.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
