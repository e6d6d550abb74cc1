package streams_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/streams"
)

// signalClient is a client.Client whose SignalWorkflow records each publish
// signal and answers with fail (nil: accepted).
type signalClient struct {
	client.Client // nil: any other method panics
	fail          func(ctx context.Context, n int) error

	mu    sync.Mutex
	sent  []streams.PublishInput
	calls int
}

func (c *signalClient) SignalWorkflow(ctx context.Context, id, runID, name string, arg any) error {
	c.mu.Lock()
	c.calls++
	n := c.calls
	in := arg.(streams.PublishInput)
	c.sent = append(c.sent, in)
	c.mu.Unlock()
	if id != "wf" || runID != "" || name != streams.PublishSignal {
		return errors.New("wrong target")
	}
	if c.fail != nil {
		return c.fail(ctx, n)
	}
	return nil
}

func (c *signalClient) batches() []streams.PublishInput {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent)
}

// values decodes a batch's items as "topic=value".
func values(t *testing.T, in streams.PublishInput) []string {
	t.Helper()
	var out []string
	for _, e := range in.Items {
		p, err := streams.DecodePayload(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Topic+"="+v)
	}
	return out
}

func newPublisher(t *testing.T, c *signalClient, cfg streams.PublisherConfig) *streams.Publisher {
	t.Helper()
	cfg.Client, cfg.WorkflowID = c, "wf"
	p, err := streams.NewPublisher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func publish(t *testing.T, p *streams.Publisher, topic string, vs ...string) {
	t.Helper()
	for _, v := range vs {
		if err := p.Publish(topic, v); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPublisherBatches: a full buffer is sent at once, the rest on Close,
// in publish order, under sequences 1, 2 and the publisher's id.
func TestPublisherBatches(t *testing.T) {
	t.Parallel()
	c := &signalClient{}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: time.Hour, MaxBatchItems: 3, PublisherID: "pub"})
	publish(t, p, "events", "a", "b", "c")
	testWait(t, "the full batch", func() bool { return len(c.batches()) == 1 })
	publish(t, p, "tokens", "d", "e")
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := c.batches()
	if len(b) != 2 {
		t.Fatalf("%d signals, want 2", len(b))
	}
	for i, want := range [][]string{{"events=a", "events=b", "events=c"}, {"tokens=d", "tokens=e"}} {
		if got := values(t, b[i]); !slices.Equal(got, want) || b[i].Sequence != int64(i+1) || b[i].PublisherID != "pub" {
			t.Errorf("signal %d: %q seq %d id %q; want %q seq %d id pub", i, got, b[i].Sequence, b[i].PublisherID, want, i+1)
		}
	}
	if err := p.Publish("events", "late"); !errors.Is(err, streams.ErrClosed) {
		t.Errorf("publish after close: %v, want ErrClosed", err)
	}
}

// TestPublisherInterval: items are sent within a few batch intervals
// without Flush.
func TestPublisherInterval(t *testing.T) {
	t.Parallel()
	c := &signalClient{}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: 20 * time.Millisecond})
	defer p.Close(context.Background())
	publish(t, p, "events", "a")
	testWait(t, "the interval's batch", func() bool { return len(c.batches()) == 1 })
}

// TestPublisherSendsFirstAtOnce: with SendFirstAtOnce and an hour's
// interval, the first item is sent at once, alone; the ones after it wait
// for the batch (here Flush, the tick being an hour away), together; and
// without SendFirstAtOnce the first item waits too.
func TestPublisherSendsFirstAtOnce(t *testing.T) {
	t.Parallel()
	c := &signalClient{}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: time.Hour, SendFirstAtOnce: true})
	defer p.Close(context.Background())
	began := time.Now()
	publish(t, p, "tokens", "first")
	testWait(t, "the first item's signal", func() bool { return len(c.batches()) == 1 })
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the first item took %s to be sent, want it at once", took)
	}
	publish(t, p, "tokens", "second", "third")
	// The second item must wait for the batch: give a wrongly eager
	// publisher time to send it.
	time.Sleep(300 * time.Millisecond)
	if n := len(c.batches()); n != 1 {
		t.Fatalf("%d signals 300 ms after the second item, want 1: it must wait for the batch", n)
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := c.batches()
	if len(b) != 2 || !slices.Equal(values(t, b[0]), []string{"tokens=first"}) || !slices.Equal(values(t, b[1]), []string{"tokens=second", "tokens=third"}) {
		t.Fatalf("signals %+v; want [first] at once, then [second third]", b)
	}

	lazy := &signalClient{}
	q := newPublisher(t, lazy, streams.PublisherConfig{BatchInterval: time.Hour})
	defer q.Close(context.Background())
	publish(t, q, "tokens", "first")
	time.Sleep(300 * time.Millisecond)
	if n := len(lazy.batches()); n != 0 {
		t.Errorf("%d signals without SendFirstAtOnce, want the first item to wait for the batch", n)
	}
}

// TestPublisherResendsUnchanged: a failed signal (its outcome unknown) is
// resent with the same items and sequence until it is accepted; the next
// batch takes the next sequence.
func TestPublisherResendsUnchanged(t *testing.T) {
	t.Parallel()
	c := &signalClient{fail: func(_ context.Context, n int) error {
		if n <= 2 {
			return serviceerror.NewUnavailable("try later")
		}
		return nil
	}}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: time.Hour})
	publish(t, p, "events", "a", "b")
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	publish(t, p, "events", "c")
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := c.batches()
	if len(b) != 4 {
		t.Fatalf("%d signals, want 4 (2 failed, 2 accepted)", len(b))
	}
	for i := range 3 {
		if got := values(t, b[i]); !slices.Equal(got, []string{"events=a", "events=b"}) || b[i].Sequence != 1 {
			t.Errorf("send %d: %q seq %d; want the first batch, seq 1", i, got, b[i].Sequence)
		}
	}
	if got := values(t, b[3]); !slices.Equal(got, []string{"events=c"}) || b[3].Sequence != 2 {
		t.Errorf("last send: %q seq %d; want events=c seq 2", got, b[3].Sequence)
	}
}

// TestPublisherCloseResendsCancelledSend: Close cancels a send in flight
// and resends the batch under the same sequence.
func TestPublisherCloseResendsCancelledSend(t *testing.T) {
	t.Parallel()
	c := &signalClient{fail: func(ctx context.Context, n int) error {
		if n == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: 10 * time.Millisecond})
	publish(t, p, "events", "a")
	testWait(t, "the send in flight", func() bool { return len(c.batches()) == 1 })
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := c.batches()
	if len(b) != 2 || b[0].Sequence != 1 || b[1].Sequence != 1 || !slices.Equal(values(t, b[1]), []string{"events=a"}) {
		t.Fatalf("signals %+v, want the batch twice under sequence 1", b)
	}
}

// TestPublisherStopsWhenWorkflowGone: NotFound (the workflow closed) stops
// the publisher at once with ErrWorkflowNotFound, without retries.
func TestPublisherStopsWhenWorkflowGone(t *testing.T) {
	t.Parallel()
	c := &signalClient{fail: func(context.Context, int) error {
		return serviceerror.NewNotFound("workflow execution already completed")
	}}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: time.Hour})
	publish(t, p, "events", "a")
	if err := p.Flush(t.Context()); !errors.Is(err, streams.ErrWorkflowNotFound) {
		t.Fatalf("flush: %v, want ErrWorkflowNotFound", err)
	}
	if err := p.Publish("events", "b"); !errors.Is(err, streams.ErrWorkflowNotFound) {
		t.Errorf("publish after: %v, want ErrWorkflowNotFound", err)
	}
	if err := p.Close(t.Context()); !errors.Is(err, streams.ErrWorkflowNotFound) {
		t.Errorf("close: %v, want ErrWorkflowNotFound", err)
	}
	if n := len(c.batches()); n != 1 {
		t.Errorf("%d sends, want 1", n)
	}
}

// TestPublisherGivesUpAfterMaxRetryDuration: a batch failing for longer
// than MaxRetryDuration is dropped with a *FlushTimeoutError naming it.
func TestPublisherGivesUpAfterMaxRetryDuration(t *testing.T) {
	t.Parallel()
	c := &signalClient{fail: func(context.Context, int) error { return serviceerror.NewUnavailable("down") }}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: 10 * time.Millisecond, MaxRetryDuration: 100 * time.Millisecond})
	publish(t, p, "events", "a", "b")
	err := p.Flush(t.Context())
	var fte *streams.FlushTimeoutError
	if !errors.As(err, &fte) || fte.Sequence != 1 || fte.Items != 2 {
		t.Fatalf("flush: %v, want a FlushTimeoutError for batch 1 of 2 items", err)
	}
	var unavailable *serviceerror.Unavailable
	if !errors.As(err, &unavailable) {
		t.Errorf("the error %v does not carry the last send's error", err)
	}
}

// TestPublisherFlushBoundedByContext: Flush returns when its context ends.
func TestPublisherFlushBoundedByContext(t *testing.T) {
	t.Parallel()
	c := &signalClient{fail: func(context.Context, int) error { return serviceerror.NewUnavailable("down") }}
	p := newPublisher(t, c, streams.PublisherConfig{BatchInterval: time.Hour})
	publish(t, p, "events", "a")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := p.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush: %v, want the deadline", err)
	}
}

func testWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
