package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// trialTimeout bounds one trial: the kill, the recovery (heartbeat
// timeout, retry backoff, delays) and the rest of the run.
const trialTimeout = 3 * time.Minute

// pollEvery is how often a trial polls the run.
const pollEvery = 20 * time.Millisecond

// prompt is the hand example's request.
const prompt = "I need read access to the orders database."

// Outcome is one trial's result.
type Outcome struct {
	Point Point
	// Hit: the process was really at the point when it was killed.
	Hit bool
	// Settled is "done" or "retry" when the run became Indeterminate and
	// the campaign settled it, "" when it did not.
	Settled string
	// Tickets is how many tickets the trial's ticket file holds.
	Tickets int
	// RepeatedModel counts model steps that completed more than once.
	RepeatedModel int
	Took          time.Duration
	// Failure is the first failed assertion, "" when the trial passed.
	Failure string
}

// fleet is one trial's world: its folder, ticket file, queue and workers.
type fleet struct {
	*env
	dir, tickets, queue, run string
	workers                  []*proc
	hosts                    int
}

func (f *fleet) baseEnv(host string) []string {
	return append(os.Environ(),
		"TEMPORAL_ADDRESS="+f.hostPort,
		"TEMPORAL_NAMESPACE=default",
		"AGENTRUN_TASK_QUEUE="+f.queue,
		"AGENTRUN_JOURNAL="+f.db,
		"AGENTRUN_TICKETS="+f.tickets,
		"AGENTRUN_MODEL=scripted",
		"HOME="+host,
		"TMPDIR="+host,
	)
}

// host returns a new empty folder for one process.
func (f *fleet) host() (string, error) {
	f.hosts++
	dir := filepath.Join(f.dir, fmt.Sprintf("host-%d", f.hosts))
	return dir, os.MkdirAll(dir, 0o755)
}

// start starts n workers, each on its own host, with extra environment.
func (f *fleet) start(ctx context.Context, n int, extra ...string) error {
	for range n {
		h, err := f.host()
		if err != nil {
			return err
		}
		w, err := startWorker(ctx, f.bins["worker"], h, append(f.baseEnv(h), extra...))
		if err != nil {
			return err
		}
		f.workers = append(f.workers, w)
	}
	return nil
}

// killPID SIGKILLs the worker with process id pid; false if none of the
// fleet's running workers has it.
func (f *fleet) killPID(pid int) bool {
	for i, w := range f.workers {
		if w.pid() == pid && w.running() {
			w.kill()
			f.workers = slices.Delete(f.workers, i, i+1)
			return true
		}
	}
	return false
}

func (f *fleet) killAll() {
	for _, w := range f.workers {
		w.kill()
	}
	f.workers = nil
}

// tool runs the reconcile program (prog) on a new host.
func (f *fleet) tool(ctx context.Context, prog string, args ...string) error {
	h, err := f.host()
	if err != nil {
		return err
	}
	_, err = runTool(ctx, f.bins[prog], h, f.baseEnv(h), args...)
	return err
}

// trial runs trial i at point p.
func (e *env) trial(ctx context.Context, i int, p Point) (o Outcome) {
	began := time.Now()
	o.Point = p
	ctx, cancel := context.WithTimeout(ctx, trialTimeout)
	defer cancel()
	f := &fleet{env: e, dir: filepath.Join(e.dir, fmt.Sprintf("trial-%03d", i))}
	f.tickets = filepath.Join(f.dir, "tickets.jsonl")
	f.run = fmt.Sprintf("chaos-%d-%03d", os.Getpid(), i)
	f.queue = f.run
	defer f.killAll()
	defer func() { o.Took = time.Since(began) }()
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		o.Failure = err.Error()
		return o
	}
	if err := f.play(ctx, &o); err != nil {
		o.Failure = err.Error()
	}
	return o
}

// play runs the trial: start the fleet and the run, crash at the point,
// drive the run to Completed, check it.
func (f *fleet) play(ctx context.Context, o *Outcome) error {
	var hold []string
	switch o.Point {
	case pointModel:
		s := llm.HandExample()
		s.Delay = holdDelay
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		path := filepath.Join(f.dir, "script.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		hold = []string{"AGENTRUN_MODEL=scripted:" + path}
	case pointRead, pointPostgres:
		hold = []string{"AGENTRUN_DEMO_DELAY=" + holdDelay}
	case pointWriteBefore:
		hold = []string{"AGENTRUN_TEST_HOLD_BEFORE=create_ticket"}
	case pointWriteAfter:
		hold = []string{"AGENTRUN_TEST_HOLD_AFTER=create_ticket"}
	}
	if err := f.start(ctx, 3, hold...); err != nil {
		return err
	}
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: prompt}}}
	if _, err := f.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: f.run, TaskQueue: f.queue}, workflows.WorkflowName, input); err != nil {
		return fmt.Errorf("start %s: %w", f.run, err)
	}
	hit, err := f.crash(ctx, o.Point)
	if err != nil {
		return fmt.Errorf("crash at %s: %w", o.Point.Name, err)
	}
	o.Hit = hit
	st, err := f.drive(ctx, o)
	if err != nil {
		return err
	}
	return f.check(ctx, o, st)
}

// crash waits for the point and crashes there; it reports whether the
// process really was at the point.
func (f *fleet) crash(ctx context.Context, p Point) (bool, error) {
	switch p {
	case pointModel, pointRead:
		typ := map[Point]string{pointModel: "CallModel", pointRead: "CallTool"}[p]
		identity, err := f.waitStarted(ctx, typ)
		if err != nil {
			return false, err
		}
		hit := f.killPID(pidOf(identity))
		return hit, f.start(ctx, 1)
	case pointPostgres:
		if _, err := f.waitStarted(ctx, "CallTool"); err != nil {
			return false, err
		}
		down, _ := time.ParseDuration(pgDown)
		return true, f.pg.Restart(ctx, func() { time.Sleep(down) })
	case pointWriteBefore, pointWriteAfter:
		if _, err := f.waitStatus(ctx, agent.StatusAwaitingApproval); err != nil {
			return false, err
		}
		line := map[Point]string{pointWriteBefore: "hold before create_ticket", pointWriteAfter: "hold after create_ticket"}[p]
		hit := false
		var approved time.Time
		for !hit {
			// A query or the approval can fail on a busy dev server
			// (a cancelled stream): approve again while the run waits.
			if time.Since(approved) > reapproveAfter {
				if st, err := f.state(ctx); err == nil && st.Status == agent.StatusAwaitingApproval {
					approved = time.Now()
					if err := f.approve(ctx); err != nil {
						f.logger.Warn("approve", "run_id", f.run, "err", err)
					}
				}
			}
			for _, w := range f.workers {
				hit = hit || strings.Contains(w.output(), line)
			}
			if err := sleep(ctx); err != nil {
				return false, fmt.Errorf("no worker logged %q: %w", line, err)
			}
		}
		f.killAll()
		return hit, f.start(ctx, 3)
	case pointBetween:
		if _, err := f.waitStatus(ctx, agent.StatusAwaitingApproval); err != nil {
			return false, err
		}
		var idle bool
		var identity string
		err := retry(ctx, func() error {
			desc, err := f.client.DescribeWorkflow(ctx, f.run, "")
			if err != nil {
				return err
			}
			idle = len(desc.RawResponse.GetPendingActivities()) == 0
			identity, err = f.lastModelWorker(ctx)
			return err
		})
		if err != nil {
			return false, err
		}
		hit := f.killPID(pidOf(identity)) && idle
		return hit, f.start(ctx, 1)
	}
	return false, fmt.Errorf("unknown kill point %+v", p)
}

// pidOf returns the process id in a worker identity "PID@host@...".
func pidOf(identity string) int {
	pid, _ := strconv.Atoi(strings.SplitN(identity, "@", 2)[0])
	return pid
}

// retry calls fn until it succeeds, every pollEvery, and returns its last
// error when ctx ends first: calls to a busy dev server can fail for a
// moment (a cancelled stream).
func retry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if sleep(ctx) != nil {
			return err
		}
	}
}

func sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pollEvery):
		return nil
	}
}
