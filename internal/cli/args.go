package cli

import (
	"slices"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// ReconcileUsage is the reconcile tool's command summary.
const ReconcileUsage = `commands:
  list                       runs waiting on a person (with --local, stopped runs too)
  show RUN                   status, pending markers and steps of a run
  show RUN --step STEP       one step's whole input and output (e.g. llm/7, tool/7/0/echo)
  approve RUN MARKER [--digest D]
                             let a gated tool call run; with --digest (as show prints
                             it) only while those arguments are pending
  deny RUN MARKER REASON [--digest D]
                             refuse it; the model reads the reason
  done RUN STEP RESULT       settle an indeterminate write: it took effect with RESULT
  retry RUN STEP             settle an indeterminate write: run it once more
  cancel RUN                 end the run as Cancelled: a running model call or read stops;
                             a write that was running is named, as it may have taken effect
  budget RUN MAX_TURNS [MAX_TOKENS [MAX_COST]]
                             raise a run's limits on model calls, tokens and cost (US dollars)
                             (each above what it used; 0 keeps a limit)
  message RUN TEXT... [--wait]
                             add a user message before the run's next model call
                             (wakes an Idle session); --wait prints the answer to it
` + ForkUsage

// operatorArgs names the arguments of each operator command.
var operatorArgs = map[string]string{
	operator.SignalApprove: "RUN MARKER [--digest D]",
	operator.SignalDeny:    "RUN MARKER REASON [--digest D]",
	"done":                 "RUN STEP RESULT",
	"retry":                "RUN STEP",
}

// commandNames are the reconcile tool's commands, for error messages.
const commandNames = "list, show, approve, deny, done, retry, budget, message, fork or eval"

// ParseOperator turns reconcile arguments into a signal, or says in one
// line what is wrong. It does not handle list and show.
func ParseOperator(args []string) (runID string, sig operator.Signal, err error) {
	if len(args) == 0 {
		return "", sig, usagef("missing command: want %s", commandNames)
	}
	switch args[0] {
	case operator.SignalBudget:
		return parseBudget(args)
	case operator.SignalMessage:
		return parseMessage(args)
	}
	spec, ok := operatorArgs[args[0]]
	if !ok {
		return "", sig, usagef("unknown command %q: want %s", args[0], commandNames)
	}
	var digest string
	if args[0] == operator.SignalApprove || args[0] == operator.SignalDeny {
		if args, digest, err = digestFlag(args); err != nil {
			return "", sig, err
		}
	}
	n := len(strings.Fields(strings.Split(spec, " [")[0])) // options not counted
	if len(args)-1 < n || (len(args)-1 > n && args[0] != operator.SignalDeny) {
		return "", sig, usagef("%s takes %s; got %d argument(s)", args[0], spec, len(args)-1)
	}
	runID = args[1]
	if err := operator.ValidRunID(runID); err != nil {
		return "", sig, usagef("%v", err)
	}
	switch args[0] {
	case operator.SignalApprove:
		sig = operator.Signal{Name: operator.SignalApprove, Marker: args[2]}
	case operator.SignalDeny:
		sig = operator.Signal{Name: operator.SignalDeny, Marker: args[2], Reason: strings.Join(args[3:], " ")}
	case "done":
		sig = operator.Signal{Name: operator.SignalReconcile, Step: args[2], Outcome: operator.OutcomeDone, Result: args[3]}
	case "retry":
		sig = operator.Signal{Name: operator.SignalReconcile, Step: args[2], Outcome: operator.OutcomeRetry}
	}
	sig.Digest = digest
	if err := operator.CheckShape(sig); err != nil {
		return "", sig, usagef("%v", err)
	}
	return runID, sig, nil
}

// digestFlag takes --digest D (or --digest=D) out of the arguments of an
// approve or deny: the arguments digest the decision is pinned to.
func digestFlag(args []string) ([]string, string, error) {
	var rest []string
	digest, seen := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if name != "--digest" && name != "-digest" {
			rest = append(rest, a)
			continue
		}
		if seen {
			return nil, "", usagef("%s: --digest is given twice; want it once", args[0])
		}
		seen = true
		if !hasValue {
			if i+1 == len(args) {
				return nil, "", usagef("%s: --digest needs a value; want %s", args[0], agent.DigestFormat)
			}
			i++
			value = args[i]
		}
		if !agent.ValidDigest(value) {
			return nil, "", usagef("%s: --digest %q: want %s", args[0], agent.Clip(value, 80), agent.DigestFormat)
		}
		digest = value
	}
	return rest, digest, nil
}

// CheckOperatorArgs checks reconcile arguments before anything is opened
// or connected, so that a typo is a one-line usage error that touched
// nothing.
func CheckOperatorArgs(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "list":
			if len(args) != 1 {
				return usagef("list takes no arguments; got %d", len(args)-1)
			}
			return nil
		case "show":
			_, _, err := showArgs(args)
			return err
		case "cancel":
			_, err := cancelArgs(args)
			return err
		case "fork", "eval":
			_, err := parseFork(args)
			return err
		}
	}
	_, _, err := ParseOperator(args)
	return err
}

// cancelArgs checks the arguments of cancel and returns its run id.
func cancelArgs(args []string) (string, error) {
	if len(args) != 2 {
		return "", usagef("cancel takes RUN; got %d argument(s)", len(args)-1)
	}
	if err := operator.ValidRunID(args[1]); err != nil {
		return "", usagef("%v", err)
	}
	return args[1], nil
}

// parseMessage turns "message RUN TEXT... [--wait]" into a signal.
func parseMessage(args []string) (string, operator.Signal, error) {
	sig := operator.Signal{Name: operator.SignalMessage}
	var words []string
	for _, a := range args[1:] {
		if a != "--wait" && a != "-wait" {
			words = append(words, a)
		}
	}
	if len(words) < 2 {
		return "", sig, usagef("message takes RUN TEXT... [--wait]; got %d argument(s)", len(words))
	}
	runID := words[0]
	if err := operator.ValidRunID(runID); err != nil {
		return "", sig, usagef("%v", err)
	}
	sig.Content = strings.Join(words[1:], " ")
	if err := operator.CheckShape(sig); err != nil {
		return "", sig, usagef("%v", err)
	}
	return runID, sig, nil
}

// messageWait reports whether a message command asks to wait for the answer.
func messageWait(args []string) bool {
	return len(args) > 0 && args[0] == operator.SignalMessage && (slices.Contains(args, "--wait") || slices.Contains(args, "-wait"))
}
