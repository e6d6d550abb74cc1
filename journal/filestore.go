package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/durable"
)

// FileStore is the durable Store: one file per run, <dir>/<run id>.jsonl,
// in the format and under the crash assumptions described in the package
// documentation. Several processes may share one directory: appends to a
// run are serialized with an exclusive flock(2) on its file.
//
// A FileStore trusts nothing it did not verify, and after an error it
// rescans. It keeps a view of each of the 64 runs it used most recently:
// the identity of the file (device and inode), the length of the good
// prefix it has read and checked, and that prefix's records.
// Every Load and Append still takes the lock, fstats the open file and
// reads from disk every byte past the cached prefix, so records that other
// processes appended, and a torn tail, are seen as before; the cost is the
// new bytes, not the file. The cached prefix is read again from the start
// when the file is another one (another device or inode), is shorter than
// the prefix, or no longer has the checksum of the prefix's last line at
// its offset (the file was rewritten in place); and after any error from a
// read, write, fsync or truncate, or a corrupt journal, the run's view is
// dropped, so the next call reads the whole file again and sees whatever
// that error left. The store never assumes that a failed append did not
// happen.
//
// Load returns records the caller owns: a new slice, and new copies of
// every byte slice and message they hold, so modifying them does not
// affect the store.
//
// Set Logger before first use. The methods are safe for concurrent use.
type FileStore struct {
	// Logger receives a warning when Append drops a torn tail. Default: no
	// logging.
	Logger *slog.Logger

	dir    string
	fs     durable.FS // the file seam: tests inject faults through it
	sealer Sealer     // seals records' content at rest; nil: plain

	mu    sync.Mutex
	runs  map[string]*runView // the cached views, at most maxCachedRuns
	clock uint64              // counts lookups, for least-recently-used eviction

	appends, fsyncs, bytesRead atomic.Int64
}

var _ Store = (*FileStore)(nil)

// journalExt ends the name of every journal file.
const journalExt = ".jsonl"

// File and directory permissions: journals hold prompts and tool output.
const (
	filePerm = 0o600
	dirPerm  = 0o700
)

// FileStats counts what a FileStore did since it was made, for benchmarks
// and tests.
type FileStats struct {
	// Appends counts the Append calls that wrote records to a file
	// (whatever the write's outcome); appends refused with ErrConflict,
	// operator.ErrInvalid or ErrCorrupt, and appends of no records, write nothing
	// and do not count.
	Appends int64
	// Fsyncs counts every fsync the store did, of files and of
	// directories, including those that failed.
	Fsyncs int64
	// BytesRead counts the bytes read from journal files.
	BytesRead int64
}

// Stats returns the store's counters.
func (s *FileStore) Stats() FileStats {
	return FileStats{Appends: s.appends.Load(), Fsyncs: s.fsyncs.Load(), BytesRead: s.bytesRead.Load()}
}

// NewFileStore returns a store that keeps its journals in dir. It creates
// dir and its missing parents, and fsyncs the parent of each directory it
// created so that the directories survive a crash.
func NewFileStore(dir string) (*FileStore, error) {
	return newFileStore(dir, durable.OS{})
}

// NewSealedFileStore is NewFileStore whose records are sealed by sealer
// (their content encrypted, see the package doc), when sealer is not nil.
// It reads plain records as well.
func NewSealedFileStore(dir string, sealer Sealer) (*FileStore, error) {
	s, err := NewFileStore(dir)
	if err != nil {
		return nil, err
	}
	s.sealer = sealer
	return s, nil
}

func newFileStore(dir string, fsys durable.FS) (*FileStore, error) {
	s := &FileStore{fs: fsys, runs: make(map[string]*runView)}
	abs, err := durable.MkdirAll(dir, dirPerm, s.syncDir)
	if err != nil {
		return nil, fmt.Errorf("journal dir %s: %w", dir, err)
	}
	s.dir = abs
	return s, nil
}

// Dir returns the folder of the store's journals, as an absolute path.
func (s *FileStore) Dir() string { return s.dir }

func (s *FileStore) path(runID string) string {
	return filepath.Join(s.dir, runID+journalExt)
}

// Load returns the good records of a run, oldest first; a run without a file
// has none. A torn tail is ignored; a bad line followed by good lines is an
// error wrapping ErrCorrupt that names the file, line and byte offset. The
// records are the caller's to modify.
func (s *FileStore) Load(runID string) ([]Record, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return nil, err
	}
	v, err := s.load(runID)
	if err != nil {
		s.forget(runID)
		return nil, withRun("load", runID, err)
	}
	if v == nil {
		return nil, nil
	}
	return cloneRecords(v.recs), nil
}

// load returns the run's view, up to date with its file, or nil when the
// run has no file.
func (s *FileStore) load(runID string) (*runView, error) {
	f, err := s.fs.OpenFile(s.path(runID), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		s.forget(runID)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only: a close error loses nothing
	// A shared lock keeps Load from seeing an append or a truncation in
	// progress in another process.
	if err := lockFile(f, syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	v, _, err := s.refresh(runID, f)
	return v, err
}

// Append adds recs to the run's journal if it holds exactly seen records,
// and returns only once they are fsynced. See Store.Append: ErrConflict,
// ErrCorrupt and operator.ErrInvalid mean nothing was written; any other error means
// the records may or may not have been written (all, none, or a prefix of
// them), and the caller must Load again to find out.
func (s *FileStore) Append(runID string, seen int, recs ...Record) error {
	if err := operator.ValidRunID(runID); err != nil {
		return err
	}
	if seen < 0 {
		return fmt.Errorf("append %s: %w seen count %d: it is negative", runID, operator.ErrInvalid, seen)
	}
	// Encode first: a record Load would refuse is never written.
	var buf []byte
	plains := make([][]byte, len(recs)) // each record's plain JSON, for the view
	for i, rec := range recs {
		payload, plain, err := encodeSealed(s.sealer, runID, seen+i+1, rec)
		if err != nil {
			return fmt.Errorf("append %s: record %d: %w", runID, i+1, err)
		}
		buf, plains[i] = appendLine(buf, payload), plain
	}
	if len(recs) == 0 {
		v, err := s.load(runID)
		if err != nil {
			s.forget(runID)
			return withRun("append", runID, err)
		}
		return checkSeen(runID, v.count(), seen)
	}
	// Any failure past this point may leave the file other than the view
	// says: forget the view, so that the next call reads the file again.
	err := s.append(runID, seen, buf, plains)
	if err != nil && !errors.Is(err, ErrConflict) {
		s.forget(runID)
	}
	return err
}

func (s *FileStore) append(runID string, seen int, buf []byte, plains [][]byte) error {
	path := s.path(runID)
	f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if seen != 0 { // no file, no records: do not create one just to refuse
			return checkSeen(runID, 0, seen)
		}
		f, err = s.fs.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, filePerm)
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

	v, torn, err := s.refresh(runID, f)
	if err != nil {
		return withRun("append", runID, err)
	}
	if err := checkSeen(runID, v.count(), seen); err != nil {
		return err
	}
	if torn > 0 {
		if err := f.Truncate(v.good); err != nil {
			return fmt.Errorf("append %s: truncate torn tail: %w", runID, err)
		}
		if err := s.sync(f); err != nil {
			return fmt.Errorf("append %s: fsync after truncating torn tail: %w", runID, err)
		}
		if s.Logger != nil {
			s.Logger.Warn("journal: dropped torn tail", "run_id", runID, "bytes", torn)
		}
	}
	if v.good == 0 {
		// The file holds no record: this append created it, or the one that
		// did failed before writing. Make its directory entry durable before
		// the first record goes in, so that no record sits in a file that a
		// crash can unlink.
		if err := s.syncDir(s.dir); err != nil {
			return fmt.Errorf("append %s: fsync dir %s: %w", runID, s.dir, err)
		}
	}
	// One write call for all records, so that concurrent readers without a
	// lock and a crash see at most one torn line, at the end.
	s.appends.Add(1)
	if _, err := f.Write(buf); err != nil {
		return fmt.Errorf("append %s: write (outcome unknown): %w", runID, err)
	}
	if err := s.sync(f); err != nil {
		return fmt.Errorf("append %s: fsync (outcome unknown): %w", runID, err)
	}
	// The new lines are durable and follow the good prefix: extend the view
	// by them, decoded from the bytes written, as a later scan would (a
	// sealed one from the plain JSON it was sealed from, which is what
	// opening it gives).
	sc, err := scanJournal(path, buf, v.good, v.count(), func(n int, w wireRecord) (Record, error) {
		if w.Sealed == nil {
			return w.Record, nil
		}
		return DecodeJSON(plains[n-seen-1])
	})
	if err != nil || sc.good != v.good+int64(len(buf)) { // cannot happen: buf came from appendLine
		s.forget(runID)
		return nil
	}
	if !v.untracked {
		s.extend(runID, v, v.id, sc)
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
		if !ok || !e.Type().IsRegular() || operator.ValidRunID(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids) // ReadDir sorts file names; "a-b.jsonl" < "a.jsonl" but "a" < "a-b"
	return ids, nil
}

// sync fsyncs f, and syncDir a directory, through the file seam, counting
// each fsync.
func (s *FileStore) sync(f durable.File) error {
	s.fsyncs.Add(1)
	return f.Sync()
}

func (s *FileStore) syncDir(dir string) error {
	s.fsyncs.Add(1)
	return s.fs.SyncDir(dir)
}

// lockFile takes a flock(2) lock on f (LOCK_SH or LOCK_EX), waiting for it. The
// lock is released when f is closed.
func lockFile(f durable.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
