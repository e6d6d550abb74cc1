package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/tools"
)

// Executor runs steps with a model provider, a tool set and a content
// store. A read that outlasts its tool's timeout becomes an error result
// the model sees; a write that does is an error (its effect is unknown: the
// engine's guard turns it into Indeterminate).
type Executor struct {
	Model llm.Provider
	// Models holds the models of the agent tools that name their own, by
	// agent name (BuildModels); an agent that names none uses Model.
	Models map[string]llm.Provider
	Tools  *tools.Set
	// Content keeps large values and conversations. Required.
	Content content.Store
	// ContextBudget bounds the estimated tokens of a model request (about
	// four bytes a token); 0 means no bound.
	// LimitWait is how long a model step may wait for its rate limit's
	// slot; the worker sets it when a model declares limits (and is
	// wrapped by llm.Limited). Default 0: no limits.
	LimitWait     time.Duration
	ContextBudget int
	// ModelTimeout is the model's request timeout, which the provider
	// applies; an engine gives a model step more time than this. 0 means
	// llm.DefaultTimeout.
	ModelTimeout time.Duration
	// FailOnCut says that a final answer cut off by the model's length
	// limit fails the run; an engine puts it in its loop (agent.Loop).
	FailOnCut bool
	// FailOnEmpty says that a final answer with no text fails the run; an
	// engine puts it in its loop (agent.Loop).
	FailOnEmpty bool
	// Logger gets the executor's lines; slog.Default() when nil.
	Logger *slog.Logger
	// System is the system prompt of the agent this executor runs, which
	// its catalog records and a run puts first; "" for none. Only a named
	// agent's executor has one (Named).
	System string
	// Approve is the agent's approval rule: for each tool call the model
	// asks for, agent.ApprovalAlways, ApprovalNever, ApprovalDeny, or ""
	// to leave the call to its tool's Approval. The model step records its
	// decision in the call (agent.ToolCall.Approval); a tool step runs
	// only when the rule now decides no stricter. An unknown answer is
	// ApprovalAlways. An error (or a panic) is no decision: the model step
	// fails with a *RuleError, which is not transient, and a tool step is
	// refused (CheckApproval). Default nil: no rule.
	Approve func(agent.ToolCall) (string, error)
	// Named holds the agents a run may name at its start (the library's
	// agents, agentrun.Config), by name: each runs with its own model,
	// tools and system prompt and this executor's store. Agent finds them
	// before the agent tools of Tools.
	Named map[string]*Executor
	// NoStart says that a run may not name this agent at its start (one
	// of Named): only another agent's call runs it. Default false.
	NoStart bool

	once  sync.Once
	cache *cache

	agentMu sync.Mutex
	agents  map[string]*Executor // the executors of child runs, by agent (Agent)

	keyMu    sync.Mutex
	keySet   *tools.Set // the set toolsKey is the key of
	toolsKey string
}

var _ agent.Executor = (*Executor)(nil)

// ContentError is a reference whose content is missing from the store or
// damaged there. It wraps content.ErrNotFound or content.ErrDamaged.
type ContentError struct {
	Step string
	Key  string
	Err  error
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("step %s: content %s: %v", e.Step, e.Key, e.Err)
}

func (e *ContentError) Unwrap() error { return e.Err }

// RuleError is the failure of a model step whose approval rule could not
// decide a call the model asked for (Executor.Approve failed or panicked).
// It is not transient: no call of the reply runs, and the step fails.
type RuleError struct {
	Step string
	Err  error
}

func (e *RuleError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }

func (e *RuleError) Unwrap() error { return e.Err }

func (e *Executor) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

func (e *Executor) caches() *cache {
	e.once.Do(func() { e.cache = newCache() })
	return e.cache
}

// Execute runs step and returns its result in recorded form.
func (e *Executor) Execute(ctx context.Context, step agent.Step) (json.RawMessage, error) {
	return e.Stream(ctx, step, nil)
}

// Stream runs step like Execute; for a model step whose provider streams
// (llm.Streamer) it also passes the reply's text to text as it arrives.
// With a nil text, or a provider that does not stream, it is Execute. The
// result is the same either way: the recorded reply, not the pieces.
func (e *Executor) Stream(ctx context.Context, step agent.Step, text func(delta string)) (json.RawMessage, error) {
	switch {
	case step.Kind == agent.KindModel && step.Model != nil:
		reply, err := e.callModel(ctx, step, text)
		if err != nil {
			return nil, err
		}
		return agent.EncodeModelReply(reply)
	case step.Call != nil:
		step, err := e.Prepare(ctx, step)
		if err != nil {
			return nil, err
		}
		// The programs' test-only hold points inside a write, for both
		// engines (AGENTRUN_TEST_HOLD_*, in ctx from internal/cli): without
		// them, one context lookup.
		if err := testhook.Hold(ctx, e.logger(), testhook.Before, step); err != nil {
			return nil, err
		}
		res, err := e.Tools.Call(ctx, step.Call.Name, step.Call.Args)
		if err == nil {
			if err := testhook.Hold(ctx, e.logger(), testhook.After, step); err != nil { // likewise, after the effect
				return nil, err
			}
		}
		if errors.Is(err, tools.ErrTimeout) && step.Kind == agent.KindRead {
			// A read that timed out changed nothing: the model hears of it.
			res, err = agent.ToolResult{IsError: true, Content: err.Error()}, nil
		}
		if err != nil {
			return nil, err
		}
		return e.Keep(ctx, step.Name, res)
	}
	return nil, fmt.Errorf("step %s: nothing to execute", step.Name)
}

// Keep returns a tool step's result res in recorded form, its content in
// the store when it is larger than agent.InlineLimit.
func (e *Executor) Keep(ctx context.Context, step string, res agent.ToolResult) (json.RawMessage, error) {
	var err error
	if res.Content, res.ContentRef, err = e.stash(ctx, res.Content); err != nil {
		return nil, fmt.Errorf("step %s: keep the result: %w", step, err)
	}
	return agent.EncodeToolResult(res), nil
}

// Timeout is how long the named tool may run (its tools.Set timeout): the
// deadline of a write's attempt.
func (e *Executor) Timeout(tool string) time.Duration { return e.Tools.Timeout(tool) }

// Prepare returns a tool step with its arguments inline, read from the
// store when they are a reference, and its idempotency key filled in when
// its tool takes one (step.Settle). An engine calls it before a write's
// guard records the start, so that a missing value never looks like a write
// that may have run.
func (e *Executor) Prepare(ctx context.Context, step agent.Step) (agent.Step, error) {
	if step.Call == nil {
		return step, nil
	}
	c := *step.Call
	if c.ArgsRef != nil {
		b, err := e.get(ctx, step.Name, c.ArgsRef.Key)
		if err != nil {
			return step, err
		}
		c.Args, c.ArgsRef = b, nil
	}
	if s := step.Settle; s != nil && s.KeyArg != "" {
		if s.Key == "" {
			return step, fmt.Errorf("step %s: the engine gave no idempotency key for argument %q", step.Name, s.KeyArg)
		}
		// Arguments that are not an object are left to the tool, which
		// tells the model they are wrong.
		if args, err := agent.FillKey(c.Args, s.KeyArg, s.Key); err == nil {
			c.Args = args
		}
	}
	step.Call = &c
	return step, nil
}

// callModel builds the request from the conversation, asks the model, and
// returns the reply with large values by reference and the conversation
// extended by the step's new messages and the reply.
func (e *Executor) callModel(ctx context.Context, step agent.Step, text func(string)) (agent.ModelReply, error) {
	in := step.Model
	past, err := e.messages(ctx, step.Name, in.Conversation)
	if err != nil {
		return agent.ModelReply{}, err
	}
	added, err := e.Resolve(ctx, step.Name, in.New)
	if err != nil {
		return agent.ModelReply{}, err
	}
	specs, err := e.toolSpecs(ctx, step.Name, in.Tools)
	if err != nil {
		return agent.ModelReply{}, err
	}
	all := append(past, added...)
	msgs, elided := fit(all, specs, e.ContextBudget)
	req := agent.ModelRequest{Messages: msgs, Tools: specs}
	var reply agent.ModelReply
	if s, ok := e.Model.(llm.Streamer); ok && text != nil {
		reply, err = s.Stream(ctx, req, text)
	} else {
		reply, err = e.Model.Complete(ctx, req)
	}
	if err != nil {
		return agent.ModelReply{}, err
	}
	if reply.Model == "" {
		reply.Model = e.Model.Name()
	}
	reply.Elided = elided
	reply.Message.Role = agent.RoleAssistant
	said := reply.Message                 // as the provider said it
	if len(reply.Message.ToolCalls) > 0 { // a final answer stays inline: it is the run's result
		if reply.Message.Content, reply.Message.ContentRef, err = e.stash(ctx, reply.Message.Content); err != nil {
			return agent.ModelReply{}, fmt.Errorf("step %s: keep the reply: %w", step.Name, err)
		}
	}
	calls := make([]agent.ToolCall, len(reply.Message.ToolCalls))
	for i, c := range reply.Message.ToolCalls {
		if c.Approval, err = e.decide(c); err != nil { // never the model's word
			return agent.ModelReply{}, &RuleError{Step: step.Name, Err: err}
		}
		if len(c.Args) > agent.InlineLimit {
			key, err := e.put(ctx, c.Args)
			if err != nil {
				return agent.ModelReply{}, fmt.Errorf("step %s: keep the arguments of call %d: %w", step.Name, i, err)
			}
			c.ArgsRef, c.Args = &agent.Ref{Key: key, Size: len(c.Args), Preview: preview(string(c.Args))}, nil
		}
		calls[i] = c
	}
	reply.Message.ToolCalls = calls
	full, err := readBack(reply.Message, said)
	if err != nil {
		return agent.ModelReply{}, fmt.Errorf("step %s: encode the reply: %w", step.Name, err)
	}
	newMsgs := append(append([]agent.Message(nil), in.New...), reply.Message)
	conv, err := e.extend(ctx, in.Conversation, newMsgs, append(append(past, added...), full))
	if err != nil {
		return agent.ModelReply{}, fmt.Errorf("step %s: keep the conversation: %w", step.Name, err)
	}
	if conv.Head != in.Conversation.Head {
		reply.Conversation = &conv
	}
	// Otherwise the conversation stayed inline: it is the input's, its new
	// messages and the reply, which the loop derives from the input it
	// built (agent.Loop), so the result does not repeat them.
	return reply, nil
}

// readBack returns the reply msg, in recorded form, as an executor that
// reads it back from the store sees it: through JSON (which compacts inline
// arguments, escapes HTML characters and mends invalid UTF-8), with its
// references resolved to the values of said, the reply as the provider said
// it. The cache keeps this form, so that the model sees the same bytes
// whichever executor builds the request, warm or cold.
func readBack(msg, said agent.Message) (agent.Message, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return agent.Message{}, err
	}
	var m agent.Message
	if err := json.Unmarshal(b, &m); err != nil {
		return agent.Message{}, err
	}
	if m.ContentRef != nil {
		m.Content, m.ContentRef = said.Content, nil
	}
	for i := range m.ToolCalls {
		if m.ToolCalls[i].ArgsRef != nil {
			m.ToolCalls[i].Args, m.ToolCalls[i].ArgsRef = said.ToolCalls[i].Args, nil
		}
	}
	return m, nil
}

// toolSpecs returns the tool specs stored under key, or the executor's own
// tools for "". Decoded specs are cached by key (every model step of a run
// names the same); the slice returned is the caller's, the specs in it are
// shared and never to be modified.
func (e *Executor) toolSpecs(ctx context.Context, step, key string) ([]agent.ToolSpec, error) {
	if key == "" {
		return e.Tools.Specs(), nil
	}
	c := e.caches()
	if specs, ok := c.specs.get(key); ok {
		return slices.Clone(specs), nil
	}
	b, err := e.get(ctx, step, key)
	if err != nil {
		return nil, err
	}
	var specs []agent.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		return nil, &ContentError{Step: step, Key: key, Err: fmt.Errorf("%w: not a list of tool specs: %v", content.ErrDamaged, err)}
	}
	c.specs.put(key, slices.Clip(specs), len(b))
	return slices.Clone(specs), nil
}

// PutTools keeps the tool specs in the store and returns their key, for
// model steps to refer to.
func (e *Executor) PutTools(ctx context.Context) (string, error) {
	b, err := json.Marshal(e.Tools.Specs())
	if err != nil {
		return "", err
	}
	return e.put(ctx, b)
}

// ToolsKey returns the key PutTools gives the executor's tool specs,
// without storing them: what a model step of a run this worker's tools
// started refers to. It is computed once per tool set.
func (e *Executor) ToolsKey() (string, error) {
	e.keyMu.Lock()
	defer e.keyMu.Unlock()
	if e.keySet == e.Tools && e.toolsKey != "" {
		return e.toolsKey, nil
	}
	b, err := json.Marshal(e.Tools.Specs())
	if err != nil {
		return "", err
	}
	e.keySet, e.toolsKey = e.Tools, content.KeyOf(b)
	return e.toolsKey, nil
}

// decide returns what the approval rule decides for call ("" without a
// rule): an answer that is none of the decisions asks a person; a rule
// that fails or panics decides nothing, and the error says so.
func (e *Executor) decide(call agent.ToolCall) (d string, err error) {
	if e.Approve == nil {
		return "", nil
	}
	defer func() {
		if p := recover(); p != nil {
			e.logger().Error("the approval rule panicked", "tool", call.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			d, err = "", fmt.Errorf("the approval rule panicked on a call of %s: %s", call.Name, strings.Join(strings.Fields(fmt.Sprint(p)), " "))
		}
	}()
	d, err = e.Approve(call)
	switch {
	case err != nil:
		return "", err
	case d == "", d == agent.ApprovalAlways, d == agent.ApprovalNever, d == agent.ApprovalDeny:
		return d, nil
	}
	return agent.ApprovalAlways, nil
}

// CheckApproval returns why the tool step s (its arguments prepared: see
// Prepare) may not run on this executor, "" when it may: the approval
// decision it carries is not the rule's to make (there is no rule), or the
// rule now decides stricter than the decision the run acted on (a person's
// approval where the rule now denies, no approval where it now asks).
func (e *Executor) CheckApproval(s agent.Step, spec agent.ToolSpec) string {
	if s.Call == nil {
		return ""
	}
	if e.Approve == nil {
		if s.Call.Approval != "" {
			return fmt.Sprintf("step %s carries the approval decision %q, and this worker has no approval rule to make one", s.Name, s.Call.Approval)
		}
		return ""
	}
	now := *s.Call
	var err error
	if now.Approval, err = e.decide(now); err != nil {
		return fmt.Sprintf("step %s: the approval rule decides nothing: %v", s.Name, err)
	}
	was, is := agent.GateWrites{}.Decide(spec, *s.Call), agent.GateWrites{}.Decide(spec, now)
	if is.Verdict > was.Verdict {
		return fmt.Sprintf("step %s ran by the approval decision %q; this worker's rule now decides %q for it", s.Name, s.Call.Approval, now.Approval)
	}
	return ""
}
