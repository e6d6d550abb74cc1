package progress

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/streams"
)

// ErrItem is matched (errors.Is) by the error of an item that does not
// decode: the subscription goes on after it.
var ErrItem = errors.New("progress: an item that is not an agentrun event or token")

// Update is one item of a run's stream, decoded: an Event or a Token.
type Update struct {
	// Run is the run id of the run whose stream the item is of: the run
	// subscribed to, or a child run it started, at any depth (then the
	// item's Event.Child or Token.Child is that id too).
	Run string
	// Offset is the item's place in Run's stream. Only the offsets of the
	// run subscribed to resume a subscription: subscribe again from
	// Offset+1 of its last item to go on after it. A child's offsets are
	// of the child's stream (subscribe to the child's id with them).
	Offset int64
	Event  *Event // set for TopicEvents
	Token  *Token // set for TopicTokens
}

// String renders u on one line, for logs and tests: "3 step.completed
// llm/1", "7 token llm/2#1 the text", "11 status Idle"; an item of a child
// run starts with the child's id in brackets: "[run-7.tool.1.0.filer] 2
// token llm/1#1 the text".
func (u Update) String() string {
	prefix := ""
	if c := u.child(); c != "" {
		prefix = "[" + c + "] "
	}
	switch {
	case u.Token != nil:
		return fmt.Sprintf("%s%d token %s#%d %s", prefix, u.Offset, u.Token.Step, u.Token.Attempt, u.Token.Text)
	case u.Event == nil:
		return fmt.Sprintf("%s%d empty", prefix, u.Offset)
	case u.Event.Type == EventStatus:
		return fmt.Sprintf("%s%d status %s", prefix, u.Offset, u.Event.Status)
	}
	return fmt.Sprintf("%s%d %s %s", prefix, u.Offset, u.Event.Type, u.Event.Step)
}

// child is the child run u was relayed from, or "" for an item of the run
// subscribed to.
func (u Update) child() string {
	switch {
	case u.Token != nil:
		return u.Token.Child
	case u.Event != nil && u.Event.Child == u.Run:
		return u.Event.Child // a step.started of the run itself names the child it starts, not its own id
	}
	return ""
}

// Options says what to follow of a run.
type Options struct {
	// Topics are the topics wanted: TopicEvents, TopicTokens. Default
	// both. They apply to the child runs followed too (their events are
	// read to find their own children, and yielded only when wanted).
	Topics []string
	// From is the offset of the first item wanted of the run subscribed
	// to; 0 (the default) is the oldest the run keeps. Child runs are read
	// from their start; a subscription from an offset follows the children
	// started at or after it (whose step.started it reads).
	From int64
	// RunOnly follows the run alone: not the child runs it starts.
	RunOnly bool
}

// childPatience is how long the subscriber of a child run waits for the
// child's workflow to exist: its parent announces it (step.started) in the
// workflow task that asks the server to start it.
const childPatience = 10 * time.Second

// Subscribe follows the run runID's stream through c: it yields its events
// and tokens in order, as they are published, across continue-as-new. An
// item that does not decode is yielded as an error (ErrItem) naming its
// offset, and the iteration goes on after it when the caller keeps
// ranging; any other error of the run's stream ends it, as does ctx's.
//
// Unless o.RunOnly, it follows the whole tree: each child run a followed
// run starts (its step.started Event with Child set) is followed too, from
// its start, recursively, and its items are merged into the one sequence,
// in order within each run, each with Update.Run, Event.Child or
// Token.Child set to the child's run id (a grandchild's items carry the
// grandchild's id; the step.started with which a child starts a
// grandchild carries the child's). A child whose stream cannot be read is
// one error, naming the child (Update.Run is its id), and the rest goes
// on. Only the items of runID have offsets that resume this subscription
// (Options.From).
//
// The iteration stops with no error when runID closed and every child
// followed has closed.
func Subscribe(ctx context.Context, c client.Client, runID string, o Options) iter.Seq2[Update, error] {
	topics := o.Topics
	if !o.RunOnly && len(topics) > 0 && !slices.Contains(topics, TopicEvents) {
		topics = append(slices.Clone(topics), TopicEvents) // to see the children start
	}
	return follow(ctx, streamOpener(c, topics), runID, o)
}

// opener yields the decoded items of one run's stream from an offset,
// each with Run set; child says the run is a child that may not exist yet.
type opener func(ctx context.Context, runID string, from int64, child bool) iter.Seq2[Update, error]

// streamOpener reads runs' streams with streams.Subscriber.
func streamOpener(c client.Client, topics []string) opener {
	return func(ctx context.Context, runID string, from int64, child bool) iter.Seq2[Update, error] {
		return func(yield func(Update, error) bool) {
			sub, err := streams.NewSubscriber(streams.SubscriberConfig{Client: c, WorkflowID: runID, Topics: topics, FromOffset: from})
			if err != nil {
				yield(Update{Run: runID}, err)
				return
			}
			deadline := time.Now().Add(childPatience)
			read := false
			for {
				it, err := sub.Next(ctx)
				if errors.Is(err, streams.ErrEnded) {
					return
				}
				var notFound *serviceerror.NotFound
				if err != nil && child && !read && errors.As(err, &notFound) && time.Now().Before(deadline) && ctx.Err() == nil {
					continue // not started yet: the subscriber polls again after its cooldown
				}
				if err != nil {
					yield(Update{Run: runID}, err)
					return
				}
				read = true
				u, err := decode(it)
				u.Run = runID
				if !yield(u, err) {
					return
				}
			}
		}
	}
}

// msg is what a run's follower sends the merge: an item or error, or that
// the run's items ended (done).
type msg struct {
	u    Update
	err  error
	run  string
	done bool
}

// follow yields top's items from o.From, and, unless o.RunOnly, those of
// every child a followed run starts, merged (see Subscribe).
func follow(ctx context.Context, open opener, top string, o Options) iter.Seq2[Update, error] {
	if o.RunOnly {
		return open(ctx, top, o.From, false)
	}
	wantEvents := len(o.Topics) == 0 || slices.Contains(o.Topics, TopicEvents)
	return func(yield func(Update, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		ch := make(chan msg)
		running := 0
		followed := map[string]bool{top: true}
		start := func(run string, from int64, child bool) {
			running++
			wg.Add(1)
			go func() {
				defer wg.Done()
				send := func(m msg) bool {
					select {
					case ch <- m:
						return true
					case <-ctx.Done():
						return false
					}
				}
				for u, err := range open(ctx, run, from, child) {
					if !send(msg{u: u, err: err, run: run}) {
						return
					}
				}
				send(msg{run: run, done: true})
			}()
		}
		start(top, o.From, false)
		for running > 0 {
			var m msg
			select {
			case m = <-ch:
			case <-ctx.Done():
				yield(Update{Run: top}, ctx.Err())
				return
			}
			switch {
			case m.done:
				running--
				continue
			case m.err != nil && m.run == top:
				if !yield(m.u, m.err) || !errors.Is(m.err, ErrItem) {
					return // the top run's stream cannot be read: the tree's end is unknown
				}
				continue
			case m.err != nil:
				m.u.Run = m.run
				if !yield(m.u, fmt.Errorf("child run %s: %w", m.run, m.err)) {
					return
				}
				continue
			}
			u := m.u
			if e := u.Event; e != nil && e.Type == EventStepStarted && e.Child != "" && !followed[e.Child] {
				followed[e.Child] = true
				start(e.Child, 0, true)
			}
			if u.Event != nil && !wantEvents {
				continue
			}
			if m.run != top {
				mark(&u, m.run)
			}
			if !yield(u, nil) {
				return
			}
		}
	}
}

// mark sets the child run id on an item relayed from the child run.
func mark(u *Update, child string) {
	u.Run = child
	if u.Event != nil {
		e := *u.Event
		e.Child = child
		u.Event = &e
	}
	if u.Token != nil {
		t := *u.Token
		t.Child = child
		u.Token = &t
	}
}

// decode turns a stream item into an Update.
func decode(it streams.Item) (Update, error) {
	u := Update{Offset: it.Offset}
	var err error
	switch it.Topic {
	case TopicEvents:
		u.Event = &Event{}
		err = it.Decode(u.Event)
	case TopicTokens:
		u.Token = &Token{}
		err = it.Decode(u.Token)
	default:
		return u, fmt.Errorf("%w: item %d: topic %q is not an agentrun topic (want %s or %s)", ErrItem, it.Offset, it.Topic, TopicEvents, TopicTokens)
	}
	if err != nil {
		return u, fmt.Errorf("%w: item %d of topic %s: %v", ErrItem, it.Offset, it.Topic, err)
	}
	return u, nil
}
