package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// FileStore is the durable Store: one file per run, <dir>/<run id>.jsonl,
// in the format and under the crash assumptions described in the package
// documentation. Several processes may share one directory: appends to a
// run are serialized with an exclusive flock(2) on its file.
//
// A FileStore caches nothing between calls: every Load and Append reads the
// file from disk under a lock. So after a failed write or fsync, whose
// outcome is unknown, the next call sees whatever reached the file; the
// store never assumes that a failed append did not happen.
//
// Set Logger before first use; the methods do not modify the FileStore and
// are safe for concurrent use.
type FileStore struct {
	// Logger receives a warning when Append drops a torn tail. Default: no
	// logging.
	Logger *slog.Logger

	dir string
	fs  storeFS
}

var _ Store = (*FileStore)(nil)

// journalExt ends the name of every journal file.
const journalExt = ".jsonl"

// File and directory permissions: journals hold prompts and tool output.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// NewFileStore returns a store that keeps its journals in dir. It creates
// dir and its missing parents, and fsyncs the parent of each directory it
// created so that the directories survive a crash.
func NewFileStore(dir string) (*FileStore, error) {
	return newFileStore(dir, osFS{})
}

func newFileStore(dir string, fsys storeFS) (*FileStore, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("journal dir %s: %w", dir, err)
	}
	// Collect the directories MkdirAll is about to create, deepest first.
	var missing []string
	for p := abs; ; p = filepath.Dir(p) {
		_, err := os.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("journal dir %s: %w", dir, err)
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("journal dir %s: %w", dir, err)
	}
	for _, p := range slices.Backward(missing) { // parents before children
		if err := fsys.syncDir(filepath.Dir(p)); err != nil {
			return nil, fmt.Errorf("journal dir %s: fsync %s: %w", dir, filepath.Dir(p), err)
		}
	}
	return &FileStore{dir: abs, fs: fsys}, nil
}

func (s *FileStore) path(runID string) string {
	return filepath.Join(s.dir, runID+journalExt)
}

// Load returns the good records of a run, oldest first; a run without a file
// has none. A torn tail is ignored; a bad line followed by good lines is an
// error wrapping ErrCorrupt that names the file, line and byte offset.
func (s *FileStore) Load(runID string) ([]Record, error) {
	if err := ValidRunID(runID); err != nil {
		return nil, err
	}
	path := s.path(runID)
	f, err := s.fs.openFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", runID, err)
	}
	defer f.Close() // read only: a close error loses nothing
	// A shared lock keeps Load from seeing an append or a truncation in
	// progress in another process.
	if err := lockFile(f, syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("load %s: lock: %w", runID, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: read: %w", runID, err)
	}
	sc, err := scanJournal(path, data, true)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", runID, err)
	}
	return sc.recs, nil
}

// Append adds recs to the run's journal if it holds exactly seen records,
// and returns only once they are fsynced. See Store.Append: ErrConflict,
// ErrCorrupt and ErrInvalid mean nothing was written; any other error means
// the records may or may not have been written (all, none, or a prefix of
// them), and the caller must Load again to find out.
func (s *FileStore) Append(runID string, seen int, recs ...Record) error {
	if err := ValidRunID(runID); err != nil {
		return err
	}
	if seen < 0 {
		return fmt.Errorf("append %s: %w seen count %d: it is negative", runID, ErrInvalid, seen)
	}
	// Encode first: a record Load would refuse is never written.
	var buf []byte
	for i, rec := range recs {
		var err error
		if buf, err = appendRecord(buf, rec); err != nil {
			return fmt.Errorf("append %s: record %d: %w", runID, i+1, err)
		}
	}
	if len(recs) == 0 {
		got, err := s.Load(runID)
		if err != nil {
			return err
		}
		return checkSeen(runID, len(got), seen)
	}

	path := s.path(runID)
	f, err := s.fs.openFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if seen != 0 { // no file, no records: do not create one just to refuse
			return checkSeen(runID, 0, seen)
		}
		f, err = s.fs.openFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, filePerm)
	}
	if err != nil {
		return fmt.Errorf("append %s: %w", runID, err)
	}
	// Closing also releases the lock. Once the fsync succeeded the records
	// are durable, so a close error changes nothing and is dropped.
	defer f.Close()
	if err := lockFile(f, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("append %s: lock: %w", runID, err)
	}

	// Re-scan the whole file on every append. To make this cheaper, cache
	// (inode, size, record count) per run after a successful append and
	// trust it only when the file still matches under the lock; drop the
	// entry on any error, so a failed write or fsync is always re-read.
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("append %s: read: %w", runID, err)
	}
	sc, err := scanJournal(path, data, false)
	if err != nil {
		return fmt.Errorf("append %s: %w", runID, err)
	}
	if err := checkSeen(runID, sc.count, seen); err != nil {
		return err
	}
	if torn := int64(len(data)) - sc.good; torn > 0 {
		if err := f.Truncate(sc.good); err != nil {
			return fmt.Errorf("append %s: truncate torn tail: %w", runID, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("append %s: fsync after truncating torn tail: %w", runID, err)
		}
		if s.Logger != nil {
			s.Logger.Warn("journal: dropped torn tail", "run_id", runID, "bytes", torn)
		}
	}
	if sc.good == 0 {
		// The file holds no record: this append created it, or the one that
		// did failed before writing. Make its directory entry durable before
		// the first record goes in, so that no record sits in a file that a
		// crash can unlink.
		if err := s.fs.syncDir(s.dir); err != nil {
			return fmt.Errorf("append %s: fsync dir %s: %w", runID, s.dir, err)
		}
	}
	// One write call for all records, so that concurrent readers without a
	// lock and a crash see at most one torn line, at the end.
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("append %s: write (outcome unknown): %w", runID, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("append %s: fsync (outcome unknown): %w", runID, err)
	}
	return nil
}

// checkSeen returns ErrConflict, with context, when the journal holds another
// number of records than the caller saw.
func checkSeen(runID string, have, seen int) error {
	if have == seen {
		return nil
	}
	return fmt.Errorf("append %s: journal holds %d records, caller saw %d: %w", runID, have, seen, ErrConflict)
}

// List returns the ids of the runs with a journal file in the store's
// directory, sorted. Other files and subdirectories are ignored.
func (s *FileStore) List() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), journalExt)
		if !ok || !e.Type().IsRegular() || ValidRunID(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids) // ReadDir sorts file names; "a-b.jsonl" < "a.jsonl" but "a" < "a-b"
	return ids, nil
}

// journalScan is what scanJournal found in a journal file.
type journalScan struct {
	recs  []Record // the good records, if asked for
	count int      // the number of good records
	good  int64    // the length of the good prefix; the rest is a torn tail
}

// scanJournal reads the lines of a journal file. A torn tail (a last line
// without newline, or bad lines with no good line after them) ends the good
// prefix; a bad line followed by a good one is an error wrapping ErrCorrupt.
// Load and Append share it, so that they always agree on the count.
func scanJournal(path string, data []byte, keep bool) (journalScan, error) {
	var (
		sc      journalScan
		bad     error // the first bad line since the good prefix, if any
		badLine int
		badOff  int
	)
	for off, line := 0, 1; off < len(data); line++ {
		n := bytes.IndexByte(data[off:], '\n')
		if n < 0 { // incomplete last line: torn
			break
		}
		rec, err := decodeLine(data[off : off+n+1])
		switch {
		case err != nil && bad == nil:
			bad, badLine, badOff = err, line, off
		case err == nil && bad != nil:
			return journalScan{}, fmt.Errorf("%s: line %d (byte %d): %v: %w", path, badLine, badOff, bad, ErrCorrupt)
		case err == nil:
			sc.count++
			sc.good = int64(off + n + 1)
			if keep {
				sc.recs = append(sc.recs, rec)
			}
		}
		off += n + 1
	}
	return sc, nil
}

// The file seam: the store does its file I/O through storeFS, so that tests
// in this package can fail the next write or fsync, or write only part of
// the bytes.
type storeFS interface {
	openFile(name string, flag int, perm os.FileMode) (storeFile, error)
	// syncDir fsyncs a directory, making its entries durable.
	syncDir(dir string) error
}

// storeFile is an open journal file. Sync is the one fsync routine, for
// files and (through osFS.syncDir) directories.
type storeFile interface {
	io.ReadWriteCloser
	Sync() error
	Truncate(size int64) error
	Fd() uintptr // for flock
}

// osFS is the real file system.
type osFS struct{}

func (osFS) openFile(name string, flag int, perm os.FileMode) (storeFile, error) {
	return os.OpenFile(name, flag, perm)
}

func (fsys osFS) syncDir(dir string) error {
	d, err := fsys.openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// lockFile takes a flock(2) lock on f (LOCK_SH or LOCK_EX), waiting for it. The
// lock is released when f is closed.
func lockFile(f storeFile, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
