package cli

import (
	"context"
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
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/logtext"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
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

	tracing *export.Provider // DialRemote's; nil: off
	logger  *slog.Logger     // DialRemote's
}

// DialRemote connects a command-line program named service
// (export.ServiceStarter, export.ServiceReconcile) to the cluster the
// settings name, with the payload codec and tracing they configure and
// warnings logged to stderr. Close flushes its spans and closes the
// connection.
func DialRemote(ctx context.Context, s Settings, service string, verbose bool) (*Remote, error) {
	logger := logtext.For(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), s.Config.Codec != nil)
	tr, err := export.Start(ctx, s.Config.Tracing, service, operator.Signals(), logger) // nil: off
	if err != nil {
		return nil, err
	}
	conn, err := cluster.Dial(ctx, logger, nil, s.Config.Codec, s.Config.GRPCCompression, tr.ClientInterceptors()...)
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

// closed reports a run that ended, as the client's Wait reads it.
func (r *Remote) closed(ctx context.Context, w io.Writer, runID string) error {
	res, err := r.client().Run(runID).Wait(ctx)
	if err != nil {
		return r.clientError(err, runID)
	}
	o := agent.Outcome{Status: res.Status, Answer: res.Answer, Reason: res.Reason, CutOff: res.CutOff, Empty: res.Empty}
	printOutcome(w, r.op(), runID, o)
	if res.Status != agent.StatusCompleted {
		return &OutcomeError{Outcome: o}
	}
	fmt.Fprintf(w, "  usage: %d input and %d output tokens%s over %s\n  Web UI: %s\n", res.Usage.InputTokens, res.Usage.OutputTokens, cachedNote(res.Usage), plural(res.Steps, "step"), r.Link(runID))
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

// state queries where a run stands through the client, waiting 5s at
// most for a worker to answer.
func (r *Remote) state(ctx context.Context, runID string) (workflows.State, error) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return r.client().Run(runID).State(qctx)
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

// endedStatus names the status of a closed run (workflows.EndedStatus).
func endedStatus(s enumspb.WorkflowExecutionStatus) (string, bool) {
	status, ended := workflows.EndedStatus(s)
	return string(status), ended
}

// workflowStatus names a workflow execution status as the UI does.
func workflowStatus(s enumspb.WorkflowExecutionStatus) string { return workflows.ExecutionStatus(s) }

// describeRaw returns the server's description of the latest run of an id.
func describeRaw(ctx context.Context, c client.Client, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := c.DescribeWorkflow(ctx, runID, "")
	if err != nil {
		return nil, err
	}
	return d.RawResponse, nil
}
