package journal

import (
	"bytes"
	"fmt"
)

// journalScan is what scanJournal found in part of a journal file.
type journalScan struct {
	recs    []Record        // the good records
	good    int64           // the file offset where the good prefix ends; the rest is a torn tail
	lastOff int64           // the file offset of the last good line, or -1 when none was found
	lastSum [crcDigits]byte // its checksum
}

// scan is scanJournal of the run's file, opening sealed records with the
// store's sealer.
func (s *FileStore) scan(runID string, data []byte, base int64, baseLines int) (journalScan, error) {
	return scanJournal(s.path(runID), data, base, baseLines, func(n int, w wireRecord) (Record, error) {
		return openRecord(s.sealer, runID, n, w)
	})
}

// scanJournal reads the lines of a journal file in data, the bytes of the
// file from offset base, which ends a good prefix of baseLines lines (0, 0:
// the whole file). A torn tail (a last line without newline, or bad lines
// with no good line after them) ends the good prefix; a bad line followed
// by a good one is an error wrapping ErrCorrupt that names the line number
// and byte offset in the file. Load and Append share it, so that they
// always agree on the count. open turns the n-th line's record (n is
// 1-based) into a Record; its error (a sealed record whose key is missing)
// is returned as it is: such a line is neither torn nor corrupt.
func scanJournal(path string, data []byte, base int64, baseLines int, open func(n int, w wireRecord) (Record, error)) (journalScan, error) {
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
		w, err := decodeWireLine(data[off : off+n+1])
		switch {
		case err != nil && bad == nil:
			bad, badLine, badOff = err, line, off
		case err == nil && bad != nil:
			return journalScan{}, fmt.Errorf("%s: line %d (byte %d): %v: %w", path, badLine, base+int64(badOff), bad, ErrCorrupt)
		case err == nil:
			rec, err := open(line, w)
			if err != nil {
				return journalScan{}, err
			}
			sc.recs = append(sc.recs, rec)
			sc.good = base + int64(off+n+1)
			sc.lastOff = base + int64(off)
			copy(sc.lastSum[:], data[off:])
		}
		off += n + 1
	}
	return sc, nil
}
