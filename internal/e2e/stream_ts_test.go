package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// tsDir holds stream.js, the TypeScript Workflow Streams client of package
// streams' tests, and its pinned npm packages.
var tsDir = filepath.Join("..", "..", "streams", "testdata", "ts")

// tsNode returns node's path once stream.js's packages are installed
// (testenv.Node).
func tsNode(t *testing.T) string {
	t.Helper()
	return testenv.Node(t, tsDir)
}

// tsItem is one item a TypeScript subscriber printed, with when it read it.
type tsItem struct {
	Topic  string          `json:"topic"`
	Offset int64           `json:"offset"`
	Value  json.RawMessage `json:"value"`
	at     time.Time
}

// tsSubscriber is node stream.js subscribe: every item of a run's stream,
// from offset 0 until the run closes.
type tsSubscriber struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	read   chan struct{} // closed when stdout is read to its end

	mu    sync.Mutex
	lines []string
	items []tsItem
}

// subscribeTS runs stream.js with env added to the test's environment
// (the codec's keys, AGENTRUN_CODEC_KEYS).
func subscribeTS(t *testing.T, ctx context.Context, node, addr, runID string, env ...string) *tsSubscriber {
	t.Helper()
	s := &tsSubscriber{cmd: exec.CommandContext(ctx, node, "stream.js", "subscribe", addr, runID, "0", "", "0"), read: make(chan struct{})}
	s.cmd.Dir = tsDir
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.read)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var it tsItem
			err := json.Unmarshal(sc.Bytes(), &it)
			it.at = time.Now()
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			if err == nil {
				s.items = append(s.items, it)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// reads waits until the subscriber read the event e names ("type step
// status", as sequence renders it): a run that closes before a subscriber
// caught up takes what it had not read with it.
func (s *tsSubscriber) reads(t *testing.T, e string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, "the TypeScript subscriber to read "+e, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, it := range s.items {
			var ev progress.Event
			if it.Topic == progress.TopicEvents && json.Unmarshal(it.Value, &ev) == nil && sequence([]progress.Event{ev})[0] == e {
				return true
			}
		}
		return false
	})
}

// wait waits for the subscriber to end with the run, and returns what it
// read.
func (s *tsSubscriber) wait(t *testing.T) []tsItem {
	t.Helper()
	<-s.read
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("node stream.js subscribe: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(s.lines, "\n"), s.stderr.String())
	}
	if len(s.items) != len(s.lines) {
		t.Fatalf("stream.js printed lines that are not items:\n%s", strings.Join(s.lines, "\n"))
	}
	for i, it := range s.items {
		if it.Offset != int64(i) {
			t.Fatalf("item %d has offset %d: the subscriber missed or repeated items\n%s", i, it.Offset, strings.Join(s.lines, "\n"))
		}
	}
	return s.items
}

// streamed is what a run published, as a TypeScript subscriber read it.
type streamed struct {
	events []progress.Event
	tokens []tsToken
}

type tsToken struct {
	progress.Token
	Offset int64
	at     time.Time
}

func decodeStream(t *testing.T, items []tsItem) streamed {
	t.Helper()
	var s streamed
	for _, it := range items {
		switch it.Topic {
		case progress.TopicEvents:
			var e progress.Event
			if err := json.Unmarshal(it.Value, &e); err != nil {
				t.Fatalf("event %d %s: %v", it.Offset, it.Value, err)
			}
			s.events = append(s.events, e)
		case progress.TopicTokens:
			var tok progress.Token
			if err := json.Unmarshal(it.Value, &tok); err != nil {
				t.Fatalf("token %d %s: %v", it.Offset, it.Value, err)
			}
			s.tokens = append(s.tokens, tsToken{tok, it.Offset, it.at})
		default:
			t.Fatalf("item %d on topic %q", it.Offset, it.Topic)
		}
	}
	return s
}

// sequence renders events as "type step status" lines.
func sequence(events []progress.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, strings.Join(slices.DeleteFunc([]string{e.Type, e.Step, string(e.Status)}, func(s string) bool { return s == "" }), " "))
	}
	return out
}

// completed is the step.completed event of step.
func completed(t *testing.T, events []progress.Event, step string) progress.Event {
	t.Helper()
	for _, e := range events {
		if e.Type == progress.EventStepCompleted && e.Step == step {
			return e
		}
	}
	t.Fatalf("no step.completed event for %s in %q", step, sequence(events))
	return progress.Event{}
}

// text reassembles the text of step's attempt from its tokens.
func (s streamed) text(step string, attempt int) (string, []tsToken) {
	var b strings.Builder
	var toks []tsToken
	for _, tok := range s.tokens {
		if tok.Step == step && tok.Attempt == attempt {
			b.WriteString(tok.Text)
			toks = append(toks, tok)
		}
	}
	return b.String(), toks
}

// publishSignals counts the stream's publish signals in the run's history:
// the batches its publishers sent.
func publishSignals(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == streams.PublishSignal {
			n++
		}
	}
	return n
}

func runResult(t *testing.T, srv *testenv.Server, runID string) workflows.Result {
	t.Helper()
	var res workflows.Result
	if err := srv.Client.GetWorkflow(t.Context(), runID, "").Get(t.Context(), &res); err != nil {
		t.Fatalf("run result: %v", err)
	}
	return res
}

// TestTypeScriptSubscriberFollowsHandExample: a TypeScript subscriber
// (@temporalio/workflow-streams, node stream.js) follows the hand example
// run by a real worker, started with starter --stream and approved with a
// signal: it reads every item of the run's stream, in order, to the end,
// and the events are exactly the run's steps and status changes in the
// order they happened, the approval wait naming its marker, the completion
// previewing the answer; the only tokens are those of the recorded
// attempt of llm/3, before its step.completed, adding up to the answer.
func TestTypeScriptSubscriberFollowsHandExample(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	testenv.Start(t, f.env(), testenv.Program(t, "worker"))
	const run = "e2e-ts-hand"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	if code, out := testenv.Run(t, f.env(), time.Minute, testenv.Program(t, "starter"), "--id", run, "--stream", "I need read access to the production database"); code != 0 {
		t.Fatalf("starter --stream: exit %d\n%s", code, out)
	}
	sub := subscribeTS(t, ctx, node, srv.HostPort, run)
	sub.reads(t, "status AwaitingApproval")
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticketStep}))
	items := sub.wait(t)
	got := decodeStream(t, items)
	res := runResult(t, srv, run)

	seq := sequence(got.events)
	want := handEvents
	if !slices.Equal(seq, want) {
		t.Fatalf("events, as the TypeScript subscriber read them:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range got.events {
		switch {
		case e.Status == "AwaitingApproval" && (len(e.Pending) != 1 || e.Pending[0] != ticketStep):
			t.Errorf("AwaitingApproval event %+v, want pending [%s]", e, ticketStep)
		case e.Status == "Completed" && (e.Preview == "" || !strings.HasPrefix(res.Answer, e.Preview) || !strings.Contains(e.Preview, "TICKET-1")):
			t.Errorf("Completed event %+v, want a preview of the answer %q", e, res.Answer)
		}
	}
	final := completed(t, got.events, "llm/3")
	if final.Attempt != 1 {
		t.Fatalf("step.completed llm/3 names attempt %d, want 1 (streamed once)", final.Attempt)
	}
	text, toks := got.text("llm/3", final.Attempt)
	if text != res.Answer || len(toks) != len(got.tokens) {
		t.Fatalf("the tokens of llm/3 add up to %q, the answer is %q; all tokens: %+v", text, res.Answer, got.tokens)
	}
	if done, last := offsetOf(t, items, "step.completed llm/3"), toks[len(toks)-1].Offset; done < last {
		t.Fatalf("step.completed llm/3 at offset %d precedes a token of its text at %d", done, last)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
}

// TestTypeScriptSubscriberReadsTokens: a run started with starter --stream
// whose scripted model, once a ticket is approved, writes a long answer
// over 4 s: a TypeScript subscriber, following the run before the answer
// is written, reads the answer's text as it is written, in many items from
// several publish batches, over more than a second, all before the step's
// step.completed event; and the text of the attempt that event names is
// exactly the recorded answer (the workflow's result and the state
// query's).
func TestTypeScriptSubscriberReadsTokens(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	const answer = "The orders database is read through the replica in eu-west. " +
		"Your access request needs the data owner's approval, which usually takes a day; " +
		"access lasts ninety days and can be renewed from the same form."
	script := filepath.Join(f.dir, "script.json")
	turns := []any{
		map[string]any{"tool_calls": []any{map[string]any{"name": "create_ticket", "args": map[string]string{"title": "Read access", "body": "orders database"}}}},
		map[string]string{"delay": "4s", "text": answer},
	}
	if err := os.WriteFile(script, []byte(testenv.MustJSON(map[string]any{"turns": turns})), 0o600); err != nil {
		t.Fatal(err)
	}
	env := f.env("AGENTRUN_MODEL=scripted:" + script)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	const run = "e2e-ts-tokens"
	const step, ticket = "llm/2", "tool/1/0/create_ticket"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	if code, out := testenv.Run(t, env, time.Minute, testenv.Program(t, "starter"), "--id", run, "--stream", "how do I read the orders database?"); code != 0 {
		t.Fatalf("starter --stream: exit %d\n%s", code, out)
	}
	sub := subscribeTS(t, ctx, node, srv.HostPort, run)
	// The subscriber is following the run before the model writes.
	sub.reads(t, "status AwaitingApproval")
	f.temporal(t, "workflow", "signal", "-w", run, "--name", "approve", "--input", testenv.MustJSON(map[string]string{"Marker": ticket}))
	items := sub.wait(t)
	got := decodeStream(t, items)
	res := runResult(t, srv, run)
	st, err := state(t, srv, run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != answer || st.Answer != answer {
		t.Fatalf("result answer %q, state answer %q, want %q", res.Answer, st.Answer, answer)
	}

	e := completed(t, got.events, step)
	if e.Attempt != 1 {
		t.Fatalf("step.completed %s names attempt %d, want 1 (streamed once): %+v", step, e.Attempt, e)
	}
	text, toks := got.text(step, e.Attempt)
	if text != res.Answer {
		t.Fatalf("the tokens of %s attempt %d add up to\n%q\nthe recorded answer is\n%q", step, e.Attempt, text, res.Answer)
	}
	if len(toks) != len(got.tokens) {
		t.Fatalf("%d tokens, %d of them of %s attempt %d: %+v", len(got.tokens), len(toks), step, e.Attempt, got.tokens)
	}
	// Live: in many items, from several batches, read over time, all
	// before the step completed.
	if len(toks) < 2 {
		t.Fatalf("%d token items, want the answer in pieces", len(toks))
	}
	batches := publishSignals(t, srv, run)
	if batches < 2 {
		t.Fatalf("%d publish signals in the run's history, want the tokens in several batches", batches)
	}
	spread := toks[len(toks)-1].at.Sub(toks[0].at)
	if spread < time.Second {
		t.Fatalf("the subscriber read the tokens within %v, want them arriving over the model's 4 s", spread)
	}
	if done, last := offsetOf(t, items, "step.completed "+step), toks[len(toks)-1].Offset; done < last {
		t.Fatalf("step.completed %s at offset %d precedes a token of its text at %d", step, done, last)
	}
	t.Logf("%d token items from %d publish signals, read over %v", len(toks), batches, spread)
}

// offsetOf is the offset of the event e names ("type step status").
func offsetOf(t *testing.T, items []tsItem, e string) int64 {
	t.Helper()
	for _, it := range items {
		var ev progress.Event
		if it.Topic == progress.TopicEvents && json.Unmarshal(it.Value, &ev) == nil && sequence([]progress.Event{ev})[0] == e {
			return it.Offset
		}
	}
	t.Fatalf("no event %q", e)
	return -1
}

// handEvents are the hand example's stream events, as a subscriber reads
// them from the start (sequence).
var handEvents = []string{
	"status Running",
	"step.started llm/1",
	"step.completed llm/1",
	"step.started tool/1/0/lookup",
	"step.completed tool/1/0/lookup",
	"step.started llm/2",
	"step.completed llm/2",
	"status AwaitingApproval",
	"status Running",
	"step.started tool/2/0/create_ticket",
	"step.completed tool/2/0/create_ticket",
	"step.started llm/3",
	"step.completed llm/3",
	"status Completed",
}
