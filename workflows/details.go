package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/shell"
)

// SignalCommand is the temporal CLI command that sends an operator signal,
// as an operator would type it.
func SignalCommand(runID, name string, payload any) string {
	b, _ := json.Marshal(payload)
	return fmt.Sprintf("temporal workflow signal -w %s --name %s --input %s", shell.Quote(runID), name, shell.Quote(string(b)))
}

// TctlCommand is the tctl equivalent of SignalCommand.
func TctlCommand(runID, name string, payload any) string {
	b, _ := json.Marshal(payload)
	return fmt.Sprintf("tctl workflow signal -w %s -n %s -i %s", shell.Quote(runID), name, shell.Quote(string(b)))
}

// ApprovePayload, DenyPayload, DonePayload and RetryPayload are the
// operator payloads as the CLI takes them.
func ApprovePayload(marker string) any { return approvePayload{Marker: marker} }

// DenyPayload is the payload of deny.
func DenyPayload(marker, reason string) any { return denyPayload{Marker: marker, Reason: reason} }

// DonePayload is the payload of a reconcile with outcome done.
func DonePayload(step, result string) any {
	return reconcilePayload{Step: step, Outcome: "done", Result: result}
}

// RetryPayload is the payload of a reconcile with outcome retry.
func RetryPayload(step string) any {
	return struct{ Step, Outcome string }{step, "retry"}
}

// details renders the run's current details: what it waits for and the
// exact commands that unblock it, in markdown.
func details(runID string, s *State) string {
	var b strings.Builder
	switch s.Status {
	case agent.StatusAwaitingApproval:
		fmt.Fprintf(&b, "**Awaiting approval** of %d tool call(s).\n", len(s.Pending))
		for _, p := range s.Pending {
			fmt.Fprintf(&b, "\n### `%s`\nTool `%s` with arguments:\n```json\n%s\n```\nApprove:\n```\n%s\n```\nDeny:\n```\n%s\n```\n",
				p.Marker, p.Tool, clip(string(p.Args), 2000),
				SignalCommand(runID, SignalApprove, ApprovePayload(p.Marker)),
				SignalCommand(runID, SignalDeny, DenyPayload(p.Marker, "REASON")))
		}
	case agent.StatusIndeterminate:
		fmt.Fprintf(&b, "**Indeterminate**: the write `%s` started and never recorded its result; it may or may not have taken effect.\n", s.Indeterminate)
		if s.Why != "" {
			fmt.Fprintf(&b, "\n%s\n", s.Why)
		}
		fmt.Fprintf(&b, "\nCheck the world, then record what happened:\n```\n%s\n```\nor run it once more:\n```\n%s\n```\n",
			SignalCommand(runID, SignalReconcile, DonePayload(s.Indeterminate, "RESULT")),
			SignalCommand(runID, SignalReconcile, RetryPayload(s.Indeterminate)))
	case agent.StatusCompleted:
		fmt.Fprintf(&b, "**Completed** after %d step(s).\n\n%s\n", len(s.Steps), clip(s.Answer, 2000))
	case agent.StatusFailed:
		fmt.Fprintf(&b, "**Failed**: %s\n", s.Reason)
	default:
		fmt.Fprintf(&b, "**Running**: %d step(s) completed.\n", len(s.Steps))
	}
	if n := len(s.Rejected); n > 0 {
		r := s.Rejected[n-1]
		fmt.Fprintf(&b, "\n**Rejected input** (%d so far; newest): `%s` %s: %s\n", n, r.Signal, clip(r.Payload, 200), r.Reason)
	}
	return b.String()
}
