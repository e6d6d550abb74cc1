package agentruntest

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/content"
	"github.com/agentrun/agentrun/journal"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// Env is one agent run on the sdk's test environment, with the agents of
// a Config registered. Make one per run with [New]; its methods are for
// the test's goroutine (and the functions given to OnApproval).
type Env struct {
	env *testsuite.TestWorkflowEnvironment

	decisions map[string]Decision        // by marker: Approve and Deny
	settles   map[string]operator.Signal // by step: Done and Retry
	decide    func(agent.Pending) Decision
	asked     map[string]bool // markers signalled
	ran       bool
	waiting   []workflows.State // where the run and its children waited for nobody, when they did
	watch     watch

	mu       sync.Mutex
	children []string // the ids of the child runs started, in order
}

// New returns an environment that runs the agents of cfg as a worker
// would: agentrun.Register on a fresh test environment. Where cfg leaves
// them unset, the write guard and the content are kept in memory (with
// Journal set, in files under it, as on a worker) and the log lines go to
// a buffer the test prints when it fails. A cfg that Register refuses
// fails the test.
func New(t testing.TB, cfg agentrun.Config) *Env {
	t.Helper()
	logs := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() && logs.String() != "" {
			t.Logf("agentrun's log lines:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(logs, nil))
	if cfg.Journal == "" {
		if cfg.Guard == nil {
			cfg.Guard = journal.NewMemStore()
		}
		if cfg.Content == nil {
			cfg.Content = content.NewMemStore()
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = logger
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(logger))
	e := &Env{env: suite.NewTestWorkflowEnvironment(), decisions: map[string]Decision{}, settles: map[string]operator.Signal{}, asked: map[string]bool{}}
	if err := agentrun.Register(e.env, cfg); err != nil {
		t.Fatalf("agentruntest.New: %v", err)
	}
	e.env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.children = append(e.children, info.WorkflowExecution.ID)
	})
	return e
}

// ErrWaiting is what Run's error matches when the run waited for a person
// the test did not answer (a pending call it decided nothing on, an
// Indeterminate write, an exhausted budget) and was cancelled.
var ErrWaiting = errors.New("the run waits for a person")

// Run runs the agent agentName ("" for the first of the Config) on
// prompt to its end and returns its result. It answers the approvals the
// run asks for as Approve, Deny and OnApproval said. The error is the
// run's failure, or one matching ErrWaiting. An Env runs one run; a
// second Run is an error.
func (e *Env) Run(agentName, prompt string) (workflows.Result, error) {
	if e.ran {
		return workflows.Result{}, errors.New("agentruntest: Run called twice; an Env runs one run, make a new one with New")
	}
	e.ran = true
	e.env.RegisterDelayedCallback(e.poll, e.watch.next(""))
	e.env.ExecuteWorkflow(workflows.AgentRun, workflows.Input{Messages: agent.UserMessages(prompt), Agent: agentName})
	if e.waiting != nil {
		return workflows.Result{}, fmt.Errorf("agentruntest: %w: %s; it was cancelled", ErrWaiting, describe(e.waiting))
	}
	if !e.env.IsWorkflowCompleted() {
		return workflows.Result{}, errors.New("agentruntest: the run did not complete")
	}
	if err := e.env.GetWorkflowError(); err != nil {
		return workflows.Result{}, err
	}
	var res workflows.Result
	if err := e.env.GetWorkflowResult(&res); err != nil {
		return workflows.Result{}, fmt.Errorf("agentruntest: decode the result: %w", err)
	}
	return res, nil
}

// State is the run's state, as its "state" query (workflows.QueryState)
// answers it for the top-level run (not a child run's): after Run, or
// from a function given to OnApproval.
func (e *Env) State() (workflows.State, error) {
	var st workflows.State
	v, err := e.env.QueryWorkflow(workflows.QueryState)
	if err != nil {
		return st, fmt.Errorf("agentruntest: query the state: %w", err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("agentruntest: decode the state: %w", err)
	}
	return st, nil
}

// TestEnv is the sdk's test environment the run runs on: to mock an
// activity of your own, or to listen to the activities agentrun starts.
// The kit listens to the child workflows started; a listener of your own
// for them replaces the kit's, and the kit then answers no child run.
func (e *Env) TestEnv() *testsuite.TestWorkflowEnvironment { return e.env }

// childRuns are the ids of the child runs started so far.
func (e *Env) childRuns() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.children)
}

// describe says where a run waits: its status and what it waits on, then
// its child runs'.
func describe(states []workflows.State) string {
	var all []string
	for i, st := range states {
		s := describeOne(st)
		if i > 0 {
			s = "a child run at " + s
		}
		all = append(all, s)
	}
	return strings.Join(all, "; ")
}

func describeOne(st workflows.State) string {
	s := "status " + string(st.Status)
	if len(st.Pending) > 0 {
		s += ", pending"
		for _, p := range st.Pending {
			s += " " + p.Marker
		}
		s += " (decide it with Approve, Deny or OnApproval)"
	}
	if st.Indeterminate != "" {
		s += ", indeterminate " + st.Indeterminate
		if st.Why != "" {
			s += ": " + st.Why
		}
	}
	return s
}

// logBuffer keeps log lines; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
