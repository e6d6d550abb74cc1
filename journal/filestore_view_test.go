package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/durable/durabletest"
)

// The tests in this file check what a FileStore remembers between calls
// (its view of a run: see refresh) against what other processes, people
// and failures do to the file. Two FileStores on one directory stand in
// for two processes: they share nothing but the files and their locks.

func newTestFileStore(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appendRaw appends b to the file at path, as another process (or a
// person) would, without the store.
func appendRaw(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// bytesRead returns how many bytes s read from files while fn ran.
func bytesRead(s *FileStore, fn func()) int64 {
	before := s.Stats().BytesRead
	fn()
	return s.Stats().BytesRead - before
}

// hasView reports whether s remembers a view of the run.
func hasView(s *FileStore, runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[runID] != nil
}

func TestFileStoreTwoProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stores := []*FileStore{newTestFileStore(t, dir), newTestFileStore(t, dir)}
	const n = 40
	all := storeTestRecords(0, n)
	for i := range n {
		s, other := stores[i%2], stores[(i+1)%2]
		// Each sees the record the other appended last...
		storeAssertRecords(t, s, "run-1", all[:i])
		// ...and an append that has not seen it is refused, writing nothing.
		if i > 0 {
			err := s.Append("run-1", i-1, all[i])
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("holds %d records, caller saw %d", i, i-1)) {
				t.Fatalf("record %d: stale Append = %v, want ErrConflict", i, err)
			}
		}
		if err := s.Append("run-1", i, all[i]); err != nil {
			t.Fatalf("record %d: Append: %v", i, err)
		}
		// The other store saw records 0..i-1 (or none, for i = 0): the
		// conflict check counts record i, which it has not read yet.
		if err := other.Append("run-1", i, all[i]); !errors.Is(err, ErrConflict) {
			t.Fatalf("record %d: other store's Append(seen=%d) = %v, want ErrConflict", i, i, err)
		}
	}
	for _, s := range stores {
		storeAssertRecords(t, s, "run-1", all)
	}
	if got, want := readFile(t, stores[0].path("run-1")), encodeTestRecords(t, all); !bytes.Equal(got, want) {
		t.Fatalf("file is\n%q\nwant\n%q", got, want)
	}
	// Each store read only what the other wrote, not the whole file again
	// for every call: far less than the n/2 * file size a re-scan costs.
	size := int64(len(encodeTestRecords(t, all)))
	for i, s := range stores {
		if st := s.Stats(); st.BytesRead > 3*size {
			t.Errorf("store %d read %d bytes for a %d-byte file, want at most %d", i, st.BytesRead, size, 3*size)
		}
	}
}

func TestFileStoreConcurrentProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stores := []*FileStore{newTestFileStore(t, dir), newTestFileStore(t, dir)}
	const workers, each = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		s := stores[w%2]
		wg.Go(func() {
			for i := range each {
				rec := Record{Type: StepCompleted, Step: fmt.Sprintf("w%d-%02d", w, i), Result: []byte(`"r"`)}
				for {
					recs, err := s.Load("run-1")
					if err != nil {
						t.Errorf("worker %d: Load: %v", w, err)
						return
					}
					err = s.Append("run-1", len(recs), rec)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrConflict) {
						t.Errorf("worker %d: Append: %v", w, err)
						return
					}
				}
			}
		})
	}
	// Readers in both stores: every Load is a prefix of the next one.
	for r := range 2 {
		s := stores[r]
		wg.Go(func() {
			var prev []Record
			for len(prev) < workers*each {
				recs, err := s.Load("run-1")
				if err != nil {
					t.Errorf("reader %d: Load: %v", r, err)
					return
				}
				if len(recs) < len(prev) || len(prev) > 0 && !reflect.DeepEqual(recs[:len(prev)], prev) {
					t.Errorf("reader %d: Load returned %d records that do not extend the %d before", r, len(recs), len(prev))
					return
				}
				prev = recs
			}
		})
	}
	wg.Wait()
	want, err := newTestFileStore(t, dir).Load("run-1")
	if err != nil || len(want) != workers*each {
		t.Fatalf("a fresh store loads %d records, %v; want %d", len(want), err, workers*each)
	}
	for _, s := range stores {
		storeAssertRecords(t, s, "run-1", want)
	}
}

func TestFileStoreTornTailAfterView(t *testing.T) {
	t.Parallel()
	recs := storeTestRecords(0, 5)
	var logs bytes.Buffer
	dir := t.TempDir()
	s := newTestFileStore(t, dir)
	s.Logger = textLogger(&logs)
	other := newTestFileStore(t, dir)
	path := s.path("run-1")
	if err := s.Append("run-1", 0, recs[:3]...); err != nil {
		t.Fatal(err)
	}
	storeAssertRecords(t, s, "run-1", recs[:3])

	// Another process appends a record, then crashes in the next append.
	if err := other.Append("run-1", 3, recs[3]); err != nil {
		t.Fatal(err)
	}
	line5, err := encodeRecord(recs[4])
	if err != nil {
		t.Fatal(err)
	}
	torn := line5[:len(line5)/2]
	appendRaw(t, path, torn)

	storeAssertRecords(t, s, "run-1", recs[:4]) // the record seen, the torn tail ignored
	storeAssertRecords(t, s, "run-1", recs[:4]) // and again, from the view
	if logs.Len() != 0 {
		t.Fatalf("Load logged %q", logs.String())
	}
	if err := s.Append("run-1", 4, recs[4]); err != nil {
		t.Fatalf("Append after a torn tail: %v", err)
	}
	if want := fmt.Sprintf("level=WARN msg=\"journal: dropped torn tail\" run_id=run-1 bytes=%d\n", len(torn)); logs.String() != want {
		t.Fatalf("logged %q, want %q", logs.String(), want)
	}
	if got, want := readFile(t, path), encodeTestRecords(t, recs); !bytes.Equal(got, want) {
		t.Fatalf("file is\n%q\nwant\n%q", got, want)
	}
	storeAssertRecords(t, s, "run-1", recs)
	storeAssertRecords(t, other, "run-1", recs)
}

func TestFileStoreFileChangedByHand(t *testing.T) {
	t.Parallel()
	first := storeTestRecords(0, 6)
	// Other records of the same shapes: run.started, then steps of other
	// names and results.
	second := []Record{storeTestRecord(0)}
	for i := 1; i < 9; i++ {
		second = append(second, Record{Type: StepCompleted, Step: fmt.Sprintf("other-%d", i), Result: []byte(fmt.Sprintf(`"other result %d"`, i))})
	}

	// start returns a store whose view of run-1 holds first.
	start := func(t *testing.T) (*FileStore, string) {
		t.Helper()
		s := newTestFileStore(t, t.TempDir())
		if err := s.Append("run-1", 0, first...); err != nil {
			t.Fatal(err)
		}
		storeAssertRecords(t, s, "run-1", first)
		if !hasView(s, "run-1") {
			t.Fatal("no view after Append and Load")
		}
		return s, s.path("run-1")
	}
	// rescans checks that the next Load reads the whole file and returns want.
	rescans := func(t *testing.T, s *FileStore, path string, want []Record) {
		t.Helper()
		size := int64(len(readFile(t, path)))
		if n := bytesRead(s, func() { storeAssertRecords(t, s, "run-1", want) }); n < size {
			t.Fatalf("Load read %d bytes of a %d-byte file, want all (a rescan)", n, size)
		}
		if err := s.Append("run-1", len(want), storeTestRecord(1)); err != nil {
			t.Fatalf("Append after the change: %v", err)
		}
		storeAssertRecords(t, s, "run-1", append(want[:len(want):len(want)], storeTestRecord(1)))
	}

	t.Run("ReplacedLonger", func(t *testing.T) {
		t.Parallel()
		s, path := start(t)
		tmp := path + ".tmp"
		writeFile(t, tmp, encodeTestRecords(t, second))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		rescans(t, s, path, second)
	})
	t.Run("ReplacedSameSize", func(t *testing.T) {
		t.Parallel()
		s, path := start(t)
		same := storeTestRecords(0, 6)
		same[4].Result = bytes.ToUpper(same[4].Result) // same length, another record
		if bytes.Equal(same[4].Result, first[4].Result) {
			t.Fatal("test records do not differ")
		}
		tmp := path + ".tmp"
		writeFile(t, tmp, encodeTestRecords(t, same))
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		rescans(t, s, path, same)
	})
	t.Run("TruncatedBelowView", func(t *testing.T) {
		t.Parallel()
		s, path := start(t)
		if err := os.Truncate(path, int64(len(encodeTestRecords(t, first[:2])))); err != nil {
			t.Fatal(err)
		}
		rescans(t, s, path, first[:2])
	})
	t.Run("RewrittenInPlace", func(t *testing.T) {
		t.Parallel()
		// Same inode, longer than the view: the checksum of the view's last
		// line is no longer at its offset.
		s, path := start(t)
		writeFile(t, path, encodeTestRecords(t, second))
		rescans(t, s, path, second)
	})
	t.Run("Deleted", func(t *testing.T) {
		t.Parallel()
		s, path := start(t)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		storeAssertRecords(t, s, "run-1", nil)
		if hasView(s, "run-1") {
			t.Fatal("the view of a deleted file is kept")
		}
		if err := s.Append("run-1", 0, second...); err != nil {
			t.Fatal(err)
		}
		storeAssertRecords(t, s, "run-1", second)
	})
}

func TestFileStoreCorruptionAfterView(t *testing.T) {
	t.Parallel()
	recs := storeTestRecords(0, 5)
	s := newTestFileStore(t, t.TempDir())
	path := s.path("run-1")
	if err := s.Append("run-1", 0, recs[:3]...); err != nil {
		t.Fatal(err)
	}
	storeAssertRecords(t, s, "run-1", recs[:3])
	good := encodeTestRecords(t, recs[:3])

	// Another process appends record 4; then a bad line and a good one
	// appear (a disk error, a hand edit).
	line4, line5 := encodeTestRecords(t, recs[3:4]), encodeTestRecords(t, recs[4:5])
	bad := bytes.Clone(line4)
	bad[crcDigits+3] ^= 0x01
	appendRaw(t, path, line4)
	storeAssertRecords(t, s, "run-1", recs[:4])
	appendRaw(t, path, append(bad, line5...))

	wantMsg := fmt.Sprintf("%s: line 5 (byte %d): checksum mismatch", path, len(good)+len(line4))
	if _, err := s.Load("run-1"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("Load = %v; want ErrCorrupt naming %q", err, wantMsg)
	}
	if err := s.Append("run-1", 4, recs[4]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("Append = %v; want ErrCorrupt naming %q", err, wantMsg)
	}
	// A fresh store (a new process) says the same.
	if _, err := newTestFileStore(t, filepath.Dir(path)).Load("run-1"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), wantMsg) {
		t.Fatalf("Load by a fresh store = %v; want ErrCorrupt naming %q", err, wantMsg)
	}
	// A person deletes the bad line in place: the whole file is read again.
	writeFile(t, path, bytes.Join([][]byte{good, line4, line5}, nil))
	storeAssertRecords(t, s, "run-1", recs)
}

func TestFileStoreFaultsForgetView(t *testing.T) {
	t.Parallel()
	recs := storeTestRecords(0, 6)
	cases := []struct {
		name   string
		inject func(*durabletest.FaultFS)
		op     func(s *FileStore) error
		// want is the records on disk after the failure.
		want []Record
	}{
		{"write fails after 10 bytes", func(f *durabletest.FaultFS) { f.WriteFail, f.WritePartial = true, 10 },
			func(s *FileStore) error { return s.Append("run-1", 3, recs[3]) }, recs[:3]},
		{"write fails after the first of two records", func(f *durabletest.FaultFS) {
			line, _ := encodeRecord(recs[3])
			f.WriteFail, f.WritePartial = true, len(line)
		}, func(s *FileStore) error { return s.Append("run-1", 3, recs[3:5]...) }, recs[:4]},
		{"fsync fails", func(f *durabletest.FaultFS) { f.SyncFail = true },
			func(s *FileStore) error { return s.Append("run-1", 3, recs[3]) }, recs[:4]},
		{"read fails in Append", func(f *durabletest.FaultFS) { f.ReadFail = true },
			func(s *FileStore) error { return s.Append("run-1", 3, recs[3]) }, recs[:3]},
		{"read fails in Load", func(f *durabletest.FaultFS) { f.ReadFail = true },
			func(s *FileStore) error { _, err := s.Load("run-1"); return err }, recs[:3]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ffs := &durabletest.FaultFS{}
			s, err := newFileStore(t.TempDir(), ffs)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append("run-1", 0, recs[:3]...); err != nil {
				t.Fatal(err)
			}
			storeAssertRecords(t, s, "run-1", recs[:3])
			c.inject(ffs)
			if err := c.op(s); !errors.Is(err, durabletest.ErrInjected) {
				t.Fatalf("got %v, want the injected error", err)
			}
			if hasView(s, "run-1") {
				t.Fatal("the view is kept after the error")
			}
			size := int64(len(readFile(t, s.path("run-1"))))
			if n := bytesRead(s, func() { storeAssertRecords(t, s, "run-1", c.want) }); n < size {
				t.Fatalf("the Load after the error read %d of %d bytes, want all", n, size)
			}
			// And the store goes on from there.
			if err := s.Append("run-1", len(c.want), recs[len(c.want)]); err != nil {
				t.Fatal(err)
			}
			storeAssertRecords(t, s, "run-1", recs[:len(c.want)+1])
			storeAssertRecords(t, newTestFileStore(t, filepath.Dir(s.path("run-1"))), "run-1", recs[:len(c.want)+1])
		})
	}
}

func TestFileStoreReadsOnlyNewBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newTestFileStore(t, dir)
	const n = 2000
	rec := func(i int) Record {
		return Record{Type: StepCompleted, Step: fmt.Sprintf("tool/%d/0/lookup", i), Result: agent.EncodeToolResult(agent.ToolResult{Content: strings.Repeat("x", 200)})}
	}
	var recs []Record
	for i := range n - 1 {
		recs = append(recs, rec(i))
	}
	if err := s.Append("run-1", 0, recs...); err != nil {
		t.Fatal(err)
	}
	size := int64(len(readFile(t, s.path("run-1"))))

	before := s.Stats()
	if err := s.Append("run-1", n-1, rec(n-1)); err != nil {
		t.Fatal(err)
	}
	after := s.Stats()
	if got := after.BytesRead - before.BytesRead; got >= 4<<10 {
		t.Errorf("append of record %d read %d bytes, want fewer than 4 KiB", n, got)
	}
	if got := after.Appends - before.Appends; got != 1 {
		t.Errorf("%d appends counted, want 1", got)
	}
	if got := after.Fsyncs - before.Fsyncs; got != 1 {
		t.Errorf("%d fsyncs for one append, want 1", got)
	}
	if got := bytesRead(s, func() { storeAssertRecords(t, s, "run-1", append(recs, rec(n-1))) }); got >= 4<<10 {
		t.Errorf("Load of %d records read %d bytes, want fewer than 4 KiB", n, got)
	}

	// A store without a view (a new process) reads the whole file once.
	fresh := newTestFileStore(t, dir)
	if got := bytesRead(fresh, func() {
		if err := fresh.Append("run-1", n, rec(n)); err != nil {
			t.Fatal(err)
		}
	}); got < size {
		t.Errorf("first append of a fresh store read %d bytes, want the whole file (%d or more)", got, size)
	}
	if got := bytesRead(fresh, func() {
		if err := fresh.Append("run-1", n+1, rec(n+1)); err != nil {
			t.Fatal(err)
		}
	}); got >= 4<<10 {
		t.Errorf("its second append read %d bytes, want fewer than 4 KiB", got)
	}
}

func TestFileStoreViewsBounded(t *testing.T) {
	t.Parallel()
	s := newTestFileStore(t, t.TempDir())
	const runs = maxCachedRuns + 10
	for i := range runs {
		if err := s.Append(fmt.Sprintf("run-%d", i), 0, storeTestRecords(0, 2)...); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	n := len(s.runs)
	s.mu.Unlock()
	if n != maxCachedRuns {
		t.Fatalf("%d views after appends to %d runs, want %d", n, runs, maxCachedRuns)
	}
	if hasView(s, "run-0") || !hasView(s, fmt.Sprintf("run-%d", runs-1)) {
		t.Fatal("the least recently used run was not the one dropped")
	}
	for i := range runs {
		storeAssertRecords(t, s, fmt.Sprintf("run-%d", i), storeTestRecords(0, 2))
	}
}

// TestFileStoreLoadReturnsCopies: records returned by Load are the
// caller's; changing them, their bytes or their messages, or appending to
// their slices, changes nothing in the store.
func TestFileStoreLoadReturnsCopies(t *testing.T) {
	t.Parallel()
	s := newTestFileStore(t, t.TempDir())
	recs := []Record{
		{Type: RunStarted, Input: []agent.Message{{Role: agent.RoleUser, Content: "hi", ToolCalls: []agent.ToolCall{{ID: "1", Name: "lookup", Args: []byte(`{"a":1}`)}}}}},
		{Type: StepCompleted, Step: "a", Result: []byte(`"one"`)},
		{Type: StepCompleted, Step: "b", Result: []byte(`"two"`)},
		{Type: SignalRecord, Signal: &operator.Signal{Name: operator.SignalApprove, Marker: "m"}},
	}
	if err := s.Append("run-1", 0, recs...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("run-1")
	if err != nil {
		t.Fatal(err)
	}
	got[0].Input[0].Content = "changed"
	got[0].Input[0].ToolCalls[0].Args[2] = 'X'
	got[0].Input = append(got[0].Input, agent.Message{Role: agent.RoleUser})
	got[1].Result[1] = 'X'
	got[1].Result = append(got[1].Result, "xxxx"...)
	if string(got[2].Result) != `"two"` {
		t.Fatalf("appending to one result changed the next: %q", got[2].Result)
	}
	got[3].Signal.Marker = "changed"
	got[2] = Record{Type: RunCompleted}
	_ = append(got[:1], Record{Type: RunCompleted})
	storeAssertRecords(t, s, "run-1", recs)
}

// TestCloneRecordsSharesNothing fills every field of a Record, however deep,
// through reflection, and checks that cloneRecords copies every slice, map
// and pointer. It fails when a field is added to Record or agent.Message
// that cloneRecords does not copy.
func TestCloneRecordsSharesNothing(t *testing.T) {
	t.Parallel()
	var rec Record
	fillValue(t, reflect.ValueOf(&rec).Elem(), "Record")
	clone := cloneRecords([]Record{rec})[0]
	if !reflect.DeepEqual(clone, rec) {
		t.Fatalf("clone differs:\n%+v\n%+v", clone, rec)
	}
	assertNoSharing(t, reflect.ValueOf(rec), reflect.ValueOf(clone), "Record")
}

// fillValue sets every field of v to a non-zero value.
func fillValue(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillValue(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillValue(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(t, v.Elem(), "(*"+path+")")
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(t, k, path+"[key]")
		fillValue(t, e, path+"[elem]")
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		t.Fatalf("%s: %s fields are not known to this test (nor to cloneRecords)", path, v.Kind())
	}
}

// assertNoSharing fails when a and b, equal values, share memory.
func assertNoSharing(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				assertNoSharing(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the slice", path)
		}
		for i := range a.Len() {
			assertNoSharing(t, a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Pointer, reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			t.Errorf("%s: the clone shares the %s", path, a.Kind())
		}
		if a.Kind() == reflect.Pointer && !a.IsNil() {
			assertNoSharing(t, a.Elem(), b.Elem(), "(*"+path+")")
		}
	}
}
