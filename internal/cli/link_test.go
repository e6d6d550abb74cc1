package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/config"
	"github.com/agentrun/agentrun/internal/testkit/hand"
	"github.com/agentrun/agentrun/local"
)

// TestLink: the printed Web UI link follows AGENTRUN_UI_URL when it is set;
// unset, it is the local dev server's UI for a loopback address (its port
// plus 1000, 8233 for 7233), and for any other server a line that says to
// set AGENTRUN_UI_URL instead of a localhost link.
func TestLink(t *testing.T) {
	t.Parallel()
	const hint = "set AGENTRUN_UI_URL to the Web UI of the Temporal server at "
	for _, c := range []struct {
		ui, hostPort, want string
	}{
		{"", "127.0.0.1:7233", "http://localhost:8233/namespaces/prod/workflows/run-1"},
		{"", "localhost:7233", "http://localhost:8233/namespaces/prod/workflows/run-1"},
		{"", "[::1]:7233", "http://localhost:8233/namespaces/prod/workflows/run-1"},
		{"", "127.0.0.1:7300", "http://localhost:8300/namespaces/prod/workflows/run-1"},
		{"", "temporal.example.com:7233", hint + "temporal.example.com:7233 (e.g. https://temporal.example.com:8080) for a link to this run"},
		{"", "temporal:7233", hint + "temporal:7233"},
		{"", "10.0.0.5:7233", hint + "10.0.0.5:7233"},
		{"https://ui.example.com/", "temporal.example.com:7233", "https://ui.example.com/namespaces/prod/workflows/run-1"},
		{"http://localhost:9999", "127.0.0.1:7233", "http://localhost:9999/namespaces/prod/workflows/run-1"},
	} {
		cfg, err := config.Load(func(k string) string {
			if k == "AGENTRUN_UI_URL" {
				return c.ui
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		r := &Remote{Conn: &cluster.Conn{Namespace: "prod", HostPort: c.hostPort}, Settings: Settings{Config: cfg}}
		if got := r.Link("run-1"); !strings.HasPrefix(got, c.want) || strings.Contains(got, "\n") {
			t.Errorf("AGENTRUN_UI_URL=%q, server %s: link %q, want %q", c.ui, c.hostPort, got, c.want)
		}
	}
}

// TestPrintedCounts: the counts the printers show take the singular for
// one: "1 call waits", "1 record", and the plural otherwise.
func TestPrintedCounts(t *testing.T) {
	t.Parallel()
	pending := func(n int) agent.Outcome {
		o := agent.Outcome{Status: agent.StatusAwaitingApproval}
		for range n {
			o.Pending = append(o.Pending, agent.Pending{Marker: hand.TicketStep, Tool: "create_ticket"})
		}
		return o
	}
	var b bytes.Buffer
	printOutcome(&b, localEngine(Commands{}), "run-1", pending(1))
	if !strings.HasPrefix(b.String(), "run run-1: AwaitingApproval (1 call waits for a person)\n") {
		t.Errorf("one pending call:\n%s", b.String())
	}
	b.Reset()
	printOutcome(&b, localEngine(Commands{}), "run-1", pending(2))
	if !strings.HasPrefix(b.String(), "run run-1: AwaitingApproval (2 calls wait for a person)\n") {
		t.Errorf("two pending calls:\n%s", b.String())
	}
	for _, c := range []struct {
		records int
		want    string
	}{{1, "run run-1: Completed (1 record)\n"}, {0, "(0 records)"}, {9, "(9 records)"}} {
		b.Reset()
		if err := printInfo(&b, localEngine(Commands{}), local.RunInfo{RunID: "run-1", Status: agent.StatusCompleted, Answer: "done", Records: c.records}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%d records:\n%s\nwant %q", c.records, b.String(), c.want)
		}
	}
	for n, want := range map[int]string{0: "0 steps", 1: "1 step", 2: "2 steps"} {
		if got := plural(n, "step"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPrintedEmptyAnswer: a completed run whose answer is empty says so,
// from the starter's outcome and from show, on both engines' printers.
func TestPrintedEmptyAnswer(t *testing.T) {
	t.Parallel()
	const line = "  empty: the model returned nothing: the final answer has no text\n"
	var b bytes.Buffer
	printOutcome(&b, localEngine(Commands{}), "run-1", agent.Outcome{Status: agent.StatusCompleted, Empty: true})
	if b.String() != "run run-1: Completed\n\n"+line {
		t.Errorf("outcome:\n%q", b.String())
	}
	b.Reset()
	if err := printInfo(&b, localEngine(Commands{}), local.RunInfo{RunID: "run-1", Status: agent.StatusCompleted, Empty: true, Records: 5}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), line) {
		t.Errorf("show:\n%s", b.String())
	}
	b.Reset()
	printOutcome(&b, localEngine(Commands{}), "run-1", agent.Outcome{Status: agent.StatusCompleted, Answer: "done"})
	if strings.Contains(b.String(), "empty") {
		t.Errorf("an answer with text is flagged:\n%s", b.String())
	}
}
