package execute_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
)

// argsOfSize returns JSON arguments of exactly n bytes naming key, with
// whitespace and characters JSON would escape, so that only a byte-exact
// copy compares equal.
func argsOfSize(key string, n int) json.RawMessage {
	head := fmt.Sprintf(`{ "key": "%s", "pad": "<&`, key)
	tail := `" }`
	return json.RawMessage(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// text returns a text of n bytes with a line break near its start and a
// three-byte character across agent.PreviewLen, so that a preview must cut
// before it.
func text(n int) string {
	s := "first line\nsecond line " + strings.Repeat("y", agent.PreviewLen-1-len("first line\nsecond line ")) + "€"
	return s + strings.Repeat("z", n-len(s))
}

// checkRef checks a reference to value: its key, its size, and a preview
// of at most agent.PreviewLen bytes and an ellipsis, on one line, cut at a
// character boundary.
func checkRef(t *testing.T, what string, ref *agent.Ref, value []byte, store content.Store) {
	t.Helper()
	if ref == nil {
		t.Fatalf("%s: no reference, want one for %d bytes", what, len(value))
	}
	if ref.Key != content.KeyOf(value) || ref.Size != len(value) {
		t.Errorf("%s: reference %s of %d bytes, want %s of %d", what, ref.Key, ref.Size, content.KeyOf(value), len(value))
	}
	p, cut := strings.CutSuffix(ref.Preview, "…")
	if !cut || len(p) > agent.PreviewLen || !utf8.ValidString(p) || strings.ContainsAny(p, "\n\r") {
		t.Errorf("%s: preview %q, want at most %d bytes of valid UTF-8 on one line and an ellipsis", what, ref.Preview, agent.PreviewLen)
	}
	if want := strings.NewReplacer("\n", " ", "\r", " ").Replace(string(value[:len(p)])); p != want {
		t.Errorf("%s: preview %q, want the start of the value %q", what, p, want)
	}
	got, err := store.Get(t.Context(), ref.Key)
	if err != nil || !bytes.Equal(got, value) {
		t.Errorf("%s: the store holds %.40q, %v; want the value", what, got, err)
	}
}

// TestLargeValues checks which values a step keeps by reference: tool
// results, reply texts with tool calls and tool arguments above
// agent.InlineLimit; not those at the limit, and never a final answer.
func TestLargeValues(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := &content.Counting{Store: content.NewMemStore()}
	docs := &docTool{name: "doc", size: 4096}
	exact := &docTool{name: "exact", size: agent.InlineLimit}
	over := &docTool{name: "over", size: agent.InlineLimit + 1}
	set := newSet(t, docs, exact, over)
	bigArgs := argsOfSize("big", 3000)
	limitArgs := argsOfSize("limit", agent.InlineLimit)
	overArgs := argsOfSize("over", agent.InlineLimit+1)
	replyText, limitText, answer := text(2000), text(agent.InlineLimit), text(5000)
	fake := &fakeModel{replies: []agent.Message{
		{Content: replyText, ToolCalls: []agent.ToolCall{
			{ID: "a", Name: "doc", Args: bigArgs},
			{ID: "b", Name: "exact", Args: limitArgs},
			{ID: "c", Name: "over", Args: json.RawMessage(`{"key":"o"}`)},
		}},
		{Content: limitText, ToolCalls: []agent.ToolCall{{ID: "d", Name: "over", Args: overArgs}}},
		{Content: answer},
	}}
	model := record(fake)
	e := &execute.Executor{Model: model, Tools: set, Content: store}
	input := agent.UserMessages("large values")
	d := newDriver(set, "", 5, input)

	// llm/1: the text and the big arguments by reference, the arguments at
	// the limit inline.
	step := d.runTo(t, ctx, e, 1)
	reply := decodeReply(t, d.exec(t, ctx, e, step))
	m := reply.Message
	if m.Content != "" {
		t.Errorf("llm/1: %d bytes of text inline, want them by reference", len(m.Content))
	}
	checkRef(t, "llm/1 text", m.ContentRef, []byte(replyText), store)
	if c := m.ToolCalls[0]; len(c.Args) != 0 {
		t.Errorf("llm/1 call 0: %d bytes of arguments inline, want them by reference", len(c.Args))
	}
	checkRef(t, "llm/1 call 0 arguments", m.ToolCalls[0].ArgsRef, bigArgs, store)
	if c := m.ToolCalls[1]; c.ArgsRef != nil || len(c.Args) == 0 {
		t.Errorf("llm/1 call 1: arguments %q by reference %+v, want %d bytes inline", c.Args, c.ArgsRef, len(limitArgs))
	}

	// tool/1/0/doc: the step refers to its arguments; Prepare restores them
	// byte for byte, and the tool gets them so.
	step, _, _ = d.next(t)
	if step.Name != "tool/1/0/doc" || step.Call.ArgsRef == nil || len(step.Call.Args) != 0 {
		t.Fatalf("step %s, call %+v; want tool/1/0/doc with its arguments by reference", step.Name, step.Call)
	}
	prepared, err := e.Prepare(ctx, step)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(prepared.Call.Args, bigArgs) || prepared.Call.ArgsRef != nil {
		t.Errorf("Prepare: arguments %.60q… (%d bytes), ref %+v; want the %d bytes as the model said them", prepared.Call.Args, len(prepared.Call.Args), prepared.Call.ArgsRef, len(bigArgs))
	}
	if step.Call.ArgsRef == nil {
		t.Error("Prepare changed the step it was given")
	}
	res := decodeResult(t, d.exec(t, ctx, e, step))
	if got := docs.calls(); len(got) != 1 || !bytes.Equal(got[0], bigArgs) {
		t.Errorf("the tool got %q, want the arguments byte for byte", got)
	}
	// A 4 KB result by reference.
	if res.Content != "" {
		t.Errorf("tool/1/0/doc: %d bytes inline, want them by reference", len(res.Content))
	}
	checkRef(t, "tool/1/0/doc result", res.ContentRef, []byte(doc(bigArgs, 4096)), store)

	// tool/1/1/exact: a result of exactly agent.InlineLimit bytes stays
	// inline; tool/1/2/over: one byte more does not.
	step, _, _ = d.next(t)
	res = decodeResult(t, d.exec(t, ctx, e, step))
	if res.ContentRef != nil || len(res.Content) != agent.InlineLimit {
		t.Errorf("%s: %d bytes inline, reference %+v; want %d bytes inline", step.Name, len(res.Content), res.ContentRef, agent.InlineLimit)
	}
	step, _, _ = d.next(t)
	res = decodeResult(t, d.exec(t, ctx, e, step))
	if res.Content != "" {
		t.Errorf("%s: %d bytes inline, want them by reference", step.Name, len(res.Content))
	}
	checkRef(t, step.Name+" result", res.ContentRef, []byte(doc(json.RawMessage(`{"key":"o"}`), agent.InlineLimit+1)), store)

	// llm/2: the model sees every value whole, the arguments as it said
	// them; a text at the limit stays inline, arguments one byte over do
	// not.
	step, _, _ = d.next(t)
	reply = decodeReply(t, d.exec(t, ctx, e, step))
	req := model.last(t)
	seen := req.Messages[1]
	if seen.Content != replyText || seen.ContentRef != nil || !bytes.Equal(seen.ToolCalls[0].Args, bigArgs) || seen.ToolCalls[0].ArgsRef != nil {
		t.Errorf("llm/2: the model saw the first reply as %s", brief(seen))
	}
	// Inline arguments as JSON records them, on every executor alike.
	if got := seen.ToolCalls[1].Args; !bytes.Equal(got, recorded(t, limitArgs)) {
		t.Errorf("llm/2: the model saw inline arguments as %.60q…, want them as recorded", got)
	}
	for i, want := range []string{doc(bigArgs, 4096), doc(limitArgs, agent.InlineLimit), doc(json.RawMessage(`{"key":"o"}`), agent.InlineLimit+1)} {
		if got := req.Messages[2+i]; got.Content != want || got.ContentRef != nil {
			t.Errorf("llm/2: the model saw result %d as %s", i, brief(got))
		}
	}
	if m := reply.Message; m.Content != limitText || m.ContentRef != nil {
		t.Errorf("llm/2: text %d bytes inline, reference %+v; want %d bytes inline", len(m.Content), m.ContentRef, agent.InlineLimit)
	}
	checkRef(t, "llm/2 call 0 arguments", reply.Message.ToolCalls[0].ArgsRef, overArgs, store)

	// The final answer stays inline whatever its size: it is the run's
	// result.
	out := d.finish(t, ctx, e)
	if out.Status != agent.StatusCompleted || out.Answer != answer {
		t.Fatalf("outcome %s with %d bytes, want Completed with the %d-byte answer", out.Status, len(out.Answer), len(answer))
	}
	final := decodeReply(t, d.results["llm/3"])
	if final.Message.ContentRef != nil || final.Message.Content != answer {
		t.Errorf("llm/3: the final answer is %d bytes inline, reference %+v; want %d bytes inline", len(final.Message.Content), final.Message.ContentRef, len(answer))
	}
	if got := model.last(t).Messages[5]; !bytes.Equal(got.ToolCalls[0].Args, overArgs) {
		t.Errorf("llm/3: the model saw the arguments of llm/2 as %.60q…", got.ToolCalls[0].Args)
	}
}

// missing is a store that has lost some blobs: Get returns ErrNotFound for
// them.
type missing struct {
	content.Store
	keys map[string]bool
}

func (m *missing) Get(ctx context.Context, key string) ([]byte, error) {
	if m.keys[key] {
		return nil, fmt.Errorf("get %s: %w", key, content.ErrNotFound)
	}
	return m.Store.Get(ctx, key)
}

// checkContentError checks that err is a *ContentError naming step and key
// that wraps target.
func checkContentError(t *testing.T, err error, step, key string, target error) {
	t.Helper()
	var ce *execute.ContentError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *execute.ContentError", err, err)
	}
	if ce.Step != step || ce.Key != key || !errors.Is(err, target) {
		t.Errorf("ContentError{Step: %s, Key: %s, Err: %v}, want step %s, key %s, wrapping %v", ce.Step, ce.Key, ce.Err, step, key, target)
	}
	if msg := err.Error(); !strings.Contains(msg, step) || !strings.Contains(msg, key) {
		t.Errorf("error %q names neither step %s nor key %s", msg, step, key)
	}
}

// TestMissingContent takes away, or damages, the files a run keeps in a
// FileStore and lets a cold executor continue the run: the step fails with
// a *ContentError naming the step and the key, never with a guess.
func TestMissingContent(t *testing.T) {
	t.Parallel()
	const turns = 6
	remove := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	damage := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Which blob of the run at llm/turns to harm.
	document := func(t *testing.T, _ content.Store, d *driver, _ agent.Step) string {
		return decodeResult(t, d.results["tool/2/0/read"]).ContentRef.Key
	}
	newest := func(_ *testing.T, _ content.Store, _ *driver, step agent.Step) string {
		return step.Model.Conversation.Head
	}
	oldest := func(t *testing.T, s content.Store, _ *driver, step agent.Step) string {
		keys := chainKeys(t, s, step.Model.Conversation.Head)
		if len(keys) < 2 {
			t.Fatalf("the chain has %d nodes, want an oldest that is not the newest", len(keys))
		}
		return keys[len(keys)-1]
	}
	for _, tc := range []struct {
		name   string
		key    func(*testing.T, content.Store, *driver, agent.Step) string
		harm   func(*testing.T, string)
		target error
	}{
		{"document removed", document, remove, content.ErrNotFound},
		{"document damaged", document, damage, content.ErrDamaged},
		{"newest node removed", newest, remove, content.ErrNotFound},
		{"newest node damaged", newest, damage, content.ErrDamaged},
		{"oldest node removed", oldest, remove, content.ErrNotFound},
		{"oldest node damaged", oldest, damage, content.ErrDamaged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dir := t.TempDir()
			store, err := content.NewFileStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			set := newSet(t, &docTool{name: "read", size: docSize})
			script := reads(turns, "read", keyArgs("lost"), "done")
			warm := &execute.Executor{Model: record(llm.NewScripted(script)), Tools: set, Content: store}
			d := newDriver(set, "", turns+1, agent.UserMessages("lose one"))
			step := d.runTo(t, ctx, warm, turns)
			key := tc.key(t, store, d, step)
			// Where content/doc.go says the blob lives.
			hex := strings.TrimPrefix(key, "sha256:")
			tc.harm(t, filepath.Join(dir, hex[:2], hex[2:]))

			cold := &execute.Executor{Model: record(llm.NewScripted(script)), Tools: set, Content: store}
			_, err = cold.Execute(ctx, step)
			checkContentError(t, err, step.Name, key, tc.target)
			// The warm executor has what it needs in its cache.
			if _, err := warm.Execute(ctx, step); err != nil {
				t.Errorf("the warm executor: %v", err)
			}
		})
	}
}

// TestContentErrors checks the other ways a step can meet content it
// cannot have: arguments by reference that are gone (Prepare, a tool step,
// and the model step that shows them to the model), tool specs that are
// gone, and conversations whose chain is not what it claims.
func TestContentErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base := content.NewMemStore()
	tool := &docTool{name: "doc", size: 100}
	set := newSet(t, tool)
	bigArgs := argsOfSize("big", 2000)
	fake := &fakeModel{replies: []agent.Message{
		{ToolCalls: []agent.ToolCall{{ID: "a", Name: "doc", Args: bigArgs}}},
		{Content: "done"},
	}}
	good := &execute.Executor{Model: fake, Tools: set, Content: base}
	d := newDriver(set, "", 3, agent.UserMessages("lose the arguments"))
	d.runTo(t, ctx, good, 2) // llm/1 and tool/1/0/doc
	toolStep, ok := d.loop.Find(agent.Start(agent.UserMessages("lose the arguments")), &agent.Facts{Results: d.results}, "tool/1/0/doc")
	if !ok || toolStep.Call.ArgsRef == nil {
		t.Fatalf("tool/1/0/doc: %+v, want a step with its arguments by reference", toolStep)
	}
	argsKey := toolStep.Call.ArgsRef.Key
	modelStep, _ := d.loop.Find(agent.Start(agent.UserMessages("lose the arguments")), &agent.Facts{Results: d.results}, "llm/2")
	lost := &missing{Store: base, keys: map[string]bool{argsKey: true}}
	cold := func() *execute.Executor { return &execute.Executor{Model: fake, Tools: set, Content: lost} }

	t.Run("Prepare", func(t *testing.T) {
		_, err := cold().Prepare(ctx, toolStep)
		checkContentError(t, err, "tool/1/0/doc", argsKey, content.ErrNotFound)
	})
	t.Run("tool step", func(t *testing.T) {
		calls := len(tool.calls())
		_, err := cold().Execute(ctx, toolStep)
		checkContentError(t, err, "tool/1/0/doc", argsKey, content.ErrNotFound)
		if len(tool.calls()) != calls {
			t.Error("the tool ran without its arguments")
		}
	})
	t.Run("model step", func(t *testing.T) {
		_, err := cold().Execute(ctx, modelStep)
		checkContentError(t, err, "llm/2", argsKey, content.ErrNotFound)
	})

	// Steps made by hand, on a store that holds what they name.
	put := func(b string) string {
		key, err := base.Put(ctx, []byte(b))
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	notNode := put("not a node")
	oneMessage := put(`{"stored":0,"messages":[{"role":"user","content":"hi"}]}`)
	gone := content.KeyOf([]byte("never stored"))
	user := agent.UserMessages("hi")
	for _, tc := range []struct {
		name   string
		in     agent.ModelInput
		key    string
		target error
	}{
		{"head is not a node", agent.ModelInput{Conversation: agent.Conversation{Head: notNode, Stored: 1}, New: user}, notNode, content.ErrDamaged},
		{"head holds fewer messages", agent.ModelInput{Conversation: agent.Conversation{Head: oneMessage, Stored: 5}, New: user}, oneMessage, content.ErrDamaged},
		{"head is gone", agent.ModelInput{Conversation: agent.Conversation{Head: gone, Stored: 1}, New: user}, gone, content.ErrNotFound},
		{"tool specs are gone", agent.ModelInput{New: user, Tools: gone}, gone, content.ErrNotFound},
		{"tool specs are not specs", agent.ModelInput{New: user, Tools: notNode}, notNode, content.ErrDamaged},
		{"a reference in the tail is gone", agent.ModelInput{Conversation: agent.Conversation{Tail: []agent.Message{{Role: agent.RoleUser, ContentRef: &agent.Ref{Key: gone, Size: 2000}}}}, New: user}, gone, content.ErrNotFound},
		{"a reference in the new messages is malformed", agent.ModelInput{New: []agent.Message{{Role: agent.RoleTool, ContentRef: &agent.Ref{Key: "sha256:nope", Size: 2000}}}}, "sha256:nope", content.ErrInvalidKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			e := &execute.Executor{Model: fake, Tools: set, Content: base}
			_, err := e.Execute(ctx, agent.Step{Name: "llm/7", Kind: agent.KindModel, Model: &in})
			checkContentError(t, err, "llm/7", tc.key, tc.target)
		})
	}
}
