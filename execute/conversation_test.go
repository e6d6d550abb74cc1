package execute_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
)

// docSize is the size of a document the long runs read: 4 KB, four times
// agent.InlineLimit.
const docSize = 4096

// TestLongConversationWarm runs 200 turns, each reading a 4 KB document, on
// one executor, and checks what each turn costs: the step a worker receives
// stays small, the model sees the whole conversation with the real
// contents, the bytes put are the turn's own and a warm executor reads
// nothing back.
func TestLongConversationWarm(t *testing.T) {
	t.Parallel()
	const turns = 200
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	read := &docTool{name: "read", size: docSize}
	set := newSet(t, read)
	script := reads(turns, "read", keyArgs("warm"), "read "+fmt.Sprint(turns)+" documents")
	model := record(llm.NewScripted(script))
	e := &execute.Executor{Model: model, Tools: set, Content: store}
	toolsKey, err := e.PutTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	input := agent.UserMessages("read the documents one by one")
	d := newDriver(set, toolsKey, turns+1, input)

	type turnStats struct {
		stepSize int           // the encoded model step
		store    content.Stats // the model step and its tool step
	}
	var per []turnStats // per[k-1] is turn k
	for {
		step, size, out := d.next(t)
		if out != nil {
			if out.Status != agent.StatusCompleted || out.Answer != script.Turns[turns].Text {
				t.Fatalf("outcome %+v, want Completed with %q", *out, script.Turns[turns].Text)
			}
			break
		}
		before := store.Stats()
		if step.Kind == agent.KindModel {
			per = append(per, turnStats{stepSize: size})
		}
		d.exec(t, ctx, e, step)
		s := since(store, before)
		cur := &per[len(per)-1].store
		cur.Puts += s.Puts
		cur.Gets += s.Gets
		cur.BytesPut += s.BytesPut
		cur.BytesGot += s.BytesGot
	}
	if len(per) != turns+1 {
		t.Fatalf("%d model steps, want %d", len(per), turns+1)
	}

	// (a) The step a worker receives is small and does not grow.
	maxEarly, maxLate, smallest, largest := 0, 0, per[0].stepSize, 0
	for k, s := range per {
		smallest, largest = min(smallest, s.stepSize), max(largest, s.stepSize)
		if s.stepSize > 2048 {
			t.Errorf("llm/%d: the encoded step is %d bytes, want at most 2 KiB", k+1, s.stepSize)
		}
		switch {
		case k >= 1 && k < 50:
			maxEarly = max(maxEarly, s.stepSize)
		case k >= turns-50:
			maxLate = max(maxLate, s.stepSize)
		}
	}
	// A few bytes more for the digits of larger counts.
	if maxLate > maxEarly+8 {
		t.Errorf("the step grows: at most %d bytes in turns 2-50, %d in turns %d-%d", maxEarly, maxLate, turns-49, turns+1)
	}

	// (b) The model saw the whole conversation every turn, with the real
	// contents.
	reqs := model.requests()
	if len(reqs) != turns+1 {
		t.Fatalf("the model received %d requests, want %d", len(reqs), turns+1)
	}
	result := func(_ string, args json.RawMessage) string { return doc(args, docSize) }
	want := conversation(t, input, script, turns+1, result)
	for k, req := range reqs {
		if n := len(req.Messages); n != 2*(k+1)-1 {
			t.Fatalf("request %d: %d messages, want %d", k+1, n, 2*(k+1)-1)
		}
		sameMessages(t, fmt.Sprintf("request %d", k+1), req.Messages, want[:2*(k+1)-1])
		if len(req.Tools) != 1 || req.Tools[0].Name != "read" {
			t.Fatalf("request %d: tools %+v, want the read tool", k+1, req.Tools)
		}
	}

	// (c) Bytes put are the turn's own: the document and a share of a node.
	var total content.Stats
	maxTurnPut := int64(0)
	for _, s := range per[:turns] {
		total.Puts += s.store.Puts
		total.Gets += s.store.Gets
		total.BytesPut += s.store.BytesPut
		maxTurnPut = max(maxTurnPut, s.store.BytesPut)
	}
	docs := int64(turns * docSize)
	if total.BytesPut*2 > docs*3 {
		t.Errorf("%d turns put %d bytes, %.2f times the %d bytes the tool returned; want at most 1.5", turns, total.BytesPut, float64(total.BytesPut)/float64(docs), docs)
	}
	// A node holds a tail of at most TailLimit bytes and one turn's
	// messages, which refer to the document.
	if maxTurnPut > docSize+2*execute.TailLimit {
		t.Errorf("a turn put %d bytes, want at most the document (%d) and a node", maxTurnPut, docSize)
	}

	// (d) A warm executor reads nothing back: what it needs, it wrote.
	for k, s := range per {
		if s.store.Gets != 0 {
			t.Errorf("turn %d: %d gets from the store, want 0 on a warm executor", k+1, s.store.Gets)
		}
	}
	t.Logf("%d turns: model steps of %d to %d bytes (turns 2-50 at most %d, the last 50 at most %d); put %d bytes in %d puts (%.0f bytes a turn, %.3f times the documents, at most %d in a turn); %d gets",
		turns, smallest, largest, maxEarly, maxLate, total.BytesPut, total.Puts, float64(total.BytesPut)/turns, float64(total.BytesPut)/float64(docs), maxTurnPut, total.Gets)
}

// TestColdWorker lets a second executor, with nothing cached, continue a
// run at turn 150 on the same store: it reads the chain once, sends the
// model the request the warm executor sends, records the same reply, and
// is warm from then on. The arguments carry whitespace, as some providers
// send them.
func TestColdWorker(t *testing.T) {
	t.Parallel()
	const turns, at = 160, 150
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	set := newSet(t, &docTool{name: "read", size: docSize})
	args := func(n int) string { return fmt.Sprintf(`{ "key": "cold/%d" }`, n) }
	script := reads(turns, "read", args, "done")
	warmModel, coldModel := record(llm.NewScripted(script)), record(llm.NewScripted(script))
	warm := &execute.Executor{Model: warmModel, Tools: set, Content: store}
	cold := &execute.Executor{Model: coldModel, Tools: set, Content: store}
	toolsKey, err := warm.PutTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	input := agent.UserMessages("read them all")
	d := newDriver(set, toolsKey, turns+1, input)
	step := d.runTo(t, ctx, warm, at+1)

	before := store.Stats()
	coldRes, err := cold.Execute(ctx, step)
	if err != nil {
		t.Fatal(err)
	}
	coldGets := since(store, before)
	before = store.Stats()
	warmRes, err := warm.Execute(ctx, step)
	if err != nil {
		t.Fatal(err)
	}
	warmGets := since(store, before)

	coldReq, warmReq := coldModel.last(t), warmModel.last(t)
	want := conversation(t, input, script, at+1, func(_ string, a json.RawMessage) string { return doc(a, docSize) })
	sameMessages(t, "the warm executor's request", warmReq.Messages, want)
	sameMessages(t, "the cold executor's request", coldReq.Messages, warmReq.Messages)
	if string(coldRes) != string(warmRes) {
		t.Errorf("the cold executor recorded\n  %s\nthe warm one\n  %s", coldRes, warmRes)
	}

	// Cold: the tool specs, every node of the chain and every document,
	// once each.
	nodes := len(chainKeys(t, store.Store, step.Model.Conversation.Head))
	if want := int64(1 + nodes + at); coldGets.Gets != want {
		t.Errorf("the cold executor made %d gets, want %d (the specs, %d nodes, %d documents)", coldGets.Gets, want, nodes, at)
	}
	if warmGets.Gets != 0 {
		t.Errorf("the warm executor made %d gets, want 0", warmGets.Gets)
	}

	// Then the cold executor is warm: it goes on reading nothing back.
	d.record(step.Name, coldRes)
	before = store.Stats()
	for {
		step, _, out := d.next(t)
		if out != nil {
			if out.Status != agent.StatusCompleted {
				t.Fatalf("outcome %+v", *out)
			}
			break
		}
		d.exec(t, ctx, cold, step)
	}
	if s := since(store, before); s.Gets != 0 {
		t.Errorf("the formerly cold executor made %d gets in the last %d turns, want 0", s.Gets, turns-at)
	}
	reqs := coldModel.requests()
	final := conversation(t, input, script, turns+1, func(_ string, a json.RawMessage) string { return doc(a, docSize) })
	sameMessages(t, "the last request", reqs[len(reqs)-1].Messages, final)
	t.Logf("turn %d: cold %d gets (%d bytes; %d nodes), warm %d gets", at+1, coldGets.Gets, coldGets.BytesGot, nodes, warmGets.Gets)
}

// TestWorkersTakeTurns runs the steps of one run on two executors, three
// steps on one, then three on the other, as a task queue with two workers
// may: each reads only what the other wrote since its last step.
func TestWorkersTakeTurns(t *testing.T) {
	t.Parallel()
	const turns = 40
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	set := newSet(t, &docTool{name: "read", size: docSize})
	script := reads(turns, "read", keyArgs("turns"), "done")
	model := record(llm.NewScripted(script))
	workers := []*execute.Executor{
		{Model: model, Tools: set, Content: store},
		{Model: model, Tools: set, Content: store},
	}
	input := agent.UserMessages("alternate")
	d := newDriver(set, "", turns+1, input)
	maxGets := int64(0)
	for i := 0; ; i++ {
		step, _, out := d.next(t)
		if out != nil {
			if out.Status != agent.StatusCompleted {
				t.Fatalf("outcome %+v", *out)
			}
			break
		}
		before := store.Stats()
		d.exec(t, ctx, workers[i/3%2], step)
		if n, _ := agent.StepTurn(step.Name); step.Kind == agent.KindModel && n > 3 {
			maxGets = max(maxGets, since(store, before).Gets)
		}
	}
	// The other worker wrote at most two documents and two nodes since.
	if maxGets > 4 {
		t.Errorf("a model step made %d gets, want at most 4", maxGets)
	}
	result := func(_ string, a json.RawMessage) string { return doc(a, docSize) }
	for k, req := range model.requests() {
		sameMessages(t, fmt.Sprintf("request %d", k+1), req.Messages, conversation(t, input, script, k+1, result))
	}
	t.Logf("alternating workers: at most %d gets a model step", maxGets)
}

// TestOldReplies continues a run whose first replies were recorded before
// conversations were kept by reference: no Conversation in the reply, the
// tool results inline whatever their size. The loop carries those messages
// inline and the executor takes over from there.
func TestOldReplies(t *testing.T) {
	t.Parallel()
	const turns, old = 8, 3
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	set := newSet(t, &docTool{name: "read", size: docSize})
	script := reads(turns, "read", keyArgs("old"), "the last one: "+llm.LastToolResult)
	model := record(llm.NewScripted(script))
	e := &execute.Executor{Model: model, Tools: set, Content: store}
	input := agent.UserMessages("read them, the old way first")
	d := newDriver(set, "", turns+1, input)

	// What an engine recorded before: replies without a conversation,
	// results inline.
	for n := 1; n <= old; n++ {
		call := agent.ToolCall{ID: fmt.Sprintf("call_%d_0", n), Name: "read", Args: json.RawMessage(keyArgs("old")(n))}
		reply, err := agent.EncodeModelReply(agent.ModelReply{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}}, FinishReason: agent.FinishToolCalls, Model: "scripted"})
		if err != nil {
			t.Fatal(err)
		}
		d.record(agent.ModelStep(n), reply)
		d.record(agent.ToolStep(n, 0, "read"), agent.EncodeToolResult(agent.ToolResult{Content: doc(call.Args, docSize)}))
	}

	result := func(_ string, a json.RawMessage) string { return doc(a, docSize) }
	var sizes []int
	for {
		step, size, out := d.next(t)
		if out != nil {
			want := "the last one: " + doc(json.RawMessage(keyArgs("old")(turns)), docSize)
			if out.Status != agent.StatusCompleted || out.Answer != want {
				t.Fatalf("outcome %s %.60q…, want Completed with %.60q…", out.Status, out.Answer, want)
			}
			break
		}
		if step.Kind == agent.KindModel {
			sizes = append(sizes, size)
		}
		d.exec(t, ctx, e, step)
	}
	reqs := model.requests()
	if len(reqs) != turns+1-old {
		t.Fatalf("the model received %d requests, want %d", len(reqs), turns+1-old)
	}
	for i, req := range reqs {
		k := old + 1 + i
		sameMessages(t, fmt.Sprintf("request %d", k), req.Messages, conversation(t, input, script, k, result))
	}
	// The first new step carries the old conversation inline; once the
	// executor has put it in a node the steps are small again.
	if sizes[0] < old*docSize {
		t.Errorf("llm/%d: the step is %d bytes, want the %d old documents inline", old+1, sizes[0], old)
	}
	for i, s := range sizes[1:] {
		if s > 2048 {
			t.Errorf("llm/%d: the step is %d bytes, want at most 2 KiB", old+2+i, s)
		}
	}
	t.Logf("model steps after %d old replies: %v bytes", old, sizes)
}

// TestMessagesAreTheCallers modifies what Messages returns in every way a
// caller might and checks that neither the conversation it was given, nor
// the next step, nor the next call of Messages sees it.
func TestMessagesAreTheCallers(t *testing.T) {
	t.Parallel()
	const turns = 12
	ctx := t.Context()
	store := content.NewMemStore()
	set := newSet(t, &docTool{name: "read", size: docSize})
	script := reads(turns, "read", keyArgs("mine"), "done")
	model := record(llm.NewScripted(script))
	e := &execute.Executor{Model: model, Tools: set, Content: store}
	input := agent.UserMessages("read")
	d := newDriver(set, "", turns+1, input)
	result := func(_ string, a json.RawMessage) string { return doc(a, docSize) }

	for k := 2; k <= turns+1; k++ {
		step := d.runTo(t, ctx, e, k)
		conv := step.Model.Conversation
		want := conversation(t, input, script, k, result)[:conv.Len()]
		asked := conv
		asked.Tail = cloneMessages(conv.Tail)
		msgs, err := e.Messages(ctx, "test", asked)
		if err != nil {
			t.Fatal(err)
		}
		sameMessages(t, fmt.Sprintf("Messages before llm/%d", k), msgs, want)
		for i := range msgs {
			msgs[i].Content = "scribbled"
			msgs[i].Role = agent.RoleUser
			for j := range msgs[i].ToolCalls {
				msgs[i].ToolCalls[j].Name = "scribbled"
				for b := range msgs[i].ToolCalls[j].Args {
					msgs[i].ToolCalls[j].Args[b] = ' '
				}
			}
		}
		_ = append(msgs[:1], agent.Message{Role: agent.RoleSystem, Content: "appended"})
		if !reflect.DeepEqual(asked.Tail, conv.Tail) {
			t.Fatalf("before llm/%d: changing what Messages returned changed the conversation it was given", k)
		}
		d.exec(t, ctx, e, step)
		sameMessages(t, fmt.Sprintf("request %d", k), model.last(t).Messages, conversation(t, input, script, k, result))
		again, err := e.Messages(ctx, "test", conv)
		if err != nil {
			t.Fatal(err)
		}
		sameMessages(t, fmt.Sprintf("Messages again before llm/%d", k), again, want)
	}
}

// TestConcurrentRuns interleaves two runs on one executor in goroutines:
// each run's model sees its own conversation. Run it with -race.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	const turns = 30
	store := &content.Counting{Store: content.NewMemStore()}
	set := newSet(t, &docTool{name: "read", size: docSize})
	names := []string{"alpha", "beta"}
	scripts := map[string]llm.Script{}
	for _, name := range names {
		scripts[name] = reads(turns, "read", keyArgs(name), "done with "+name)
	}
	// One executor for both runs; its model answers each run from its
	// script, chosen by the prompt.
	model := record(&byPrompt{scripts: map[string]llm.Provider{}})
	for _, name := range names {
		model.Provider.(*byPrompt).scripts[name] = llm.NewScripted(scripts[name])
	}
	e := &execute.Executor{Model: model, Tools: set, Content: store}

	outcomes := make([]agent.Outcome, len(names))
	t.Run("runs", func(t *testing.T) {
		for i, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				d := newDriver(set, "", turns+1, agent.UserMessages(name))
				outcomes[i] = d.finish(t, t.Context(), e)
			})
		}
	})

	result := func(_ string, a json.RawMessage) string { return doc(a, docSize) }
	for i, name := range names {
		if o := outcomes[i]; o.Status != agent.StatusCompleted || o.Answer != "done with "+name {
			t.Errorf("run %s: outcome %+v", name, o)
		}
		k := 0
		for _, req := range model.requests() {
			if req.Messages[0].Content != name {
				continue
			}
			k++
			sameMessages(t, fmt.Sprintf("run %s, request %d", name, k), req.Messages, conversation(t, agent.UserMessages(name), scripts[name], k, result))
		}
		if k != turns+1 {
			t.Errorf("run %s: %d requests, want %d", name, k, turns+1)
		}
	}
}

// byPrompt answers with the provider named by the first message's text.
type byPrompt struct {
	scripts map[string]llm.Provider
}

func (*byPrompt) Name() string { return "by-prompt" }

func (b *byPrompt) Complete(ctx context.Context, req agent.ModelRequest) (agent.ModelReply, error) {
	p, ok := b.scripts[req.Messages[0].Content]
	if !ok {
		return agent.ModelReply{}, fmt.Errorf("no script for %q", strings.TrimSpace(req.Messages[0].Content))
	}
	return p.Complete(ctx, req)
}

// TestInlineTailNotRepeated runs a run of small tool results, whose
// conversation stays inline for a few turns at a time: a reply whose step
// kept the conversation inline records no conversation (the loop derives
// it from the step's input: its conversation, its new messages and the
// reply), so the reply is not recorded twice; a reply whose step put the
// tail in a node records the new head and nothing inline. The model sees
// the whole conversation at every turn either way.
func TestInlineTailNotRepeated(t *testing.T) {
	t.Parallel()
	const turns, size = 12, 60
	ctx := t.Context()
	set := newSet(t, &docTool{name: "read", size: size})
	script := reads(turns, "read", keyArgs("small"), "done")
	model := record(llm.NewScripted(script))
	e := &execute.Executor{Model: model, Tools: set, Content: content.NewMemStore()}
	input := agent.UserMessages("read the small ones")
	d := newDriver(set, "", turns+1, input)
	if out := d.finish(t, ctx, e); out.Status != agent.StatusCompleted || out.Answer != "done" {
		t.Fatalf("outcome %+v, want Completed with done", out)
	}
	inline, spilled := 0, 0
	for n := 1; n <= turns+1; n++ {
		raw := d.results[agent.ModelStep(n)]
		reply := decodeReply(t, raw)
		switch c := reply.Conversation; {
		case c == nil:
			inline++
		case c.Head == "" || len(c.Tail) != 0:
			t.Errorf("llm/%d: conversation %+v, want a new head and no tail", n, *c)
		default:
			spilled++
		}
		if k := strings.Count(string(raw), `"role":"assistant"`); k != 1 {
			t.Errorf("llm/%d: the result holds %d assistant messages, want the reply once: %s", n, k, raw)
		}
	}
	if inline == 0 || spilled == 0 {
		t.Fatalf("%d replies inline, %d put in a node; want both kinds", inline, spilled)
	}
	result := func(_ string, a json.RawMessage) string { return doc(a, size) }
	for k, req := range model.requests() {
		sameMessages(t, fmt.Sprintf("request %d", k+1), req.Messages, conversation(t, input, script, k+1, result))
	}
	t.Logf("%d replies inline, %d put the tail in a node", inline, spilled)
}
