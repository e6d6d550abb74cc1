package workflows

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/ratelimit"
	"github.com/agentrun/agentrun/streams"
)

// Names of the workflow and its query: part of the operator contract (the
// signal and update names are package operator's).
const (
	WorkflowName = activities.WorkflowType
	QueryState   = "state"
	// ErrTypeFailed is the error type of a run that Failed.
	ErrTypeFailed = "AgentRunFailed"
	// MemoInputHash is the memo key holding the hash of the run's input,
	// which the starter compares when it attaches to an existing run.
	MemoInputHash = "AgentRunInputHash"
)

// The search attributes a run keeps current (operator.StatusAttribute and
// operator.StepAttribute).
var (
	StatusKey = temporal.NewSearchAttributeKeyKeyword(operator.StatusAttribute)
	StepKey   = temporal.NewSearchAttributeKeyKeyword(operator.StepAttribute)
	// ForkOfKey is the attribute a fork starts with: the run it goes on
	// from (operator.ForkOfAttribute).
	ForkOfKey = temporal.NewSearchAttributeKeyKeyword(operator.ForkOfAttribute)
)

// StartAttributes are the search attributes a run is started with, by a
// client or a parent run: AgentRunStatus Running and, for a fork,
// AgentRunForkOf its origin (forkOf; "" for a run that is no fork). A run
// started with them upserts no status until it changes
// (versionFewerActions): one billable action fewer on Temporal Cloud,
// where attributes set at the start cost none.
func StartAttributes(forkOf string) temporal.SearchAttributes {
	running := StatusKey.ValueSet(string(agent.StatusRunning))
	if forkOf == "" {
		return temporal.NewSearchAttributes(running)
	}
	return temporal.NewSearchAttributes(running, ForkOfKey.ValueSet(forkOf))
}

// WaitingQuery is the visibility query of the runs that wait on a person
// (operator.WaitingStatuses).
func WaitingQuery() string {
	var statuses []string
	for _, s := range operator.WaitingStatuses() {
		statuses = append(statuses, strconv.Quote(string(s)))
	}
	return `ExecutionStatus = "Running" AND ` + operator.StatusAttribute + ` IN (` + strings.Join(statuses, ", ") + `)`
}

// DefaultSessionIdle is how long a session waits Idle for a message when
// its input names no session_idle.
const DefaultSessionIdle = 24 * time.Hour

// Input is the input of AgentRun.
type Input struct {
	Messages []agent.Message `json:"messages"`
	// MaxTurns bounds the model calls; 0 means agent.DefaultMaxTurns.
	// At the limit the run waits as BudgetExceeded until a budget input
	// raises it.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxTokens bounds the tokens (input plus output) of the model calls;
	// 0 means no limit.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxCost bounds the cost of the model calls, in US dollars at the
	// models' prices (the models file); 0 means no limit.
	MaxCost float64 `json:"max_cost,omitempty"`
	// ContinueAfter makes each execution continue as new after this many
	// steps; 0 (the default) continues only when Temporal suggests it.
	ContinueAfter int `json:"continue_after,omitempty"`
	// Session keeps the run open after an answer: it waits Idle for a
	// message, and completes with its last answer when SessionIdle passes
	// with none.
	Session bool `json:"session,omitempty"`
	// SessionIdle is a Go duration ("24h"); "" means DefaultSessionIdle.
	SessionIdle string `json:"session_idle,omitempty"`
	// Stream says whether model steps stream their text to the run's
	// stream (TopicTokens) when the provider can. nil means: for sessions.
	Stream *bool `json:"stream,omitempty"`
	// Continued is set on an execution that continues a run: where the
	// previous one stopped. Messages is then empty. It is honoured only in
	// an execution that the run's own continue-as-new started: the server
	// set its continued run id, it is its first attempt, and it has no cron
	// schedule (trustedContinued). A start input that sets it fails the run
	// with ForgedContinued, and a workflow retry whose input sets it with
	// RetriedContinued, having run nothing.
	Continued *Continued `json:"continued,omitempty"`
	// Agent is the agent the run runs. On a child run, the agent tool it
	// runs (its model, tools and system prompt come from the worker's
	// tools file). On a run with no parent, one of the agents the worker
	// lets runs start with (agentrun.Config.Agents): any other fails the
	// run at its tool listing. "" runs the worker's default agent.
	Agent string `json:"agent,omitempty"`
	// Fork makes the run a fork of a run that ended: it starts where
	// Fork.From began in that run, from what the origin's history recorded
	// (read by the worker, never from this input), and goes on live. A
	// fork's input has no messages and no agent (Fork.Agent names it).
	Fork *agent.Fork `json:"fork,omitempty"`
}

// ForgedAgent is the reason a run recorded before runs could name their
// agent failed when its start input set agent without being a child run.
const ForgedAgent = "the input sets agent, which only a run's call of an agent tool may set (this run has no parent run): start the run without agent, and let a run call the agent tool"

// ForgedContinued is the reason a run fails whose start input sets
// continued: the field is only for the run's own continue-as-new.
const ForgedContinued = "the input sets continued, which only the run's own continue-as-new may set (this execution continues none): start the run with messages and without continued"

// RetriedContinued is the reason a workflow retry fails whose input sets
// continued (a format: the attempt): a retry reuses the input of the
// execution it retries, which may be a client's, so its checkpoint is not
// the run's own.
const RetriedContinued = "the input sets continued, and this execution is attempt %d of a workflow retry, which reuses the retried execution's input: only an execution that the run's own continue-as-new started takes a checkpoint; start the run again with messages, and without a workflow retry policy (each step has its own retries)"

// CronRefused is the reason a run with a cron schedule fails (a format:
// the schedule): each cron run would start again from the client's input,
// with the previous run's id as its continued run id.
const CronRefused = "the run has cron schedule %q, and an agent run does not run on a cron schedule: start the run without one, and start runs on a schedule with a Temporal Schedule (temporal schedule create --workflow-type AgentRun ...), which starts each as a run of its own"

// MalformedCatalog is the reason a run fails whose tool listing returned a
// catalog that no worker lists (a format: what is wrong with it,
// activities.MalformedCatalog).
const MalformedCatalog = "the run's tool listing returned a catalog no worker lists: %s; was the listing's activity completed by hand? start the run again"

// Continued is the checkpoint a run carries across continue-as-new: the
// loop's checkpoint, the facts about the current turn, the catalog and the
// state (the run's budget is in the Input). Its size does not grow with the number of turns.
type Continued struct {
	Checkpoint  agent.Checkpoint   `json:"checkpoint"`
	Facts       *agent.Facts       `json:"facts,omitempty"`
	Generations map[string]int     `json:"generations,omitempty"`
	Catalog     activities.Catalog `json:"catalog"`
	State       State              `json:"state"`
	// Runs counts the executions before this one.
	Runs int `json:"runs"`
	// Stream is the run's stream (bounded: its oldest items are dropped).
	Stream *streams.State `json:"stream,omitempty"`
	// Since holds when each pending call with an approval timeout became
	// pending, for a run that continued as new while it waited.
	Since map[string]time.Time `json:"since,omitempty"`
	// Asked is when the current turn's model step completed, for the
	// approval clocks of calls not yet pending when the run continued.
	Asked time.Time `json:"asked,omitzero"`
	// LastStatus is the last status event published on the stream (its
	// key), so that the next execution publishes a status only when it
	// changed, not "Running" again at every continue-as-new.
	LastStatus string `json:"last_status,omitempty"`
}

// Result is what a completed run returns.
type Result struct {
	Answer string      `json:"answer"`
	Usage  agent.Usage `json:"usage"`
	Steps  int         `json:"steps"`
	// CutOff is set when the model's length limit cut the answer off.
	CutOff bool `json:"cut_off,omitempty"`
	// Empty is set when the answer has no text: the model returned nothing.
	Empty bool `json:"empty,omitempty"`
	// Turns counts the model calls the run made, its child runs'
	// included: what a parent counts against its budget.
	Turns int `json:"turns,omitempty"`
}

// Rejected is an operator input the run refused.
type Rejected struct {
	Signal  string `json:"signal"`
	Payload string `json:"payload"`
	Reason  string `json:"reason"`
}

// StepRecord is one completed step as the state query shows it.
type StepRecord struct {
	Name       string     `json:"name"`
	Kind       agent.Kind `json:"kind"`
	Generation int        `json:"generation,omitempty"`
	// Reconciled is set when a person recorded the result.
	Reconciled bool `json:"reconciled,omitempty"`
	// Preview is the start of the step's result, on one line.
	Preview string `json:"preview,omitempty"`
	// Settled says how an interrupted write was settled without a person.
	Settled *agent.Settled `json:"settled,omitempty"`
}

// SettledStep is a write that was interrupted and settled without a
// person: by its probe or its idempotency key.
type SettledStep struct {
	Step    string        `json:"step"`
	Settled agent.Settled `json:"settled"`
}

// Fence is an attempt of a write that may still be running.
type Fence struct {
	Step string `json:"step"`
	// Attempt names it ("attempt 1 (worker 123@host)").
	Attempt string `json:"attempt"`
	// Until is its deadline plus fence.Grace: nothing probes or runs the
	// write again before it.
	Until time.Time `json:"until"`
	// Waiting is set while the run waits for Until before it settles the
	// write by itself.
	Waiting bool `json:"waiting,omitempty"`
}

// String says it in one line: "tool/2/0/create_ticket: attempt 1 (worker
// 1@h) may still be running until 14:03:10 UTC".
func (f *Fence) String() string {
	return fmt.Sprintf("%s: %s may still be running until %s", f.Step, f.Attempt, operator.FormatUntil(f.Until))
}

// Retry is a step the server is retrying: from the first failed attempt
// the step's activity reported (activities.RetrySignal) until the step
// completes or fails.
type Retry struct {
	Step string `json:"step"`
	// Attempt is the attempt due next (NextAt set) or running.
	Attempt int `json:"attempt"`
	// MaxAttempts bounds the attempts; 0: no bound.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// LastError is how the attempt before Attempt failed, in the words of
	// its activity; "" when it did not say (its worker stopped answering,
	// or it ran out of time).
	LastError string `json:"last_error,omitempty"`
	// NextAt is when Attempt is due; zero once it started.
	NextAt time.Time `json:"next_at,omitzero"`
	// Since is when the step's first attempt was scheduled.
	Since time.Time `json:"since"`
}

// String says it in one line: "llm/1: attempt 2 of 10 failed: NetworkError:
// connection refused; attempt 3 is due at 14:03:10 UTC", or "llm/1:
// attempt 3 of 10 running; attempt 2 failed: ...".
func (r *Retry) String() string {
	last := "did not finish (its worker stopped answering, or it ran out of time)"
	if r.LastError != "" {
		last = "failed: " + r.LastError
	}
	if !r.NextAt.IsZero() {
		return fmt.Sprintf("%s: attempt %s %s; attempt %d is due at %s", r.Step, r.of(r.Attempt-1), last, r.Attempt, operator.FormatUntil(r.NextAt))
	}
	return fmt.Sprintf("%s: attempt %s running; attempt %d %s", r.Step, r.of(r.Attempt), r.Attempt-1, last)
}

// of is "N of M", or "N" without a bound.
func (r *Retry) of(n int) string {
	if r.MaxAttempts > 0 {
		return fmt.Sprintf("%d of %d", n, r.MaxAttempts)
	}
	return strconv.Itoa(n)
}

// LimitWait is a model step whose attempt waits for its rate limit's slot
// (activities.RetryNotice with Limit), from the notice until the step
// completes or a later attempt is reported. The wait is no failure.
type LimitWait struct {
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Pool names the rate limit: the provider, or the models file's pool.
	Pool string `json:"pool"`
	// Paused says the provider asked the pool to wait (a 429's
	// Retry-After), rather than the declared limits.
	Paused bool `json:"paused,omitempty"`
	// Until is the call's slot as its worker reckoned it when the wait
	// began.
	Until time.Time `json:"until"`
}

// String says it in one line for a page that is not read at once: "llm/3:
// waiting for the openai rate limit, next slot at 14:03:10 UTC".
func (w *LimitWait) String() string {
	return fmt.Sprintf("%s: %s, next slot at %s", w.Step, w.what(), operator.FormatUntil(w.Until))
}

// At says it as seen at now: "llm/3: waiting for the openai rate limit,
// next slot in 12 s", or, once the slot has passed, that the call went.
func (w *LimitWait) At(now time.Time) string {
	if !w.Until.After(now) {
		return fmt.Sprintf("%s: waited for the %s until %s; its call has gone", w.Step, w.limit(), operator.FormatUntil(w.Until))
	}
	return fmt.Sprintf("%s: %s", w.Step, ratelimit.Wait{Pool: w.Pool, Until: w.Until, Paused: w.Paused}.At(now))
}

func (w *LimitWait) what() string { return "waiting for the " + w.limit() }

func (w *LimitWait) limit() string {
	if w.Paused {
		return w.Pool + " rate limit (the provider asked to wait)"
	}
	return w.Pool + " rate limit"
}

// MaxSettled bounds State.Settled.
const MaxSettled = 20

// State is the answer of the state query.
type State struct {
	Status        agent.Status    `json:"status"`
	Model         string          `json:"model,omitempty"`
	Pending       []agent.Pending `json:"pending,omitempty"`
	Indeterminate string          `json:"indeterminate,omitempty"`
	// Why is the reason the step became Indeterminate.
	Why string `json:"why,omitempty"`
	// Fence names an earlier attempt of a write that may still be running,
	// and until when: while the run waits for it before settling the
	// write (Status Running), or while the write is Indeterminate (a retry
	// is refused until then).
	Fence *Fence `json:"fence,omitempty"`
	// Retry is the step being retried, while it is (Status Running).
	Retry *Retry `json:"retry,omitempty"`
	// LimitWait is the model step waiting for its rate limit, while it
	// does (Status Running).
	LimitWait *LimitWait `json:"limit_wait,omitempty"`
	Answer    string     `json:"answer,omitempty"`
	// AnswerTurn is the model call that gave Answer: an answer to a
	// message sent to model step llm/N has AnswerTurn >= N.
	AnswerTurn int `json:"answer_turn,omitempty"`
	// Messages counts the messages the run took; MessageStep is the
	// model step the newest one goes to, e.g. "llm/4".
	Messages    int    `json:"messages,omitempty"`
	MessageStep string `json:"message_step,omitempty"`
	// Session is set on a session run; Idle is then how long it waits
	// for a message after an answer.
	Session bool   `json:"session,omitempty"`
	Idle    string `json:"idle,omitempty"`
	// CutOff is set on Completed when the model's length limit cut the
	// answer off (finish reason length): it may be incomplete.
	CutOff bool `json:"cut_off,omitempty"`
	// Empty is set on Completed (and Idle) when the answer has no text:
	// the model returned nothing.
	Empty  bool   `json:"empty,omitempty"`
	Reason string `json:"reason,omitempty"` // Failed, BudgetExceeded, Cancelled: why
	// Budget is the run's limits now; Turns the model calls it made
	// (Usage: the tokens they used).
	Budget agent.Budget `json:"budget"`
	Turns  int          `json:"turns"`
	// Steps are the newest completed steps, at most MaxSteps of them;
	// StepCount counts them all.
	Steps     []StepRecord `json:"steps"`
	StepCount int          `json:"step_count"`
	Usage     agent.Usage  `json:"usage"`
	// Runs counts the continue-as-new executions before the current one.
	Runs     int        `json:"runs,omitempty"`
	Rejected []Rejected `json:"rejected,omitempty"`
	// Rejects counts the operator inputs the run refused, all of them
	// (Rejected keeps the newest MaxRejected); RejectStreak those refused
	// since the last one it applied. Past QuietRejects in a row a refusal
	// is recorded only here and in the current details.
	Rejects      int `json:"rejects,omitempty"`
	RejectStreak int `json:"reject_streak,omitempty"`
	// Expired are the calls denied because nobody decided them within
	// their tool's approval timeout, oldest first.
	Expired []Expired `json:"expired,omitempty"`
	// InFlight names the write that was running when the run was
	// cancelled: it may have taken effect.
	InFlight string `json:"in_flight,omitempty"`
	// Child is the child run a step runs now, as it last reported, while
	// it runs: Status, Pending and Indeterminate are then its own.
	Child *Child `json:"child,omitempty"`
	// Delegated counts the model calls of the run's finished child runs;
	// their tokens are in Usage.
	Delegated int `json:"delegated,omitempty"`
	// Settled are the newest writes (at most MaxSettled) that were
	// interrupted and settled without a person, oldest first.
	Settled []SettledStep `json:"settled,omitempty"`
	// Fork is set on a fork: its origin, its first live step and what it
	// changed (ForkState).
	Fork *ForkState `json:"fork,omitempty"`
}

// Brief is the state an operator update answers with: s without the lists
// the state query returns (the newest steps, the inputs it refused) and
// without its answer's text. The history records every update's answer;
// whole, each operator input (a session's every message) would record
// the newest MaxSteps steps' previews, the newest MaxRejected refusals and
// the last answer again. The counts (StepCount, Rejects) and AnswerTurn
// stay.
func (s State) Brief() State {
	s.Steps, s.Rejected, s.Answer = nil, nil, ""
	return s
}

// Expired is a call denied because its approval timed out.
type Expired struct {
	Marker string `json:"marker"`
	Tool   string `json:"tool"`
	After  string `json:"after"` // the approval timeout, e.g. "30m0s"
}

// MaxRejected bounds the rejected inputs State keeps (the newest).
const MaxRejected = 20

// QuietRejects is how many operator inputs in a row a run refuses at full
// cost: each refusal upserts the search attributes and publishes a stream
// item. Past it, until an input is applied, a refusal is recorded only in
// the state (Rejected, Rejects) and the current details, which add no
// event to the history, so that a flood of bad signals cannot push a
// waiting run toward Temporal's history limits.
const QuietRejects = 5

// MaxStepAttr bounds the pending markers AgentRunStep lists, in bytes:
// when they do not fit, it holds the first ones that do and "+N more".
// upsertAttrs then bounds the value as the server counts it (MaxAttrValue).
const MaxStepAttr = 1800

// MaxSteps bounds the completed steps State lists (the newest).
const MaxSteps = 50
