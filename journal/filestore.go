package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/durable"
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

	dir string
	fs  storeFS

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

// maxCachedRuns bounds how many runs a FileStore keeps a view of; the least
// recently used is dropped first. A view holds the decoded records of its
// run, so this bounds the memory to that of 64 journals.
const maxCachedRuns = 64

// FileStats counts what a FileStore did since it was made, for benchmarks
// and tests.
type FileStats struct {
	// Appends counts the Append calls that wrote records to a file
	// (whatever the write's outcome); appends refused with ErrConflict,
	// ErrInvalid or ErrCorrupt, and appends of no records, write nothing
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
	return newFileStore(dir, osFS{})
}

func newFileStore(dir string, fsys storeFS) (*FileStore, error) {
	s := &FileStore{fs: fsys, runs: make(map[string]*runView)}
	abs, err := durable.MkdirAll(dir, dirPerm, s.syncDir)
	if err != nil {
		return nil, fmt.Errorf("journal dir %s: %w", dir, err)
	}
	s.dir = abs
	return s, nil
}

func (s *FileStore) path(runID string) string {
	return filepath.Join(s.dir, runID+journalExt)
}

// Load returns the good records of a run, oldest first; a run without a file
// has none. A torn tail is ignored; a bad line followed by good lines is an
// error wrapping ErrCorrupt that names the file, line and byte offset. The
// records are the caller's to modify.
func (s *FileStore) Load(runID string) ([]Record, error) {
	if err := ValidRunID(runID); err != nil {
		return nil, err
	}
	v, err := s.load(runID)
	if err != nil {
		s.forget(runID)
		return nil, fmt.Errorf("load %s: %w", runID, err)
	}
	if v == nil {
		return nil, nil
	}
	return cloneRecords(v.recs), nil
}

// load returns the run's view, up to date with its file, or nil when the
// run has no file.
func (s *FileStore) load(runID string) (*runView, error) {
	f, err := s.fs.openFile(s.path(runID), os.O_RDONLY, 0)
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
		v, err := s.load(runID)
		if err != nil {
			s.forget(runID)
			return fmt.Errorf("append %s: %w", runID, err)
		}
		return checkSeen(runID, v.count(), seen)
	}
	// Any failure past this point may leave the file other than the view
	// says: forget the view, so that the next call reads the file again.
	err := s.append(runID, seen, buf)
	if err != nil && !errors.Is(err, ErrConflict) {
		s.forget(runID)
	}
	return err
}

func (s *FileStore) append(runID string, seen int, buf []byte) error {
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

	v, torn, err := s.refresh(runID, f)
	if err != nil {
		return fmt.Errorf("append %s: %w", runID, err)
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
	// by them, decoded from the bytes written, as a later scan would.
	sc, err := scanJournal(path, buf, v.good, v.count())
	if err != nil || sc.good != v.good+int64(len(buf)) { // cannot happen: buf came from appendRecord
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
		if !ok || !e.Type().IsRegular() || ValidRunID(id) != nil {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids) // ReadDir sorts file names; "a-b.jsonl" < "a.jsonl" but "a" < "a-b"
	return ids, nil
}

// runView is what a FileStore knows about a run's file: a good prefix it
// read and checked. It is a claim about bytes that, under the crash
// assumptions, never change: an fsynced line is not rewritten, and a
// truncation removes only a torn tail past the good prefix. refresh checks
// it against the open file before each use.
type runView struct {
	id      fileID
	good    int64           // the length of the good prefix
	recs    []Record        // its records; len(recs) is also its number of lines
	lastOff int64           // the offset of the prefix's last line, or -1 when it is empty
	lastSum [crcDigits]byte // the checksum that starts that line

	untracked bool // not kept: the file's identity is unknown

	// Guarded by FileStore.mu:
	used   uint64 // FileStore.clock at the latest use
	sealed bool   // recs' spare capacity belongs to a longer view: copy, never append
}

// count returns the number of records in the view; a nil view has none.
func (v *runView) count() int {
	if v == nil {
		return 0
	}
	return len(v.recs)
}

// fileID is the identity of a file: its device and inode.
type fileID struct{ dev, ino uint64 }

// fileIDOf returns the identity of the file fi describes, and false when
// the file system does not say.
func fileIDOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true // Dev is int32 on some platforms
}

// refresh brings the run's view up to date with f, the run's file, which
// the caller holds locked, and returns it with the length of the torn tail
// that follows its good prefix. It reads only the bytes past the view's
// good prefix when the view still describes f: the same file (device and
// inode), at least as long as the prefix, with the checksum of the
// prefix's last line still at its offset. Otherwise it reads the file from
// the start. Errors come without the run id; the caller adds it.
func (s *FileStore) refresh(runID string, f storeFile) (*runView, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("stat: %w", err)
	}
	id, known := fileIDOf(fi)
	base := s.lookup(runID)
	if base != nil && (!known || base.id != id || fi.Size() < base.good) {
		base = nil // replaced, or cut below what was checked: read it all
	}
	if base != nil && base.lastOff >= 0 {
		var sum [crcDigits]byte
		n, err := f.ReadAt(sum[:], base.lastOff)
		s.bytesRead.Add(int64(n))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, fmt.Errorf("read: %w", err)
		}
		if n < len(sum) || sum != base.lastSum {
			base = nil // rewritten in place: read it all
		}
	}
	from, lines := int64(0), 0
	if base != nil {
		from, lines = base.good, len(base.recs)
	}
	data, err := s.readFrom(f, from, fi.Size()-from)
	if err != nil {
		return nil, 0, fmt.Errorf("read: %w", err)
	}
	sc, err := scanJournal(s.path(runID), data, from, lines)
	if err != nil {
		return nil, 0, err
	}
	torn := from + int64(len(data)) - sc.good
	if !known { // a view that cannot be checked is not kept
		return &runView{good: sc.good, recs: sc.recs, untracked: true}, torn, nil
	}
	return s.extend(runID, base, id, sc), torn, nil
}

// readFrom reads f from offset off to its end; size is the expected number
// of bytes.
func (s *FileStore) readFrom(f storeFile, off, size int64) ([]byte, error) {
	buf := make([]byte, 0, max(size, 0)+512)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf)) // the file grew since fstat
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], off+int64(len(buf)))
		buf = buf[:len(buf)+n]
		s.bytesRead.Add(int64(n))
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// lookup returns the run's view, or nil.
func (s *FileStore) lookup(runID string) *runView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.runs[runID]
	if v != nil {
		s.clock++
		v.used = s.clock
	}
	return v
}

// extend returns the view of file id made of base (nil: none) and the
// lines sc found after it, and keeps it as the run's view unless the run
// already has a longer view of the same file.
func (s *FileStore) extend(runID string, base *runView, id fileID, sc journalScan) *runView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := base
	switch {
	case base == nil:
		v = &runView{id: id, good: sc.good, recs: sc.recs, lastOff: sc.lastOff, lastSum: sc.lastSum}
	case len(sc.recs) > 0:
		v = &runView{id: id, good: sc.good, lastOff: sc.lastOff, lastSum: sc.lastSum}
		if base.sealed {
			// Another view shares base's spare capacity: appending would
			// overwrite its records under a caller that reads them.
			v.recs = slices.Concat(base.recs, sc.recs)
		} else {
			v.recs = append(base.recs, sc.recs...)
			base.sealed = true
		}
	}
	if cur := s.runs[runID]; cur != nil && cur != v && cur.id == v.id && cur.good > v.good {
		return v
	}
	s.clock++
	v.used = s.clock
	s.runs[runID] = v
	if len(s.runs) > maxCachedRuns {
		var oldest string
		var oldestUsed uint64
		for id, w := range s.runs {
			if oldest == "" || w.used < oldestUsed {
				oldest, oldestUsed = id, w.used
			}
		}
		delete(s.runs, oldest)
	}
	return v
}

// forget drops the run's view, so that the next call reads the whole file.
func (s *FileStore) forget(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, runID)
}

// sync fsyncs f: the one fsync routine for files; syncDir is the one for
// directories.
func (s *FileStore) sync(f storeFile) error {
	s.fsyncs.Add(1)
	return f.Sync()
}

func (s *FileStore) syncDir(dir string) error {
	s.fsyncs.Add(1)
	return s.fs.syncDir(dir)
}

// cloneRecords returns a deep copy of recs, which the caller may modify
// without touching the view they came from. The results' bytes are copied
// into one block, each capped at its length so that appending to one
// cannot overwrite the next.
func cloneRecords(recs []Record) []Record {
	out := slices.Clone(recs)
	n := 0
	for _, r := range recs {
		n += len(r.Result)
	}
	block := make([]byte, 0, n)
	for i := range out {
		r := &out[i]
		if r.Result != nil {
			start := len(block)
			block = append(block, r.Result...)
			r.Result = block[start:len(block):len(block)]
		}
		r.Input = cloneMessages(r.Input)
		if r.Signal != nil {
			sig := *r.Signal
			r.Signal = &sig
		}
		if r.Budget != nil {
			b := *r.Budget
			r.Budget = &b
		}
		if r.Probe != nil {
			p := *r.Probe
			p.Result = bytes.Clone(p.Result)
			r.Probe = &p
		}
		if r.Attempt != nil {
			a := *r.Attempt
			r.Attempt = &a
		}
		r.Gates = maps.Clone(r.Gates)
	}
	return out
}

func cloneMessages(msgs []agent.Message) []agent.Message {
	out := slices.Clone(msgs)
	for i := range out {
		m := &out[i]
		m.ContentRef = cloneRef(m.ContentRef)
		m.ToolCalls = slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Args = bytes.Clone(m.ToolCalls[j].Args)
			m.ToolCalls[j].ArgsRef = cloneRef(m.ToolCalls[j].ArgsRef)
		}
	}
	return out
}

func cloneRef(r *agent.Ref) *agent.Ref {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// journalScan is what scanJournal found in part of a journal file.
type journalScan struct {
	recs    []Record        // the good records
	good    int64           // the file offset where the good prefix ends; the rest is a torn tail
	lastOff int64           // the file offset of the last good line, or -1 when none was found
	lastSum [crcDigits]byte // its checksum
}

// scanJournal reads the lines of a journal file in data, the bytes of the
// file from offset base, which ends a good prefix of baseLines lines (0, 0:
// the whole file). A torn tail (a last line without newline, or bad lines
// with no good line after them) ends the good prefix; a bad line followed
// by a good one is an error wrapping ErrCorrupt that names the line number
// and byte offset in the file. Load and Append share it, so that they
// always agree on the count.
func scanJournal(path string, data []byte, base int64, baseLines int) (journalScan, error) {
	var (
		sc      = journalScan{good: base, lastOff: -1}
		bad     error // the first bad line since the good prefix, if any
		badLine int
		badOff  int
	)
	for off, line := 0, baseLines+1; off < len(data); line++ {
		n := bytes.IndexByte(data[off:], '\n')
		if n < 0 { // incomplete last line: torn
			break
		}
		rec, err := decodeLine(data[off : off+n+1])
		switch {
		case err != nil && bad == nil:
			bad, badLine, badOff = err, line, off
		case err == nil && bad != nil:
			return journalScan{}, fmt.Errorf("%s: line %d (byte %d): %v: %w", path, badLine, base+int64(badOff), bad, ErrCorrupt)
		case err == nil:
			sc.recs = append(sc.recs, rec)
			sc.good = base + int64(off+n+1)
			sc.lastOff = base + int64(off)
			copy(sc.lastSum[:], data[off:])
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
	io.WriteCloser
	io.ReaderAt
	Stat() (os.FileInfo, error)
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
