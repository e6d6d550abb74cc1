package workflows_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// poll is a poll update sent to the run's stream; its answer fills in when
// the update completes.
type poll struct {
	res  streams.PollResult
	err  error
	done bool
}

func (h *harness) poll(id string, in streams.PollInput) *poll {
	p := &poll{}
	h.env.UpdateWorkflow(streams.PollUpdate, id, &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { p.err, p.done = err, true },
		OnComplete: func(v any, err error) {
			p.done, p.err = true, err
			if err == nil {
				p.res = v.(streams.PollResult)
			}
		},
	}, in)
	return p
}

// updates decodes a poll answer's items.
func updates(t *testing.T, items []streams.WireItem) []progress.Update {
	t.Helper()
	var out []progress.Update
	for _, w := range items {
		p, err := streams.DecodePayload(w.Data)
		if err != nil {
			t.Fatalf("item %d: %v", w.Offset, err)
		}
		u := progress.Update{Offset: w.Offset}
		switch w.Topic {
		case progress.TopicEvents:
			u.Event = &progress.Event{}
			err = converter.GetDefaultDataConverter().FromPayload(p, u.Event)
		case progress.TopicTokens:
			u.Token = &progress.Token{}
			err = converter.GetDefaultDataConverter().FromPayload(p, u.Token)
		default:
			t.Fatalf("item %d: topic %q", w.Offset, w.Topic)
		}
		if err != nil {
			t.Fatalf("item %d: %v", w.Offset, err)
		}
		out = append(out, u)
	}
	return out
}

// describe renders updates one a line (progress.Update.String).
func describe(us []progress.Update) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}

// TestStreamMalformedPublishRejected: publish signals that are not JSON,
// have fields of the wrong types or carry items that are not base64 are
// refused as a whole: each is in the state's Rejected under the publish
// signal's name with its reason, and a "rejected" event on the stream; a
// good batch sent after them is in the log. A poll for a topic nobody
// publishes to answers nothing and no error; a poll beyond the end waits
// until the run closes the stream. The run goes on to its approval and
// completes as without them: 3 model calls, 1 ticket.
func TestStreamMalformedPublishRejected(t *testing.T) {
	t.Parallel()
	token, err := converter.GetDefaultDataConverter().ToPayload(progress.Token{Step: "llm/9", Attempt: 1, Text: "from outside"})
	if err != nil {
		t.Fatal(err)
	}
	good, err := streams.EncodePayload(token)
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct{ payload, reason string }{
		{`{"items": [{"topic": "tokens", "data": "x"`, "payload: unexpected end of JSON input"},
		{`{"items": "tokens", "publisher_id": "p1", "sequence": 1}`, "cannot unmarshal string into Go struct field PublishInput.items"},
		{`{"items": [], "publisher_id": 7, "sequence": 1}`, "cannot unmarshal number into Go struct field PublishInput.publisher_id"},
		{`{"items": [{"topic": "tokens", "data": "` + good + `"}, {"topic": "tokens", "data": "%%not base64%%"}], "publisher_id": "p1", "sequence": 1}`, `item 1 (topic "tokens"): data is not base64`},
		{`{"items": [{"topic": "tokens", "data": "` + base64.StdEncoding.EncodeToString([]byte{0xff, 0xff, 0xff}) + `"}], "publisher_id": "p1", "sequence": 1}`, `item 0 (topic "tokens"): data is not a serialized Payload`},
	}
	h := newHarness(t)
	var events, tokens, nobody, beyond *poll
	var before workflows.State
	h.at(time.Second, func() {
		for _, b := range bad {
			h.env.SignalWorkflow(streams.PublishSignal, jsonPayload(b.payload))
		}
		// Sequence 1 of p1 was not used up by the refused batches.
		h.env.SignalWorkflow(streams.PublishSignal, streams.PublishInput{
			Items: []streams.PublishEntry{{Topic: progress.TopicTokens, Data: good}}, PublisherID: "p1", Sequence: 1})
	})
	h.at(30*time.Second, func() {
		events = h.poll("events", streams.PollInput{Topics: []string{progress.TopicEvents}})
		tokens = h.poll("tokens", streams.PollInput{Topics: []string{progress.TopicTokens}})
		nobody = h.poll("nobody", streams.PollInput{Topics: []string{"nobody"}})
		beyond = h.poll("beyond", streams.PollInput{FromOffset: 1000})
	})
	h.at(time.Minute, func() {
		before = h.state(t)
		if beyond.done {
			t.Errorf("a poll from offset 1000 was answered at once: %+v, %v; want it to wait", beyond.res, beyond.err)
		}
		h.env.SignalWorkflow(operator.SignalApprove, map[string]string{"Marker": ticketStep})
	})
	h.run()
	r := h.result(t)
	if !strings.Contains(r.Answer, "TICKET-1") || h.modelCalls() != 3 || h.ticketCount(t) != 1 {
		t.Fatalf("answer %q, %d model calls, %d tickets; want TICKET-1, 3, 1", r.Answer, h.modelCalls(), h.ticketCount(t))
	}

	if before.Status != agent.StatusAwaitingApproval || len(before.Rejected) != len(bad) {
		t.Fatalf("before approval: %s with rejected %+v; want AwaitingApproval and %d rejected", before.Status, before.Rejected, len(bad))
	}
	for i, b := range bad {
		rj := before.Rejected[i]
		if rj.Signal != streams.PublishSignal || !strings.Contains(rj.Reason, b.reason) || !strings.HasPrefix(b.payload, rj.Payload) || rj.Payload == "" {
			t.Errorf("rejected[%d] = %+v; want signal %s, a reason containing %q and the payload's start", i, rj, streams.PublishSignal, b.reason)
		}
	}

	for name, p := range map[string]*poll{"events": events, "tokens": tokens, "nobody": nobody, "beyond": beyond} {
		if p == nil || !p.done || p.err != nil {
			t.Fatalf("poll %s: %+v; want an answer without error", name, p)
		}
	}
	got := describe(updates(t, events.res.Items))
	rj := "rejected " + streams.PublishSignal
	want := []string{"0 status Running", "1 step.started llm/1", "2 step.completed llm/1",
		"3 step.started tool/1/0/lookup", "4 step.completed tool/1/0/lookup", "5 step.started llm/2", "6 step.completed llm/2",
		"7 status AwaitingApproval", "8 " + rj, "9 " + rj, "10 " + rj, "11 " + rj, "12 " + rj}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || events.res.NextOffset != 14 {
		t.Fatalf("events at 30s (next offset %d):\n got %q\nwant %q, next offset 14", events.res.NextOffset, got, want)
	}
	var rejected []*progress.Event
	for _, u := range updates(t, events.res.Items) {
		if u.Event.Type == progress.EventRejected {
			rejected = append(rejected, u.Event)
		}
	}
	if len(rejected) != len(bad) {
		t.Fatalf("rejected events %d, want %d: %q", len(rejected), len(bad), got)
	}
	for i, e := range rejected {
		if e.Step != streams.PublishSignal || !strings.Contains(e.Reason, bad[i].reason) {
			t.Errorf("rejected event %d = %+v; want step %s and a reason containing %q", i, e, streams.PublishSignal, bad[i].reason)
		}
	}
	toks := updates(t, tokens.res.Items)
	if len(toks) != 1 || toks[0].Offset != 13 || toks[0].Token.Text != "from outside" {
		t.Errorf("tokens %q, want the good batch's one token", describe(toks))
	}
	if len(nobody.res.Items) != 0 || nobody.res.NextOffset != 14 {
		t.Errorf("poll of a topic nobody publishes to: %+v; want no items and next offset 14", nobody.res)
	}
	if len(beyond.res.Items) != 0 || beyond.res.NextOffset != 1000 {
		t.Errorf("poll from offset 1000: %+v; want no items and next offset 1000 once the run closed its stream", beyond.res)
	}
}

// TestStreamCarriedAcrossContinueAsNew: a run of three lookups and an
// answer that continues as new after every 2 steps runs in 4 executions;
// the last one starts with the stream of the first three, 13 items at
// offsets 0 to 12: one status Running (not one per execution) and each
// step's started and completed events, in order.
func TestStreamCarriedAcrossContinueAsNew(t *testing.T) {
	t.Parallel()
	h := newScriptHarness(t, longScript(4, 0))
	inputs := h.chain(t, workflows.Input{Messages: agent.UserMessages(prompt), ContinueAfter: 2}, nil)
	if r := h.result(t); !strings.HasPrefix(r.Answer, "Filed as ") || r.Steps != 7 || h.modelCalls() != 4 {
		t.Fatalf("answer %q, %d steps, %d model calls; want the script's answer, 7 and 4", r.Answer, r.Steps, h.modelCalls())
	}
	if len(inputs) != 4 {
		t.Fatalf("executions: %d, want 4", len(inputs))
	}
	st := inputs[3].Continued.Stream
	if st == nil || st.BaseOffset != 0 {
		t.Fatalf("the last execution's stream %+v, want one from offset 0", st)
	}
	items := make([]streams.WireItem, len(st.Log))
	for i, it := range st.Log {
		items[i] = streams.WireItem{Topic: it.Topic, Data: it.Data, Offset: st.BaseOffset + int64(i)}
	}
	got := describe(updates(t, items))
	want := []string{"0 status Running"}
	for _, s := range []string{"llm/1", "tool/1/0/lookup", "llm/2", "tool/2/0/lookup", "llm/3", "tool/3/0/lookup"} {
		want = append(want, fmt.Sprintf("%d step.started %s", len(want), s), fmt.Sprintf("%d step.completed %s", len(want)+1, s))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stream carried into the last execution:\n got %q\nwant %q", got, want)
	}
}
