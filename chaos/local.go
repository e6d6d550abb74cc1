package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/journal"
)

// localKillAfter is how long after the step before the target completed
// the campaign kills the starter at the model and read points: the target
// step (which takes holdDelay) has started by then, and has not ended.
const localKillAfter = 300 * time.Millisecond

// maxRounds bounds the starter runs of one local trial (each ends at an
// approval, an Indeterminate write, a kill or the end).
const maxRounds = 20

// local is a trial on the local engine: `starter --local` on a folder
// journal, no server; the campaign runs it again after every kill,
// approval and reconciliation, as an operator would.
type local struct {
	*trialRun
	journal string
	store   *journal.FileStore
}

func (l *local) env(host string, extra ...string) []string {
	return append(append(os.Environ(),
		"AGENTRUN_JOURNAL="+l.journal,
		"AGENTRUN_TICKETS="+l.tickets,
		"AGENTRUN_MODEL=scripted:"+l.plain,
		"AGENTRUN_TOOLS="+l.toolsFile,
		"HOME="+host,
		"TMPDIR="+host,
	), extra...)
}

// records loads the run's journal.
func (l *local) records() ([]journal.Record, error) { return l.store.Load(l.run) }

// steps returns the steps with a step.completed record, with their count,
// and the steps started and not completed.
func steps(recs []journal.Record) (completed map[string]int, open map[string]bool) {
	completed, open = map[string]int{}, map[string]bool{}
	for _, r := range recs {
		switch r.Type {
		case journal.StepStarted:
			open[r.Step] = true
		case journal.StepCompleted:
			completed[r.Step]++
			delete(open, r.Step)
		}
	}
	return completed, open
}

// reconcile runs `reconcile --local ARGS...` on a new host.
func (l *local) reconcile(ctx context.Context, args ...string) (string, error) {
	h, err := l.host()
	if err != nil {
		return "", err
	}
	return testenv.RunTool(ctx, h, l.env(h), toolTimeout, l.bins["reconcile"], append([]string{"--local"}, args...)...)
}

// play runs the starter until the run completes: with the hold
// environment until the crash, then without; approving, settling from the
// ticket file, and resuming after each stop, as the starter's output says.
func (l *local) play(ctx context.Context, o *Outcome) error {
	l.journal = filepath.Join(l.dir, "journal")
	var err error
	if l.store, err = journal.NewFileStore(l.journal); err != nil {
		return err
	}
	if o.Cell.Point == pointFollow {
		return l.follow(ctx, o)
	}
	crashed := false
	for range maxRounds {
		h, err := l.host()
		if err != nil {
			return err
		}
		var extra []string
		switch {
		case crashed:
		case o.Cell.Point == pointBetween:
			// The model step after the target takes holdDelay: the kill
			// lands after the target's completion was recorded and before
			// anything else was.
			extra = []string{"AGENTRUN_MODEL=scripted:" + l.delayed}
		default:
			extra = holdEnv(o.Cell.Point, o.Target, l.delayed)
		}
		p, err := testenv.Launch(h, l.env(h, extra...), 0, l.bins["starter"], "--local", "--id", l.run, prompt)
		if err != nil {
			return err
		}
		killedNow := false
		var since time.Time // when the step before the target was seen completed
		for p.Running() && !crashed {
			if crashed, err = l.crash(o, p, &since); err != nil {
				p.Stop(0)
				return err
			}
			killedNow = crashed
			if err := sleep(ctx); err != nil {
				p.Stop(0)
				return fmt.Errorf("starter did not stop: %w: %s", err, testenv.Tail(p.Output()))
			}
		}
		code := p.ExitCode()
		if killedNow {
			continue
		}
		out := p.Output()
		switch code {
		case 0:
			if !crashed {
				return fmt.Errorf("the run completed and never reached %s at %s", o.Cell.Point.Name, o.Target)
			}
			return l.check(o, out)
		case 3: // AwaitingApproval
			for _, line := range strings.Split(out, "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "marker "); ok {
					if _, err := l.reconcile(ctx, "approve", l.run, m); err != nil {
						return err
					}
				}
			}
		case 4: // Indeterminate
			step := ""
			for _, line := range strings.Split(out, "\n") {
				if _, s, ok := strings.Cut(line, ": Indeterminate at "); ok {
					step = strings.TrimSpace(s)
				}
			}
			outcome, result, err := settlement(l.tickets, l.scenario, step)
			if err != nil {
				return err
			}
			o.Settled = outcome
			if _, err := l.reconcile(ctx, append([]string{outcome, l.run, step}, result...)...); err != nil {
				return err
			}
		default:
			return fmt.Errorf("starter exited %d: %s", code, testenv.Tail(out))
		}
	}
	return fmt.Errorf("the run did not complete in %d starter runs", maxRounds)
}

// crash kills the starter p when it is at the trial's point now; it
// reports whether it did, and sets o.Hit when the starter really was at
// the point, as the journal (and the hold's log line) show.
func (l *local) crash(o *Outcome, p *testenv.Proc, since *time.Time) (bool, error) {
	recs, err := l.records()
	if err != nil {
		return false, err
	}
	completed, _ := steps(recs)
	switch o.Cell.Point {
	case pointModel, pointRead:
		// The target takes holdDelay and records nothing before it
		// completes: the kill lands inside it when it comes localKillAfter
		// after the step before it completed, and the target has not.
		prev := l.scenario.before(o.Target)
		if len(recs) == 0 || prev != "" && completed[prev] == 0 || completed[o.Target] > 0 {
			return false, nil
		}
		if since.IsZero() {
			*since = time.Now()
		}
		if time.Since(*since) < localKillAfter {
			return false, nil
		}
		if !p.Running() {
			return false, nil
		}
		p.Stop(0)
		recs, err = l.records()
		if err != nil {
			return true, err
		}
		completed, _ = steps(recs)
		d, _ := time.ParseDuration(holdDelay)
		o.Hit = completed[o.Target] == 0 && time.Since(*since) < d
		return true, nil
	case pointWriteBefore, pointWriteAfter:
		line := map[Point]string{pointWriteBefore: "hold before create_ticket", pointWriteAfter: "hold after create_ticket"}[o.Cell.Point]
		if out := p.Output(); !strings.Contains(out, line) || !strings.Contains(out, "step="+o.Target) {
			return false, nil
		}
		p.Stop(0)
		recs, err = l.records()
		if err != nil {
			return true, err
		}
		completed, open := steps(recs)
		o.Hit = open[o.Target] && completed[o.Target] == 0
		return true, nil
	case pointBetween:
		if completed[o.Target] == 0 || !p.Running() {
			return false, nil
		}
		p.Stop(0)
		recs, err = l.records()
		if err != nil {
			return true, err
		}
		_, open := steps(recs)
		last := recs[len(recs)-1].Type
		o.Hit = len(open) == 0 && last == journal.StepCompleted
		return true, nil
	}
	return false, fmt.Errorf("kill point %s is not one of the local engine's", o.Cell.Point.Name)
}

// check asserts the trial's invariants on a completed local run: the
// journal's completions of each model step, the tickets, the answer in the
// starter's output.
func (l *local) check(o *Outcome, out string) error {
	recs, err := l.records()
	if err != nil {
		return err
	}
	completed, _ := steps(recs)
	model := map[string]int{}
	for step, n := range completed {
		if strings.HasPrefix(step, "llm/") {
			model[step] = n
		}
	}
	if err := checkModel(model, l.scenario, o); err != nil {
		return err
	}
	if recs[len(recs)-1].Type != journal.RunCompleted {
		return fmt.Errorf("the journal ends with %s, want %s", recs[len(recs)-1].Type, journal.RunCompleted)
	}
	if err := checkTickets(l.tickets, l.scenario, out, o); err != nil {
		return err
	}
	return checkSettled(o)
}

// followLine is what a following driver prints under the commands that
// unblock its run (internal/cli).
const followLine = "this driver follows the run"

// follow plays a trial at point follow: `starter --local --follow` runs
// the scenario, approved from other processes (reconcile --local approve)
// while it waits, until it waits on the target's approval; then it is
// SIGKILLed, and one more `starter --local --follow` resumes the run and
// completes it, going on by itself after each approval: two starts in all.
func (l *local) follow(ctx context.Context, o *Outcome) error {
	crashed := false
	for start := 1; start <= 2; start++ {
		h, err := l.host()
		if err != nil {
			return err
		}
		p, err := testenv.Launch(h, l.env(h), 0, l.bins["starter"], "--local", "--follow", "--id", l.run, prompt)
		if err != nil {
			return err
		}
		decided := map[string]bool{} // markers approved and steps settled for this start
		killed := false
		for p.Running() && !killed {
			out := p.Output()
			// Only whole waits: what the driver printed up to its last
			// follow line.
			i := strings.LastIndex(out, followLine)
			if i < 0 {
				if err := sleep(ctx); err != nil {
					p.Stop(0)
					return fmt.Errorf("starter --follow did not wait: %w: %s", err, testenv.Tail(out))
				}
				continue
			}
			for _, line := range strings.Split(out[:i], "\n") {
				line = strings.TrimSpace(line)
				if m, ok := strings.CutPrefix(line, "marker "); ok && !decided[m] {
					if !crashed && m == o.Target {
						p.Stop(0)
						crashed, killed = true, true
						recs, err := l.records()
						if err != nil {
							return err
						}
						completed, open := steps(recs)
						o.Hit = completed[m] == 0 && !open[m] && recs[len(recs)-1].Type == journal.StepCompleted
						break
					}
					if _, err := l.reconcile(ctx, "approve", l.run, m); err != nil {
						p.Stop(0)
						return err
					}
					decided[m] = true
				}
				if _, step, ok := strings.Cut(line, ": Indeterminate at "); ok && !decided[step] {
					outcome, result, err := settlement(l.tickets, l.scenario, step)
					if err != nil {
						p.Stop(0)
						return err
					}
					o.Settled = outcome
					if _, err := l.reconcile(ctx, append([]string{outcome, l.run, step}, result...)...); err != nil {
						p.Stop(0)
						return err
					}
					decided[step] = true
				}
			}
			if err := sleep(ctx); err != nil {
				p.Stop(0)
				return fmt.Errorf("starter --follow did not stop: %w: %s", err, testenv.Tail(p.Output()))
			}
		}
		if killed {
			continue
		}
		out := p.Output()
		switch code := p.ExitCode(); {
		case code != 0:
			return fmt.Errorf("starter --follow (start %d) exited %d: %s", start, code, testenv.Tail(out))
		case !crashed:
			return fmt.Errorf("the run completed and never waited on %s", o.Target)
		}
		return l.check(o, out)
	}
	return fmt.Errorf("the run did not complete in two starts of a following driver")
}
