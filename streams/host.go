package streams

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"iter"
	"maps"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

// HostConfig configures a Host. The zero value takes every default.
type HostConfig struct {
	// MaxStateItems bounds the items State carries into the next run: older
	// ones are truncated. Default 10,000.
	MaxStateItems int
	// MaxStateBytes bounds the size of the log State carries (the
	// protocol's estimate: base64 data plus topic, per item): older items
	// are truncated. Default 256 KiB, so that the stream, next to its
	// owner's own checkpoint, keeps the continue-as-new input well below the
	// server's 512 KiB payload warning (2 MiB limit).
	MaxStateBytes int
	// PublisherTTL is how long State remembers a publisher's last sequence
	// after its last accepted batch. A publisher silent for longer and then
	// resending an old batch is no longer deduplicated. Default 15 minutes
	// (the protocol's default; publishers retry a batch for at most 10).
	PublisherTTL time.Duration
	// OnReject, when set, is called from workflow code with every publish
	// signal the host refused. It must be deterministic (record, log,
	// count); it must not block.
	OnReject func(Rejected)
	// MaxOpenPolls bounds the polls the host keeps waiting at once. The
	// server admits at most 10 updates in flight per run, and a waiting
	// poll holds one of them: past this many, a poll that would wait is
	// refused in the validator (nothing is written to history) with
	// ErrTypeStreamDraining and BusyDetail, and its subscriber polls again
	// later, so that the run's operators (approve, deny, ...) always find
	// a free slot. A poll that finds items is answered whatever the count.
	// Default 6.
	MaxOpenPolls int
	// OwnReceiver, when set, leaves taking in publish signals to the
	// owner: NewHost starts no coroutine, and the owner calls Receive
	// whenever Pending reports signals, from a coroutine of its own that
	// runs as long as the workflow (one that waits for its own signals,
	// say: the sdk resumes every coroutine at each step of a workflow task,
	// so each one costs every task some time). Default false: the host's
	// own coroutine takes them in.
	OwnReceiver bool
}

// Defaults of HostConfig.
const (
	DefaultMaxStateItems = 10_000
	DefaultMaxStateBytes = 256 << 10
	DefaultPublisherTTL  = 15 * time.Minute
	DefaultMaxOpenPolls  = 6
)

func (c HostConfig) withDefaults() HostConfig {
	c.MaxStateItems = cmp.Or(c.MaxStateItems, DefaultMaxStateItems)
	c.MaxStateBytes = cmp.Or(c.MaxStateBytes, DefaultMaxStateBytes)
	c.PublisherTTL = cmp.Or(c.PublisherTTL, DefaultPublisherTTL)
	c.MaxOpenPolls = cmp.Or(c.MaxOpenPolls, DefaultMaxOpenPolls)
	return c
}

func (c HostConfig) validate() error {
	switch {
	case c.MaxStateItems < 0:
		return fmt.Errorf("MaxStateItems %d is negative", c.MaxStateItems)
	case c.MaxStateBytes < 0:
		return fmt.Errorf("MaxStateBytes %d is negative", c.MaxStateBytes)
	case c.PublisherTTL < 0:
		return fmt.Errorf("PublisherTTL %v is negative", c.PublisherTTL)
	case c.MaxOpenPolls < 0 || c.MaxOpenPolls > 9:
		return fmt.Errorf("MaxOpenPolls %d is out of range; want 1 to 9 (the server admits 10 updates in flight per run), or 0 for %d", c.MaxOpenPolls, DefaultMaxOpenPolls)
	}
	return nil
}

// entry is one item of the log: its topic and its payload's deterministic
// serialization (marshalPayload). Its wire form, the base64 of data, is
// made when a poll or a State carries it: kept as base64 the log took a
// third more, for as long as the run stays in a worker's cache.
type entry struct {
	topic string
	data  []byte
}

// wire is the entry's payload in its wire form (EncodePayload).
func (e entry) wire() string { return base64.StdEncoding.EncodeToString(e.data) }

// size is the entry's itemSize.
func (e entry) size() int { return itemSize(base64.StdEncoding.EncodedLen(len(e.data)), e.topic) }

// Host serves a stream from inside a workflow: the publish signal, the poll
// update and the offset query. Its methods are called from workflow code.
type Host struct {
	ctx      workflow.Context
	cfg      HostConfig
	signals  workflow.ReceiveChannel
	log      []entry
	base     int64
	seqs     map[string]int64
	seen     map[string]float64
	draining bool
	// receiving is set while receivePending runs: an OnReject that
	// publishes must not take in the next signals before its own item.
	receiving bool
	polling   int   // poll handlers running
	waiting   int   // poll handlers waiting for items
	served    int   // polls admitted in this run
	read      int64 // the highest next_offset answered in this run

	rejected   []Rejected
	rejects    int
	duplicates int
}

// NewHost registers the stream's handlers on the workflow of ctx and returns
// the host. state is the previous run's State (nil for a new stream). Call it
// once per run, before the workflow blocks.
func NewHost(ctx workflow.Context, state *State, cfg HostConfig) (*Host, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("streams host: %w", err)
	}
	h := &Host{ctx: ctx, cfg: cfg, seqs: map[string]int64{}, seen: map[string]float64{}}
	if state != nil {
		if err := h.restore(state); err != nil {
			return nil, fmt.Errorf("streams host: restore state: %w", err)
		}
	}
	h.signals = workflow.GetSignalChannelWithOptions(ctx, PublishSignal, workflow.SignalChannelOptions{
		Description: "Workflow Streams publish: {items: [{topic, data: base64 Payload}], publisher_id, sequence}",
	})
	// The receiver waits for the channel to hold signals and takes them
	// with ReceiveAsync, never with a blocking Receive: a Receive blocked
	// when a signal arrives takes the value out of the channel at once but
	// handles it only when its coroutine next runs, so a State taken
	// earlier in the same workflow task (the owner's coroutine runs first)
	// would miss it. It keeps receiving after the workflow is cancelled.
	if !cfg.OwnReceiver {
		rctx, _ := workflow.NewDisconnectedContext(ctx)
		workflow.Go(rctx, func(ctx workflow.Context) {
			for {
				_ = workflow.Await(ctx, h.Pending) // never cancelled
				h.Receive()
			}
		})
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, PollUpdate, h.poll, workflow.UpdateHandlerOptions{
		Validator:   h.validatePoll,
		Description: "Workflow Streams poll: {topics, from_offset} -> {items, next_offset, more_ready}",
	})
	if err != nil {
		return nil, fmt.Errorf("streams host: %w", err)
	}
	err = workflow.SetQueryHandlerWithOptions(ctx, OffsetQuery, func() (int64, error) { return h.Offset(), nil },
		workflow.QueryHandlerOptions{Description: "Workflow Streams: the offset the next item gets"})
	if err != nil {
		return nil, fmt.Errorf("streams host: %w", err)
	}
	return h, nil
}

func (h *Host) restore(s *State) error {
	if s.BaseOffset < 0 {
		return fmt.Errorf("base_offset %d is negative", s.BaseOffset)
	}
	h.base = s.BaseOffset
	h.log = make([]entry, 0, len(s.Log))
	for i, it := range s.Log {
		p, err := DecodePayload(it.Data)
		if err != nil {
			return fmt.Errorf("log item %d: %w", i, err)
		}
		data, err := marshalPayload(p)
		if err != nil {
			return fmt.Errorf("log item %d: %w", i, err)
		}
		h.log = append(h.log, entry{topic: it.Topic, data: data})
	}
	maps.Copy(h.seqs, s.PublisherSequences)
	maps.Copy(h.seen, s.PublisherLastSeen)
	return nil
}

// Pending reports whether publish signals were delivered and not yet taken
// in: the condition an owner that takes them in waits for
// (HostConfig.OwnReceiver).
func (h *Host) Pending() bool { return h.signals.Len() > 0 }

// Receive takes in the publish signals already delivered; it never blocks.
// An owner that takes them in (HostConfig.OwnReceiver) calls it as soon as
// Pending reports some, the way the host's own coroutine would: waiting for
// the channel to hold signals, never with a blocking Receive of its own.
func (h *Host) Receive() { h.receivePending() }

// Offset returns the offset the next item will get: the base offset plus the
// number of items kept.
func (h *Host) Offset() int64 { return h.base + int64(len(h.log)) }

// Items yields the items kept from offset from on (all of them when from is
// below the base offset) on topic ("" for every topic), in offset order: the
// workflow reads back what was published to it. Call Receive first for the
// items of publish signals delivered and not yet taken in. An item whose
// kept bytes do not parse (none does: the host parsed each) is skipped.
func (h *Host) Items(from int64, topic string) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for i := max(from-h.base, 0); i < int64(len(h.log)); i++ {
			e := h.log[i]
			if topic != "" && e.topic != topic {
				continue
			}
			p := &commonpb.Payload{}
			if proto.Unmarshal(e.data, p) != nil {
				continue
			}
			if !yield(Item{Topic: e.topic, Offset: h.base + i, Payload: p}) {
				return
			}
		}
	}
}

// BaseOffset returns the offset of the oldest item kept.
func (h *Host) BaseOffset() int64 { return h.base }

// Publish appends value to topic, after the items of publish signals
// already delivered (a batch an activity sent before it completed goes
// before the item the workflow publishes on its completion). A
// *commonpb.Payload is kept as it is; any
// other value goes through the default data converter (never a codec: the
// codec applies to the envelope that carries items, as in every language's
// implementation). It fails, appending nothing, on a value the converter
// refuses or one above MaxItemBytes.
func (h *Host) Publish(topic string, value any) error {
	p, ok := value.(*commonpb.Payload)
	if !ok {
		var err error
		if p, err = converter.GetDefaultDataConverter().ToPayload(value); err != nil {
			return fmt.Errorf("publish to %q: %w", topic, err)
		}
	}
	data, err := marshalPayload(p)
	if err != nil {
		return fmt.Errorf("publish to %q: %w", topic, err)
	}
	if n := base64.StdEncoding.EncodedLen(len(data)); n > MaxItemBytes {
		return fmt.Errorf("publish to %q: item of %d encoded bytes is above MaxItemBytes (%d)", topic, n, MaxItemBytes)
	}
	h.receivePending()
	h.log = append(h.log, entry{topic: topic, data: data})
	return nil
}

// Truncate drops the items below offset upTo. Polls from a dropped offset
// then fail with ErrTypeTruncatedOffset (and subscribers start again from
// the oldest item kept). An upTo at or below the base offset changes
// nothing; one past Offset is a non-retryable ErrTypeTruncateOutOfRange
// application error.
func (h *Host) Truncate(upTo int64) error {
	n := upTo - h.base
	if n <= 0 {
		return nil
	}
	if n > int64(len(h.log)) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cannot truncate to offset %d: only %d items exist", upTo, h.Offset()),
			ErrTypeTruncateOutOfRange, nil)
	}
	h.log = append([]entry(nil), h.log[n:]...)
	h.base = upTo
	return nil
}

// Drain prepares the end of the run (before continue-as-new or before the
// workflow returns): polls that wait for items are answered at once with
// what there is, later polls that would wait are rejected with
// ErrTypeStreamDraining (subscribers retry them and so land on the next run
// or find the run closed), and Drain returns once no poll handler of this
// host is running. Polls that find items are still answered. Drain does not
// wait for the owner's own handlers: wait for workflow.AllHandlersFinished
// too before continuing as new.
func (h *Host) Drain(ctx workflow.Context) error {
	h.draining = true
	if err := workflow.Await(ctx, func() bool { return h.polling == 0 }); err != nil {
		return fmt.Errorf("streams host: drain: %w", err)
	}
	h.receivePending()
	return nil
}

// Linger waits, at most d, until a subscriber has read the log to its end:
// a poll answered up to Offset, or one waiting there. It returns at once
// when no poll was served in this run (no subscriber to wait for, and no
// timer in the history) or one already has. Call it before Drain when the
// workflow is about to complete: the log ends with its workflow, so a
// subscriber between two polls would miss the last items. With several
// subscribers it waits for one of them. It reports whether one caught up.
func (h *Host) Linger(ctx workflow.Context, d time.Duration) (bool, error) {
	caughtUp := func() bool { return h.served == 0 || h.read >= h.Offset() || h.polling > 0 }
	if caughtUp() {
		return true, nil
	}
	return workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{Timeout: d, TimerOptions: workflow.TimerOptions{Summary: "stream: a subscriber reads to its end"}}, caughtUp)
}

// State returns the stream to pass to NewHost in the next run. It first
// takes in publish signals already delivered but not yet read, forgets
// publishers idle longer than PublisherTTL, and truncates the log (as
// Truncate, so this host's offsets move too) to MaxStateItems and
// MaxStateBytes. Call it after Drain.
func (h *Host) State() State {
	h.receivePending()
	now := float64(workflow.Now(h.ctx).UnixMilli()) / 1000
	ttl := h.cfg.PublisherTTL.Seconds()
	s := State{
		Log:                []WireItem{},
		BaseOffset:         0,
		PublisherSequences: map[string]int64{},
		PublisherLastSeen:  map[string]float64{},
	}
	for id, seq := range h.seqs {
		if seen := h.seen[id]; now-seen < ttl {
			s.PublisherSequences[id] = seq
			s.PublisherLastSeen[id] = seen
		}
	}
	keep, size := 0, 0
	for i := len(h.log) - 1; i >= 0 && keep < h.cfg.MaxStateItems; i-- {
		size += h.log[i].size()
		if size > h.cfg.MaxStateBytes {
			break
		}
		keep++
	}
	_ = h.Truncate(h.Offset() - int64(keep)) // within range by construction
	for _, e := range h.log {
		// The protocol leaves offsets at 0 in a State: they are base_offset
		// plus the index.
		s.Log = append(s.Log, WireItem{Topic: e.topic, Data: e.wire()})
	}
	s.BaseOffset = h.base
	return s
}

// Served returns how many polls the host admitted in this run. The server
// takes at most 2,000 updates per run: a long-lived stream continues as new
// well before.
func (h *Host) Served() int { return h.served }
