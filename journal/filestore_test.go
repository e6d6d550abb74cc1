package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/durable/durabletest"
)

// encodeTestRecords returns the file content of a journal holding recs.
func encodeTestRecords(t *testing.T, recs []Record) []byte {
	t.Helper()
	var b []byte
	for _, rec := range recs {
		line, err := encodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, line...)
	}
	return b
}

// textLogger returns a logger writing to buf without times, so that its
// output can be compared exactly.
func textLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFileStoreTornTail(t *testing.T) {
	t.Parallel()
	const n = 4
	recs := storeTestRecords(0, n)
	full := encodeTestRecords(t, recs)
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1

	var logs bytes.Buffer
	dir := t.TempDir()
	// Damage is written by hand over lines a store may have read and
	// checked already, which under the crash assumptions never change; so,
	// as after a real crash, a new store (a new process) finds it.
	newStore := func(t *testing.T) *FileStore {
		t.Helper()
		s, err := NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Logger = textLogger(&logs)
		return s
	}
	path := newStore(t).path("run-1")

	// recovers checks that a journal file holding damaged, whose last line
	// is torn, loads as n-1 records, and that the next append drops the
	// torn bytes and leaves exactly the n records.
	recovers := func(t *testing.T, what string, damaged []byte) {
		t.Helper()
		writeFile(t, path, damaged)
		s := newStore(t)
		logs.Reset()
		storeAssertRecords(t, s, "run-1", recs[:n-1])
		if err := s.Append("run-1", n-1, recs[n-1]); err != nil {
			t.Fatalf("%s: Append(seen=%d): %v", what, n-1, err)
		}
		storeAssertRecords(t, s, "run-1", recs)
		if got := readFile(t, path); !bytes.Equal(got, full) {
			t.Fatalf("%s: after the append the file is\n%q\nwant\n%q", what, got, full)
		}
		want := ""
		if torn := len(damaged) - lastStart; torn > 0 {
			want = fmt.Sprintf("level=WARN msg=\"journal: dropped torn tail\" run_id=run-1 bytes=%d\n", torn)
		}
		if logs.String() != want {
			t.Fatalf("%s: logged %q, want %q", what, logs.String(), want)
		}
	}

	// The last line cut at every length, from nothing to all but the newline.
	for cut := lastStart; cut < len(full); cut++ {
		recovers(t, fmt.Sprintf("cut at %d of %d", cut, len(full)), full[:cut])
	}
	// The last line with any one byte changed (its checksum, the space, the
	// JSON or the newline) is torn too.
	for i := lastStart; i < len(full); i++ {
		damaged := bytes.Clone(full)
		damaged[i] ^= 0x01
		recovers(t, fmt.Sprintf("byte %d flipped", i), damaged)
	}
	// Several bad lines with no good line after them are one torn tail.
	recovers(t, "two bad lines", append(full[:lastStart:lastStart], "garbage\n\x00\x00"...))

	// A damaged line 2 of 4 is corruption, for Load and Append alike.
	line2 := bytes.IndexByte(full, '\n') + 1
	damaged := bytes.Clone(full)
	damaged[line2+crcDigits+5] ^= 0x01 // inside the JSON
	writeFile(t, path, damaged)
	s := newStore(t)
	wantMsg := fmt.Sprintf("%s: line 2 (byte %d): checksum mismatch", path, line2)
	_, err := s.Load("run-1")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("Load of a journal damaged in line 2 = %v; want ErrCorrupt naming %q", err, wantMsg)
	}
	for _, seen := range []int{1, n - 1, n} {
		err := s.Append("run-1", seen, storeTestRecord(n))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
			t.Fatalf("Append(seen=%d) to a corrupt journal = %v; want ErrCorrupt naming %q", seen, err, wantMsg)
		}
	}
	if got := readFile(t, path); !bytes.Equal(got, damaged) {
		t.Fatalf("Append changed a corrupt journal: %q", got)
	}
}

func TestFileStoreFaults(t *testing.T) {
	t.Parallel()
	recs := storeTestRecords(0, 6)
	full := encodeTestRecords(t, recs)

	newStore := func(t *testing.T) (*FileStore, *durabletest.FaultFS) {
		t.Helper()
		ffs := &durabletest.FaultFS{}
		s, err := newFileStore(t.TempDir(), ffs)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append("run-1", 0, recs[:2]...); err != nil {
			t.Fatal(err)
		}
		return s, ffs
	}

	t.Run("PartialWrite", func(t *testing.T) {
		t.Parallel()
		s, ffs := newStore(t)
		ffs.WriteFail, ffs.WritePartial = true, 10
		err := s.Append("run-1", 2, recs[2])
		if !errors.Is(err, durabletest.ErrInjected) || errors.Is(err, ErrConflict) {
			t.Fatalf("Append with a failing write = %v, want the injected error", err)
		}
		before := len(encodeTestRecords(t, recs[:2]))
		if got := len(readFile(t, s.path("run-1"))); got != before+10 {
			t.Fatalf("file has %d bytes, want %d (10 bytes of the failed write)", got, before+10)
		}
		storeAssertRecords(t, s, "run-1", recs[:2]) // the partial line is a torn tail
		if err := s.Append("run-1", 2, recs[2]); err != nil {
			t.Fatalf("Append after the failed write: %v", err)
		}
		storeAssertRecords(t, s, "run-1", recs[:3])
		if got, want := readFile(t, s.path("run-1")), full[:len(encodeTestRecords(t, recs[:3]))]; !bytes.Equal(got, want) {
			t.Fatalf("file is\n%q\nwant\n%q", got, want)
		}
	})

	t.Run("PartialWriteOfSeveralRecords", func(t *testing.T) {
		t.Parallel()
		// A failed append of several records may have happened in part: the
		// lines that reached the file whole are records. This is why callers
		// must treat an append error as "unknown".
		s, ffs := newStore(t)
		line3, err := encodeRecord(recs[2])
		if err != nil {
			t.Fatal(err)
		}
		ffs.WriteFail, ffs.WritePartial = true, len(line3)+5
		if err := s.Append("run-1", 2, recs[2:4]...); !errors.Is(err, durabletest.ErrInjected) {
			t.Fatalf("Append with a failing write = %v, want the injected error", err)
		}
		storeAssertRecords(t, s, "run-1", recs[:3])
		if err := s.Append("run-1", 2, recs[2:4]...); !errors.Is(err, ErrConflict) {
			t.Fatalf("Append(seen=2) after a partial append = %v, want ErrConflict", err)
		}
		if err := s.Append("run-1", 3, recs[3]); err != nil {
			t.Fatal(err)
		}
		storeAssertRecords(t, s, "run-1", recs[:4])
	})

	t.Run("FsyncFails", func(t *testing.T) {
		t.Parallel()
		s, ffs := newStore(t)
		ffs.SyncFail = true
		err := s.Append("run-1", 2, recs[2])
		if !errors.Is(err, durabletest.ErrInjected) || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("Append with a failing fsync = %v, want the injected error, outcome unknown", err)
		}
		// The record reached the file: the store does not pretend otherwise.
		storeAssertRecords(t, s, "run-1", recs[:3])
		if err := s.Append("run-1", 2, recs[2]); !errors.Is(err, ErrConflict) {
			t.Fatalf("Append(seen=2) after the failed fsync = %v, want ErrConflict", err)
		}
		if err := s.Append("run-1", 3, recs[3]); err != nil {
			t.Fatal(err)
		}
		storeAssertRecords(t, s, "run-1", recs[:4])
	})

	t.Run("DirFsyncFailsOnCreate", func(t *testing.T) {
		t.Parallel()
		s, ffs := newStore(t)
		syncs := ffs.DirSyncCount()
		ffs.DirSyncFail = s.dir
		err := s.Append("run-2", 0, recs[0])
		if !errors.Is(err, durabletest.ErrInjected) {
			t.Fatalf("Append creating a file with a failing dir fsync = %v, want the injected error", err)
		}
		storeAssertRecords(t, s, "run-2", nil)
		// The next append to the empty file fsyncs the directory again.
		if err := s.Append("run-2", 0, recs[0]); err != nil {
			t.Fatal(err)
		}
		if ffs.DirSyncCount() != syncs+1 {
			t.Fatalf("%d directory fsyncs, want %d", ffs.DirSyncCount(), syncs+1)
		}
		storeAssertRecords(t, s, "run-2", recs[:1])
		// Appends to a file that holds records do not fsync the directory.
		if err := s.Append("run-2", 1, recs[1]); err != nil {
			t.Fatal(err)
		}
		if ffs.DirSyncCount() != syncs+1 {
			t.Fatalf("%d directory fsyncs, want %d", ffs.DirSyncCount(), syncs+1)
		}
	})

	t.Run("DirFsyncFailsInNewFileStore", func(t *testing.T) {
		t.Parallel()
		ffs := &durabletest.FaultFS{DirSyncFail: t.TempDir()}
		dir := filepath.Join(ffs.DirSyncFail, "a", "b")
		if _, err := newFileStore(dir, ffs); !errors.Is(err, durabletest.ErrInjected) {
			t.Fatalf("newFileStore with a failing dir fsync = %v, want the injected error", err)
		}
		// Without faults it fsyncs the parent of each directory it created.
		ffs = &durabletest.FaultFS{}
		dir = filepath.Join(t.TempDir(), "c", "d", "e")
		if _, err := newFileStore(dir, ffs); err != nil {
			t.Fatal(err)
		}
		if ffs.DirSyncCount() != 3 {
			t.Fatalf("%d directory fsyncs creating c/d/e, want 3", ffs.DirSyncCount())
		}
		if _, err := newFileStore(dir, ffs); err != nil || ffs.DirSyncCount() != 3 {
			t.Fatalf("newFileStore of an existing dir: %v, %d fsyncs; want nil, none", err, ffs.DirSyncCount()-3)
		}
	})
}

func TestRunIDValidation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := NewFileStore(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	invalid := []string{"../x", "/abs", "", strings.Repeat("a", 129), "a b", "ré", ".hidden"}
	for _, id := range invalid {
		err := operator.ValidRunID(id)
		if !errors.Is(err, operator.ErrInvalid) || !strings.Contains(err.Error(), "letters, digits") {
			t.Errorf("operator.ValidRunID(%q) = %v, want operator.ErrInvalid saying what is valid", id, err)
		}
		if err := s.Append(id, 0, storeTestRecord(0)); !errors.Is(err, operator.ErrInvalid) {
			t.Errorf("Append(%q) = %v, want operator.ErrInvalid", id, err)
		}
		if _, err := s.Load(id); !errors.Is(err, operator.ErrInvalid) {
			t.Errorf("Load(%q) = %v, want operator.ErrInvalid", id, err)
		}
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		found = append(found, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "store"}; !slices.Equal(found, want) {
		t.Fatalf("after refused ids the temp dir holds %q, want %q", found, want)
	}

	valid := []string{"run-1", "A.b_c-9", strings.Repeat("a", 128)}
	for _, id := range valid {
		if err := operator.ValidRunID(id); err != nil {
			t.Errorf("operator.ValidRunID(%q) = %v, want nil", id, err)
		}
		if err := s.Append(id, 0, storeTestRecord(0)); err != nil {
			t.Errorf("Append(%q): %v", id, err)
		}
		storeAssertRecords(t, s, id, storeTestRecords(0, 1))
	}
	slices.Sort(valid)
	storeAssertList(t, s, valid...)
}

func TestFileStoreList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "a"} {
		if err := s.Append(id, 0, storeTestRecord(0)); err != nil {
			t.Fatal(err)
		}
	}
	// Not journals: other files, a directory, a name that is no run id.
	writeFile(t, filepath.Join(dir, "notes.txt"), []byte("x"))
	writeFile(t, filepath.Join(dir, ".x.jsonl"), []byte("x"))
	writeFile(t, filepath.Join(dir, "c.jsonl.tmp"), []byte("x"))
	if err := os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	storeAssertList(t, s, "a", "b")
}
