package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/netfault"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// faultFor is how long a freeze or a cut lasts at least: past the
// heartbeat timeout, so that Temporal times the attempt out and retries it
// on another worker while the first one is still alive; it lasts until the
// retry has started (waitRetried).
const faultFor = workflows.HeartbeatTimeout + 2*time.Second

// holdFor is AGENTRUN_TEST_HOLD_FOR of the held worker at a write fault
// point: how long its write waits before it goes on by itself. Long enough
// for the campaign to see the hold and freeze or cut the worker (it polls
// every 20 ms, between queries that take a while on a loaded machine); then, frozen, the worker finds it expired when it resumes
// and goes on at once; cut off from PostgreSQL, it writes while cut off
// and cannot record its result; cut off from the Temporal frontend, it
// writes a second after the heal, as a worker that does not know it was
// cut off would.
func holdFor(p Point) time.Duration {
	if p == pointCutTemporal {
		return faultFor + time.Second
	}
	return 4 * time.Second
}

// faultEndWait bounds the wait, after the resume or the heal, for the held
// write to go on; lateWrite is how long the campaign then
// gives a write that went on to reach the ticket file.
const (
	faultEndWait = 30 * time.Second
	lateWrite    = 500 * time.Millisecond
)

// fault is a freeze or a cut of one worker, the held one.
type fault struct {
	held *testenv.Proc
	// temporal and postgres are the held worker's proxies at the
	// partition points.
	temporal, postgres *netfault.Proxy
	at                 time.Time     // when it was frozen or cut
	lasted             time.Duration // how long it was frozen or cut
	healed             chan struct{} // closed once resumed or healed
	healErr            error
}

// startHeld starts the one worker that will be frozen or cut off, with
// the hold (or the slow model call) at the trial's target, through proxies
// at the partition points. The rest of the fleet starts when the fault
// lands.
func (f *fleet) startHeld(ctx context.Context, o *Outcome) error {
	p := o.Cell.Point
	f.fault = &fault{healed: make(chan struct{})}
	var env []string
	switch p {
	case pointFreezeModel:
		env = holdEnv(pointModel, o.Target, f.delayed)
	case pointFreezeWriteAfter:
		env = holdEnv(pointWriteAfter, o.Target, f.delayed)
	default:
		env = holdEnv(pointWriteBefore, o.Target, f.delayed)
	}
	if p != pointFreezeModel {
		env = append(env, config.EnvTestHoldFor+"="+holdFor(p).String())
	}
	if p == pointCutTemporal || p == pointCutPostgres {
		var err error
		if f.fault.temporal, err = netfault.Start("temporal", f.hostPort); err != nil {
			return err
		}
		db, err := url.Parse(f.db)
		if err != nil {
			return fmt.Errorf("PostgreSQL URL %q: %w", f.db, err)
		}
		if f.fault.postgres, err = netfault.Start("postgres", db.Host); err != nil {
			return err
		}
		db.Host = f.fault.postgres.Addr()
		env = append(env, "TEMPORAL_ADDRESS="+f.fault.temporal.Addr(), "AGENTRUN_JOURNAL="+db.String())
	}
	if err := f.start(ctx, 1, env...); err != nil {
		return err
	}
	f.fault.held = f.workers[0]
	return nil
}

// holdWords is the hold's log message prefix at a write fault point.
func holdWords(p Point) string {
	if p == pointFreezeWriteAfter {
		return "hold after create_ticket"
	}
	return "hold before create_ticket"
}

// inflict freezes or cuts off the held worker when it is at the point now,
// starts the rest of the fleet (two workers without the hold, straight to
// the servers) and resumes or heals the held one faultFor later. At the
// model point it sets o.Hit (the model call was STARTED on the held
// worker); at the write points end does, once the hold has ended.
func (f *fleet) inflict(ctx context.Context, o *Outcome) (bool, error) {
	ft, p := f.fault, o.Cell.Point
	if p == pointFreezeModel {
		identity, ok := f.started(ctx, o.Target)
		if !ok {
			return false, nil
		}
		o.Hit = pidOf(identity) == ft.held.Pid()
	} else if _, ok := holdLine(ft.held.Output(), holdWords(p)+": holding for", o.Target); !ok {
		return false, nil
	}
	ft.at = time.Now()
	resume := func() error { return nil }
	switch p {
	case pointCutTemporal:
		ft.temporal.Cut()
		resume = ft.temporal.Heal
	case pointCutPostgres:
		ft.postgres.Cut()
		resume = ft.postgres.Heal
	default:
		if err := ft.held.Signal(syscall.SIGSTOP); err != nil {
			close(ft.healed)
			return true, err
		}
		resume = func() error { return ft.held.Signal(syscall.SIGCONT) }
	}
	go func() {
		time.Sleep(faultFor)
		f.waitRetried(ctx, o.Target)
		ft.lasted = time.Since(ft.at)
		ft.healErr = resume()
		close(ft.healed)
	}()
	return true, f.start(ctx, 2)
}

// maxFault bounds a freeze or a cut.
const maxFault = 45 * time.Second

// waitRetried waits, up to maxFault after the fault began, until Temporal
// has moved on from the faulted attempt of step: a later attempt of it
// has started on another worker, or it is not pending any more (completed,
// or failed and the run waits). A frozen worker's poll that was under way
// when it froze can be handed the retry, which then waits in it too: the
// server times that attempt out as well and the next goes elsewhere. So the faulted worker comes back while a retry runs
// or after one ran, which is the case the fault is about; the heartbeat
// timeout alone does not make it so on a loaded machine (the server's
// timer, the retry's backoff and its dispatch come on top).
func (f *fleet) waitRetried(ctx context.Context, step string) {
	for time.Since(f.fault.at) < maxFault && ctx.Err() == nil {
		desc, err := f.client.DescribeWorkflow(ctx, f.run, "")
		if err == nil {
			pending := false
			for _, a := range desc.RawResponse.GetPendingActivities() {
				f.logger.Debug("pending", "run_id", f.run, "id", a.GetActivityId(), "state", a.GetState(), "attempt", a.GetAttempt(), "worker", a.GetLastWorkerIdentity())
				if a.GetActivityId() != step {
					continue
				}
				pending = true
				if a.GetAttempt() >= 2 && a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && pidOf(a.GetLastWorkerIdentity()) != f.fault.held.Pid() {
					f.logger.Debug("retried", "run_id", f.run, "step", step, "attempt", a.GetAttempt(), "worker", a.GetLastWorkerIdentity())
					return
				}
			}
			if !pending {
				f.logger.Debug("no longer pending", "run_id", f.run, "step", step)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// end waits for the resume or the heal and then, at the write points, for
// the held write to go on (its tool runs, or its result is returned) and
// the late write to land; it sets o.Hit at the write points: the worker
// held the target when the fault came, and its hold ended after it (or had
// not ended).
func (ft *fault) end(ctx context.Context, f *fleet, o *Outcome) error {
	select {
	case <-ft.healed:
	case <-ctx.Done():
		return ctx.Err()
	}
	o.FaultFor = ft.lasted
	if ft.healErr != nil {
		return fmt.Errorf("resume after %s: %w", o.Cell.Point.Name, ft.healErr)
	}
	if o.Cell.Point == pointFreezeModel {
		time.Sleep(lateWrite) // its reply is refused by the server; nothing to wait for
		return nil
	}
	words := holdWords(o.Cell.Point)
	var ended time.Time
	deadline := time.Now().Add(faultEndWait)
	for {
		out := ft.held.Output()
		var ok bool
		if ended, ok = holdLine(out, words+": released", o.Target); ok {
			break
		}
		if time.Now().After(deadline) || !ft.held.Running() {
			ended = time.Time{} // still holding (or gone): the fault landed inside the hold
			break
		}
		if err := sleep(ctx); err != nil {
			return err
		}
	}
	_, held := holdLine(ft.held.Output(), words+": holding for", o.Target)
	o.Hit = held && (ended.IsZero() || ended.After(ft.at))
	time.Sleep(lateWrite)
	return nil
}

// close ends the trial's processes and proxies, after the resume or heal
// if a fault is under way.
func (f *fleet) close() {
	if ft := f.fault; ft != nil && !ft.at.IsZero() {
		<-ft.healed
	}
	f.killAll()
	if ft := f.fault; ft != nil {
		for _, p := range []*netfault.Proxy{ft.temporal, ft.postgres} {
			if p != nil {
				p.Close()
			}
		}
	}
}

// logTime is the time attribute of a worker's log line (slog's text
// handler).
var logTime = regexp.MustCompile(`^time=(\S+) `)

// holdLine finds the first line of log with msg words and step=step, and
// returns its time.
func holdLine(log, words, step string) (time.Time, bool) {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, words) || !strings.Contains(line, " step="+step) {
			continue
		}
		var t time.Time
		if m := logTime.FindStringSubmatch(line); m != nil {
			t, _ = time.Parse(time.RFC3339Nano, m[1])
		}
		return t, true
	}
	return time.Time{}, false
}
