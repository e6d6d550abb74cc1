package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// pairSide is one side of a paired comparison (encryption on and off,
// tracing on and off): the same runs on a client and worker of its own.
type pairSide struct {
	name   string
	client client.Client
	queue  string
	store  content.Store
	times  []time.Duration // wall time per activity of each measured run
	ids    []string        // the measured runs' workflow ids
}

// startSide starts a worker of AgentRun for s on its own queue under
// env's folder name, playing script with the content store s.store and
// the read tool readNotes of size bytes; stop stops it and its tools.
func startSide(env *benchEnv, s *pairSide, dir string, script llm.Script, opts agentOptions, size int) (stop func(), err error) {
	return startAgentWorker(s.client, s.queue, script, dir, s.store, env.logger, opts, readNotes{size: size})
}

// runPaired runs in on both sides rounds+1 times, the first a warm-up
// that is not measured, and keeps each measured run's wall time per
// activity (n activities a run). The sides alternate which goes first, so
// that neither always runs right after the other (a server that has just
// written a run's history, a collector that has just run). measuring, if
// not nil, is called as the measured rounds begin. Every run must end
// with n-1 steps.
func runPaired(ctx context.Context, prefix string, sides [2]*pairSide, in workflows.Input, n, rounds int, measuring func()) error {
	stamp := runStamp()
	for round := 0; round <= rounds; round++ {
		order := sides
		if round%2 == 1 {
			order = [2]*pairSide{sides[1], sides[0]}
		}
		if round == 1 && measuring != nil {
			measuring()
		}
		for _, s := range order {
			id := fmt.Sprintf("%s-%s-%s-%d", prefix, s.name, stamp, round)
			start := time.Now()
			r, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: s.queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
			if err != nil {
				return err
			}
			var res workflows.Result
			if err := r.Get(ctx, &res); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			if res.Steps != n-1 {
				return fmt.Errorf("%s: %d steps, want %d", id, res.Steps, n-1)
			}
			if round > 0 {
				s.times = append(s.times, time.Since(start)/time.Duration(n))
				s.ids = append(s.ids, id)
			}
		}
	}
	return nil
}
