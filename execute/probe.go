package execute

import (
	"context"
	"fmt"
	"regexp"

	"github.com/agentrun/agentrun/agent"
)

// answerLen bounds the probe answer kept for people.
const answerLen = 300

// Probe asks the probe of a write step (step.Settle.Probe) whether the
// write took effect: it calls the probe's read tool with its arguments
// rendered from the write's (prepared: see Prepare) arguments and key, and
// reads the answer with the probe's expressions. A failed call, a timeout,
// an error result or an answer that both or neither expression matches is
// agent.ProbeUnknown; the error is only for ctx ending first. A found
// result larger than agent.InlineLimit is put in the store.
func (e *Executor) Probe(ctx context.Context, step agent.Step) (agent.ProbeAnswer, error) {
	if step.Settle == nil || step.Settle.Probe == nil || step.Call == nil {
		return agent.ProbeAnswer{}, fmt.Errorf("step %s: no probe to ask", step.Name)
	}
	step, err := e.Prepare(ctx, step) // the write's arguments as it ran with them
	if err != nil {
		return agent.ProbeAnswer{}, err
	}
	p := step.Settle.Probe
	unknown := func(format string, args ...any) (agent.ProbeAnswer, error) {
		return agent.ProbeAnswer{Tool: p.Tool, Verdict: agent.ProbeUnknown, Answer: agent.Clip(fmt.Sprintf(format, args...), answerLen)}, nil
	}
	args, err := p.RenderArgs(step.Call.Args, step.Settle.Key)
	if err != nil {
		return unknown("not asked: %v", err)
	}
	res, err := e.holding(p.Tool).Tools.Call(ctx, p.Tool, args)
	if ctx.Err() != nil {
		return agent.ProbeAnswer{}, fmt.Errorf("step %s: probe %s: %w", step.Name, p.Tool, context.Cause(ctx))
	}
	if err != nil {
		return unknown("the call failed: %v", err)
	}
	if res.IsError {
		return unknown("an error: %s", res.Content)
	}
	found, err1 := regexp.Compile(p.Found)
	notFound, err2 := regexp.Compile(p.NotFound)
	if err1 != nil || err2 != nil { // checked when the tools were opened
		return unknown("bad expressions: %v", fmt.Errorf("%w %w", err1, err2))
	}
	m, none := found.FindStringSubmatch(res.Content), notFound.MatchString(res.Content)
	ans := agent.ProbeAnswer{Tool: p.Tool, Verdict: agent.ProbeUnknown, Answer: agent.Clip(res.Content, answerLen)}
	switch {
	case m != nil && !none:
		ans.Verdict = agent.ProbeFound
		out := agent.ToolResult{Content: res.Content}
		if len(m) > 1 {
			out.Content = m[1]
		}
		if out.Content, out.ContentRef, err = e.stash(ctx, out.Content); err != nil {
			return agent.ProbeAnswer{}, fmt.Errorf("step %s: keep the probe's result: %w", step.Name, err)
		}
		ans.Result = agent.EncodeToolResult(out)
	case m == nil && none:
		ans.Verdict = agent.ProbeNotFound
	case m != nil:
		ans.Answer = agent.Clip("it matches both found and not_found: "+res.Content, answerLen)
	default:
		ans.Answer = agent.Clip("it matches neither found nor not_found: "+res.Content, answerLen)
	}
	return ans, nil
}

// holding returns the executor whose tools have the named tool: e, or the
// named agent's that has it (a name is one tool on a worker).
func (e *Executor) holding(tool string) *Executor {
	if _, ok := e.Tools.Lookup(tool); ok {
		return e
	}
	for _, n := range e.Named {
		if _, ok := n.Tools.Lookup(tool); ok {
			return n
		}
	}
	return e
}
