package streams

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Client sends the signals. Required (NewActivityPublisher fills it).
	Client client.Client
	// WorkflowID is the stream's workflow; signals go to its latest run, so
	// they follow continue-as-new. Required (NewActivityPublisher fills it).
	WorkflowID string
	// BatchInterval is how often buffered items are sent. Default 1 s.
	BatchInterval time.Duration
	// SendFirstAtOnce sends an item published after a quiet spell (no
	// batch taken for a BatchInterval, or none yet: the publisher's first
	// item) at once, rather than at the next tick; the items after it are
	// batched as before, the next batch a BatchInterval after it. So a
	// watcher gets the first words at once, then a steady flow, and a
	// burst still costs one signal per interval. Default false: every item
	// waits for the tick (or a full buffer).
	SendFirstAtOnce bool
	// MaxBatchItems sends the buffer at once when it holds this many items.
	// Default 1,000.
	MaxBatchItems int
	// MaxBatchBytes sends the buffer at once when its items' encoded size
	// reaches it. Default 256 KiB, far below the server's 2 MiB signal
	// limit. A single item is sent whatever its size.
	MaxBatchBytes int
	// MaxRetryDuration bounds how long one batch is retried before it is
	// dropped with a *FlushTimeoutError. It must stay below the host's
	// PublisherTTL (15 minutes by default) so that a late resend is still
	// recognised as a duplicate. Default 10 minutes.
	MaxRetryDuration time.Duration
	// SignalTimeout bounds one signal call. Default 10 s.
	SignalTimeout time.Duration
	// PublisherID names this publisher for the host's dedup. Default: 16
	// random hex digits. Two live publishers must never share one.
	PublisherID string
	// DataConverter turns published values into payloads. It should not
	// carry a codec: the client's own data converter applies its codec to
	// the whole signal. Default converter.GetDefaultDataConverter().
	DataConverter converter.DataConverter
}

// Defaults of PublisherConfig.
const (
	DefaultBatchInterval    = time.Second
	DefaultMaxBatchItems    = 1_000
	DefaultMaxBatchBytes    = 256 << 10
	DefaultMaxRetryDuration = 10 * time.Minute
	DefaultSignalTimeout    = 10 * time.Second
)

func (c PublisherConfig) withDefaults() PublisherConfig {
	c.BatchInterval = cmp.Or(c.BatchInterval, DefaultBatchInterval)
	c.MaxBatchItems = cmp.Or(c.MaxBatchItems, DefaultMaxBatchItems)
	c.MaxBatchBytes = cmp.Or(c.MaxBatchBytes, DefaultMaxBatchBytes)
	c.MaxRetryDuration = cmp.Or(c.MaxRetryDuration, DefaultMaxRetryDuration)
	c.SignalTimeout = cmp.Or(c.SignalTimeout, DefaultSignalTimeout)
	if c.DataConverter == nil {
		c.DataConverter = converter.GetDefaultDataConverter()
	}
	return c
}

func (c PublisherConfig) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("no Client")
	case c.WorkflowID == "":
		return errors.New("no WorkflowID")
	case c.BatchInterval < 0, c.MaxRetryDuration < 0, c.SignalTimeout < 0:
		return errors.New("negative duration")
	case c.MaxBatchItems < 0, c.MaxBatchBytes < 0:
		return errors.New("negative batch bound")
	}
	return nil
}

// Errors of a Publisher.
var (
	// ErrClosed: Publish or Flush after Close.
	ErrClosed = errors.New("streams: publisher closed")
	// ErrWorkflowNotFound: the stream's workflow is closed or does not
	// exist. The batch certainly was not delivered; the publisher stops.
	ErrWorkflowNotFound = errors.New("streams: the stream's workflow is not running")
)

// FlushTimeoutError reports a batch dropped after MaxRetryDuration of failed
// sends. Whether it reached the workflow is unknown: a send may have
// arrived and only its answer been lost.
type FlushTimeoutError struct {
	Sequence int64
	Items    int
	Err      error // the last send's error
}

func (e *FlushTimeoutError) Error() string {
	return fmt.Sprintf("streams: batch %d (%d items) not confirmed within the retry limit, delivery unknown: %v", e.Sequence, e.Items, e.Err)
}

func (e *FlushTimeoutError) Unwrap() error { return e.Err }

// Publisher publishes to a stream from outside its workflow (a starter, an
// activity): it buffers items and sends them in batches by PublishSignal,
// each batch with the publisher's id and the next sequence number. A batch
// is resent, unchanged and with the same sequence, until the server accepts
// the signal, so a resend the workflow already has is dropped there as a
// duplicate: every item published and flushed is in the log exactly once,
// in publish order. Its methods are safe for concurrent use.
type Publisher struct {
	cfg PublisherConfig

	mu      sync.Mutex
	buf     []PublishEntry
	bufSize int
	seq     int64     // last sequence confirmed
	taken   time.Time // when the buffer last became a batch (SendFirstAtOnce)
	err     error     // sticky: ErrWorkflowNotFound or a *FlushTimeoutError
	closed  bool

	sendMu       sync.Mutex // one batch on the wire at a time; guards the pending fields (pending is set under mu too, for Publish)
	pending      []PublishEntry
	pendingSeq   int64
	pendingSince time.Time

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewPublisher returns a publisher and starts its background sender; Close
// it to send what remains.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("streams publisher: %w", err)
	}
	if cfg.PublisherID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		cfg.PublisherID = hex.EncodeToString(b[:])
	}
	p := &Publisher{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p, nil
}

// NewActivityPublisher returns a publisher to the workflow that scheduled
// the activity of ctx, through the activity's client. Fields set in cfg
// other than Client and WorkflowID are kept.
func NewActivityPublisher(ctx context.Context, cfg PublisherConfig) (*Publisher, error) {
	info := activity.GetInfo(ctx)
	if info.WorkflowExecution.ID == "" {
		return nil, errors.New("streams publisher: the activity has no workflow")
	}
	cfg.Client = activity.GetClient(ctx)
	cfg.WorkflowID = info.WorkflowExecution.ID
	return NewPublisher(cfg)
}

// ID returns the publisher id sent with every batch.
func (p *Publisher) ID() string { return p.cfg.PublisherID }

// Publish converts value (a *commonpb.Payload is kept as it is) and buffers
// it for topic. It fails on a value the data converter refuses, after
// Close, and after the publisher stopped on an error (which it returns).
func (p *Publisher) Publish(topic string, value any) error {
	pl, ok := value.(*commonpb.Payload)
	if !ok {
		var err error
		if pl, err = p.cfg.DataConverter.ToPayload(value); err != nil {
			return fmt.Errorf("streams publish to %q: %w", topic, err)
		}
	}
	data, err := EncodePayload(pl)
	if err != nil {
		return fmt.Errorf("streams publish to %q: %w", topic, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if p.err != nil {
		return p.err
	}
	// An item after a quiet spell leads: nothing waits before it, nor is
	// a batch on the wire.
	lead := p.cfg.SendFirstAtOnce && len(p.buf) == 0 && p.pending == nil && time.Since(p.taken) >= p.cfg.BatchInterval
	p.buf = append(p.buf, PublishEntry{Topic: topic, Data: data})
	p.bufSize += itemSize(len(data), topic)
	if lead || len(p.buf) >= p.cfg.MaxBatchItems || p.bufSize >= p.cfg.MaxBatchBytes {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush sends everything published before the call and returns once the
// server accepted it, or with the error that stopped it (ctx's, or the
// publisher's).
func (p *Publisher) Flush(ctx context.Context) error {
	p.sendMu.Lock()
	p.mu.Lock()
	closed := p.closed
	// The items published so far go out under the pending batch's
	// sequence or, if the buffer holds some, under the one after.
	target := p.seq
	if p.pending != nil {
		target = p.pendingSeq
	}
	if len(p.buf) > 0 {
		target++
	}
	p.mu.Unlock()
	p.sendMu.Unlock()
	if closed {
		return ErrClosed
	}
	return p.drain(ctx, func() bool { return p.seq >= target })
}

// Close stops the background sender and sends what remains, bounded by ctx.
// It returns the error that stopped the publisher, if any.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	return p.drain(ctx, func() bool { return len(p.buf) == 0 && p.pending == nil })
}

// drain sends batches until done holds (checked with both locks held).
// Between failed sends it waits, doubling from 100 ms up to BatchInterval.
func (p *Publisher) drain(ctx context.Context, done func() bool) error {
	wait := 100 * time.Millisecond
	for {
		p.sendMu.Lock()
		p.mu.Lock()
		finished, err := done(), p.err
		p.mu.Unlock()
		p.sendMu.Unlock()
		if err != nil {
			return err
		}
		if finished {
			return nil
		}
		if err := p.sendOnce(ctx); err != nil {
			if p.stopped() != nil {
				return p.stopped()
			}
			if ctx.Err() != nil {
				return fmt.Errorf("streams flush: %w (last send: %v)", ctx.Err(), err)
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return fmt.Errorf("streams flush: %w (last send: %v)", ctx.Err(), err)
			}
			wait = min(2*wait, p.cfg.BatchInterval)
			continue
		}
		wait = 100 * time.Millisecond
	}
}

func (p *Publisher) stopped() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// run sends the buffer every BatchInterval, or at once when Publish finds
// it full or leading (SendFirstAtOnce), the next tick then a BatchInterval
// after; a failed batch is retried on the next tick.
func (p *Publisher) run() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.BatchInterval)
	defer t.Stop()
	// Close cancels a send in flight; drain then resends the batch under
	// the same sequence.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-p.stop
		cancel()
	}()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.kick:
			t.Reset(p.cfg.BatchInterval)
		}
		_ = p.sendOnce(ctx) // errors stay pending for the next tick, or stick in p.err
	}
}

// sendOnce sends the pending batch again, or makes the buffer the pending
// batch under the next sequence and sends it.
func (p *Publisher) sendOnce(ctx context.Context) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.pending == nil {
		p.mu.Lock()
		if len(p.buf) == 0 || p.err != nil {
			p.mu.Unlock()
			return nil
		}
		p.pending, p.buf, p.bufSize = p.buf, nil, 0
		p.pendingSeq = p.seq + 1
		p.pendingSince = time.Now()
		p.taken = p.pendingSince
		p.mu.Unlock()
	}
	in := PublishInput{Items: p.pending, PublisherID: p.cfg.PublisherID, Sequence: p.pendingSeq}
	sctx, cancel := context.WithTimeout(ctx, p.cfg.SignalTimeout)
	err := p.cfg.Client.SignalWorkflow(sctx, p.cfg.WorkflowID, "", PublishSignal, in)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		p.seq = p.pendingSeq
		p.pending = nil
		return nil
	case isNotFound(err):
		// The workflow is closed: the signal certainly was not delivered,
		// and no later one will be.
		p.err = fmt.Errorf("%w: %s: %v", ErrWorkflowNotFound, p.cfg.WorkflowID, err)
		p.pending = nil
		return p.err
	case time.Since(p.pendingSince) > p.cfg.MaxRetryDuration:
		// The sequence stays used: a later batch must not reuse a number
		// the workflow may already hold.
		p.err = &FlushTimeoutError{Sequence: p.pendingSeq, Items: len(p.pending), Err: err}
		p.seq = p.pendingSeq
		p.pending = nil
		return p.err
	}
	return fmt.Errorf("streams signal batch %d: %w", p.pendingSeq, err)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
