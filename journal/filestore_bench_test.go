package journal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// BenchmarkFileStoreAppend appends a typical 300-byte record to one run, one
// record per Append, with the fsync. Each Append re-scans the file, so the
// cost per append grows with the journal; b.N records end up in one file.
func BenchmarkFileStoreAppend(b *testing.B) {
	s, err := NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	result, err := json.Marshal(agent.ToolResult{Content: strings.Repeat("order 1234: shipped; ", 11)})
	if err != nil {
		b.Fatal(err)
	}
	rec := Record{Type: StepCompleted, Step: "tool/3/0/lookup_order", Result: result}
	line, err := encodeRecord(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	seen := 0
	for b.Loop() {
		if err := s.Append("run-1", seen, rec); err != nil {
			b.Fatal(err)
		}
		seen++
	}
	b.ReportMetric(float64(len(line)), "bytes/record")
}

// BenchmarkScanJournal measures the re-scan that every Append does, on a
// journal of 1000 typical records: the cost a cache of (size, count) would
// save.
func BenchmarkScanJournal(b *testing.B) {
	result, err := json.Marshal(agent.ToolResult{Content: strings.Repeat("order 1234: shipped; ", 11)})
	if err != nil {
		b.Fatal(err)
	}
	line, err := encodeRecord(Record{Type: StepCompleted, Step: "tool/3/0/lookup_order", Result: result})
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(strings.Repeat(string(line), 1000))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sc, err := scanJournal("bench.jsonl", data, false)
		if err != nil || sc.count != 1000 {
			b.Fatalf("scan: %d records, %v", sc.count, err)
		}
	}
}
