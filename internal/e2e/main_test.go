package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/internal/testkit/clustertest"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Stop()
	clustertest.Stop()
	pgtest.Stop()
	os.Exit(code)
}

const (
	prompt     = hand.Prompt
	ticketStep = hand.TicketStep
)

// fleet is a task queue with its shared folders.
type fleet struct {
	srv     *testenv.Server
	queue   string
	dir     string
	tickets string
}

func newFleet(t *testing.T, srv *testenv.Server) *fleet {
	dir := t.TempDir()
	return &fleet{srv: srv, queue: "q-" + strings.ReplaceAll(t.Name(), "/", "-"), dir: dir, tickets: filepath.Join(dir, "tickets.jsonl")}
}

func (f *fleet) env(extra ...string) []string {
	return f.srv.Env(append([]string{
		"AGENTRUN_TASK_QUEUE=" + f.queue,
		"AGENTRUN_JOURNAL=" + filepath.Join(f.dir, "journal"),
		"AGENTRUN_TICKETS=" + f.tickets,
		"AGENTRUN_MODEL=scripted",
	}, extra...)...)
}

func (f *fleet) ticketCount(t *testing.T) int {
	t.Helper()
	return testenv.TicketCount(t, f.tickets)
}

// temporal runs the real temporal CLI against the dev server. With the
// suite's key set (make test-encrypted) it reads and sends payloads through
// the suite's codec endpoint, as an operator's CLI would, unless args name
// one.
func (f *fleet) temporal(t *testing.T, args ...string) string {
	t.Helper()
	return f.rawTemporal(t, withCodecEndpoint(t, args)...)
}

// withCodecEndpoint is a temporal CLI command's args with the suite's
// codec endpoint when the suite's key is set and args name none.
func withCodecEndpoint(t *testing.T, args []string) []string {
	if e := testenv.CodecEndpoint(t); e != "" && !slices.Contains(args, "--codec-endpoint") {
		return append(args, "--codec-endpoint", e)
	}
	return args
}

// shownHistory is `temporal workflow show --output json` of a run, as an
// operator reads it. With the suite's key set the CLI decrypts payloads
// through the codec endpoint, but a failure still says "Encoded failure"
// and keeps its message and stack trace in its (now decoded) encoded
// attributes, as the failure converter encoded them: shownHistory puts
// them back in the failure, as the Web UI shows it. Without encoded
// failures it is the CLI's text as printed.
func (f *fleet) shownHistory(t *testing.T, runID string) string {
	t.Helper()
	out := f.temporal(t, "workflow", "show", "-w", runID, "--output", "json")
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("workflow show --output json: %v\n%.500s", err, out)
	}
	decoded := 0
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if enc, ok := v["encodedAttributes"].(map[string]any); ok {
				data, _ := enc["data"].(string)
				b, err := base64.StdEncoding.DecodeString(data)
				var attrs struct {
					Message    string `json:"message"`
					StackTrace string `json:"stack_trace"`
				}
				if err != nil || json.Unmarshal(b, &attrs) != nil {
					t.Fatalf("a failure's encoded attributes are not decoded JSON (is the codec endpoint set?): %.200v", enc)
				}
				v["message"], v["stackTrace"] = attrs.Message, attrs.StackTrace
				delete(v, "encodedAttributes")
				decoded++
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	if decoded == 0 {
		return out
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// rawTemporal runs the real temporal CLI against the dev server without
// the suite's codec endpoint: it shows payloads as the cluster keeps them.
func (f *fleet) rawTemporal(t *testing.T, args ...string) string {
	t.Helper()
	args = append(args, "--address", f.srv.HostPort, "--namespace", "default")
	code, out := testenv.Run(t, os.Environ(), time.Minute, f.srv.CLI, args...)
	if code != 0 {
		t.Fatalf("temporal %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func state(t *testing.T, srv *testenv.Server, runID string) (workflows.State, error) {
	return stateWith(t, srv.Client, runID)
}

// stateWith queries a run's state through c (a client with or without a
// codec).
func stateWith(t *testing.T, c client.Client, runID string) (workflows.State, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var st workflows.State
	v, err := c.QueryWorkflow(ctx, runID, "", workflows.QueryState)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

func waitStatus(t *testing.T, srv *testenv.Server, runID, status string, timeout time.Duration) workflows.State {
	t.Helper()
	return waitStatusWith(t, srv.Client, runID, status, timeout)
}

func waitStatusWith(t *testing.T, c client.Client, runID, status string, timeout time.Duration) workflows.State {
	t.Helper()
	var st workflows.State
	testenv.WaitFor(t, timeout, runID+" to be "+status, func() bool {
		s, err := stateWith(t, c, runID)
		st = s
		return err == nil && string(s.Status) == status
	})
	return st
}

// modelCalls sums the attempts of the CallModel activities in the run's
// history: each ActivityTaskStarted event records its attempt number, and
// a retried activity's earlier attempts count too.
func modelCalls(t *testing.T, srv *testenv.Server, runID string) int {
	t.Helper()
	calls := 0
	modelEvents(t, srv, runID, func(e *historypb.HistoryEvent) {
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			calls += int(a.GetAttempt())
		}
	})
	return calls
}

// modelEvents hands each event of the run's history that belongs to a
// CallModel activity (scheduled, started, completed, ...) to fn, in order.
func modelEvents(t *testing.T, srv *testenv.Server, runID string, fn func(e *historypb.HistoryEvent)) {
	t.Helper()
	it := srv.Client.GetWorkflowHistory(t.Context(), runID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]string{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[e.GetEventId()] = activities.Method(a.GetActivityType().GetName())
		}
		id := e.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
		if id == 0 {
			id = e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
		}
		if scheduled[id] == "CallModel" {
			fn(e)
		}
	}
}

// waitListed polls temporal workflow list --query until it lists runID
// (visibility lags a little behind the run).
func (f *fleet) waitListed(t *testing.T, runID, query string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, runID+" in temporal workflow list --query '"+query+"'", func() bool {
		return strings.Contains(f.temporal(t, "workflow", "list", "--query", query), runID)
	})
}
