package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
)

var _ forker = (*Remote)(nil)

// forkOptions are a's fork of origin as the client takes it. A model spec
// is the local engine's: on Temporal the workers' own agents run forks.
func (a forkArgs) forkOptions(origin string) (agentrun.ForkOptions, error) {
	f, err := a.ask(origin)
	if err != nil {
		return agentrun.ForkOptions{}, err
	}
	if f.Model != "" {
		cmd := "fork"
		if a.Eval {
			cmd = "eval"
		}
		return agentrun.ForkOptions{}, usagef("%s --model is the local engine's (reconcile --local); on Temporal a fork runs one of the workers' agents: --agent A", cmd)
	}
	o := agentrun.ForkOptions{From: f.From, ID: a.ID, Agent: f.Agent, AckWrites: f.AckWrites, Replay: f.Replay}
	if f.System != nil {
		o.System = *f.System
	}
	return o, nil
}

// forkClient is the client of forks: it reads histories with the codec.
func (r *Remote) forkClient() *agentrun.Client {
	c, _ := agentrun.NewClient(r.Conn, agentrun.ClientOptions{TaskQueue: r.Settings.TaskQueue, DataConverter: codec.DataConverter(r.Settings.Config.Codec)})
	return c
}

// fork starts the fork a names on the workers and shows it; a replay is
// waited for and its drift printed.
func (r *Remote) fork(ctx context.Context, w io.Writer, a forkArgs) error {
	origin := a.Origins[0]
	opts, err := a.forkOptions(origin)
	if err != nil {
		return err
	}
	run, err := r.forkClient().Fork(ctx, origin, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s: a fork of run %s from %s\n", run.ID(), origin, opts.From)
	if opts.Replay {
		if _, err := run.Wait(ctx); err != nil {
			return err
		}
		d, err := r.forkClient().Drift(ctx, run.ID())
		if err != nil {
			return err
		}
		fmt.Fprintln(w, d.String())
	}
	return r.show(ctx, w, run.ID())
}

// eval replays each run a names onto a's agent, waits for the replays and
// prints their drift, then the summary. A replay that exists already (the
// same fork asked before) is read, not started again.
func (r *Remote) eval(ctx context.Context, w io.Writer, a forkArgs) error {
	var sum evalSummary
	for _, origin := range a.Origins {
		d, n, err := r.evalOne(ctx, origin, a)
		sum.add(w, origin, d, n, err)
	}
	return sum.print(w, len(a.Origins))
}

func (r *Remote) evalOne(ctx context.Context, origin string, a forkArgs) (agent.Drift, int, error) {
	opts, err := a.forkOptions(origin)
	if err != nil {
		return agent.Drift{}, 0, err
	}
	c := r.forkClient()
	run, err := c.Fork(ctx, origin, opts)
	if errors.Is(err, agentrun.ErrRunExists) {
		f, _ := a.ask(origin)
		run, err = c.Run(agent.ForkID(f)), nil
	}
	if err != nil {
		return agent.Drift{}, 0, err
	}
	if _, err := run.Wait(ctx); err != nil {
		return agent.Drift{}, 0, err
	}
	d, err := c.Drift(ctx, run.ID())
	if err != nil {
		return agent.Drift{}, 0, err
	}
	rec, err := activities.ReadRecorded(ctx, r.Conn, codec.DataConverter(r.Settings.Config.Codec), run.ID(), 1)
	if err != nil {
		return agent.Drift{}, 0, err
	}
	return d, len(rec.Calls), nil // every CallTool the replay scheduled
}
