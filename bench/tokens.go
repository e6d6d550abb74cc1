package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/workflows"
)

// tokenParams sizes the token latency section.
type tokenParams struct {
	// Runs is how many streamed answers are measured, one at a time (and
	// as many unstreamed, for the history baseline).
	Runs int
	// Delay is how long the scripted model takes to write each answer,
	// spread over its llm.StreamWords-word pieces.
	Delay time.Duration
}

// Goals of the token latency section.
const (
	firstPieceGoal = 150 * time.Millisecond
	anyPieceGoal   = 1200 * time.Millisecond
)

// tokenLatency runs 2×Runs streamed one-answer runs, one at a time, each
// watched by a Go subscriber (progress.Subscribe) or a TypeScript one
// (node streams/testdata/ts/stream.js, @temporalio/workflow-streams),
// and times every piece of the answer from the moment the scripted model
// emits it (recorded in this process, where the worker runs: the payloads
// are the production ones) to the moment the subscriber reads the text
// that completes it. The model waits until the subscriber read the run's
// first event, so that a subscriber's start-up is not counted. Then Runs
// unstreamed runs of the same answer give the history baseline, and Runs
// streamed runs nobody watches the history of streaming itself, all at
// once (readStreamHistory, as the streamed turns section reads them); the
// watched runs' history adds the subscribers' poll updates.
func tokenLatency(ctx context.Context, env *benchEnv, p tokenParams) ([]row, error) {
	began := time.Now()
	answer := answerFor(1)
	script := llm.Script{Turns: []llm.Turn{{Text: answer, Delay: p.Delay.String()}}}
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	queue := "bench-tokens-" + runStamp()
	timed := &timedModel{runs: map[string]*timedRun{}}
	stop, err := startAgentWorker(c, queue, script, env.subdir("tokens"), nil, env.logger,
		agentOptions{model: func(m llm.Provider) llm.Provider { timed.Provider = m; return timed }})
	if err != nil {
		return nil, err
	}
	defer stop()

	node, tsDir, tsMissing := tsClient()
	var goFirst, goAll, tsFirst, tsAll []time.Duration
	var streamed streamHistory // the watched runs'
	watchedRuns := 0
	for i := range p.Runs {
		for _, side := range []struct {
			name       string
			ts         bool
			first, all *[]time.Duration
		}{{"Go", false, &goFirst, &goAll}, {"TypeScript", true, &tsFirst, &tsAll}} {
			if side.ts && tsMissing != "" {
				continue
			}
			id := fmt.Sprintf("%s-streamed-%s-%d", queue, side.name, i)
			r, err := watchRun(ctx, c, env.hostPort, queue, id, timed, node, tsDir, side.ts)
			if err != nil {
				return nil, err
			}
			lat, err := pieceLatencies(r.pieces, r.reads, answer)
			if err != nil {
				return nil, fmt.Errorf("run %s, the %s subscriber: %w", id, side.name, err)
			}
			*side.first = append(*side.first, lat[0])
			*side.all = append(*side.all, lat...)
			h, err := readStreamHistory(ctx, c, id, 1)
			if err != nil {
				return nil, err
			}
			streamed = addHistory(streamed, h)
			watchedRuns++
		}
	}
	// The baseline and the unwatched streamed runs, all at once: history
	// does not depend on the load.
	var unwatched, plain streamHistory
	sides := []struct {
		stream bool
		h      *streamHistory
	}{{true, &unwatched}, {false, &plain}}
	ids := make([]string, 2*p.Runs)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-unwatched-%t-%d", queue, sides[i%2].stream, i/2)
		wg.Go(func() { errs[i] = runOnce(ctx, c, queue, ids[i], sides[i%2].stream) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, id := range ids {
		h, err := readStreamHistory(ctx, c, id, 1)
		if err != nil {
			return nil, err
		}
		if s := sides[i%2]; !s.stream && h.signals != 0 {
			return nil, fmt.Errorf("the unstreamed run %s got %d publish signals, want none", id, h.signals)
		}
		*sides[i%2].h = addHistory(*sides[i%2].h, h)
	}

	for _, s := range [][]time.Duration{goFirst, goAll, tsFirst, tsAll} {
		slices.Sort(s)
	}
	pieces := len(goAll) / max(p.Runs, 1)
	sec := fmt.Sprintf("Token latency: 2×%d streamed answers of %d bytes, one at a time, each written by the scripted model in %d pieces of %d words over %s "+
		"and read by a Go subscriber (progress.Subscribe) or a TypeScript one (node stream.js, @temporalio/workflow-streams); "+
		"a piece's latency runs from the model's emitting it to the subscriber's reading the text that completes it (the section took %s)",
		p.Runs, len(answer), pieces, llm.StreamWords, p.Delay, time.Since(began).Round(time.Second))
	runs, watchedN := float64(p.Runs), float64(max(watchedRuns, 1))
	rows := []row{
		latencyRow(sec, "first piece of an answer to the Go subscriber, p50, vs the goal", goFirst, 50, firstPieceGoal, ""),
		latencyRow(sec, "first piece of an answer to the TypeScript subscriber, p50, vs the goal", tsFirst, 50, firstPieceGoal, tsMissing),
		latencyRow(sec, "any piece to the Go subscriber, p99, vs the goal", goAll, 99, anyPieceGoal, ""),
		latencyRow(sec, "any piece to the TypeScript subscriber, p99, vs the goal", tsAll, 99, anyPieceGoal, tsMissing),
		latencyRow(sec, fmt.Sprintf("any piece to the Go subscriber, p50 (first piece p99 %.0f ms), vs the goal", ms(percentile(goFirst, 99))), goAll, 50, anyPieceGoal, ""),
		latencyRow(sec, fmt.Sprintf("any piece to the TypeScript subscriber, p50 (first piece p99 %.0f ms), vs the goal", ms(percentile(tsFirst, 99))), tsAll, 50, anyPieceGoal, tsMissing),
		{Section: sec, Figure: fmt.Sprintf("history bytes per streamed turn, unwatched, vs unstreamed (per turn %.1f publish signals of %.0f B in all for the text's %d B; the model step's completion %.0f B against %.0f B, its answer by reference; %.0f B of other events: the workflow tasks the signals wake)",
			float64(unwatched.signals)/runs, float64(unwatched.signalBytes)/runs, len(answer), float64(unwatched.replyBytes)/runs, float64(plain.replyBytes)/runs,
			float64(unwatched.bytes-plain.bytes-unwatched.signalBytes-(unwatched.replyBytes-plain.replyBytes))/runs),
			Measured: float64(unwatched.bytes) / runs, Baseline: float64(plain.bytes) / runs, Unit: "B", Goal: 1.5},
		{Section: sec, Figure: fmt.Sprintf("history bytes per streamed turn watched by a subscriber vs unstreamed (%.1f publish signals, %.1f poll updates of %.0f B in all per turn)",
			float64(streamed.signals)/watchedN, float64(streamed.polls)/watchedN, float64(streamed.pollBytes)/watchedN),
			Measured: float64(streamed.bytes) / watchedN, Baseline: float64(plain.bytes) / runs, Unit: "B"},
	}
	rows[4].Goal, rows[5].Goal = 0, 0 // the p50 of every piece explains the p99, no goal of its own
	return rows, nil
}

// latencyRow is the p-th percentile of sorted against goal, with the goal
// ratio 1; missing, when set, says why the figure is not measured.
func latencyRow(sec, figure string, sorted []time.Duration, p int, goal time.Duration, missing string) row {
	r := row{Section: sec, Figure: figure, Baseline: ms(goal), Unit: "ms", Goal: 1, Missing: missing}
	if missing == "" {
		r.Measured = ms(percentile(sorted, p))
	}
	return r
}

func addHistory(a, b streamHistory) streamHistory {
	a.bytes += b.bytes
	a.events += b.events
	a.signals += b.signals
	a.signalBytes += b.signalBytes
	a.items += b.items
	a.polls += b.polls
	a.pollBytes += b.pollBytes
	a.replyBytes += b.replyBytes
	a.itemText += b.itemText
	return a
}

// tsClient returns node and the TypeScript client's folder, or why the
// TypeScript subscriber cannot run (its packages are installed by
// streams/testdata/ts/install.sh, as the tests do).
func tsClient() (node, dir, missing string) {
	dir = filepath.Join(testkit.Root(), "streams", "testdata", "ts")
	node, err := exec.LookPath("node")
	if err != nil {
		return "", dir, "no node on PATH"
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@temporalio", "workflow-streams")); err != nil {
		return "", dir, "streams/testdata/ts has no node_modules (run its install.sh)"
	}
	return node, dir, ""
}

// watched is what one streamed run's model emitted and its subscriber
// read.
type watched struct {
	pieces []tokenRead // when each piece was emitted, and the text's length then
	reads  []tokenRead
}

// tokenRead is a time and the length of the answer's text up to then, in
// the model step's attempt.
type tokenRead struct {
	at      time.Time
	end     int
	attempt int
}

// watchRun starts a streamed run and its one subscriber (the TypeScript
// one when ts, else progress.Subscribe), lets its model write once the
// subscriber read the run's first event, and returns once the run and its
// subscriber ended. One subscriber a run: a completing run lingers for one
// subscriber to catch up (streams.Host.Linger), not for every one.
func watchRun(ctx context.Context, c client.Client, addr, queue, id string, timed *timedModel, node, tsDir string, ts bool) (watched, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	run := timed.expect(id)
	in := workflows.Input{Messages: agent.UserMessages("How do I get read access to the orders database?"), Stream: new(true)}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in); err != nil {
		return watched{}, err
	}
	var w watched
	ready := make(chan struct{})
	var once sync.Once
	first := func() { once.Do(func() { close(ready) }) }
	errs := make(chan error, 1)
	go func() {
		defer first()
		if ts {
			errs <- subscribeTS(ctx, node, tsDir, addr, id, &w.reads, first)
			return
		}
		ends := map[int]int{} // attempt -> the text's length read
		for u, err := range progress.Subscribe(ctx, c, id, progress.Options{}) {
			if err != nil {
				errs <- err
				return
			}
			first()
			if u.Token != nil {
				ends[u.Token.Attempt] += len(u.Token.Text)
				w.reads = append(w.reads, tokenRead{time.Now(), ends[u.Token.Attempt], u.Token.Attempt})
			}
		}
		errs <- nil
	}()
	select {
	case <-ready:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	close(run.gate)
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		return w, fmt.Errorf("streamed run %s: %w", id, err)
	}
	if err := <-errs; err != nil {
		return w, fmt.Errorf("streamed run %s: subscriber: %w", id, err)
	}
	run.mu.Lock()
	w.pieces = slices.Clone(run.pieces)
	run.mu.Unlock()
	return w, nil
}

// subscribeTS runs node stream.js subscribe on run id from offset 0 until
// the run closes, appending each token's read to reads; first is called
// at its first item.
func subscribeTS(ctx context.Context, node, dir, addr, id string, reads *[]tokenRead, first func()) error {
	cmd := exec.CommandContext(ctx, node, "stream.js", "subscribe", addr, id, "0", "", "0")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node stream.js: %w", err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	ends := map[int]int{} // attempt -> the text's length read
	for sc.Scan() {
		at := time.Now()
		var it struct {
			Topic string          `json:"topic"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			_ = cmd.Wait()
			return fmt.Errorf("node stream.js printed %q: %v", agent.Clip(sc.Text(), 80), err)
		}
		first()
		if it.Topic != progress.TopicTokens {
			continue
		}
		var tok progress.Token
		if err := json.Unmarshal(it.Value, &tok); err != nil {
			_ = cmd.Wait()
			return fmt.Errorf("node stream.js: token %s: %v", agent.Clip(string(it.Value), 80), err)
		}
		ends[tok.Attempt] += len(tok.Text)
		*reads = append(*reads, tokenRead{at, ends[tok.Attempt], tok.Attempt})
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("node stream.js subscribe: %v: %s", err, agent.Clip(strings.TrimSpace(stderr.String()), 300))
	}
	return nil
}

// runOnce runs one run of the one-answer script to its end.
func runOnce(ctx context.Context, c client.Client, queue, id string, stream bool) error {
	in := workflows.Input{Messages: agent.UserMessages("How do I get read access to the orders database?"), Stream: &stream}
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
	if err == nil {
		err = r.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	return nil
}

// pieceLatencies matches each emitted piece with the first read of the
// same attempt whose text reaches the piece's end, and checks the reads add
// up to answer (a step retried under load streams again: the last
// attempt's pieces are the ones timed).
func pieceLatencies(pieces, all []tokenRead, answer string) ([]time.Duration, error) {
	var reads []tokenRead
	for _, r := range all {
		if len(pieces) > 0 && r.attempt == pieces[0].attempt {
			reads = append(reads, r)
		}
	}
	if len(pieces) == 0 || pieces[len(pieces)-1].end != len(answer) {
		return nil, fmt.Errorf("the model emitted %d pieces, not the whole answer of %d bytes", len(pieces), len(answer))
	}
	if len(reads) == 0 || reads[len(reads)-1].end != len(answer) {
		end := 0
		if len(reads) > 0 {
			end = reads[len(reads)-1].end
		}
		return nil, fmt.Errorf("read %d bytes of text in %d tokens, want the answer's %d", end, len(reads), len(answer))
	}
	lat := make([]time.Duration, len(pieces))
	j := 0
	for i, pc := range pieces {
		for reads[j].end < pc.end {
			j++
		}
		lat[i] = reads[j].at.Sub(pc.at)
	}
	return lat, nil
}

// timedModel is the scripted model with each piece's emission recorded
// for the run whose activity asks, and held, for a run expect announced,
// until its gate closes.
type timedModel struct {
	llm.Provider // a Streamer (llm.Scripted)

	mu   sync.Mutex
	runs map[string]*timedRun
}

type timedRun struct {
	gate   chan struct{}
	mu     sync.Mutex
	pieces []tokenRead
}

// expect announces run id: its model steps wait for the gate.
func (m *timedModel) expect(id string) *timedRun {
	r := &timedRun{gate: make(chan struct{})}
	m.mu.Lock()
	m.runs[id] = r
	m.mu.Unlock()
	return r
}

// Stream implements llm.Streamer: each attempt starts the run's pieces
// afresh.
func (m *timedModel) Stream(ctx context.Context, req agent.ModelRequest, text func(string)) (agent.ModelReply, error) {
	var r *timedRun
	if activity.IsActivity(ctx) {
		m.mu.Lock()
		r = m.runs[activity.GetInfo(ctx).WorkflowExecution.ID]
		m.mu.Unlock()
	}
	if r == nil {
		return m.Provider.(llm.Streamer).Stream(ctx, req, text)
	}
	select {
	case <-r.gate:
	case <-ctx.Done():
		return agent.ModelReply{}, ctx.Err()
	}
	r.mu.Lock()
	r.pieces = nil
	r.mu.Unlock()
	attempt := int(activity.GetInfo(ctx).Attempt)
	end := 0
	return m.Provider.(llm.Streamer).Stream(ctx, req, func(delta string) {
		end += len(delta)
		r.mu.Lock()
		r.pieces = append(r.pieces, tokenRead{time.Now(), end, attempt})
		r.mu.Unlock()
		text(delta)
	})
}

var _ llm.Streamer = (*timedModel)(nil)
