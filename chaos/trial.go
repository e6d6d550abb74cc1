package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// trialTimeout bounds one trial: the kill, the recovery (heartbeat
// timeout, retry backoff, delays, a server restart) and the rest of the
// run.
const trialTimeout = 3 * time.Minute

// pollEvery is how often a trial polls the run.
const pollEvery = 20 * time.Millisecond

// prompt is the request of every run.
const prompt = hand.Prompt

// toolTimeout bounds one run of the reconcile program.
const toolTimeout = time.Minute

// Outcome is one trial's result.
type Outcome struct {
	Cell     Cell
	Scenario string
	// Target is the step the trial crashes in (or, at point between,
	// after).
	Target string
	// Hit: the process was really at the point when it was killed.
	Hit bool
	// Settled is "done" or "retry" when the run became Indeterminate and
	// the campaign settled it, "" when it did not.
	Settled string
	// Tickets is how many tickets the trial's ticket file holds.
	Tickets int
	// Duplicates counts tickets beyond one per create_ticket call.
	Duplicates int
	// ModelSteps is how many model steps completed; RepeatedModel how many
	// of them completed more than once.
	ModelSteps, RepeatedModel int
	Took                      time.Duration
	// FaultFor is how long the worker was frozen or cut off, at the
	// freeze and partition points.
	FaultFor time.Duration
	// Failure is the first failed assertion, "" when the trial passed.
	Failure string
}

// trialRun is what both engines' trials share: the folder, the ticket
// file, the run id, the scenario and its scripts.
type trialRun struct {
	*env
	dir, tickets, run string
	scenario          Scenario
	// plain is the scenario's script file; delayed the same script whose
	// model calls take holdDelay.
	plain, delayed string
	// toolsFile is AGENTRUN_TOOLS: create_ticket's timeout and settle
	// mode.
	toolsFile string
	hosts     int
}

// host returns a new empty folder for one process.
func (t *trialRun) host() (string, error) {
	t.hosts++
	dir := filepath.Join(t.dir, fmt.Sprintf("host-%d", t.hosts))
	return dir, os.MkdirAll(dir, 0o755)
}

// writeScripts writes the scenario's script, plain, and delayed: the
// model call of turn slow (from 0; none when negative) takes holdDelay.
func (t *trialRun) writeScripts(slow int) error {
	for _, w := range []struct {
		path *string
		name string
		slow int
	}{{&t.plain, "script.json", -1}, {&t.delayed, "script-delayed.json", slow}} {
		s := t.scenario.Script
		s.Turns = slices.Clone(s.Turns)
		if w.slow >= 0 && w.slow < len(s.Turns) {
			s.Turns[w.slow].Delay = holdDelay
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		*w.path = filepath.Join(t.dir, w.name)
		if err := os.WriteFile(*w.path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// slowTurn is the turn (from 0) whose model call the delayed script slows
// down: the target's at the model point; locally at point between, the one
// after the target lookup's turn; none (-1) elsewhere.
func slowTurn(c Cell, target string) int {
	var n, i int
	var name string
	switch {
	case c.Point == pointModel || c.Point == pointFreezeModel:
		if _, err := fmt.Sscanf(target, "llm/%d", &n); err == nil {
			return n - 1
		}
	case c.Point == pointBetween && c.Engine == engineLocal:
		if _, err := fmt.Sscanf(target, "tool/%d/%d/%s", &n, &i, &name); err == nil {
			return n
		}
	}
	return -1
}

// target picks the step trial i crashes in, with the campaign's seed.
func (e *env) target(i int, p Plan) string {
	var steps []string
	switch p.Cell.Point {
	case pointModel, pointFreezeModel:
		steps = p.Scenario.steps("")
	case pointWriteBefore, pointWriteAfter, pointFreezeWriteBefore, pointFreezeWriteAfter, pointCutTemporal, pointCutPostgres:
		steps = p.Scenario.steps("create_ticket")
	case pointFollow:
		steps = p.Scenario.steps("create_ticket") // the follower waits on its approval
	case pointBetween:
		if p.Cell.Engine == engineTemporal {
			steps = p.Scenario.steps("create_ticket") // parked on its approval
		} else {
			steps = p.Scenario.steps("lookup") // right after it completed
		}
	default: // read, postgres, devserver
		steps = p.Scenario.steps("lookup")
	}
	r := rand.New(rand.NewPCG(uint64(e.seed), uint64(i)))
	return steps[r.IntN(len(steps))]
}

// trial runs trial i.
func (e *env) trial(ctx context.Context, i int, p Plan) (o Outcome) {
	began := time.Now()
	o.Cell, o.Scenario, o.Target = p.Cell, p.Scenario.Name, e.target(i, p)
	defer func() { o.Took = time.Since(began) }()
	ctx, cancel := context.WithTimeout(ctx, trialTimeout)
	defer cancel()
	t := &trialRun{env: e, dir: filepath.Join(e.dir, fmt.Sprintf("trial-%03d", i)), scenario: p.Scenario}
	t.tickets = filepath.Join(t.dir, "tickets.jsonl")
	t.run = fmt.Sprintf("chaos-%d-%03d", os.Getpid(), i)
	t.toolsFile = filepath.Join(t.dir, "tools.json")
	err := os.MkdirAll(t.dir, 0o755)
	if err == nil {
		err = t.writeScripts(slowTurn(p.Cell, o.Target))
	}
	if err == nil {
		err = os.WriteFile(t.toolsFile, toolsFile(p.Cell.Settle), 0o644)
	}
	if err == nil {
		if p.Cell.Engine == engineCluster {
			t.env, err = e.clusterEnv(ctx)
		}
	}
	if err == nil {
		if p.Cell.Engine == engineLocal {
			err = (&local{trialRun: t}).play(ctx, &o)
		} else {
			f := &fleet{trialRun: t, queue: t.run}
			defer f.close()
			err = f.play(ctx, &o)
		}
	}
	if err != nil {
		o.Failure = err.Error()
		// Count what the failed trial left in the world too.
		if ts, rerr := tools.ReadTickets(t.tickets); rerr == nil {
			o.Tickets, o.Duplicates = len(ts), duplicates(ts, p.Scenario)
		}
	}
	return o
}

// fleet is a trial on the Temporal engine: three workers on their own
// hosts sharing PostgreSQL and the dev server.
type fleet struct {
	*trialRun
	queue   string
	workers []*testenv.Proc
	fault   *fault // at the freeze and partition points
}

func (f *fleet) baseEnv(host string) []string {
	return append(os.Environ(),
		"TEMPORAL_ADDRESS="+f.hostPort,
		"TEMPORAL_NAMESPACE=default",
		"AGENTRUN_TASK_QUEUE="+f.queue,
		"AGENTRUN_JOURNAL="+f.db,
		"AGENTRUN_TICKETS="+f.tickets,
		"AGENTRUN_MODEL=scripted:"+f.plain,
		"AGENTRUN_TOOLS="+f.toolsFile,
		"HOME="+host,
		"TMPDIR="+host,
	)
}

// start starts n workers, each on its own host, with extra environment.
func (f *fleet) start(ctx context.Context, n int, extra ...string) error {
	for range n {
		h, err := f.host()
		if err != nil {
			return err
		}
		w, err := testenv.StartWorker(ctx, h, append(f.baseEnv(h), extra...), 0, f.bins["worker"])
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
		if w.Pid() == pid && w.Running() {
			w.Stop(0)
			f.keepLog(w)
			f.workers = slices.Delete(f.workers, i, i+1)
			return true
		}
	}
	return false
}

func (f *fleet) killAll() {
	for _, w := range f.workers {
		w.Stop(0)
		f.keepLog(w)
	}
	f.workers = nil
}

// keepLog writes a worker's log to the folder $CHAOS_LOGS, when set, as
// RUN-PID.log, for looking into a trial afterwards.
func (f *fleet) keepLog(w *testenv.Proc) {
	if dir := os.Getenv("CHAOS_LOGS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", f.run, w.Pid())), []byte(w.Output()), 0o644)
	}
}

// tool runs the reconcile program on a new host.
func (f *fleet) tool(ctx context.Context, args ...string) error {
	h, err := f.host()
	if err != nil {
		return err
	}
	_, err = testenv.RunTool(ctx, h, f.baseEnv(h), toolTimeout, f.bins["reconcile"], args...)
	return err
}

// holdEnv is the environment that makes the fleet's first workers reach
// point p at step target.
func holdEnv(p Point, target, delayed string) []string {
	switch p {
	case pointModel:
		return []string{"AGENTRUN_MODEL=scripted:" + delayed}
	case pointRead, pointPostgres, pointDevServer, pointClusterServer, pointClusterPostgres:
		return []string{"AGENTRUN_DEMO_DELAY=" + holdDelay}
	case pointWriteBefore:
		return []string{testenv.HoldBefore + "=" + target}
	case pointWriteAfter:
		return []string{testenv.HoldAfter + "=" + target}
	}
	return nil
}

// play runs the trial: start the fleet and the run, drive the run to
// Completed while crashing at the point, check it.
func (f *fleet) play(ctx context.Context, o *Outcome) error {
	if o.Cell.Point.fault() {
		if err := f.startHeld(ctx, o); err != nil {
			return err
		}
	} else if err := f.start(ctx, 3, holdEnv(o.Cell.Point, o.Target, f.delayed)...); err != nil {
		return err
	}
	input := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: prompt}}}
	if _, err := f.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: f.run, TaskQueue: f.queue}, workflows.WorkflowName, input); err != nil {
		return fmt.Errorf("start %s: %w", f.run, err)
	}
	st, crashed, err := f.drive(ctx, o)
	if crashed && f.fault != nil {
		// The faulted worker goes on once resumed or healed: wait for
		// it, so that a write it makes late is counted.
		if ferr := f.fault.end(ctx, f, o); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	if !crashed {
		return fmt.Errorf("the run completed and never reached %s at %s", o.Cell.Point.Name, o.Target)
	}
	return f.check(ctx, o, st)
}

// crash crashes the run at its point when it is there now: it reports
// whether it did, and sets o.Hit when the process really was at the point.
func (f *fleet) crash(ctx context.Context, o *Outcome) (bool, error) {
	switch p := o.Cell.Point; p {
	case pointModel, pointRead, pointPostgres, pointDevServer, pointClusterServer, pointClusterPostgres:
		identity, ok := f.started(ctx, o.Target)
		if !ok {
			return false, nil
		}
		switch p {
		case pointClusterServer, pointClusterPostgres:
			o.Hit = true
			return true, f.restartCluster(ctx, p)
		case pointPostgres:
			down, _ := time.ParseDuration(pgDown)
			o.Hit = true
			return true, f.pg.Restart(ctx, func() { time.Sleep(down) })
		case pointDevServer:
			o.Hit = true
			return true, f.restartServer(ctx)
		}
		o.Hit = f.killPID(pidOf(identity))
		return true, f.start(ctx, 1)
	case pointWriteBefore, pointWriteAfter:
		line := map[Point]string{pointWriteBefore: "hold before create_ticket", pointWriteAfter: "hold after create_ticket"}[p]
		for _, w := range f.workers {
			if out := w.Output(); strings.Contains(out, line) && strings.Contains(out, "step="+o.Target) {
				o.Hit = true
			}
		}
		if !o.Hit {
			return false, nil
		}
		f.killAll()
		return true, f.start(ctx, 3)
	case pointFreezeWriteBefore, pointFreezeWriteAfter, pointFreezeModel, pointCutTemporal, pointCutPostgres:
		return f.inflict(ctx, o)
	case pointBetween:
		st, err := f.state(ctx)
		if err != nil || st.Status != agent.StatusAwaitingApproval || !slices.ContainsFunc(st.Pending, func(p agent.Pending) bool { return p.Marker == o.Target }) {
			return false, nil
		}
		var idle bool
		var identity string
		err = retry(ctx, func() error {
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
		o.Hit = f.killPID(pidOf(identity)) && idle
		return true, f.start(ctx, 1)
	}
	return false, fmt.Errorf("unknown kill point %+v", o.Cell.Point)
}

// started returns the identity of the worker on which the activity with
// id step is STARTED, if it is now.
func (f *fleet) started(ctx context.Context, step string) (string, bool) {
	desc, err := f.client.DescribeWorkflow(ctx, f.run, "")
	if err != nil {
		return "", false
	}
	for _, a := range desc.RawResponse.GetPendingActivities() {
		if a.GetActivityId() == step && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && a.GetLastWorkerIdentity() != "" {
			return a.GetLastWorkerIdentity(), true
		}
	}
	return "", false
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
