package progress

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/streams"
)

func item(t *testing.T, topic string, offset int64, v any) streams.Item {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return streams.Item{Topic: topic, Offset: offset, Payload: p}
}

// TestDecode: an events item is an Event, a tokens item a Token, at its
// offset; another topic or a payload of the wrong shape is ErrItem.
func TestDecode(t *testing.T) {
	t.Parallel()
	u, err := decode(item(t, TopicEvents, 3, Event{Type: EventStepCompleted, Step: "llm/1", Attempt: 2}))
	if err != nil || u.Offset != 3 || u.Event == nil || u.Event.Step != "llm/1" || u.Event.Attempt != 2 || u.Token != nil {
		t.Fatalf("events item: %+v, %v", u, err)
	}
	u, err = decode(item(t, TopicTokens, 4, Token{Step: "llm/1", Attempt: 1, Text: "Hello"}))
	if err != nil || u.Offset != 4 || u.Token == nil || u.Token.Text != "Hello" || u.Event != nil {
		t.Fatalf("tokens item: %+v, %v", u, err)
	}
	for _, bad := range []streams.Item{item(t, "other", 5, "x"), item(t, TopicTokens, 6, []int{1})} {
		if _, err := decode(bad); !errors.Is(err, ErrItem) {
			t.Errorf("item %d of %s: %v, want ErrItem", bad.Offset, bad.Topic, err)
		}
	}
}

func TestUpdateString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		u    Update
		want string
	}{
		{Update{Offset: 3, Event: &Event{Type: EventStepCompleted, Step: "llm/1"}}, "3 step.completed llm/1"},
		{Update{Offset: 7, Token: &Token{Step: "llm/2", Attempt: 1, Text: "the text"}}, "7 token llm/2#1 the text"},
		{Update{Offset: 11, Event: &Event{Type: EventStatus, Status: "Idle"}}, "11 status Idle"},
		{Update{Offset: 12}, "12 empty"},
	} {
		if got := c.u.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.u, got, c.want)
		}
	}
}
