package progress

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/streams"
)

// ErrItem is matched (errors.Is) by the error of an item that does not
// decode: the subscription goes on after it.
var ErrItem = errors.New("progress: an item that is not an agentrun event or token")

// Update is one item of a run's stream, decoded: an Event or a Token.
type Update struct {
	// Offset is the item's place in the stream: subscribe again from
	// Offset+1 to go on after it.
	Offset int64
	Event  *Event // set for TopicEvents
	Token  *Token // set for TopicTokens
}

// String renders u on one line, for logs and tests: "3 step.completed
// llm/1", "7 token llm/2#1 the text", "11 status Idle".
func (u Update) String() string {
	switch {
	case u.Token != nil:
		return fmt.Sprintf("%d token %s#%d %s", u.Offset, u.Token.Step, u.Token.Attempt, u.Token.Text)
	case u.Event == nil:
		return fmt.Sprintf("%d empty", u.Offset)
	case u.Event.Type == EventStatus:
		return fmt.Sprintf("%d status %s", u.Offset, u.Event.Status)
	}
	return fmt.Sprintf("%d %s %s", u.Offset, u.Event.Type, u.Event.Step)
}

// Options says what to follow of a run.
type Options struct {
	// Topics are the topics wanted: TopicEvents, TopicTokens. Default
	// both.
	Topics []string
	// From is the offset of the first item wanted; 0 (the default) is the
	// oldest the run keeps.
	From int64
}

// Subscribe follows the run runID's stream through c: it yields its events
// and tokens in order, as they are published, across continue-as-new, and
// stops with no error when the run closes, or with ctx's error. An item
// that does not decode is yielded as an error (ErrItem) naming its offset,
// and the iteration goes on after it when the caller keeps ranging; any
// other error ends it.
func Subscribe(ctx context.Context, c client.Client, runID string, o Options) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		sub, err := streams.NewSubscriber(streams.SubscriberConfig{Client: c, WorkflowID: runID, Topics: o.Topics, FromOffset: o.From})
		if err != nil {
			yield(Update{}, err)
			return
		}
		for it, err := range sub.All(ctx) {
			if err != nil {
				if !yield(Update{}, err) {
					return
				}
				continue
			}
			u, err := decode(it)
			if !yield(u, err) {
				return
			}
		}
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
