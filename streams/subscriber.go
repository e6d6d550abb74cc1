package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Client sends the polls. Required.
	Client client.Client
	// WorkflowID is the stream's workflow. Required. Polls go to its latest
	// run, so the subscriber follows continue-as-new.
	WorkflowID string
	// Topics filters the items; empty means every topic. A topic nobody
	// publishes to yields nothing, and no error.
	Topics []string
	// FromOffset is the offset of the first item wanted; 0 (the default)
	// means the oldest item the stream keeps. An offset beyond the end
	// waits for that item.
	FromOffset int64
	// PollCooldown is the least time between two polls, unless the last
	// answer was cut at the size cap: every answered poll is an update, and
	// a run takes at most 2,000 of them. Default 100 ms (the protocol's).
	PollCooldown time.Duration
	// RefusalPatience is how long the subscriber keeps polling a running
	// run that refuses or fails its polls with an application error of a
	// type it does not know. A draining Go or TypeScript host refuses with
	// ErrTypeStreamDraining, but the Python one with its own error until
	// the run continues as new; a run that hosts no stream refuses every
	// poll, and Next then returns the error after this long. Default 10 s.
	RefusalPatience time.Duration
	// BusyBackoff is the first wait before polling again when the host
	// refused a poll because it holds its most polls open already
	// (BusyDetail); it doubles with each refusal in a row, up to 16 times
	// it, with jitter, so that a crowd of watchers does not keep the run's
	// update slots busy with refusals. Default 1 s.
	BusyBackoff time.Duration
}

// Defaults of SubscriberConfig.
const (
	DefaultPollCooldown    = 100 * time.Millisecond
	DefaultRefusalPatience = 10 * time.Second
	DefaultBusyBackoff     = time.Second
)

// ErrEnded: the stream's workflow closed (completed, failed, cancelled,
// terminated or timed out) and every item the subscriber was answered has
// been returned.
var ErrEnded = errors.New("streams: the stream's workflow closed")

// Item is one item of a stream.
type Item struct {
	Topic  string
	Offset int64
	// Payload is the item as published, with its encoding metadata.
	Payload *commonpb.Payload
}

// Decode decodes the item's payload into v with the default data converter
// (the one every language's publisher uses for items).
func (it Item) Decode(v any) error {
	return converter.GetDefaultDataConverter().FromPayload(it.Payload, v)
}

type polled struct {
	item Item
	err  error
}

// Subscriber reads a stream from outside its workflow by long-polling
// PollUpdate. It returns items in offset order. It is not safe for
// concurrent use.
type Subscriber struct {
	cfg       SubscriberConfig
	next      int64 // from_offset of the next poll
	buf       []polled
	runID     string // the run that admitted the last poll
	lastPoll  time.Time
	moreReady bool
	ended     bool
	restarts  int
	// refusedSince is when polls started failing on a running run.
	refusedSince time.Time
	// busy counts the polls refused in a row because the host was busy.
	busy int
}

// NewSubscriber returns a subscriber; it polls when Next is called.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	cfg.PollCooldown = cmp.Or(cfg.PollCooldown, DefaultPollCooldown)
	cfg.RefusalPatience = cmp.Or(cfg.RefusalPatience, DefaultRefusalPatience)
	cfg.BusyBackoff = cmp.Or(cfg.BusyBackoff, DefaultBusyBackoff)
	switch {
	case cfg.Client == nil:
		return nil, errors.New("streams subscriber: no Client")
	case cfg.WorkflowID == "":
		return nil, errors.New("streams subscriber: no WorkflowID")
	case cfg.FromOffset < 0:
		return nil, fmt.Errorf("streams subscriber: FromOffset %d is negative", cfg.FromOffset)
	case cfg.PollCooldown < 0, cfg.RefusalPatience < 0, cfg.BusyBackoff < 0:
		return nil, errors.New("streams subscriber: negative duration")
	}
	if cfg.Topics == nil {
		cfg.Topics = []string{} // the protocol wants a list
	}
	return &Subscriber{cfg: cfg, next: cfg.FromOffset}, nil
}

// Offset returns where a new subscriber would resume to get exactly the
// items this one has not returned yet.
func (s *Subscriber) Offset() int64 {
	if len(s.buf) > 0 {
		return s.buf[0].item.Offset
	}
	return s.next
}

// Restarts returns how often the subscriber fell behind the stream's
// truncation and started again from the oldest item kept (the items in
// between are lost to it: the offsets of the items it returns jump).
func (s *Subscriber) Restarts() int { return s.restarts }

// Next returns the next item, waiting for one as long as ctx allows. It
// returns ErrEnded once the workflow closed, and ctx's error when ctx ends.
// An item whose payload does not decode is returned as an error naming its
// offset; the next call goes on after it.
func (s *Subscriber) Next(ctx context.Context) (Item, error) {
	for len(s.buf) == 0 {
		if s.ended {
			return Item{}, ErrEnded
		}
		if err := s.poll(ctx); err != nil {
			return Item{}, err
		}
	}
	p := s.buf[0]
	s.buf = s.buf[1:]
	return p.item, p.err
}

// All yields the items until the workflow closes (then it stops, with no
// error) or until the first error, which it yields last. Use Next to go on
// after an error.
func (s *Subscriber) All(ctx context.Context) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		for {
			it, err := s.Next(ctx)
			if errors.Is(err, ErrEnded) {
				return
			}
			if !yield(it, err) || err != nil {
				return
			}
		}
	}
}

// poll sends one poll and takes in its answer, or finds why there is none:
// a truncated offset (restart from 0), a draining run (poll again after the
// cooldown), a run that continued as new (poll the latest), a closed
// workflow (ended).
func (s *Subscriber) poll(ctx context.Context) error {
	if !s.moreReady && !s.lastPoll.IsZero() {
		if d := s.cfg.PollCooldown - time.Since(s.lastPoll); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	s.moreReady = false
	var res PollResult
	// Waiting only for acceptance gives the run id of the run that took the
	// poll before its answer, so that a poll failed by that run's closing
	// can tell continue-as-new from the end.
	h, err := s.cfg.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   s.cfg.WorkflowID,
		UpdateName:   PollUpdate,
		Args:         []any{PollInput{Topics: s.cfg.Topics, FromOffset: s.next}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err == nil {
		s.runID = h.RunID()
		err = h.Get(ctx, &res)
	}
	s.lastPoll = time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			switch appErr.Type() {
			case ErrTypeTruncatedOffset:
				s.next = 0
				s.restarts++
				s.moreReady = true
				return nil
			case ErrTypeStreamDraining:
				var detail string
				if appErr.HasDetails() && appErr.Details(&detail) == nil && detail == BusyDetail {
					return s.backOff(ctx)
				}
				return nil
			}
		}
		switch s.status(ctx) {
		case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			s.runID = ""
			s.moreReady = true
			return nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
			enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
			s.ended = true
			return nil
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			if errors.As(err, &appErr) {
				if s.refusedSince.IsZero() {
					s.refusedSince = time.Now()
				}
				if time.Since(s.refusedSince) < s.cfg.RefusalPatience {
					return nil // poll again after the cooldown
				}
			}
		}
		return fmt.Errorf("streams poll %s from %d: %w", s.cfg.WorkflowID, s.next, err)
	}
	s.refusedSince = time.Time{}
	s.busy = 0
	for _, w := range res.Items {
		p, err := DecodePayload(w.Data)
		if err != nil {
			err = fmt.Errorf("streams item %d (topic %q): %w", w.Offset, w.Topic, err)
		}
		s.buf = append(s.buf, polled{item: Item{Topic: w.Topic, Offset: w.Offset, Payload: p}, err: err})
	}
	s.next = res.NextOffset
	s.moreReady = res.MoreReady
	return nil
}

// backOff waits after a poll the host refused as busy: BusyBackoff doubled
// for each refusal in a row (at most 16 times), between half and all of it.
func (s *Subscriber) backOff(ctx context.Context) error {
	d := s.cfg.BusyBackoff << min(s.busy, 4)
	s.busy++
	d = d/2 + rand.N(d/2+1)
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// status describes the run that took the last poll (the latest run when
// none did), or returns UNSPECIFIED when it cannot.
func (s *Subscriber) status(ctx context.Context) enumspb.WorkflowExecutionStatus {
	d, err := s.cfg.Client.DescribeWorkflow(ctx, s.cfg.WorkflowID, s.runID)
	if err != nil {
		return enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
	}
	return d.Status
}
