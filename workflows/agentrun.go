package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/streams"
)

// versionParkedContinue guards continuing as new from a wait (when
// Temporal suggests it or the stream served maxPolls polls), and
// versionQuietRejects recording a refused input past QuietRejects in a row
// without a search-attribute upsert or a stream item: version 1 does.
const (
	versionParkedContinue = "parked-continue-as-new"
	versionQuietRejects   = "quiet-rejects"
)

// errContinue is returned by wait when the run should continue as new.
var errContinue = errors.New("continue as new")

// versionForwardAnswer guards the change that made an update forwarded to
// a child run wait for the child's next report (operator.go): version 1
// waits, the default answered at once.
const versionForwardAnswer = "forward-answer-after-report"

// versionUpdateAnswer guards the change that made an update wait until the
// run acted on it (workflow.GetVersion): version 1 waits.
const versionUpdateAnswer = "update-answer-after-acting"

// versionExpiryClock guards where a pending call's approval clock starts
// (operator.Expiry): version 1 at the completion of the model step that
// asked for it, as on the local engine; the default at the run's first wait
// on it, which is later when other calls of the turn ran first.
const versionExpiryClock = "expiry-clock-model-step"

// versionTrustedContinued guards the start rule of trustedContinued and
// CronRefused (refuseStart): version 1 honours continued only in an
// execution its run's continue-as-new started, and refuses a cron
// schedule; the default honoured it in any execution with a continued run
// id (a cron run, a workflow retry) and ran on a cron schedule. Taken only
// where the two differ.
const versionTrustedContinued = "continued-only-by-continue-as-new"

// versionCatalogChecked guards the refusal of a malformed catalog
// (activities.MalformedCatalog): version 1 fails the run with
// MalformedCatalog; the default ran with it. Taken only for a malformed
// catalog.
const versionCatalogChecked = "catalog-checked"

// execution is the state of one AgentRun workflow execution (a run that
// continues as new goes on in the next).
type execution struct {
	ctx workflow.Context
	v   versions // the changes it takes
	id  string
	in  Input
	// cat is the catalog the run's tools came from, loop the agent loop
	// over them.
	cat  activities.Catalog
	loop agent.Loop
	// catKey is the key of what the catalog says about the tools
	// (activities.Binding), which every step carries; "" for a catalog
	// with no tools key (listed before there were any).
	catKey string
	// delegated is set in a child run that an agent run's call of an
	// agent tool started (delegatedRun).
	delegated bool
	// names are the activities' names this execution schedules.
	names names
	turn  turn
	// budget is the run's limits: from the input, raised by budget inputs.
	budget agent.Budget
	// stepsHere counts the steps this execution ran, for ContinueAfter.
	stepsHere int
	outcome   *agent.Outcome // where the run waits; nil while a step runs
	state     State
	inputs    inputs
	// idle is how long a session waits for a message after an answer;
	// idleTimer is the session's idle timer while it runs (idle.go).
	idle      time.Duration
	idleTimer workflow.Future
	// fewerActions is versionFewerActions taken.
	fewerActions bool
	// stream is the run's Workflow Streams log (stream.go); lastStatus the
	// status event it published last.
	stream     *streams.Host
	lastStatus string
	// running is the step whose activity runs now ("" between steps),
	// stepBegan when it was scheduled: for its retry notices (retry.go).
	running       string
	runningPolicy *temporal.RetryPolicy
	stepBegan     time.Time
	// ran are the steps that completed last in this execution (at most
	// recentSteps), so that a late notice of one is known for late.
	ran     []string
	retries workflow.ReceiveChannel
	// waitBegan is when the run began to wait for a person (zero while
	// steps run), for the trace (trace.go).
	waitBegan time.Time
	// delegating is the child run a step runs now (child.go), nil when
	// none; children takes the reports of it (SignalChild); reported is
	// the last report this run, a child, sent its parent.
	delegating *delegation
	children   workflow.ReceiveChannel
	reported   string
	// childReports counts the reports taken from the running child, for
	// an update forwarded to it (operator.go).
	childReports int
	// shares takes SignalShare; sharing is set on a child run that takes
	// its budget from its parent only (childshare.go).
	shares  workflow.ReceiveChannel
	sharing *sharing
}

// turn is where the loop stands: the current turn, and what is known
// about it only (the facts of settled turns are forgotten).
type turn struct {
	cp    agent.Checkpoint // the start of the current turn
	facts *agent.Facts
	gen   map[string]int // executions of each write step of the turn
	// since holds when each call with an approval timeout became pending:
	// its approval clock's start (wait).
	since map[string]time.Time
	// asked is when the newest model step completed: the turn's calls
	// were asked for then (operator.Expiry).
	asked time.Time
	// models is the newest model step started: a message goes to the next.
	models int
}

// inputs is how the operator's inputs and the main loop meet: the loop
// waits for changes, an update for acted.
type inputs struct {
	changes int // operator inputs applied; the main loop waits on it
	// acted is the value of changes the main loop last acted on: it ran
	// the loop over them and started the next step or waits again. An
	// update answers once its input is acted on, or the run closes.
	acted   int
	closing bool
}

// ending is how an execution ends: the result of AgentRun.
type ending struct {
	res Result
	err error
}

func end(res Result, err error) *ending { return &ending{res, err} }

// AgentRun drives one agent run until it completes or fails, waiting for
// people where the loop says so. It continues as new when Temporal suggests
// it (or after in.ContinueAfter steps), carrying a checkpoint. It starts
// the run (start.go), then runs the loop (loop.go): a step when the loop
// asks for one, else the outcome (outcome.go), until the run ends.
func AgentRun(ctx workflow.Context, in Input) (Result, error) {
	r, e := start(ctx, in)
	if e == nil {
		e = r.steps()
	}
	return e.res, e.err
}
