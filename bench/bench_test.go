package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/fence"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/jaegertest"
	"github.com/agentrun/agentrun/workflows"
)

// syncBuffer collects the bench's progress, which the dev server's output
// reaches from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// measured are the figures a quick run measures (each a prefix of a row).
var (
	measured = []string{
		"ms per activity, AgentRun vs bare chain",
		"median gap activity scheduled → started",
		"median gap activity started → completed",
		"median gap activity completed → workflow task scheduled",
		"median gap workflow task scheduled → started",
		"median gap workflow task started → completed",
		"median gap workflow task completed → next activity scheduled",
		"median gap activity scheduled → next activity scheduled",
		"mean gap activity scheduled → next activity scheduled",
		"median gap run started → first activity scheduled",
		"median gap last activity completed → run completed",
		"history bytes per activity",
		"ms per activity, a bare chain carrying AgentRun's bytes",
		"ms per activity, that chain with AgentRun's",
		"ms per activity, AgentRun vs that chain",
		"worker RPCs per activity",
		"ms per activity, encrypted vs plain",
		"history bytes per turn, encrypted vs plain",
		"codec server: ms to decode the payloads of a run's first",
		"ms per activity in the codec and the content store's sealing",
		"ms per activity, traced vs untraced",
		"step spans in Jaeger per traced step",
		"ms per activity, embedded worker vs the worker program (median of rounds)",
		"embedded vs the worker program: median gap activity started → completed",
		"embedded vs the worker program: history bytes per activity",
		"packages linked (go list -deps, the standard library's included), embedded vs plain worker",
		"packages linked outside the standard library, embedded vs plain worker",
		"binary size as go build makes it (symbols and DWARF kept), embedded vs plain worker",
		"binary size stripped (go build -ldflags='-s -w'), embedded vs plain worker",
		"packages linked, the worker program",
		"ms per run, delegated vs direct (median of rounds)",
		"ms of the middle step in the parent's history, agent step",
		"history bytes per run, delegated tree (parent + child) vs direct run",
		"history events per run, delegated tree (parent + child) vs direct run",
		"shared limit (one journal folder, one limiter): 429s vs all requests the fake received",
		"shared limit (one journal folder, one limiter): answered requests a minute over the steady middle",
		"shared limit (one journal folder, one limiter): answered tokens a minute over the steady middle",
		"shared limit (one journal folder, one limiter): runs failed vs runs started",
		"shared limit (one journal folder, one limiter): runs completed vs runs started",
		"each worker alone (a journal folder each, so each paces itself to the whole limit): 429s vs all",
		"each worker alone (a journal folder each, so each paces itself to the whole limit): answered requests",
		"each worker alone (a journal folder each, so each paces itself to the whole limit): runs completed",
		"ms per append, run of 10 records vs raw write+fsync",
		"ms per append, run of 4,000 records vs raw write+fsync",
		"ms per append, run of 4,000 records vs run of 10",
		"ms per append, sealed (a payload key set) vs plain, run of 10 records",
		"bytes read per append, run of 4,000 records",
		"fsyncs per model step",
		"fsyncs per read step",
		"fsyncs per write step",
		// The long run, in -quick mode 30 turns: "turn 100" and "turn
		// 1,000" are its last tool turn.
		"history bytes of turn 10 vs 10 KiB",
		"history bytes of turn 29 vs turn 10",
		"history bytes per turn over the whole run",
		"largest CallModel input vs 2 KiB",
		"content store bytes written vs tool output bytes",
		"wall ms per turn, median of turns",
		"ms per turn in CallModel started → completed",
		"ms per turn in CallTool started → completed",
		"ms per turn in workflow tasks started → completed",
		// The fork section, in -quick mode forks at turn 10 and turn 90.
		"ms from Client.Fork to the first live step, fork at turn 90 vs at turn 10 (median of rounds)",
		"executions of the origin",
		"history bytes per turn, streamed vs unstreamed",
		"extra history bytes per streamed turn vs the text's bytes per turn",
		"bytes of the publish signal events per streamed turn",
		"history events per turn, streamed vs unstreamed",
		"extra history events per streamed turn",
		"publish signals per streamed turn vs 1 (the first piece, sent at once) + the model's 3s",
		// The token latency section's Go rows (the TypeScript ones need
		// streams/testdata/ts's packages, which TestTokenLatencyQuick
		// demands).
		"first piece of an answer to the Go subscriber, p50",
		"any piece to the Go subscriber, p99",
		"any piece to the Go subscriber, p50",
		"history bytes per streamed turn, unwatched, vs unstreamed",
		"history bytes per streamed turn watched by a subscriber vs unstreamed",
		"billable actions per model step",
		"billable actions per turn, the same session unstreamed",
		"billable actions per streamed turn",
		"billable actions per parked run approved once",
		"billable actions per delegated run",
		"ms per write step (RunStep: step.started + step.completed), PostgreSQL vs FileStore",
		"ms per Append of one step.completed record, PostgreSQL vs FileStore",
		"ms from SIGKILL until lookup completes on the other worker (ActivityTaskCompleted), minus",
		"ms from SIGKILL until lookup completes on the other worker, delay included",
		"ms from SIGKILL until the write completes on the other worker, settled by its probe",
		"ms from SIGKILL until the write is settled, vs the heartbeat timeout",
		"ms approve → completed, p50 of 50 runs vs one run approved alone",
		"ms approve → completed, p99 vs p50 of 50 runs",
		"worker VmRSS with 50 runs parked vs the idle worker",
		"worker VmRSS after 50 runs completed vs the idle worker",
		"ms from the batch's start to the last of 20 runs completed",
		"ms approve signal → run completed, p50",
		"ms approve signal → run completed, p99",
		"ms the batch took to signal every run",
		"ms of the dev server's CPU per approved run",
		"cores the dev server kept busy",
		"ms from the batch's start to the last of 20 runs completed, bare workflows that also upsert",
		"ms from the batch's start to the last run completed, AgentRun vs the bare workflows that also upsert",
		"ms from the batch's start to the last of 10 runs completed",
		"s wall time, first start → last completion of all 20 runs",
		"activities per second over the wall time",
		"worker CPU ms per activity",
		"ms activity scheduled → completed under load, p50",
		"ms activity scheduled → completed under load, p99",
		"ms activity scheduled → next activity scheduled under load, p50",
		"ms activity scheduled → next activity scheduled under load, p99",
	}
)

// TestQuickRunWritesTheTable runs the bench in -quick mode against its own
// dev server and checks that the table it writes has every row.
func TestQuickRunWritesTheTable(t *testing.T) {
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	// make chaos's section of an earlier file survives the bench.
	const campaign = "\n## Crash campaign\n\nan earlier campaign's table\n"
	if err := os.WriteFile(out, []byte("# an earlier bench\n"+campaign), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	var progress syncBuffer
	err := run(t.Context(), config{Quick: true, Out: out, Dir: t.TempDir()}, &stdout, &progress)
	if errors.Is(err, errDevServer) {
		testkit.Unavailable(t, "Temporal dev server", fmt.Errorf("%w\n%s", err, progress.String()))
	}
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, progress.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text, kept := strings.CutSuffix(string(b), campaign)
	if !kept {
		t.Error("the bench dropped the crash campaign section of the earlier file")
	}
	if text != stdout.String() {
		t.Error("the file differs from what the bench printed (plus the kept campaign section)")
	}

	rows := map[string][]string{} // figure -> the other cells
	tables := 0
	for _, line := range strings.Split(text, "\n") {
		if line == "| figure | measured | baseline | ratio | goal |" {
			tables++
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 5 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[cells[0]] = cells[1:]
	}
	if tables != 1 {
		t.Errorf("%d tables, want one", tables)
	}
	find := func(prefix string) []string {
		for fig, cells := range rows {
			if strings.HasPrefix(fig, prefix) {
				return cells
			}
		}
		t.Errorf("no row %q in the table:\n%s", prefix, text)
		return nil
	}
	for _, fig := range measured {
		cells := find(fig)
		if cells == nil {
			continue
		}
		if strings.HasPrefix(cells[0], "not measured") || cells[0] == "—" || cells[1] == "—" {
			t.Errorf("row %q has no measurement: %v", fig, cells)
		}
	}
	for _, want := range []string{"Machine: ", "cores", "fsync floor", "go1.", "Linux ", "Server 1.29.1", "history.transferProcessorMaxPollRPS=1000"} {
		if !strings.Contains(text, want) {
			t.Errorf("the header does not mention %q", want)
		}
	}
	if !strings.Contains(text, "Goals: all") && !strings.Contains(text, "MISSED GOALS") {
		t.Error("no line saying which goals were missed")
	}
	if !strings.Contains(text, "RecordActivityTaskHeartbeat") && !strings.Contains(text, "RespondActivityTaskCompleted") {
		t.Error("the findings do not list the workers' RPCs")
	}
}

// TestKillSettledAlone runs the kill → settled section alone, as -quick
// sizes it: its own checks (settled by probe, not found; one ticket) pass,
// the goal row is against the tool's timeout + the grace + 2 s, and the
// figure is real: no faster than the heartbeat timeout lets the server
// notice the kill.
func TestKillSettledAlone(t *testing.T) {
	env := sectionEnv(t)
	bin, err := buildWorker(t.Context(), env.subdir("bin"))
	if err != nil {
		t.Fatal(err)
	}
	p := paramsFor(true).settle
	rows, err := killSettled(t.Context(), env, bin, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Goal != 1 || rows[0].Baseline != ms(p.ToolTimeout+fence.Grace+2*time.Second) {
		t.Fatalf("rows %+v; want first the goal row against the tool's timeout + the grace + 2 s", rows)
	}
	// The server notices the kill when the last heartbeat it got is a
	// heartbeat timeout old, and that heartbeat is at most 0.8 × the
	// timeout old at the kill (the SDK's throttle).
	if least := ms(workflows.HeartbeatTimeout / 5); rows[0].Measured < least {
		t.Errorf("kill → settled %.0f ms, less than the %.0f ms the heartbeat timeout leaves at least", rows[0].Measured, least)
	}
	t.Logf("kill → settled %.0f ms vs goal %.0f ms (ratio %.2f)", rows[0].Measured, rows[0].Baseline, rows[0].Ratio())
}

// TestEncryptionAlone runs the encryption section alone, as -quick sizes
// it: both sides complete every run, the encrypted history is no more
// readable than it should be (the section checks the codec server finds
// the same tool outputs on both sides), and the rows are the three
// figures with the step time's goal.
func TestEncryptionAlone(t *testing.T) {
	rows, err := encryption(t.Context(), sectionEnv(t), paramsFor(true).encrypt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Goal != 1.05 {
		t.Fatalf("rows %+v; want 4, the first with the 1.05 goal", rows)
	}
	for _, r := range rows {
		if r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v; want both measured", r.Figure, r.Measured, r.Baseline)
		}
	}
	// The codec's own time is a part of an encrypted step, measured on
	// the same runs: more than the whole plain step would mean it was
	// counted wrong (or the codec lost its pools).
	if c := rows[1]; c.Measured >= c.Baseline {
		t.Errorf("codec time %.3f ms per activity, not under the plain step's %.3f ms", c.Measured, c.Baseline)
	}
	// The same runs with every payload sealed: their histories are about
	// as long (a key id, a nonce and a tag per payload; zlib takes some
	// back), never several times as long nor shorter by half.
	if h := rows[2]; h.Ratio() < 0.5 || h.Ratio() > 2 {
		t.Errorf("history bytes per turn encrypted vs plain %.2f; want within 0.5-2", h.Ratio())
	}
	t.Logf("%+v", rows)
}

// TestLocalJournalAlone runs the local journal section alone, as -quick
// sizes it (it needs no server): every append figure is measured, and the
// sealed appends are a row of their own against plain ones of the same
// run size.
func TestLocalJournalAlone(t *testing.T) {
	rows, err := localJournal(t.Context(), &benchEnv{dir: t.TempDir()}, paramsFor(true).journal)
	if err != nil {
		t.Fatal(err)
	}
	var sealed *row
	for i, r := range rows {
		if r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v; want both measured", r.Figure, r.Measured, r.Baseline)
		}
		if strings.HasPrefix(r.Figure, "ms per append, sealed") {
			sealed = &rows[i]
		}
	}
	if sealed == nil || sealed.Goal != 1.3 {
		t.Fatalf("no sealed-vs-plain row with the 1.3 goal in %+v", rows)
	}
	t.Logf("%s: %.3f ms vs %.3f ms (%.2fx)", sealed.Figure, sealed.Measured, sealed.Baseline, sealed.Ratio())
}

// TestTracingAlone runs the tracing section alone, quick, against a
// Jaeger of its own (it fails under CI=true without one: make jaeger).
func TestTracingAlone(t *testing.T) {
	jaegertest.Start(t).Stop() // the Jaeger program is there and starts; the section starts its own
	rows, err := tracingOverhead(t.Context(), sectionEnv(t), paramsFor(true).trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Goal != 1.05 || rows[0].Missing != "" {
		t.Fatalf("rows %+v; want 2 measured, the first with the 1.05 goal", rows)
	}
	if rows[0].Measured <= 0 || rows[0].Baseline <= 0 {
		t.Errorf("%s: measured %v, baseline %v; want both measured", rows[0].Figure, rows[0].Measured, rows[0].Baseline)
	}
	// The section itself fails unless each traced run has one step span
	// per activity; the ratio says so once more.
	if rows[1].Measured != 1 {
		t.Errorf("step spans per traced step %v, want 1", rows[1].Measured)
	}
	t.Logf("%+v", rows)
}

// sectionEnv starts a dev server of the test's own, as the bench does,
// for a test that runs one section alone. It fails under CI=true when the
// server cannot start and is skipped otherwise.
func sectionEnv(t *testing.T) *benchEnv {
	t.Helper()
	var progress syncBuffer
	cli, err := devserver.CLI()
	var dev *testsuite.DevServer
	if err == nil {
		dev, err = devserver.Start(t.Context(), cli, &progress)
	}
	if err != nil {
		testkit.Unavailable(t, "Temporal dev server", fmt.Errorf("%w\n%s", err, progress.String()))
	}
	t.Cleanup(func() { _ = dev.Stop() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &benchEnv{hostPort: dev.FrontendHostPort(), dir: t.TempDir(), logger: logger, sdkLog: tlog.NewStructuredLogger(logger), cli: cli, progress: &progress}
}

// TestOnlyNamesSections: -only takes the sections' names, and an unknown
// one is an error naming the valid ones.
func TestOnlyNamesSections(t *testing.T) {
	got, err := parseOnly("saturation, tokens")
	if err != nil || strings.Join(got, ",") != "saturation,tokens" {
		t.Fatalf("parseOnly: %v, %v; want [saturation tokens]", got, err)
	}
	if c := (config{Only: got}); !c.runs("tokens") || c.runs("steps") {
		t.Error("a config with -only saturation,tokens runs the wrong sections")
	}
	if !(config{}).runs("steps") {
		t.Error("a config without -only does not run every section")
	}
	if got, err := parseOnly("library"); err != nil || !(config{Only: got}).runs("library") {
		t.Fatalf("parseOnly(library): %v, %v; want the library section", got, err)
	}
	if got, err := parseOnly("delegated"); err != nil || !(config{Only: got}).runs("delegated") {
		t.Fatalf("parseOnly(delegated): %v, %v; want the delegated section", got, err)
	}
	if got, err := parseOnly("provider"); err != nil || !(config{Only: got}).runs("provider") {
		t.Fatalf("parseOnly(provider): %v, %v; want the provider section", got, err)
	}
	if got, err := parseOnly("fleetlimit"); err != nil || !(config{Only: got}).runs("fleetlimit") {
		t.Fatalf("parseOnly(fleetlimit): %v, %v; want the fleet limit section", got, err)
	}
	_, err = parseOnly("saturation,nope")
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "valid: steps, cluster,") || !strings.Contains(err.Error(), "tracing, library, delegated, provider, fleetlimit, journal") {
		t.Fatalf("parseOnly(nope): %v; want an error naming nope and the valid sections", err)
	}
	if c, _ := (config{Only: got, CLI: "x"}).withDefaults(); c.Out != "-" {
		t.Errorf("with -only, Out defaults to %q; want - (BENCHMARKS.md untouched)", c.Out)
	}
}

// TestKeptSections: the bench keeps the analysis and the crash campaign
// that follow its table, from the first of them on, and nothing else.
func TestKeptSections(t *testing.T) {
	const analysis = "\n## Where the time goes\n\nof the run of today\n"
	const campaign = "\n## Crash campaign\n\nthe campaign\n"
	for _, tc := range []struct{ old, want string }{
		{"# bench\n| a |\n" + analysis + campaign, analysis + campaign},
		{"# bench\n| a |\n" + campaign, campaign},
		{"# bench\n| a |\n" + analysis, analysis},
		{"# bench\n| a |\n", ""},
	} {
		if got := string(othersSections([]byte(tc.old))); got != tc.want {
			t.Errorf("othersSections(%q) = %q; want %q", tc.old, got, tc.want)
		}
	}
}
