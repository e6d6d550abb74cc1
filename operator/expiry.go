package operator

import (
	"time"

	"github.com/agentrun/agentrun/agent"
)

// Approval expiry, the one rule both engines follow: a gated call that
// nobody decides within its tool's approval timeout (agent.Pending.Expires,
// 0: never) is denied as expired, and the model reads why.
//
// The clock starts when the model step that asked for the call completed:
// the call is pending from then on, whatever else of its turn runs before
// the run waits, and it is the one moment both engines record (the local
// journal's step.completed time; on Temporal the workflow time at which the
// model activity's result was applied). Temporal executions recorded before
// this rule started the clock at the run's first wait on the call instead
// (workflows, versionExpiryClock) and replay so.

// Expiry is the approval clocks of where a run stands: the calls pending
// in Outcome that Facts holds no decision for.
type Expiry struct {
	Outcome *agent.Outcome
	Facts   *agent.Facts
	// Asked is when the model step that asked for the call at marker
	// completed; zero when unknown (the call then never expires: older
	// journals kept no time).
	Asked func(marker string) time.Time
}

// Deadline is when p, asked for at asked, expires; zero when it never
// does (no timeout, or no start known).
func Deadline(p agent.Pending, asked time.Time) time.Time {
	if p.Expires <= 0 || asked.IsZero() {
		return time.Time{}
	}
	return asked.Add(p.Expires)
}

// Expired returns the undecided pending calls whose deadline passed at now.
func (e Expiry) Expired(now time.Time) []agent.Pending {
	var out []agent.Pending
	e.each(func(p agent.Pending, at time.Time) {
		if !now.Before(at) {
			out = append(out, p)
		}
	})
	return out
}

// Next is the earliest deadline of the undecided pending calls, when the
// run goes on without a person; zero when none expires.
func (e Expiry) Next() time.Time {
	var first time.Time
	e.each(func(_ agent.Pending, at time.Time) {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	})
	return first
}

// each calls fn with every undecided pending call that has a deadline.
func (e Expiry) each(fn func(p agent.Pending, at time.Time)) {
	if e.Outcome == nil || e.Outcome.Status != agent.StatusAwaitingApproval {
		return
	}
	for _, p := range e.Outcome.Pending {
		if _, decided := e.Facts.Decisions[p.Marker]; decided {
			continue
		}
		if at := Deadline(p, e.Asked(p.Marker)); !at.IsZero() {
			fn(p, at)
		}
	}
}

// ExpiredDeny is the denial of the call p whose approval timeout passed:
// typed Expired, with the reason the model and operators read.
func ExpiredDeny(p agent.Pending) Signal {
	return Signal{Name: SignalDeny, Marker: p.Marker, Reason: ExpiredReason(p.Expires), Expired: true}
}

// ExpiredReason is the reason of a call denied because its approval timeout
// passed ("approval expired after 30m0s"); the model reads it after
// agent.DeniedByOperator.
func ExpiredReason(after time.Duration) string {
	return oldExpiredPrefix + after.String()
}
