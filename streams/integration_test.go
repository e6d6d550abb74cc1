package streams_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/streams"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Stop()
	os.Exit(code)
}

// live is a worker for streamWorkflow on the shared dev server, on a task
// queue of its own.
type live struct {
	c  client.Client
	tq string
}

func newLive(t *testing.T) *live {
	t.Helper()
	srv := testenv.DevServer(t)
	tq := "streams-" + t.Name()
	w := worker.New(srv.Client, tq, worker.Options{})
	w.RegisterWorkflow(streamWorkflow)
	w.RegisterWorkflow(noStreamWorkflow)
	w.RegisterActivity(&publishActivities{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &live{c: srv.Client, tq: tq}
}

// start starts streamWorkflow under id.
func (l *live) start(t *testing.T, id string) client.WorkflowRun {
	t.Helper()
	run, err := l.c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: l.tq}, streamWorkflow, hostInput{})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (l *live) signal(t *testing.T, id, name string, arg any) {
	t.Helper()
	if err := l.c.SignalWorkflow(t.Context(), id, "", name, arg); err != nil {
		t.Fatalf("signal %s: %v", name, err)
	}
}

// finish ends the workflow and returns its last run's view.
func (l *live) finish(t *testing.T, id string) hostView {
	t.Helper()
	l.signal(t, id, sigFinish, nil)
	var v hostView
	if err := l.c.GetWorkflow(t.Context(), id, "").Get(t.Context(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// continueAsNew makes the workflow continue as new and waits until its new
// run is the latest, so that later signals reach the new run.
func (l *live) continueAsNew(t *testing.T, id string) {
	t.Helper()
	d, err := l.c.DescribeWorkflow(t.Context(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	old := d.WorkflowExecution.RunID
	l.signal(t, id, sigCAN, nil)
	testenv.WaitFor(t, 30*time.Second, "the new run", func() bool {
		d, err := l.c.DescribeWorkflow(t.Context(), id, "")
		return err == nil && d.WorkflowExecution.RunID != old
	})
}

func (l *live) subscriber(t *testing.T, id string, from int64, topics ...string) *streams.Subscriber {
	t.Helper()
	s, err := streams.NewSubscriber(streams.SubscriberConfig{Client: l.c, WorkflowID: id, FromOffset: from, Topics: topics, PollCooldown: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// next reads n items within a deadline, as "offset topic=value".
func next(t *testing.T, s *streams.Subscriber, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []string
	for range n {
		it, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		out = append(out, show(t, it))
	}
	return out
}

func show(t testing.TB, it streams.Item) string {
	t.Helper()
	var v string
	if err := it.Decode(&v); err != nil {
		t.Fatalf("item %d: %v", it.Offset, err)
	}
	return fmt.Sprintf("%d %s=%s", it.Offset, it.Topic, v)
}

// reader reads a subscriber to its end in a goroutine.
type reader struct {
	mu    sync.Mutex
	items []string
	err   error
	done  chan struct{}
}

func background(s *streams.Subscriber, ctx context.Context) *reader {
	r := &reader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			it, err := s.Next(ctx)
			if err == nil {
				var v string
				if err = it.Decode(&v); err == nil {
					r.mu.Lock()
					r.items = append(r.items, fmt.Sprintf("%d %s=%s", it.Offset, it.Topic, v))
					r.mu.Unlock()
					continue
				}
			}
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
			return
		}
	}()
	return r
}

// has waits until the reader read n items (or ended).
func (r *reader) has(t *testing.T, n int) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("%d items", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.items) >= n || r.err != nil
	})
}

// wait waits for the reader's end and returns what it read and why it
// ended.
func (r *reader) wait() ([]string, error) {
	<-r.done
	return r.items, r.err
}

// TestLiveStream: on a dev server, items published from an activity (a
// Publisher per activity) and from a client-side Publisher reach Go
// subscribers in order with global offsets: from the start, resumed from an
// offset, filtered by topic, from beyond the end (waits, then receives), and
// across a continue-as-new; a topic nobody publishes to yields nothing; all
// end cleanly when the workflow completes.
func TestLiveStream(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-live"
	l.start(t, id)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	allReader := background(l.subscriber(t, id, 0), ctx)
	nobodyReader := background(l.subscriber(t, id, 0, "nobody"), ctx)

	l.signal(t, id, sigActivity, publishOrder{Batches: [][]testItem{
		{{"events", "a"}, {"tokens", "t1"}, {"events", "b"}},
		{{"tokens", "t2"}, {"events", "c"}},
	}})
	first := []string{"0 events=a", "1 tokens=t1", "2 events=b", "3 tokens=t2", "4 events=c"}
	want(t, "from 0", next(t, l.subscriber(t, id, 0), 5), first)
	want(t, "resumed from 2", next(t, l.subscriber(t, id, 2), 3), first[2:])
	want(t, "tokens", next(t, l.subscriber(t, id, 0, "tokens"), 2), []string{"1 tokens=t1", "3 tokens=t2"})

	// Beyond the end: waits until the item at offset 6 exists.
	beyond := l.subscriber(t, id, 6)
	got := make(chan string, 1)
	go func() {
		it, err := beyond.Next(ctx)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- show(t, it)
	}()
	select {
	case s := <-got:
		t.Fatalf("a subscriber beyond the end returned %q before the item existed", s)
	case <-time.After(700 * time.Millisecond):
	}
	pub, err := streams.NewPublisher(streams.PublisherConfig{Client: l.c, WorkflowID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"d", "e"} {
		if err := pub.Publish("events", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "6 events=e" {
		t.Fatalf("beyond the end: %q, want 6 events=e", s)
	}

	// Continue as new, then publish to the new run.
	l.continueAsNew(t, id)
	l.signal(t, id, sigActivity, publishOrder{Batches: [][]testItem{{{"tokens", "t3"}}, {{"events", "f"}}}})
	after := l.subscriber(t, id, 7)
	want(t, "after continue-as-new", next(t, after, 2), []string{"7 tokens=t3", "8 events=f"})

	// The log ends with its workflow: a subscriber must be caught up
	// before the workflow completes.
	allReader.has(t, 9)
	v := l.finish(t, id)
	if v.Runs != 1 || v.Offset != 9 || v.Rejects != 0 || v.Duplicates != 0 {
		t.Errorf("last run %+v, want run 1, offset 9, no rejects or duplicates", v)
	}
	all, err := allReader.wait()
	want(t, "subscriber across the whole run", all, append(first, "5 events=d", "6 events=e", "7 tokens=t3", "8 events=f"))
	if !errors.Is(err, streams.ErrEnded) {
		t.Errorf("the subscriber ended with %v, want ErrEnded", err)
	}
	nobody, err := nobodyReader.wait()
	if len(nobody) != 0 || !errors.Is(err, streams.ErrEnded) {
		t.Errorf("subscriber to an unknown topic: %q, %v; want nothing, ErrEnded", nobody, err)
	}
}

// TestLiveResendDeduplicated: a publisher whose signal is resent under the
// same sequence (as after a lost answer) adds its batch once, on a real
// server and across a continue-as-new.
func TestLiveResendDeduplicated(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-dedup"
	l.start(t, id)
	b := batch("p1", 1, testItem{"events", "a"})
	l.signal(t, id, streams.PublishSignal, b)
	l.signal(t, id, streams.PublishSignal, b)
	l.continueAsNew(t, id)
	l.signal(t, id, streams.PublishSignal, b)
	l.signal(t, id, streams.PublishSignal, batch("p1", 2, testItem{"events", "b"}))
	want(t, "log", next(t, l.subscriber(t, id, 0), 2), []string{"0 events=a", "1 events=b"})
	v := l.finish(t, id)
	if v.Offset != 2 || v.Duplicates != 1 {
		t.Errorf("last run %+v, want offset 2 and 1 duplicate (1 more in the first run)", v)
	}
}

// TestLiveMalformedSignal: a malformed publish signal sent through the
// server is rejected and recorded, a malformed poll is refused to its
// caller; the run goes on serving.
func TestLiveMalformedSignal(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-malformed"
	l.start(t, id)
	l.signal(t, id, streams.PublishSignal, map[string]any{"items": "nope", "publisher_id": "p", "sequence": 1})
	l.signal(t, id, streams.PublishSignal, "just a string")
	l.signal(t, id, streams.PublishSignal, batch("p", 1, testItem{"events", "ok"}))
	// A poll whose argument does not decode is refused to its caller.
	h, err := l.c.UpdateWorkflow(t.Context(), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: streams.PollUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{map[string]any{"topics": 5, "from_offset": "zero"}},
	})
	if err == nil {
		err = h.Get(t.Context(), nil)
	}
	if err == nil || !strings.Contains(err.Error(), "cannot unmarshal") {
		t.Errorf("a malformed poll: %v, want a decoding error", err)
	}
	var got []string
	for it, err := range l.subscriber(t, id, 0).All(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, show(t, it))
		break
	}
	want(t, "log", got, []string{"0 events=ok"})
	v := l.finish(t, id)
	if v.Rejects != 2 || len(v.Rejected) != 2 || !strings.Contains(v.Rejected[1].Reason, "not a JSON object") {
		t.Errorf("rejects %+v, want 2, the second not a JSON object", v.Rejected)
	}
}

// TestLiveTruncatedSubscriberRestarts: a subscriber whose offset was
// truncated away starts again from the oldest item kept and counts it.
func TestLiveTruncatedSubscriberRestarts(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-truncated"
	l.start(t, id)
	for i := range 5 {
		l.signal(t, id, sigPublish, testItem{"events", fmt.Sprint(i)})
	}
	l.signal(t, id, sigTruncate, int64(3))
	testenv.WaitFor(t, 30*time.Second, "the truncation", func() bool {
		v, err := l.c.QueryWorkflow(t.Context(), id, "", queryHost)
		var hv hostView
		return err == nil && v.Get(&hv) == nil && hv.Base == 3
	})
	s := l.subscriber(t, id, 1)
	want(t, "after the restart", next(t, s, 2), []string{"3 events=3", "4 events=4"})
	if s.Restarts() != 1 {
		t.Errorf("restarts %d, want 1", s.Restarts())
	}
	l.finish(t, id)
}

// TestLiveAfterCompletion: once the workflow completed, a new subscriber
// ends at once (ErrEnded) and a publisher stops with ErrWorkflowNotFound.
func TestLiveAfterCompletion(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-completed"
	l.start(t, id)
	l.signal(t, id, sigPublish, testItem{"events", "a"})
	l.finish(t, id)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := l.subscriber(t, id, 5).Next(ctx); !errors.Is(err, streams.ErrEnded) {
		t.Errorf("subscriber after completion: %v, want ErrEnded", err)
	}
	pub, err := streams.NewPublisher(streams.PublisherConfig{Client: l.c, WorkflowID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("events", "late"); err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); !errors.Is(err, streams.ErrWorkflowNotFound) {
		t.Errorf("publisher after completion: %v, want ErrWorkflowNotFound", err)
	}
}

// noStreamWorkflow hosts no stream; it waits for sigFinish.
func noStreamWorkflow(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, sigFinish).Receive(ctx, nil)
	return nil
}

// TestLiveNoStream: a subscriber to a running workflow that hosts no
// stream returns the refusal after its RefusalPatience.
func TestLiveNoStream(t *testing.T) {
	t.Parallel()
	l := newLive(t)
	id := "streams-none"
	if _, err := l.c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: l.tq}, noStreamWorkflow); err != nil {
		t.Fatal(err)
	}
	s, err := streams.NewSubscriber(streams.SubscriberConfig{Client: l.c, WorkflowID: id, RefusalPatience: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = s.Next(ctx)
	if err == nil || !strings.Contains(err.Error(), streams.PollUpdate) || ctx.Err() != nil {
		t.Errorf("subscriber to a workflow without a stream: %v, want the refusal naming %s", err, streams.PollUpdate)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before its patience", d)
	}
	l.signal(t, id, sigFinish, nil)
}

// sameTaskWorkflow hosts a stream until the signal "go", then returns how
// many items its State carries.
func sameTaskWorkflow(ctx workflow.Context) (int, error) {
	h, err := streams.NewHost(ctx, nil, streams.HostConfig{})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
	if err := h.Drain(ctx); err != nil {
		return 0, err
	}
	return len(h.State().Log), nil
}

// TestLiveStateTakesSignalsOfTheSameTask: a publish signal delivered in
// the same workflow task as the owner's decision to end the run is in the
// State (it must not wait, taken but unprocessed, in the host's receiver).
// The worker is stopped while both signals arrive, so that the next task
// carries both.
func TestLiveStateTakesSignalsOfTheSameTask(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	tq := "streams-" + t.Name()
	startWorker := func() worker.Worker {
		w := worker.New(srv.Client, tq, worker.Options{})
		w.RegisterWorkflow(sameTaskWorkflow)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := startWorker()
	id := "streams-same-task"
	run, err := srv.Client.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: tq}, sameTaskWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	// The first task has run once the offset query answers.
	testenv.WaitFor(t, 30*time.Second, "the first workflow task", func() bool {
		_, err := srv.Client.QueryWorkflow(t.Context(), id, "", streams.OffsetQuery)
		return err == nil
	})
	w.Stop()
	if err := srv.Client.SignalWorkflow(t.Context(), id, "", streams.PublishSignal, batch("p", 1, testItem{"events", "a"})); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.SignalWorkflow(t.Context(), id, "", "go", nil); err != nil {
		t.Fatal(err)
	}
	defer startWorker().Stop()
	var n int
	if err := run.Get(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the State carries %d items, want 1", n)
	}
}
