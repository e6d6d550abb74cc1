package journal

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// BenchmarkFileStoreAppend appends a typical 300-byte record to one run, one
// record per Append, with the fsync, to a journal that already holds 10 or
// 4,000 records. The store reads only the bytes past what it has checked,
// so the cost per append does not grow with the journal: read-B/op stays at
// a few bytes and fsyncs/op at 1.
func BenchmarkFileStoreAppend(b *testing.B) {
	result, err := json.Marshal(agent.ToolResult{Content: strings.Repeat("order 1234: shipped; ", 11)})
	if err != nil {
		b.Fatal(err)
	}
	rec := Record{Type: StepCompleted, Step: "tool/3/0/lookup_order", Result: result}
	line, err := encodeRecord(rec)
	if err != nil {
		b.Fatal(err)
	}
	for _, existing := range []int{10, 4000} {
		b.Run(fmt.Sprintf("existing=%d", existing), func(b *testing.B) {
			s, err := NewFileStore(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Append("run-1", 0, slices.Repeat([]Record{rec}, existing)...); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(line)))
			seen := existing
			before := s.Stats()
			for b.Loop() {
				if err := s.Append("run-1", seen, rec); err != nil {
					b.Fatal(err)
				}
				seen++
			}
			after := s.Stats()
			n := float64(seen - existing)
			b.ReportMetric(float64(after.Fsyncs-before.Fsyncs)/n, "fsyncs/op")
			b.ReportMetric(float64(after.BytesRead-before.BytesRead)/n, "read-B/op")
		})
	}
}

// BenchmarkScanJournal measures a scan of a journal of 1000 typical
// records: what a store without a view of the run (a new process, or one
// after an error) pays once, and what every Append paid before stores kept
// views.
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
		sc, err := scanJournal("bench.jsonl", data, 0, 0, func(n int, w wireRecord) (Record, error) { return openRecord(nil, "bench", n, w) })
		if err != nil || len(sc.recs) != 1000 {
			b.Fatalf("scan: %d records, %v", len(sc.recs), err)
		}
	}
}
