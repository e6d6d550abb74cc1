package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// TestApproveWhatYouSawOnDevServer: on a dev server with a real worker
// process, a gated call with 2 KiB of arguments (a line of backticks among
// them) waits with their digest in the state and in reconcile show;
// reconcile show --step prints them whole; an approve naming a stale
// digest, or (through the Temporal CLI) another execution, is refused in
// one line and changes nothing; reconcile approve --digest with the digest
// shown is applied, pinned to the run's first execution, and the run files
// exactly one ticket.
func TestApproveWhatYouSawOnDevServer(t *testing.T) {
	t.Parallel()
	srv := testenv.DevServer(t)
	f := newFleet(t, srv)
	body := "see below\n```\n" + strings.Repeat("0123456789abcdef", 128)
	b, err := json.Marshal(map[string]string{"title": "Read access", "body": body})
	if err != nil {
		t.Fatal(err)
	}
	args := string(b)
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])[:16]
	env := f.scripted(t, `{"turns":[{"tool_calls":[{"name":"lookup","args":{"topic":"orders"}}]},`+
		`{"tool_calls":[{"name":"create_ticket","args":`+args+`}]},{"text":"Filed {{last_tool_result}}"}]}`)
	testenv.Start(t, env, testenv.Program(t, "worker"))
	starter, reconcile := testenv.Program(t, "starter"), testenv.Program(t, "reconcile")
	const run = "e2e-digest"
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	st := waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	if len(st.Pending) != 1 || st.Pending[0].Digest != digest || st.Pending[0].ArgsRef == nil {
		t.Fatalf("state pending %+v: want the call by reference with digest %s", st.Pending, digest)
	}

	code, out := testenv.Run(t, env, time.Minute, reconcile, "show", run)
	if code != 0 || !strings.Contains(out, "    digest: "+digest+"\n") || !strings.Contains(out, "    whole args: "+reconcile+" show "+run+" --step "+ticketStep+"\n") {
		t.Fatalf("show: exit %d, want digest %s and the command for the whole arguments:\n%s", code, digest, out)
	}
	code, out = testenv.Run(t, env, time.Minute, reconcile, "show", run, "--step", ticketStep)
	if code != 0 || !strings.Contains(out, "input: create_ticket("+args+")\n") || !strings.Contains(out, "digest: "+digest+" (") {
		t.Fatalf("show --step %s: exit %d, want the %d bytes of arguments whole:\n%s", ticketStep, code, len(args), out)
	}
	if d := currentDetails(t, srv, run); !strings.Contains(d, "reconcile show "+run+" --step "+ticketStep) || !strings.Contains(d, digest) {
		t.Fatalf("current details do not point at the whole arguments and the digest:\n%s", d)
	}

	stale := "sha256:0000000000000000"
	code, out = testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep, "--digest", stale)
	want := "approve: marker " + ticketStep + " has arguments " + digest + " pending, not " + stale + " as given; look again with reconcile show RUN --step " + ticketStep
	if line := strings.TrimSpace(out); code != 1 || !strings.Contains(line, want) || strings.Contains(line, "\n") {
		t.Fatalf("approve with a stale digest: exit %d, output %q; want exit 1 and one line containing %q", code, out, want)
	}
	other := testenv.MustJSON(map[string]string{"Marker": ticketStep, "Digest": digest, "Execution": "00000000-0000-0000-0000-000000000000"})
	code, out = testenv.Run(t, os.Environ(), time.Minute, srv.CLI, withCodecEndpoint(t, []string{"workflow", "update", "execute", "-w", run, "--name", "approve", "--input", other,
		"--address", srv.HostPort, "--namespace", "default"})...)
	if code == 0 || !strings.Contains(out, "execution 00000000-0000-0000-0000-000000000000 is not this run's") {
		t.Fatalf("approve for another execution: exit %d, want refused naming it:\n%s", code, out)
	}
	if s, err := state(t, srv, run); err != nil || s.Status != "AwaitingApproval" || len(s.Rejected) != 0 || f.ticketCount(t) != 0 {
		t.Fatalf("after the refused approvals: %+v, %v, %d tickets; want AwaitingApproval, nothing rejected, 0 tickets", s, err, f.ticketCount(t))
	}

	code, out = testenv.Run(t, env, time.Minute, reconcile, "approve", run, ticketStep, "--digest", digest)
	if code != 0 || !strings.Contains(out, "approve accepted by run "+run+" ("+ticketStep+", arguments "+digest+")") {
		t.Fatalf("approve --digest: exit %d\n%s", code, out)
	}
	if code, out := testenv.Run(t, env, time.Minute, starter, "--id", run, "--wait"); code != 0 || !strings.Contains(out, "Filed TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if k := f.ticketCount(t); k != 1 {
		t.Fatalf("tickets %d, want 1", k)
	}

	// The accepted approval carried the digest and the run's first
	// execution.
	d, err := srv.Client.DescribeWorkflow(t.Context(), run, "")
	if err != nil {
		t.Fatal(err)
	}
	first := d.RawResponse.GetWorkflowExecutionInfo().GetFirstRunId()
	var accepted []string
	it := srv.Client.GetWorkflowHistory(t.Context(), run, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			for _, p := range a.GetAcceptedRequest().GetInput().GetArgs().GetPayloads() {
				var arg json.RawMessage
				if err := testenv.SuiteConverter(t).FromPayload(p, &arg); err != nil {
					t.Fatal(err)
				}
				accepted = append(accepted, string(arg))
			}
		}
	}
	pinned := map[string]string{"Marker": ticketStep, "Digest": digest, "Execution": first}
	var got map[string]string
	if first == "" || len(accepted) != 1 || json.Unmarshal([]byte(accepted[0]), &got) != nil || testenv.MustJSON(got) != testenv.MustJSON(pinned) {
		t.Fatalf("accepted updates %q; want one, %s", accepted, testenv.MustJSON(pinned))
	}
	replayHistory(t, f, run)
}
