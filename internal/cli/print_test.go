package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

// TestPrintUnblock: the one function that prints what unblocks a run gives
// the same commands for both engines: reconcile (with --local and a resume
// for the local engine), and on Temporal each one's Temporal CLI
// equivalent, in the namespace when it is not default.
func TestPrintUnblock(t *testing.T) {
	t.Parallel()
	cmds := Commands{Starter: "bin/starter", Reconcile: "bin/reconcile", Temporal: "bin/temporal"}
	awaiting := agent.Outcome{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{
		Marker: hand.TicketStep, Tool: "create_ticket", Args: json.RawMessage(`{"title":"x"}`)}}}
	indeterminate := agent.Outcome{Status: agent.StatusIndeterminate, Step: hand.TicketStep}
	head := "  marker tool/2/0/create_ticket\n    tool: create_ticket\n    args: {\"title\":\"x\"}\n"
	cases := []struct {
		name string
		op   engine
		o    agent.Outcome
		want string
	}{
		{"local awaiting", localEngine(cmds), awaiting, head +
			"    approve: bin/reconcile --local approve run-1 tool/2/0/create_ticket\n" +
			"    deny:    bin/reconcile --local deny run-1 tool/2/0/create_ticket REASON\n" +
			"  then resume the run: bin/starter --local --id run-1\n"},
		{"temporal awaiting", temporalEngine(cmds, "default"), awaiting, head +
			"    approve: bin/reconcile approve run-1 tool/2/0/create_ticket\n" +
			"         or: bin/temporal workflow signal -w run-1 --name approve --input '{\"Marker\":\"tool/2/0/create_ticket\"}'\n" +
			"    deny:    bin/reconcile deny run-1 tool/2/0/create_ticket REASON\n" +
			"         or: bin/temporal workflow signal -w run-1 --name deny --input '{\"Marker\":\"tool/2/0/create_ticket\",\"Reason\":\"REASON\"}'\n"},
		{"local indeterminate", localEngine(cmds), indeterminate,
			"  the write tool/2/0/create_ticket started and never recorded its result; it may or may not have taken effect.\n" +
				"  check the world, then either record what happened:\n    done:    bin/reconcile --local done run-1 tool/2/0/create_ticket RESULT\n" +
				"  or, only if it did not take effect, run it once more:\n    retry:   bin/reconcile --local retry run-1 tool/2/0/create_ticket\n" +
				"  then resume the run: bin/starter --local --id run-1\n"},
		{"temporal indeterminate in a namespace", temporalEngine(Commands{}, "prod"), indeterminate,
			"  the write tool/2/0/create_ticket started and never recorded its result; it may or may not have taken effect.\n" +
				"  check the world, then either record what happened:\n    done:    reconcile done run-1 tool/2/0/create_ticket RESULT\n" +
				"         or: temporal workflow signal --namespace prod -w run-1 --name reconcile --input '{\"Step\":\"tool/2/0/create_ticket\",\"Outcome\":\"done\",\"Result\":\"RESULT\"}'\n" +
				"  or, only if it did not take effect, run it once more:\n    retry:   reconcile retry run-1 tool/2/0/create_ticket\n" +
				"         or: temporal workflow signal --namespace prod -w run-1 --name reconcile --input '{\"Step\":\"tool/2/0/create_ticket\",\"Outcome\":\"retry\"}'\n"},
		{"nothing to unblock", localEngine(cmds), agent.Outcome{Status: agent.StatusCompleted, Answer: "done"}, ""},
	}
	for _, c := range cases {
		var b strings.Builder
		printUnblock(&b, c.op, "run-1", c.o)
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, b.String(), c.want)
		}
	}
}
