package execute_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// docTool is a read tool whose result is a text of a fixed size that depends
// on the "key" of its arguments, so that every call's result is distinct and
// the test can say what the model should see. It remembers the arguments it
// was called with.
type docTool struct {
	name string
	size int

	mu   sync.Mutex
	args []json.RawMessage
}

func (d *docTool) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: d.name, Kind: agent.KindRead, Description: "reads a document by key"}
}

func (d *docTool) Call(_ context.Context, args json.RawMessage) (agent.ToolResult, error) {
	d.mu.Lock()
	d.args = append(d.args, bytes.Clone(args))
	d.mu.Unlock()
	return agent.ToolResult{Content: doc(args, d.size)}, nil
}

// calls returns the arguments of every call so far.
func (d *docTool) calls() []json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.args)
}

// doc is the document of size bytes a docTool returns for args: lines
// naming the key, so that a preview shows a line break.
func doc(args json.RawMessage, size int) string {
	var a struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(args, &a) // a document for "" is still a document
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%s line %04d: the quick brown fox jumps over the lazy dog\n", a.Key, i)
	}
	return b.String()[:size]
}

// recorder is a provider that records every request it receives (a deep
// copy, so that nothing the executor does later changes the record) and
// answers with the provider it wraps.
type recorder struct {
	llm.Provider

	mu   sync.Mutex
	reqs []agent.ModelRequest
}

func record(p llm.Provider) *recorder { return &recorder{Provider: p} }

func (r *recorder) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, cloneRequest(req))
	r.mu.Unlock()
	return r.Provider.Complete(ctx, req)
}

// requests returns the requests so far, oldest first.
func (r *recorder) requests() []agent.ModelRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// last returns the newest request.
func (r *recorder) last(t testing.TB) agent.ModelRequest {
	t.Helper()
	reqs := r.requests()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	return reqs[len(reqs)-1]
}

func cloneRequest(req agent.ModelRequest) agent.ModelRequest {
	return agent.ModelRequest{Messages: cloneMessages(req.Messages), Tools: slices.Clone(req.Tools)}
}

func cloneMessages(msgs []agent.Message) []agent.Message {
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].ContentRef != nil {
			r := *out[i].ContentRef
			out[i].ContentRef = &r
		}
		out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
		for j := range out[i].ToolCalls {
			out[i].ToolCalls[j].Args = bytes.Clone(out[i].ToolCalls[j].Args)
		}
	}
	return out
}

// fakeModel is a provider whose reply to model call n (the number of
// assistant messages in the request, plus one) is replies[n-1].
type fakeModel struct {
	replies []agent.Message
}

func (*fakeModel) Name() string { return "fake" }

func (f *fakeModel) Complete(_ context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	n := 1
	for _, m := range req.Messages {
		if m.Role == agent.RoleAssistant {
			n++
		}
	}
	if n > len(f.replies) {
		return agent.ModelReply{}, fmt.Errorf("fake model: no reply for call %d", n)
	}
	msg := f.replies[n-1]
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	reason := agent.FinishStop
	if len(msg.ToolCalls) > 0 {
		reason = agent.FinishToolCalls
	}
	return agent.ModelReply{Message: msg, FinishReason: reason}, nil
}

// driver drives one run as the workflow does: the loop from a checkpoint
// over the facts it has not forgotten, each step handed to a worker in its
// JSON form.
type driver struct {
	loop   agent.Loop
	budget agent.Budget
	cp     agent.Checkpoint
	facts  *agent.Facts
	// results keeps every result, also those the facts forgot.
	results map[string]json.RawMessage
}

func newDriver(set *tools.Set, toolsKey string, maxTurns int, input []agent.Message) *driver {
	return &driver{
		loop:    agent.Loop{Tools: set.Specs(), ToolsKey: toolsKey},
		budget:  agent.Budget{MaxTurns: maxTurns},
		cp:      agent.Start(input),
		facts:   agent.NewFacts(),
		results: map[string]json.RawMessage{},
	}
}

// next returns the next step as a worker receives it and its encoded size,
// or the outcome where the run stops.
func (d *driver) next(t testing.TB) (agent.Step, int, *agent.Outcome) {
	t.Helper()
	dec := d.budget.Limit(d.loop.Next(d.cp, d.facts), agent.Usage{})
	d.cp = dec.Checkpoint
	d.facts.Forget(d.cp)
	if dec.Outcome != nil {
		return agent.Step{}, 0, dec.Outcome
	}
	b, err := json.Marshal(*dec.Step)
	if err != nil {
		t.Fatalf("encode step %s: %v", dec.Step.Name, err)
	}
	var step agent.Step
	if err := json.Unmarshal(b, &step); err != nil {
		t.Fatalf("decode step %s: %v", dec.Step.Name, err)
	}
	return step, len(b), nil
}

// record keeps the result of a step.
func (d *driver) record(name string, res json.RawMessage) {
	d.facts.Results[name] = res
	d.results[name] = res
}

// exec executes step with e and records its result.
func (d *driver) exec(t testing.TB, ctx context.Context, e *execute.Executor, step agent.Step) json.RawMessage {
	t.Helper()
	res, err := e.Execute(ctx, step)
	if err != nil {
		t.Fatalf("execute %s: %v", step.Name, err)
	}
	d.record(step.Name, res)
	return res
}

// runTo executes steps with e until the next one is model step llm/n,
// which it returns unexecuted.
func (d *driver) runTo(t testing.TB, ctx context.Context, e *execute.Executor, n int) agent.Step {
	t.Helper()
	want := agent.ModelStep(n)
	for {
		step, _, out := d.next(t)
		if out != nil {
			t.Fatalf("the run stopped before %s: %+v", want, *out)
		}
		if step.Name == want {
			return step
		}
		d.exec(t, ctx, e, step)
	}
}

// finish executes steps with e until the run stops and returns the outcome.
func (d *driver) finish(t testing.TB, ctx context.Context, e *execute.Executor) agent.Outcome {
	t.Helper()
	for {
		step, _, out := d.next(t)
		if out != nil {
			return *out
		}
		d.exec(t, ctx, e, step)
	}
}

// reads is a script of n turns, each calling tool once with the arguments
// args(turn), then a final answer.
func reads(n int, tool string, args func(turn int) string, final string) llm.Script {
	var s llm.Script
	for i := 1; i <= n; i++ {
		s.Turns = append(s.Turns, llm.Turn{ToolCalls: []llm.ScriptedCall{{Name: tool, Args: json.RawMessage(args(i))}}})
	}
	s.Turns = append(s.Turns, llm.Turn{Text: final})
	return s
}

// keyArgs returns the arguments of turn n of a run named run.
func keyArgs(run string) func(int) string {
	return func(n int) string { return fmt.Sprintf(`{"key":"%s/%d"}`, run, n) }
}

// conversation is what a scripted model should see at model call k: the
// input, then for each earlier turn the reply with its calls (their
// arguments as JSON records them) and a result per call, from result.
func conversation(t testing.TB, input []agent.Message, s llm.Script, k int, result func(name string, args json.RawMessage) string) []agent.Message {
	t.Helper()
	msgs := slices.Clone(input)
	for n := 1; n < k; n++ {
		turn := s.Turns[n-1]
		reply := agent.Message{Role: agent.RoleAssistant}
		var results []agent.Message
		for i, c := range turn.ToolCalls {
			args := c.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			args = recorded(t, args)
			id := fmt.Sprintf("call_%d_%d", n, i)
			reply.ToolCalls = append(reply.ToolCalls, agent.ToolCall{ID: id, Name: c.Name, Args: args})
			results = append(results, agent.Message{Role: agent.RoleTool, ToolCallID: id, Name: c.Name, Content: result(c.Name, args), Step: agent.ToolStep(n, i, c.Name)})
		}
		msgs = append(append(msgs, reply), results...)
	}
	return msgs
}

// recorded is what JSON makes of inline arguments (compact, HTML escaped).
func recorded(t testing.TB, args json.RawMessage) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatalf("arguments %s: %v", args, err)
	}
	return b
}

// sameMessages fails with the first difference between got and want.
func sameMessages(t testing.TB, what string, got, want []agent.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(normal(got[i]), normal(want[i])) {
			t.Fatalf("%s: message %d is\n  %s\nwant\n  %s", what, i, brief(got[i]), brief(want[i]))
		}
	}
}

// normal makes equal messages deeply equal: no calls is nil calls.
func normal(m agent.Message) agent.Message {
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	return m
}

// brief is a message for a failure report, long texts cut and arguments
// as they are (JSON would compact them).
func brief(m agent.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %.200q (%d bytes)", m.Role, m.Content, len(m.Content))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, " call %s %s %.200q", c.ID, c.Name, c.Args)
	}
	if m.ContentRef != nil {
		fmt.Fprintf(&b, " ref %+v", *m.ContentRef)
	}
	if m.ToolCallID != "" || m.Step != "" || m.IsError {
		fmt.Fprintf(&b, " answers %s %s step %s error %v", m.ToolCallID, m.Name, m.Step, m.IsError)
	}
	return b.String()
}

// newSet returns a tool set of ts.
func newSet(t testing.TB, ts ...tools.Tool) *tools.Set {
	t.Helper()
	set, err := tools.NewSet(ts...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// since returns what s counted since before.
func since(s *content.Counting, before content.Stats) content.Stats {
	now := s.Stats()
	return content.Stats{Puts: now.Puts - before.Puts, Gets: now.Gets - before.Gets, BytesPut: now.BytesPut - before.BytesPut, BytesGot: now.BytesGot - before.BytesGot}
}

// decodeReply decodes a model step's recorded result.
func decodeReply(t testing.TB, raw json.RawMessage) agent.ModelReply {
	t.Helper()
	r, err := agent.DecodeModelReply(raw)
	if err != nil {
		t.Fatalf("decode reply: %v", err)
	}
	return r
}

// decodeResult decodes a tool step's recorded result.
func decodeResult(t testing.TB, raw json.RawMessage) agent.ToolResult {
	t.Helper()
	r, err := agent.DecodeToolResult(raw)
	if err != nil {
		t.Fatalf("decode tool result: %v", err)
	}
	return r
}

// chainKeys returns the node keys of a conversation, newest first, read
// from the store without the executor.
func chainKeys(t testing.TB, s content.Store, head string) []string {
	t.Helper()
	var keys []string
	for key := head; key != ""; {
		keys = append(keys, key)
		b, err := s.Get(t.Context(), key)
		if err != nil {
			t.Fatalf("node %s: %v", key, err)
		}
		var n struct {
			Prev string `json:"prev"`
		}
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatalf("node %s: %v", key, err)
		}
		key = n.Prev
	}
	return keys
}
