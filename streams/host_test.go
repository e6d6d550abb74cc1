package streams_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/streams"
)

// suite runs streamWorkflow in the sdk's test environment.
type suite struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	n   int
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(streamWorkflow)
	env.RegisterActivity(&publishActivities{})
	return &suite{t: t, env: env}
}

// at schedules fn at workflow time d.
func (s *suite) at(d time.Duration, fn func()) { s.env.RegisterDelayedCallback(fn, d) }

func (s *suite) run(in hostInput) { s.env.ExecuteWorkflow(streamWorkflow, in) }

// pollResult is what a poll update came back with.
type pollResult struct {
	res      streams.PollResult
	err      error
	rejected error
	done     bool
}

// poll sends a poll update; the result fills in when the update completes.
func (s *suite) poll(in streams.PollInput) *pollResult {
	s.n++
	r := &pollResult{}
	s.env.UpdateWorkflow(streams.PollUpdate, fmt.Sprintf("poll-%d", s.n), &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { r.rejected, r.done = err, true },
		OnComplete: func(v any, err error) {
			r.done, r.err = true, err
			if err == nil {
				r.res = v.(streams.PollResult)
			}
		},
	}, in)
	return r
}

func (s *suite) view() hostView {
	s.t.Helper()
	v, err := s.env.QueryWorkflow(queryHost)
	if err != nil {
		s.t.Fatal(err)
	}
	var hv hostView
	if err := v.Get(&hv); err != nil {
		s.t.Fatal(err)
	}
	return hv
}

func (s *suite) offsetQuery() int64 {
	s.t.Helper()
	v, err := s.env.QueryWorkflow(streams.OffsetQuery)
	if err != nil {
		s.t.Fatal(err)
	}
	var n int64
	if err := v.Get(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *suite) result() hostView {
	s.t.Helper()
	if !s.env.IsWorkflowCompleted() {
		s.t.Fatal("the workflow did not complete")
	}
	if err := s.env.GetWorkflowError(); err != nil {
		s.t.Fatal(err)
	}
	var v hostView
	if err := s.env.GetWorkflowResult(&v); err != nil {
		s.t.Fatal(err)
	}
	return v
}

// wire returns the wire form of a value through the default converter.
func wire(t testing.TB, v any) string {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	s, err := streams.EncodePayload(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func batch(pid string, seq int64, items ...testItem) streams.PublishInput {
	in := streams.PublishInput{Items: []streams.PublishEntry{}, PublisherID: pid, Sequence: seq}
	for _, it := range items {
		p, _ := converter.GetDefaultDataConverter().ToPayload(it.Value)
		d, _ := streams.EncodePayload(p)
		in.Items = append(in.Items, streams.PublishEntry{Topic: it.Topic, Data: d})
	}
	return in
}

// decoded returns a poll answer's items as topic/value pairs with offsets.
func decoded(t testing.TB, items []streams.WireItem) []string {
	t.Helper()
	var out []string
	for _, w := range items {
		p, err := streams.DecodePayload(w.Data)
		if err != nil {
			t.Fatalf("item %d: %v", w.Offset, err)
		}
		var v string
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			t.Fatalf("item %d: %v", w.Offset, err)
		}
		out = append(out, fmt.Sprintf("%d %s=%s", w.Offset, w.Topic, v))
	}
	return out
}

func want(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func appType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

// TestPublishBySignalAndFromWorkflow: items from signals and from workflow
// code share one log with global offsets, in arrival order; a topic filter
// keeps the global offsets; the offset query counts them; the workflow
// reads back the items of a topic from an offset (Host.Items).
func TestPublishBySignalAndFromWorkflow(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	var all, events, none *pollResult
	s.at(time.Second, func() {
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 1, testItem{"events", "a"}, testItem{"tokens", "b"}))
		s.env.SignalWorkflow(sigPublish, testItem{"events", "c"})
	})
	s.at(2*time.Second, func() {
		if n := s.offsetQuery(); n != 3 {
			t.Errorf("offset query: %d, want 3", n)
		}
		all = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 0})
		events = s.poll(streams.PollInput{Topics: []string{"events"}, FromOffset: 1})
		none = s.poll(streams.PollInput{Topics: []string{"nobody"}, FromOffset: 0})
	})
	s.at(3*time.Second, func() { s.env.SignalWorkflow(sigFinish, nil) })
	s.run(hostInput{})
	v := s.result()
	want(t, "all", decoded(t, all.res.Items), []string{"0 events=a", "1 tokens=b", "2 events=c"})
	want(t, "events from 1", decoded(t, events.res.Items), []string{"2 events=c"})
	if all.res.NextOffset != 3 || events.res.NextOffset != 3 || all.res.MoreReady {
		t.Errorf("next offsets %d, %d (more %v), want 3, 3", all.res.NextOffset, events.res.NextOffset, all.res.MoreReady)
	}
	if len(none.res.Items) != 0 || none.err != nil || none.res.NextOffset != 3 {
		t.Errorf("unknown topic: %+v, %v; want no items, next 3, no error", none.res, none.err)
	}
	if v.Offset != 3 || v.Rejects != 0 {
		t.Errorf("host %+v, want offset 3, no rejects", v)
	}
	want(t, "the workflow's tokens from 1", v.Tokens, []string{"1 b"})
}

// TestOwnReceiver: with HostConfig.OwnReceiver the host starts no
// coroutine; the owner's takes in the publish signals, and a poll waiting
// for them is answered as with the host's own.
func TestOwnReceiver(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	var waiting *pollResult
	s.at(time.Second, func() { waiting = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 0}) })
	s.at(2*time.Second, func() {
		if waiting.done {
			t.Error("a poll returned before its item existed")
		}
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 1, testItem{"events", "a"}, testItem{"tokens", "b"}))
	})
	s.at(3*time.Second, func() {
		if n := s.offsetQuery(); n != 2 {
			t.Errorf("offset query: %d, want 2", n)
		}
		s.env.SignalWorkflow(sigFinish, nil)
	})
	s.run(hostInput{OwnReceiver: true})
	v := s.result()
	want(t, "waiting poll", decoded(t, waiting.res.Items), []string{"0 events=a", "1 tokens=b"})
	if v.Offset != 2 || v.Rejects != 0 {
		t.Errorf("host %+v, want offset 2, no rejects", v)
	}
}

// TestDuplicateBatchDropped: a batch resent under the same publisher and
// sequence (or an older one) enters the log once; another publisher's
// sequence 1 and a publisher-less batch are kept.
func TestDuplicateBatchDropped(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	var got *pollResult
	s.at(time.Second, func() {
		b1 := batch("p1", 1, testItem{"events", "a"}, testItem{"events", "b"})
		s.env.SignalWorkflow(streams.PublishSignal, b1)
		s.env.SignalWorkflow(streams.PublishSignal, b1)
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 2, testItem{"events", "c"}))
		s.env.SignalWorkflow(streams.PublishSignal, b1)
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 2, testItem{"events", "c"}))
		s.env.SignalWorkflow(streams.PublishSignal, batch("p2", 1, testItem{"events", "d"}))
		s.env.SignalWorkflow(streams.PublishSignal, batch("", 0, testItem{"events", "e"}))
		s.env.SignalWorkflow(streams.PublishSignal, batch("", 0, testItem{"events", "e"}))
	})
	s.at(2*time.Second, func() { got = s.poll(streams.PollInput{Topics: []string{}}) })
	s.at(3*time.Second, func() { s.env.SignalWorkflow(sigFinish, nil) })
	s.run(hostInput{})
	v := s.result()
	want(t, "log", decoded(t, got.res.Items), []string{"0 events=a", "1 events=b", "2 events=c", "3 events=d", "4 events=e", "5 events=e"})
	if v.Duplicates != 3 || v.Rejects != 0 {
		t.Errorf("duplicates %d, rejects %d; want 3, 0", v.Duplicates, v.Rejects)
	}
}

func rawJSON(s string) converter.RawValue {
	return converter.NewRawValue(&commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     []byte(s),
	})
}

// TestMalformedPublishRejected: every malformed publish signal is recorded
// with a reason, enters nothing and does not consume its sequence; the run
// stays responsive (a later good batch, a poll and a clean finish).
func TestMalformedPublishRejected(t *testing.T) {
	t.Parallel()
	good := wire(t, "ok")
	noEncoding, _ := streams.EncodePayload(&commonpb.Payload{Data: []byte(`"x"`)})
	cases := []struct {
		payload converter.RawValue
		reason  string
	}{
		{converter.NewRawValue(nil), "no payload"},
		{converter.NewRawValue(&commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("binary/plain")}, Data: []byte("x")}), `encoding "binary/plain"`},
		{rawJSON(`null`), "not a JSON object"},
		{rawJSON(`[1,2]`), "not a JSON object"},
		{rawJSON(`{"items": "x", "publisher_id": "p1", "sequence": 1}`), "cannot unmarshal"},
		{rawJSON(`{"items": [], "publisher_id": "p1", "sequence": "one"}`), "cannot unmarshal"},
		{rawJSON(`{"items": [{"topic": "events", "data": "` + good + `"}, {"topic": "events", "data": "!!not base64"}], "publisher_id": "p1", "sequence": 1}`), "item 1 (topic \"events\"): data is not base64"},
		{rawJSON(`{"items": [{"topic": "events", "data": "` + base64.StdEncoding.EncodeToString([]byte{0xff, 0xff, 0xff}) + `"}], "publisher_id": "p1", "sequence": 1}`), "not a serialized Payload"},
		{rawJSON(`{"items": [{"topic": "events", "data": "` + noEncoding + `"}], "publisher_id": "p1", "sequence": 1}`), "no encoding metadata"},
		{rawJSON(`{"items": [{"topic": "events", "data": "` + good + `"}], "publisher_id": "p1", "sequence": 1.5}`), "cannot unmarshal"},
	}
	s := newSuite(t)
	var got *pollResult
	s.at(time.Second, func() {
		for _, c := range cases {
			s.env.SignalWorkflow(streams.PublishSignal, c.payload)
		}
		// Sequence 1 was not consumed by the rejected batches.
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 1, testItem{"events", "after"}))
	})
	s.at(2*time.Second, func() { got = s.poll(streams.PollInput{Topics: []string{}}) })
	s.at(3*time.Second, func() { s.env.SignalWorkflow(sigFinish, nil) })
	s.run(hostInput{})
	v := s.result()
	want(t, "log", decoded(t, got.res.Items), []string{"0 events=after"})
	if v.Rejects != len(cases) || v.Callbacks != len(cases) || len(v.Rejected) != len(cases) {
		t.Fatalf("rejects %d, callbacks %d, kept %d; want %d each", v.Rejects, v.Callbacks, len(v.Rejected), len(cases))
	}
	for i, c := range cases {
		if !strings.Contains(v.Rejected[i].Reason, c.reason) {
			t.Errorf("case %d: reason %q, want it to contain %q", i, v.Rejected[i].Reason, c.reason)
		}
	}
	if r := v.Rejected[6]; r.PublisherID != "p1" || r.Sequence != 1 || !strings.HasPrefix(r.Payload, `{"items"`) {
		t.Errorf("rejected batch record %+v, want publisher p1, sequence 1 and the payload's start", r)
	}
}

// TestTruncation: Truncate drops a prefix (polls below it fail with
// TruncatedOffset, a poll from 0 starts at the base); past the end is
// TruncateOutOfRange; State carries at most MaxStateItems, the newest, with
// the base advanced so offsets stay global.
func TestTruncation(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	var below, zero, at *pollResult
	s.at(time.Second, func() {
		for i := range 6 {
			s.env.SignalWorkflow(sigPublish, testItem{"events", fmt.Sprint(i)})
		}
	})
	s.at(2*time.Second, func() {
		s.env.SignalWorkflow(sigTruncate, int64(2))
		s.env.SignalWorkflow(sigTruncate, int64(99))
	})
	s.at(3*time.Second, func() {
		below = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 1})
		zero = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 0})
		at = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 2})
		if v := s.view(); v.Base != 2 || v.Offset != 6 || !strings.Contains(v.Truncate, "only 6 items exist") {
			t.Errorf("after truncation: %+v, want base 2, offset 6, an out-of-range error", v)
		}
	})
	s.at(4*time.Second, func() { s.env.SignalWorkflow(sigCAN, nil) })
	s.run(hostInput{MaxStateItems: 3})
	if appType(below.err) != streams.ErrTypeTruncatedOffset {
		t.Errorf("poll below the base: %v, want %s", below.err, streams.ErrTypeTruncatedOffset)
	}
	want(t, "poll from 0", decoded(t, zero.res.Items), []string{"2 events=2", "3 events=3", "4 events=4", "5 events=5"})
	want(t, "poll from 2", decoded(t, at.res.Items), []string{"2 events=2", "3 events=3", "4 events=4", "5 events=5"})
	state := canState(t, s)
	if state.BaseOffset != 3 || len(state.Log) != 3 {
		t.Fatalf("state: base %d, %d items; want base 3, 3 items", state.BaseOffset, len(state.Log))
	}
	want(t, "state", decoded(t, state.Log), []string{"0 events=3", "0 events=4", "0 events=5"})
}

// canState returns the State the workflow continued as new with.
func canState(t *testing.T, s *suite) streams.State {
	t.Helper()
	err := s.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var in hostInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.State == nil {
		t.Fatal("no state carried")
	}
	return *in.State
}

// TestStateCarriedIntoNewHost: a host built from a State (by JSON, as across
// continue-as-new) serves the same items at the same offsets, keeps
// deduplicating the publishers it remembers, and forgets idle ones.
func TestStateCarriedIntoNewHost(t *testing.T) {
	t.Parallel()
	// First run: publish, then continue as new.
	s := newSuite(t)
	s.at(time.Second, func() {
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 1, testItem{"events", "a"}))
		s.env.SignalWorkflow(streams.PublishSignal, batch("old", 4, testItem{"tokens", "b"}))
	})
	s.at(20*time.Minute, func() {
		s.env.SignalWorkflow(streams.PublishSignal, batch("p1", 2, testItem{"events", "c"}))
		s.env.SignalWorkflow(sigCAN, nil)
	})
	s.run(hostInput{})
	state := canState(t, s)
	if _, ok := state.PublisherSequences["old"]; ok || state.PublisherSequences["p1"] != 2 {
		t.Errorf("publishers carried %v, want p1 at 2 and not old (idle 20 minutes)", state.PublisherSequences)
	}

	// Second run from that state.
	s2 := newSuite(t)
	var got, next *pollResult
	s2.at(time.Second, func() {
		if n := s2.offsetQuery(); n != 3 {
			t.Errorf("offset after restore: %d, want 3", n)
		}
		s2.env.SignalWorkflow(streams.PublishSignal, batch("p1", 2, testItem{"events", "c"})) // a resend
		s2.env.SignalWorkflow(streams.PublishSignal, batch("p1", 3, testItem{"events", "d"}))
		got = s2.poll(streams.PollInput{Topics: []string{}, FromOffset: 1})
		next = s2.poll(streams.PollInput{Topics: []string{"events"}, FromOffset: 4})
	})
	s2.at(2*time.Second, func() { s2.env.SignalWorkflow(sigPublish, testItem{"events", "e"}) })
	s2.at(3*time.Second, func() { s2.env.SignalWorkflow(sigFinish, nil) })
	s2.run(hostInput{State: &state, Runs: 1})
	v := s2.result()
	want(t, "from 1", decoded(t, got.res.Items), []string{"1 tokens=b", "2 events=c", "3 events=d"})
	want(t, "waiting from 4", decoded(t, next.res.Items), []string{"4 events=e"})
	if v.Duplicates != 1 || v.Offset != 5 {
		t.Errorf("host %+v, want 1 duplicate, offset 5", v)
	}
}

// TestPollWaitsAndDrain: a poll beyond the end waits for its item; a poll
// waiting when the host drains is answered empty (with a next offset that
// does not go back); a poll that would wait after Drain is rejected with
// StreamDraining, one that finds items is answered.
func TestPollWaitsAndDrain(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	var beyond, parked, negative *pollResult
	s.at(time.Second, func() {
		s.env.SignalWorkflow(sigPublish, testItem{"events", "0"})
		beyond = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 2})
		parked = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 9})
		negative = s.poll(streams.PollInput{Topics: []string{}, FromOffset: -1})
	})
	s.at(2*time.Second, func() {
		if beyond.done {
			t.Error("a poll beyond the end returned before its item existed")
		}
		s.env.SignalWorkflow(sigPublish, testItem{"events", "1"})
		s.env.SignalWorkflow(sigPublish, testItem{"events", "2"})
	})
	s.at(3*time.Second, func() { s.env.SignalWorkflow(sigFinish, nil) })
	s.run(hostInput{})
	s.result()
	want(t, "beyond the end", decoded(t, beyond.res.Items), []string{"2 events=2"})
	if !parked.done || parked.err != nil || len(parked.res.Items) != 0 || parked.res.NextOffset != 9 {
		t.Errorf("parked poll at drain: %+v, %v; want empty, next 9", parked.res, parked.err)
	}
	if appType(negative.rejected) != streams.ErrTypeInvalidPoll {
		t.Errorf("negative offset: %v, want rejected %s", negative.rejected, streams.ErrTypeInvalidPoll)
	}
}

// TestDrainRejectsWaitingPolls: after Drain, a poll that would wait is
// rejected by the validator; one with items to read is answered.
func TestDrainRejectsWaitingPolls(t *testing.T) {
	t.Parallel()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) error {
		h, err := streams.NewHost(ctx, nil, streams.HostConfig{})
		if err != nil {
			return err
		}
		if err := h.Publish("events", "a"); err != nil {
			return err
		}
		if err := h.Drain(ctx); err != nil {
			return err
		}
		return workflow.Sleep(ctx, time.Hour)
	}
	env.RegisterWorkflow(wf)
	var rejected, answered error
	var items int
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(streams.PollUpdate, "wait", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { rejected = err }, OnComplete: func(any, error) {},
		}, streams.PollInput{Topics: []string{}, FromOffset: 1})
		env.UpdateWorkflow(streams.PollUpdate, "read", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { answered = err },
			OnComplete: func(v any, err error) {
				answered = err
				if err == nil {
					items = len(v.(streams.PollResult).Items)
				}
			},
		}, streams.PollInput{Topics: []string{}, FromOffset: 0})
	}, time.Minute)
	env.ExecuteWorkflow(wf)
	if appType(rejected) != streams.ErrTypeStreamDraining {
		t.Errorf("waiting poll after drain: %v, want rejected %s", rejected, streams.ErrTypeStreamDraining)
	}
	if answered != nil || items != 1 {
		t.Errorf("poll with items after drain: %v, %d items; want 1 item", answered, items)
	}
}

// TestHostPublishRefusesOversizedItem: an item above MaxItemBytes is refused
// and the log is unchanged.
func TestHostPublishRefusesOversizedItem(t *testing.T) {
	t.Parallel()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) (int64, error) {
		h, err := streams.NewHost(ctx, nil, streams.HostConfig{})
		if err != nil {
			return 0, err
		}
		if err := h.Publish("events", strings.Repeat("x", streams.MaxItemBytes)); err == nil {
			return 0, errors.New("an oversized item was published")
		}
		return h.Offset(), nil
	}
	env.RegisterWorkflow(wf)
	env.ExecuteWorkflow(wf)
	var off int64
	if err := env.GetWorkflowResult(&off); err != nil || off != 0 {
		t.Fatalf("offset %d, %v; want 0", off, err)
	}
}

// TestRestoreRejectsCorruptState: a state whose log does not decode is an
// error from NewHost, not a panic.
func TestRestoreRejectsCorruptState(t *testing.T) {
	t.Parallel()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(streamWorkflow)
	env.ExecuteWorkflow(streamWorkflow, hostInput{State: &streams.State{Log: []streams.WireItem{{Topic: "events", Data: "%%"}}}})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "log item 0") {
		t.Fatalf("workflow error %v, want one naming log item 0", err)
	}
}

// TestPollsServedAfterCancellation: a cancelled workflow still answers the
// polls parked on it, here with the item it publishes while winding down.
func TestPollsServedAfterCancellation(t *testing.T) {
	t.Parallel()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) error {
		h, err := streams.NewHost(ctx, nil, streams.HostConfig{})
		if err != nil {
			return err
		}
		err = workflow.Await(ctx, func() bool { return false })
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if err := h.Publish("events", "bye"); err != nil {
			return err
		}
		if err := h.Drain(dctx); err != nil {
			return err
		}
		return err
	}
	env.RegisterWorkflow(wf)
	var got streams.PollResult
	var pollErr error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(streams.PollUpdate, "parked", &testsuite.TestUpdateCallback{
			OnAccept: func() {}, OnReject: func(err error) { pollErr = err },
			OnComplete: func(v any, err error) {
				pollErr = err
				if err == nil {
					got = v.(streams.PollResult)
				}
			},
		}, streams.PollInput{Topics: []string{}})
	}, time.Minute)
	env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Minute)
	env.ExecuteWorkflow(wf)
	if pollErr != nil {
		t.Fatalf("the parked poll failed: %v", pollErr)
	}
	want(t, "parked poll", decoded(t, got.Items), []string{"0 events=bye"})
}

// TestPollAnswerCapped: an answer stops before the item that would pass
// the 1,000,000-byte cap, with more_ready and next_offset at that item.
func TestPollAnswerCapped(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	big := strings.Repeat("x", 400_000) // ~533 KB of base64 each
	var first, rest *pollResult
	s.at(time.Second, func() {
		for range 3 {
			s.env.SignalWorkflow(sigPublish, testItem{"events", big})
		}
	})
	s.at(2*time.Second, func() {
		first = s.poll(streams.PollInput{Topics: []string{}})
		rest = s.poll(streams.PollInput{Topics: []string{}, FromOffset: 1})
	})
	s.at(3*time.Second, func() { s.env.SignalWorkflow(sigFinish, nil) })
	s.run(hostInput{})
	s.result()
	if len(first.res.Items) != 1 || !first.res.MoreReady || first.res.NextOffset != 1 {
		t.Errorf("first answer: %d items, more %v, next %d; want 1, true, 1", len(first.res.Items), first.res.MoreReady, first.res.NextOffset)
	}
	if len(rest.res.Items) != 1 || !rest.res.MoreReady || rest.res.NextOffset != 2 || rest.res.Items[0].Offset != 1 {
		t.Errorf("second answer: %d items, more %v, next %d; want item 1, true, 2", len(rest.res.Items), rest.res.MoreReady, rest.res.NextOffset)
	}
}

// TestOpenPollsCapped: with 8 polls that would wait, the host keeps
// DefaultMaxOpenPolls of them open and refuses the other 2 at once in the
// validator (ErrTypeStreamDraining with BusyDetail, so upstream subscribers
// poll again after their cooldown); a poll that finds items is answered
// over the cap; once an item arrives the 6 waiting polls get it, and a
// poll that would wait is admitted again.
func TestOpenPollsCapped(t *testing.T) {
	t.Parallel()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) error {
		h, err := streams.NewHost(ctx, nil, streams.HostConfig{})
		if err != nil {
			return err
		}
		if err := h.Publish("events", "a"); err != nil {
			return err
		}
		if err := workflow.Sleep(ctx, 2*time.Minute); err != nil {
			return err
		}
		if err := h.Publish("events", "b"); err != nil {
			return err
		}
		return workflow.Sleep(ctx, time.Hour)
	}
	env.RegisterWorkflow(wf)
	type outcome struct {
		rejected, failed error
		items            int
		done             bool
	}
	poll := func(id string, from int64) *outcome {
		o := &outcome{}
		env.UpdateWorkflow(streams.PollUpdate, id, &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { o.rejected, o.done = err, true },
			OnComplete: func(v any, err error) {
				o.failed, o.done = err, true
				if err == nil {
					o.items = len(v.(streams.PollResult).Items)
				}
			},
		}, streams.PollInput{Topics: []string{}, FromOffset: from})
		return o
	}
	var waiting []*outcome
	var reader, late *outcome
	env.RegisterDelayedCallback(func() {
		for i := range 8 {
			waiting = append(waiting, poll(fmt.Sprintf("wait-%d", i), 1))
		}
		reader = poll("read", 0)
	}, time.Minute)
	env.RegisterDelayedCallback(func() { late = poll("late", 2) }, 3*time.Minute)
	env.ExecuteWorkflow(wf)

	var busy, got int
	for i, o := range waiting {
		switch {
		case o.rejected != nil:
			var appErr *temporal.ApplicationError
			var detail string
			if !errors.As(o.rejected, &appErr) || appErr.Type() != streams.ErrTypeStreamDraining || appErr.Details(&detail) != nil || detail != streams.BusyDetail ||
				!strings.Contains(o.rejected.Error(), "holds 6 polls open already (at most 6") {
				t.Errorf("poll %d refused with %v; want %s with detail %q", i, o.rejected, streams.ErrTypeStreamDraining, streams.BusyDetail)
			}
			busy++
		case o.done && o.failed == nil && o.items == 1:
			got++
		default:
			t.Errorf("poll %d: %+v", i, o)
		}
	}
	if busy != 8-streams.DefaultMaxOpenPolls || got != streams.DefaultMaxOpenPolls {
		t.Fatalf("%d refused as busy, %d answered with the new item; want %d and %d", busy, got, 8-streams.DefaultMaxOpenPolls, streams.DefaultMaxOpenPolls)
	}
	if reader.rejected != nil || reader.items != 1 {
		t.Fatalf("a poll that finds items over the cap: %+v; want it answered with 1 item", reader)
	}
	if late.rejected != nil {
		t.Fatalf("a waiting poll after the others were answered: refused (%v); want it admitted", late.rejected)
	}
}
