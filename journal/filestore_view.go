package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"syscall"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/plumbing/durable"
)

// maxCachedRuns bounds how many runs a FileStore keeps a view of; the least
// recently used is dropped first. A view holds the decoded records of its
// run, so this bounds the memory to that of 64 journals.
const maxCachedRuns = 64

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
func (s *FileStore) refresh(runID string, f durable.File) (*runView, int64, error) {
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
	sc, err := s.scan(runID, data, from, lines)
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
func (s *FileStore) readFrom(f durable.File, off, size int64) ([]byte, error) {
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
		if r.Stopped != nil {
			s := *r.Stopped
			r.Stopped = &s
		}
		r.Gates = maps.Clone(r.Gates)
		r.Fork = cloneForked(r.Fork)
	}
	return out
}

// cloneForked returns a deep copy of a fork's run.started field.
func cloneForked(f *Forked) *Forked {
	if f == nil {
		return nil
	}
	c := *f
	c.Ask.System = cloneString(f.Ask.System)
	cp := &c.Point.Checkpoint
	cp.Conversation.Tail, cp.Input = cloneMessages(cp.Conversation.Tail), cloneMessages(cp.Input)
	cp.Calls = cloneMessages([]agent.Message{{ToolCalls: cp.Calls}})[0].ToolCalls
	if f.Point.Results != nil {
		c.Point.Results = make(map[string]json.RawMessage, len(f.Point.Results))
		for k, v := range f.Point.Results {
			c.Point.Results[k] = bytes.Clone(v)
		}
	}
	c.Point.Hazards = slices.Clone(f.Point.Hazards)
	return &c
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
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
