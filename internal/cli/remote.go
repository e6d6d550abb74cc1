package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/logtext"
	"github.com/agentrun/agentrun/internal/shell"
	"github.com/agentrun/agentrun/internal/tracing"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// Remote drives runs on a Temporal cluster.
type Remote struct {
	Conn     *cluster.Conn
	Settings Settings
	// Poll is how often --wait looks at the run. Default 500ms.
	Poll time.Duration
	// Verbose adds the raw errors to what --wait says about the
	// connection and the workers (--verbose).
	Verbose bool

	tracing *tracing.Provider // DialRemote's; nil: off
	logger  *slog.Logger      // DialRemote's
}

// DialRemote connects a command-line program named service
// (tracing.ServiceStarter, tracing.ServiceReconcile) to the cluster the
// settings name, with the payload codec and tracing they configure and
// warnings logged to stderr. Close flushes its spans and closes the
// connection.
func DialRemote(ctx context.Context, s Settings, service string, verbose bool) (*Remote, error) {
	logger := logtext.For(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), s.Config.Codec != nil)
	tr, err := tracing.Start(ctx, s.Config.Tracing, service, logger) // nil: off
	if err != nil {
		return nil, err
	}
	conn, err := cluster.Dial(ctx, logger, nil, s.Config.Codec, tr.ClientInterceptors()...)
	if err != nil {
		_ = tr.Shutdown(ctx)
		return nil, err
	}
	return &Remote{Conn: conn, Settings: s, Verbose: verbose, tracing: tr, logger: logger}, nil
}

// Close flushes the spans of a Remote from DialRemote and closes its
// connection.
func (r *Remote) Close(ctx context.Context) {
	if err := r.tracing.Shutdown(ctx); err != nil {
		r.logger.Warn("tracing: spans not exported", "error", err)
	}
	r.Conn.Close()
}

// InputHash is the hash of a run's input kept in its memo, so that a
// starter can tell whether an existing run has the same prompt.
func InputHash(in workflows.Input) string {
	b, _ := json.Marshal(in.Messages)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Link is the Web UI address of a run (config.WebUI), or, when the
// Temporal server is not a local dev server and AGENTRUN_UI_URL is unset,
// a line that says how to get one.
func (r *Remote) Link(runID string) string {
	ui, ok := r.Settings.WebUI(r.Conn.HostPort)
	if !ok {
		return fmt.Sprintf("set AGENTRUN_UI_URL to the Web UI of the Temporal server at %s (e.g. https://temporal.example.com:8080) for a link to this run", r.Conn.HostPort)
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimRight(ui, "/"), url.PathEscape(r.Conn.Namespace), url.PathEscape(runID))
}

// Start starts the run runID with limits, or attaches to the run of that
// id when it has the same prompt (an empty prompt attaches to any existing
// run; it keeps its own limits), and with wait follows it until it ends.
func (r *Remote) Start(ctx context.Context, w io.Writer, runID, prompt string, limits Limits, wait bool) error {
	if err := operator.ValidRunID(runID); err != nil {
		return usagef("%v", err)
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	desc, err := r.describe(ctx, runID)
	attached := err == nil
	switch {
	case errors.Is(err, operator.ErrUnknownRun) && strings.TrimSpace(prompt) == "":
		return usagef("run %s does not exist: give a prompt to start it", runID)
	case err != nil && !errors.Is(err, operator.ErrUnknownRun):
		return err
	case attached && limits.Explicit:
		return errLimitsOfExisting(r.op(), runID)
	}
	if strings.TrimSpace(prompt) != "" {
		in := workflows.Input{Messages: agent.UserMessages(prompt), MaxTurns: limits.MaxTurns, MaxTokens: limits.MaxTokens}
		if limits.Session {
			in.Session, in.SessionIdle = true, limits.SessionIdle.String()
		}
		in.Stream = limits.Stream
		hash := InputHash(in)
		if attached && desc.hash != hash {
			return r.errOtherPrompt(runID)
		}
		if !attached {
			// Another starter may win the race: the conflict policy attaches.
			_, err := r.Conn.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID:                       runID,
				TaskQueue:                r.Settings.TaskQueue,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
				StaticSummary:            workflows.Summary(prompt),
				StaticDetails:            workflows.StaticDetails(runID),
				Memo:                     map[string]any{workflows.MemoInputHash: hash},
				TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.StatusKey.ValueSet(string(agent.StatusRunning))),
			}, workflows.WorkflowName, in)
			if err != nil {
				return fmt.Errorf("start run %s: %w", runID, err)
			}
			if desc, err = r.describe(ctx, runID); err != nil {
				return err
			}
			if desc.hash != hash {
				return r.errOtherPrompt(runID)
			}
		}
	}
	verb := "started"
	if attached {
		verb = "attached to"
	}
	fmt.Fprintf(w, "%s run %s\n  Web UI: %s\n", verb, runID, r.Link(runID))
	if !wait {
		return nil
	}
	return r.follow(ctx, w, runID)
}

type description struct {
	runID   string
	first   string // the run id of the run's first execution
	status  enumspb.WorkflowExecutionStatus
	hash    string
	started time.Time
}

// describe returns what the cluster says of a run, or a clear error for
// an unknown one.
func (r *Remote) describe(ctx context.Context, runID string) (description, error) {
	resp, err := describeRaw(ctx, r.Conn, runID)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return description{}, fmt.Errorf("run %s not found in namespace %s: %w", runID, r.Conn.Namespace, operator.ErrUnknownRun)
	}
	if err != nil {
		return description{}, fmt.Errorf("describe run %s: %w", runID, err)
	}
	info := resp.GetWorkflowExecutionInfo()
	d := description{runID: info.GetExecution().GetRunId(), first: info.GetFirstRunId(), status: info.GetStatus(), started: info.GetStartTime().AsTime()}
	if p := info.GetMemo().GetFields()[workflows.MemoInputHash]; p != nil {
		_ = r.Conn.Converter().FromPayload(p, &d.hash) // encrypted when a codec is set
	}
	return d, nil
}

// follow prints each status change of a run until it ends, and returns
// the error that carries the exit code of its outcome.
func (r *Remote) follow(ctx context.Context, out io.Writer, runID string) error {
	poll := r.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	w := r.followText(ctx, out, runID) // the model's text as it comes
	defer w.Close()
	wt := r.watch(w, runID)
	last := ""
	for {
		desc, st, seen, err := wt.look(ctx)
		switch {
		case err != nil:
			return err
		case !seen:
		case !running(desc):
			w.wait(ctx, r, runID)
			return r.closed(ctx, w, runID, desc)
		case st.Status == agent.StatusIdle:
			// A session answered: it waits for a message, not for us.
			w.wait(ctx, r, runID)
			printOutcome(w, r.op(), runID, outcomeOf(st))
			return nil
		default:
			key := stateKey(st)
			if key != last && st.Status != agent.StatusCompleted && st.Status != agent.StatusFailed {
				w.wait(ctx, r, runID)
				printOutcome(w, r.op(), runID, outcomeOf(st))
				if st.Status == agent.StatusBudgetExceeded {
					fmt.Fprintf(w, "         or: %s\n", r.op().signal(runID, operator.SignalBudget, operator.RaiseHint(st.Budget, st.Turns, st.Usage)))
				}
				last = key
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// closed reports a run that ended.
func (r *Remote) closed(ctx context.Context, w io.Writer, runID string, desc description) error {
	var res workflows.Result
	err := r.Conn.GetWorkflow(ctx, runID, desc.runID).Get(ctx, &res)
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		o := agent.Outcome{Status: agent.StatusCancelled, Reason: agent.CancelledReason("")}
		if st, err := r.state(ctx, runID); err == nil && st.Status == agent.StatusCancelled {
			o.Reason = st.Reason
		}
		printOutcome(w, r.op(), runID, o)
		return &OutcomeError{Outcome: o}
	}
	if err != nil {
		o := agent.Outcome{Status: agent.StatusFailed, Reason: failureMessage(err)}
		printOutcome(w, r.op(), runID, o)
		return &OutcomeError{Outcome: o}
	}
	o := agent.Outcome{Status: agent.StatusCompleted, Answer: res.Answer, CutOff: res.CutOff, Empty: res.Empty}
	printOutcome(w, r.op(), runID, o)
	fmt.Fprintf(w, "  usage: %d input and %d output tokens over %s\n  Web UI: %s\n", res.Usage.InputTokens, res.Usage.OutputTokens, plural(res.Steps, "step"), r.Link(runID))
	return nil
}

// failureMessage is the message a run or an update failed with: the
// application error's own message, without the client's wrapping.
func failureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

func (r *Remote) state(ctx context.Context, runID string) (workflows.State, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st workflows.State
	v, err := r.Conn.QueryWorkflow(qctx, runID, "", workflows.QueryState)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

func stateKey(st workflows.State) string {
	b, _ := json.Marshal([]any{st.Status, st.Pending, st.Indeterminate, len(st.Rejected)})
	return string(b)
}

func outcomeOf(st workflows.State) agent.Outcome {
	o := agent.Outcome{Status: st.Status, Answer: st.Answer, CutOff: st.CutOff, Empty: st.Empty, Pending: st.Pending, Step: st.Indeterminate, Reason: st.Reason}
	if o.Status == agent.StatusIndeterminate {
		o.Reason = st.Why // the cause: the guard's message, with the probe's answer if it has one
	}
	return o
}

// op is how printed commands reach runs on this cluster.
func (r *Remote) op() engine { return temporalEngine(r.Settings.Commands, r.Conn.Namespace) }

// Reconcile runs one operator command against the cluster. approve, deny,
// done and retry are updates: the run answers at once, and a refused input
// is an error here, not a silent no-op.
func (r *Remote) Reconcile(ctx context.Context, w io.Writer, args []string) error {
	if err := CheckOperatorArgs(args); err != nil {
		return err
	}
	tw := newTermWriter(w)
	defer tw.Flush()
	w = tw
	if len(args) > 0 {
		switch args[0] {
		case "list":
			return r.list(ctx, w)
		case "show":
			runID, name, _ := showArgs(args)
			if name != "" {
				return r.showStep(ctx, w, runID, name)
			}
			return r.show(ctx, w, runID)
		case "cancel":
			runID, _ := cancelArgs(args)
			return r.cancel(ctx, w, runID)
		}
	}
	runID, sig, err := ParseOperator(args)
	if err != nil {
		return err
	}
	desc, err := r.describe(ctx, runID)
	if err != nil {
		return err
	}
	if status, ended := endedStatus(desc.status); ended {
		return fmt.Errorf("%s refused: run %s is already %s; nothing changes a run after it ended", args[0], runID, status)
	}
	if (sig.Name == operator.SignalApprove || sig.Name == operator.SignalDeny) && sig.Digest == "" {
		// Decide on the arguments pending now (a worker answers the
		// update anyway), and say which they were.
		if st, err := r.state(ctx, runID); err == nil {
			if p, ok := pendingCall(outcomeOf(st), sig.Marker); ok {
				sig.Digest = p.Digest
			}
		}
	}
	// An approve or deny is pinned to this run's first execution: it
	// cannot land on another run started later under the same id.
	payload := operator.PayloadOf(sig, desc.first)
	var text *liveText
	if sig.Name == operator.SignalMessage && messageWait(args) {
		// From before the message: its answer's text may come at once.
		text = r.followText(ctx, w, runID)
		defer text.Close()
		w = text
	}
	updateID := fmt.Sprintf("%s-%s-%d", sig.Name, strings.NewReplacer("/", "_").Replace(sig.Marker+sig.Step), time.Now().UnixNano())
	uctx, cancel := context.WithTimeout(ctx, updateWait)
	defer cancel()
	h, err := r.Conn.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID: runID, UpdateName: sig.Name, UpdateID: updateID, Args: []any{payload},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var st workflows.State
	if err == nil {
		err = h.Get(uctx, &st)
	}
	if err != nil && (notAdmitted(err) || errors.Is(err, context.DeadlineExceeded) || uctx.Err() != nil) && ctx.Err() == nil {
		if sent, err := r.notAnswered(ctx, w, args[0], runID, updateID, err, sig.Name, payload); sent || err != nil {
			return err
		}
		// Applied after all: the run answered the update id.
		if err := r.updateOutcome(ctx, runID, updateID, &st); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("%s refused: %s", args[0], failureMessage(err))
	}
	if sig.Name == operator.SignalMessage {
		fmt.Fprintf(w, "message accepted by run %s for %s; it is now %s\n", runID, st.MessageStep, st.Status)
		if !messageWait(args) {
			fmt.Fprintf(w, "  Web UI: %s\n", r.Link(runID))
			return nil
		}
		return r.answer(ctx, text, runID, st.MessageStep)
	}
	if sig.Digest != "" {
		fmt.Fprintf(w, "%s accepted by run %s (%s, arguments %s); it is now %s\n  Web UI: %s\n", args[0], runID, sig.Marker, sig.Digest, st.Status, r.Link(runID))
		return nil
	}
	fmt.Fprintf(w, "%s accepted by run %s; it is now %s\n  Web UI: %s\n", args[0], runID, st.Status, r.Link(runID))
	return nil
}

// updateWait bounds how long reconcile waits for the run to admit and
// answer an update before it looks why it did not.
const updateWait = 10 * time.Second

// notAdmitted reports whether the server refused to admit an update: it
// holds as many updates in flight for the run as it allows (10 by
// default), which it says with RESOURCE_EXHAUSTED.
func notAdmitted(err error) bool {
	var re *serviceerror.ResourceExhausted
	return errors.As(err, &re)
}

// notAnswered finds why an update was not answered within updateWait and
// acts on it. Not admitted (the run's update slots are full: the server's
// RESOURCE_EXHAUSTED, or no trace of the update id): the same input goes as
// a signal, which the server always takes, and one line says so (sent).
// Admitted but not answered: an error naming the cause, a worker or none
// polling the task queue. Answered meanwhile: neither (the caller reads
// the outcome).
func (r *Remote) notAnswered(ctx context.Context, w io.Writer, op, runID, updateID string, cause error, name string, payload any) (sent bool, err error) {
	admitted := !notAdmitted(cause)
	if admitted {
		var st workflows.State
		err := r.updateOutcome(ctx, runID, updateID, &st)
		var nf *serviceerror.NotFound
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &nf):
			admitted = false
		case !errors.Is(err, context.DeadlineExceeded):
			return false, fmt.Errorf("%s refused: %s", op, failureMessage(err))
		}
	}
	if !admitted {
		if err := r.Conn.SignalWorkflow(ctx, runID, "", name, payload); err != nil {
			return false, fmt.Errorf("%s: the run admitted no update (too many in flight) and the signal failed too: %w", op, err)
		}
		fmt.Fprintf(w, "%s sent to run %s as a signal: the run admits no more updates now (the server allows 10 in flight per run: watchers' polls or other operators hold them); the run applies it or records why it refused it, see %s\n", op, runID, r.op().reconcile("show", runID))
		return true, nil
	}
	pollers, perr := r.pollers(ctx)
	switch {
	case perr != nil:
		return false, fmt.Errorf("%s admitted by run %s but not answered within %s (update id %s; it applies when a worker takes it), and the task queue %s could not be described: %v", op, runID, updateWait, updateID, r.Settings.TaskQueue, perr)
	case pollers == 0:
		return false, fmt.Errorf("%s admitted by run %s but no worker polls task queue %s (update id %s): it applies when a worker starts", op, runID, r.Settings.TaskQueue, updateID)
	}
	poll := "poll"
	if pollers == 1 {
		poll = "polls"
	}
	return false, fmt.Errorf("%s admitted by run %s but not answered within %s although %s %s task queue %s (update id %s; it applies when the run's worker takes it): see %s", op, runID, updateWait, plural(pollers, "worker"), poll, r.Settings.TaskQueue, updateID, r.op().reconcile("show", runID))
}

// updateOutcome reads the outcome of an update by its id, waiting a few
// seconds at most: a *serviceerror.NotFound when the run never admitted
// it, context.DeadlineExceeded when it is admitted and not answered yet.
func (r *Remote) updateOutcome(ctx context.Context, runID, updateID string, st *workflows.State) error {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := r.Conn.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: runID, UpdateID: updateID}).Get(pctx, st)
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return context.DeadlineExceeded
	}
	return err
}

// pollers counts the workers polling the run's task queue for workflow
// tasks, as the server saw them lately.
func (r *Remote) pollers(ctx context.Context) (int, error) {
	resp, err := r.Conn.DescribeTaskQueue(ctx, r.Settings.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return 0, err
	}
	return len(resp.GetPollers()), nil
}

// answer waits for the run's answer to a message given to model step
// step (an answer from that model call or a later one) and prints it; a
// run that stops on something else first is printed as --wait prints it.
func (r *Remote) answer(ctx context.Context, w *liveText, runID, step string) error {
	n, _ := agent.StepTurn(step)
	poll := cmp.Or(r.Poll, 500*time.Millisecond)
	wt := r.watch(w, runID)
	last := ""
	for {
		desc, st, seen, err := wt.look(ctx)
		switch {
		case err != nil:
			return err
		case !seen:
		case !running(desc):
			w.wait(ctx, r, runID)
			return r.closed(ctx, w, runID, desc)
		case st.Status == agent.StatusIdle && st.AnswerTurn >= n:
			w.wait(ctx, r, runID)
			printOutcome(w, r.op(), runID, outcomeOf(st))
			return nil
		case st.Status == agent.StatusAwaitingApproval || st.Status == agent.StatusIndeterminate || st.Status == agent.StatusBudgetExceeded:
			if key := stateKey(st); key != last {
				w.wait(ctx, r, runID)
				printOutcome(w, r.op(), runID, outcomeOf(st))
				last = key
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// cancelWait bounds how long cancel waits for the run to end.
const cancelWait = 30 * time.Second

// cancel requests the cancellation of a running run (Temporal's own
// cancel, as `temporal workflow cancel` sends it) and waits for the run to
// end, printing how it ended.
func (r *Remote) cancel(ctx context.Context, w io.Writer, runID string) error {
	desc, err := r.describe(ctx, runID)
	if err != nil {
		return err
	}
	if ended, ok := endedStatus(desc.status); ok {
		return fmt.Errorf("cancel refused: run %s is already %s", runID, ended)
	}
	if err := r.Conn.CancelWorkflow(ctx, runID, ""); err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	wctx, stop := context.WithTimeout(ctx, cancelWait)
	defer stop()
	for {
		desc, err = r.describe(wctx, runID)
		if err == nil && desc.status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			return r.closed(ctx, w, runID, desc)
		}
		select {
		case <-wctx.Done():
			fmt.Fprintf(w, "cancel requested for run %s; it ends Cancelled once a worker on task queue %s picks it up\n  Web UI: %s\n", runID, r.Settings.TaskQueue, r.Link(runID))
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *Remote) list(ctx context.Context, w io.Writer) error {
	query := workflows.WaitingQuery()
	var token []byte
	n := 0
	for {
		resp, err := r.Conn.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: r.Conn.Namespace, Query: query, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			sa := e.GetSearchAttributes().GetIndexedFields()
			var status, step string
			if p := sa[operator.StatusAttribute]; p != nil {
				_ = json.Unmarshal(p.GetData(), &status)
			}
			if p := sa[operator.StepAttribute]; p != nil {
				_ = json.Unmarshal(p.GetData(), &step)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", e.GetExecution().GetWorkflowId(), status, step)
			n++
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "no run waits on a person")
	}
	return nil
}

func (r *Remote) show(ctx context.Context, w io.Writer, runID string) error {
	if err := operator.ValidRunID(runID); err != nil {
		return usagef("%v", err)
	}
	desc, err := r.describe(ctx, runID)
	if err != nil {
		return err
	}
	st, err := r.state(ctx, runID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.showFromHistory(ctx, w, runID, desc, err)
	}
	v := runView{
		Header:  fmt.Sprintf("run %s: %s (workflow %s)", runID, st.Status, workflowStatus(desc.status)),
		Outcome: outcomeOf(st),
	}
	if n := st.StepCount - len(st.Steps); n > 0 {
		v.Steps = append(v.Steps, fmt.Sprintf("(%s earlier; see one with --step STEP)", plural(n, "step")))
	}
	for _, s := range st.Steps {
		note := ""
		if s.Reconciled {
			note = " (reconciled)"
		}
		if s.Settled != nil {
			note = " (" + s.Settled.String() + ")"
		}
		v.Steps = append(v.Steps, fmt.Sprintf("%-28s %-5s %s%s", s.Name, s.Kind, s.Preview, note))
	}
	if f := st.Fence; f != nil {
		// An earlier attempt of a write may still act: what the run waits
		// for, or until when a retry is refused.
		what := "a retry is refused until then"
		if f.Waiting {
			what = "the run waits until then before it settles the write by itself"
		}
		v.Tail = append(v.Tail, fmt.Sprintf("fence: %s; %s", f.String(), what))
	}
	for _, e := range st.Expired {
		v.Tail = append(v.Tail, fmt.Sprintf("approval expired: %s (%s) waited %s and was denied", e.Marker, e.Tool, e.After))
	}
	if rt := st.Retry; rt != nil {
		v.Tail = append(v.Tail, "retrying "+rt.String())
	}
	v.Tail = append(v.Tail, budgetLine(st.Turns, st.Usage, st.Budget))
	for _, rj := range st.Rejected {
		v.Tail = append(v.Tail, fmt.Sprintf("rejected %s %s: %s", rj.Signal, rj.Payload, rj.Reason))
	}
	v.Tail = append(v.Tail, "Web UI: "+r.Link(runID))
	printRun(w, r.op(), runID, v)
	return nil
}

// showStep prints one step's whole input and output, from the history and
// the content store (which must be the workers': AGENTRUN_JOURNAL).
//
// A tool call waiting for approval has no activity yet: the run's state
// query names it, and it is printed whole with its digest.
func (r *Remote) showStep(ctx context.Context, w io.Writer, runID, name string) error {
	step, res, err := r.findStep(ctx, runID, name)
	if errors.Is(err, errNoStep) && agent.IsToolStep(name) {
		if st, qerr := r.state(ctx, runID); qerr == nil {
			if p, ok := pendingCall(outcomeOf(st), name); ok {
				store, err := r.Settings.Content()
				if err != nil {
					return err
				}
				return printPending(ctx, w, r.op(), &execute.Executor{Content: store}, runID, p)
			}
		}
	}
	if err != nil {
		return err
	}
	store, err := r.Settings.Content()
	if err != nil {
		return err
	}
	return printStep(ctx, w, &execute.Executor{Content: store}, runID, step, res)
}

func (r *Remote) errOtherPrompt(runID string) error {
	return fmt.Errorf("run %s exists with another prompt: %w; attach with no prompt (%s --id %s) or choose another --id", runID, operator.ErrInputMismatch, r.op().cmds.Starter, shell.Quote(runID))
}

// endedStatus names the status of a closed run: Completed, Failed or
// Cancelled, or the workflow's own status (terminated, timed out).
func endedStatus(s enumspb.WorkflowExecutionStatus) (string, bool) {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "", false
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return string(agent.StatusCompleted), true
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return string(agent.StatusFailed), true
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return string(agent.StatusCancelled), true
	}
	return workflowStatus(s), true
}

// workflowStatus names a workflow execution status as the UI does.
func workflowStatus(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// describeRaw returns the server's description of the latest run of an id.
func describeRaw(ctx context.Context, c client.Client, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := c.DescribeWorkflow(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	return d.RawResponse, nil
}
