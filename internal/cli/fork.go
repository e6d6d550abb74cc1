package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
)

// The fork and eval commands (agent.Fork), for either engine: the
// arguments are parsed and checked here, before anything is opened; an
// engine that can fork is a forker (the local one: forklocal.go).

// ForkUsage is the fork commands' part of ReconcileUsage.
const ForkUsage = `  fork RUN --from STEP [--agent A | --model M] [--system FILE] [--id NEW] [--ack-writes] [--replay]
                             a new run that goes on from STEP of the ended RUN (the steps
                             before it come from RUN's record: no model call, no tool runs),
                             on another agent, model (--local: a spec as AGENTRUN_MODEL) or system
                             prompt; a fork before writes RUN made is refused until
                             --ack-writes; --replay runs no tool (calls are answered from
                             RUN's record) and prints how the fork departs. Default id:
                             RUN-fork-STEP-HASH (STEP's slashes as dots, 6 hex digits of
                             what the fork asks), the same for the same fork
  eval --from STEP [--agent A | --model M] RUN...
                             replay each RUN from STEP onto the agent or model (default:
                             RUN's agent as the workers have it now, say after a model
                             change): one drift line per run, then a summary; runs no tool`

// forkArgs are the arguments of fork or eval.
type forkArgs struct {
	Eval    bool
	Origins []string   // fork: one; eval: one or more
	Fork    agent.Fork // Origin unset
	System  string     // --system FILE: the file ("" for none)
	ID      string     // --id: the fork's id ("" for agent.ForkID)
}

// forker is an engine that can fork runs: the local one (forklocal.go)
// and Temporal (forkremote.go).
type forker interface {
	fork(ctx context.Context, w io.Writer, a forkArgs) error
	eval(ctx context.Context, w io.Writer, a forkArgs) error
}

// forkCommand runs fork or eval on e, or says that e cannot fork yet.
func forkCommand(ctx context.Context, w io.Writer, e runs, args []string) error {
	a, err := parseFork(args)
	if err != nil {
		return err
	}
	f, ok := e.(forker)
	if !ok {
		return fmt.Errorf("%s: this engine cannot fork", args[0])
	}
	if a.Eval {
		return f.eval(ctx, w, a)
	}
	return f.fork(ctx, w, a)
}

// parseFork checks the arguments of fork or eval (args[0]).
func parseFork(args []string) (forkArgs, error) {
	a := forkArgs{Eval: args[0] == "eval"}
	cmd := args[0]
	values := map[string]*string{"--from": &a.Fork.From, "--agent": &a.Fork.Agent, "--model": &a.Fork.Model, "--system": &a.System, "--id": &a.ID}
	flags := map[string]*bool{"--ack-writes": &a.Fork.AckWrites, "--replay": &a.Fork.Replay}
	seen := map[string]bool{}
	for i := 1; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		name = "--" + strings.TrimLeft(name, "-")
		if !strings.HasPrefix(args[i], "-") {
			a.Origins = append(a.Origins, args[i])
			continue
		}
		if seen[name] {
			return a, usagef("%s: %s is given twice; want it once", cmd, name)
		}
		seen[name] = true
		if b, ok := flags[name]; ok && !hasValue {
			*b = true
			continue
		}
		v, ok := values[name]
		if !ok {
			return a, usagef("%s: unknown option %s; want %s", cmd, args[i], forkSpec(a.Eval))
		}
		if !hasValue {
			if i+1 == len(args) {
				return a, usagef("%s: %s needs a value; want %s", cmd, name, forkSpec(a.Eval))
			}
			i++
			value = args[i]
		}
		*v = value
	}
	switch {
	case a.Fork.From == "":
		return a, usagef("%s: --from STEP is missing; want %s", cmd, forkSpec(a.Eval))
	case !agent.ValidStep(a.Fork.From):
		return a, usagef("%s: --from %q is not a step name; want %s", cmd, agent.Clip(a.Fork.From, 80), agent.StepFormat)
	case a.Fork.Agent != "" && a.Fork.Model != "":
		return a, usagef("%s: --agent and --model are given together; want one (an agent has its own model)", cmd)
	case a.Eval && (a.ID != "" || a.Fork.AckWrites || a.Fork.Replay || a.System != ""):
		return a, usagef("eval takes --from, --agent or --model and runs; --id, --system, --ack-writes and --replay are fork's (an eval is a replay)")
	case a.Eval && len(a.Origins) == 0:
		return a, usagef("eval: no run given; want %s", forkSpec(true))
	case !a.Eval && len(a.Origins) != 1:
		return a, usagef("fork takes one RUN; got %d; want %s", len(a.Origins), forkSpec(false))
	case a.Fork.Agent != "" && !agent.ValidToolName(a.Fork.Agent):
		return a, usagef("%s: --agent %q is not an agent name; want %s", cmd, agent.Clip(a.Fork.Agent, 80), agent.ToolNameRule)
	}
	a.Fork.Replay = a.Fork.Replay || a.Eval
	for _, id := range append(append([]string(nil), a.Origins...), a.ID) {
		if err := operator.ValidRunID(id); id != "" && err != nil {
			return a, usagef("%s: %v", cmd, err)
		}
	}
	return a, nil
}

// forkSpec is the form of fork's or eval's arguments.
func forkSpec(eval bool) string {
	if eval {
		return "eval --from STEP [--agent A | --model M] RUN..."
	}
	return "fork RUN --from STEP [--agent A | --model M] [--system FILE] [--id NEW] [--ack-writes] [--replay]"
}

// ask is the fork of origin a asks, its system prompt read from its file.
func (a forkArgs) ask(origin string) (agent.Fork, error) {
	f := a.Fork
	f.Origin = origin
	if a.System != "" {
		b, err := os.ReadFile(a.System)
		if err != nil {
			return f, usagef("fork: --system: %v", err)
		}
		s := string(b)
		f.System = &s
	}
	return f, nil
}

// lineage says where a fork comes from, for show: one line, and one more
// per acknowledged write.
func lineage(f *journal.Forked) []string {
	changes := []string{}
	if f.Ask.Agent != "" {
		changes = append(changes, "agent "+f.Ask.Agent)
	}
	if f.Ask.Model != "" {
		changes = append(changes, "model "+f.Ask.Model)
	}
	if f.Ask.System != nil {
		changes = append(changes, fmt.Sprintf("system prompt replaced (%s)", agent.Clip(*f.Ask.System, 60)))
	}
	if f.Ask.Replay {
		changes = append(changes, "replay: no tool runs, calls answered from the origin's record")
	}
	if len(changes) == 0 {
		changes = append(changes, "nothing else changed")
	}
	out := []string{fmt.Sprintf("fork of run %s from %s (the steps before it are %s's, %s): %s", f.Ask.Origin, f.Ask.From, f.Ask.Origin, plural(f.Point.Base, "model call"), strings.Join(changes, "; "))}
	for _, w := range f.Point.Hazards {
		what := "not made again: a replay runs no tool"
		if f.Point.Acked {
			what = "acknowledged: the fork may make it again"
		}
		out = append(out, fmt.Sprintf("origin's write %s: %s", w, what))
	}
	return out
}

// evalSummary counts an eval's runs as they are printed.
type evalSummary struct {
	runs, departed, executions int
	failed                     []error
}

// add prints one run's drift (or why it was not evaluated) and counts it.
func (s *evalSummary) add(w io.Writer, origin string, d agent.Drift, executions int, err error) {
	if err != nil {
		fmt.Fprintf(w, "%s: not evaluated: %v\n", origin, err)
		s.failed = append(s.failed, err)
		return
	}
	fmt.Fprintln(w, d.String())
	s.runs, s.executions = s.runs+1, s.executions+executions
	if d.Departed != "" {
		s.departed++
	}
}

// print prints the summary table; an error when some of the asked runs
// were not evaluated.
func (s *evalSummary) print(w io.Writer, asked int) error {
	fmt.Fprintf(w, "\nruns  departed  unchanged  tool executions\n%4d  %8d  %9d  %15d\n", s.runs, s.departed, s.runs-s.departed, s.executions)
	if len(s.failed) > 0 {
		return fmt.Errorf("%d of %d run(s) not evaluated: %w", len(s.failed), asked, s.failed[0])
	}
	return nil
}
