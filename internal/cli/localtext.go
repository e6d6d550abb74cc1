package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/local"
)

// localText is the local engine's executor when starter --local --stream
// asks for the model's text as it comes: a model step's text is printed
// while the model writes it, after a "[llm/N]" label, and its line ends
// when the step returns. The recorded reply is the same either way. Other
// steps, and a provider that does not stream, print nothing.
type localText struct {
	*execute.Executor // Prepare too, for the journal
	w                 io.Writer
	// agent names the agent tool of a child run, whose labels it prefixes
	// ("[filer llm/1]"); "" for the run itself.
	agent string
}

// Execute runs step, printing a model step's text as it arrives.
func (e localText) Execute(ctx context.Context, step agent.Step) (json.RawMessage, error) {
	if step.Kind != agent.KindModel {
		return e.Executor.Execute(ctx, step)
	}
	var (
		mu      sync.Mutex
		started bool
		midLine bool
	)
	res, err := e.Stream(ctx, step, func(delta string) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			fmt.Fprintf(e.w, "[%s] ", strings.TrimPrefix(e.agent+" "+step.Name, " "))
			started = true
		}
		fmt.Fprint(e.w, delta)
		midLine = !strings.HasSuffix(delta, "\n")
	})
	mu.Lock()
	defer mu.Unlock()
	if midLine {
		fmt.Fprintln(e.w)
	}
	return res, err
}

// printInfo prints a local run as show does: where it stands, with the
// commands that unblock it.
func printInfo(w io.Writer, op engine, info local.RunInfo) error {
	v := runView{
		Header:  fmt.Sprintf("run %s: %s (%s)", info.RunID, info.Status, plural(info.Records, "record")),
		Outcome: infoOutcome(info),
	}
	v.Stopped = stoppedLine(op, info)
	for _, s := range info.Steps {
		res, _ := json.Marshal(s.Result)
		line := fmt.Sprintf("%-28s %-5s %-10s starts=%d result=%s", s.Name, s.Kind, s.State, s.Starts, res)
		if s.Settled != nil {
			line += " (" + s.Settled.String() + ")"
		}
		if s.Replayed == agent.ReplayedNone {
			line += " (replay: the origin made no such call; no tool ran)"
		} else if s.Replayed != "" {
			line += " (replayed from the origin's " + s.Replayed + "; no tool ran)"
		}
		v.Steps = append(v.Steps, line)
	}
	if info.Fork != nil {
		v.Tail = append(v.Tail, lineage(info.Fork)...)
	}
	if c := info.Child; c != nil {
		v.Tail = append(v.Tail, fmt.Sprintf("at a call of agent %s: child run %s is %s; see it with %s", c.Agent, c.RunID, c.Status, op.reconcile("show", c.RunID)))
	}
	if info.Parent != "" {
		v.Tail = append(v.Tail, fmt.Sprintf("the child run of agent %s called by run %s, which drives it; see that run with %s", info.Agent, info.Parent, op.reconcile("show", info.Parent)))
	}
	for _, e := range info.Expired {
		v.Tail = append(v.Tail, fmt.Sprintf("approval expired: %s was denied (%s)", e.Marker, e.Reason))
	}
	v.Tail = append(v.Tail, budgetLine(info.Turns, info.Usage, info.Budget))
	printRun(w, op, info.RunID, v)
	return nil
}

// stoppedLine says, for a local run that is Running, why its last driver
// stopped (run.stopped) and whether a driver runs it now, with the command
// that resumes it when none does; "" when there is nothing to say.
func stoppedLine(op engine, info local.RunInfo) string {
	if info.Status != agent.StatusRunning {
		return ""
	}
	resume := "resume with " + op.resume(info.RunID)
	switch {
	case !op.asked:
		if info.Stopped != nil {
			return fmt.Sprintf("%s; %s", info.Stopped, resume)
		}
		return ""
	case op.driver != nil:
		who := "a driver"
		if op.driver.PID > 0 {
			who = fmt.Sprintf("a driver (process %d)", op.driver.PID)
		}
		if info.Stopped != nil {
			return fmt.Sprintf("the last driver %s; %s runs it now", info.Stopped, who)
		}
		return who + " runs it now"
	case info.Stopped != nil:
		return fmt.Sprintf("%s; no driver runs it now: %s", info.Stopped, resume)
	default:
		return "no driver runs it now (its last driver ended without recording why: killed, or its host went down): " + resume
	}
}
