package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
)

// PendingCall is a tool call that waits for a person: for an approval
// ([Run.Approve], [Run.Deny]), or, when Indeterminate, for a write whose
// outcome is unknown to be settled ([Run.Done], [Run.Retry]).
type PendingCall struct {
	// Marker names the call, its step: "tool/2/0/create_ticket".
	Marker string
	// Tool is the tool's name.
	Tool string
	// Digest is the digest of its arguments, which an approval or a denial
	// names so that it applies to these arguments only.
	Digest string
	// Expires is the tool's approval timeout: the call is denied as
	// expired when nobody decided it that long after it became pending.
	// 0: never.
	Expires time.Duration
	// Indeterminate is set for a write that started and never recorded
	// its result; Why says what is known. On Temporal its arguments are in
	// the run's history, not its state: Args returns an error; on the
	// local engine Args reads them from the run's journal.
	Indeterminate bool
	Why           string

	args json.RawMessage
	err  error // why args could not be read
}

// Args decodes the call's arguments, the JSON object the model gave, into
// v (a pointer to the tool's input type, or to a json.RawMessage for the
// bytes). Arguments kept by reference were read from ClientOptions.Content
// by [Run.Pending] and checked against Digest; an error says when they
// could not be.
func (p PendingCall) Args(v any) error {
	if p.err != nil {
		return p.err
	}
	if err := json.Unmarshal(p.args, v); err != nil {
		return fmt.Errorf("arguments of %s (%s): %w", p.Marker, p.Tool, err)
	}
	return nil
}

// Pending returns the calls that wait for a person, with their arguments:
// those waiting for approval while the run is AwaitingApproval, or its
// Indeterminate write. None while the run is in another status.
func (r *Run) Pending(ctx context.Context) ([]PendingCall, error) {
	st, err := r.State(ctx)
	if err != nil {
		return nil, err
	}
	var calls []PendingCall
	switch st.Status {
	case agent.StatusAwaitingApproval:
		for _, p := range st.Pending {
			c := PendingCall{Marker: p.Marker, Tool: p.Tool, Digest: p.Digest, Expires: p.Expires}
			c.args, c.err = r.c.pendingArgs(ctx, p)
			calls = append(calls, c)
		}
	case agent.StatusIndeterminate:
		tool := st.Indeterminate[strings.LastIndex(st.Indeterminate, "/")+1:] // tool/N/I/NAME
		calls = append(calls, PendingCall{Marker: st.Indeterminate, Tool: tool, Indeterminate: true, Why: st.Why,
			err: fmt.Errorf("arguments of %s: an Indeterminate write's arguments are in the run's history (its activity's input), not its state", st.Indeterminate)})
	}
	return calls, nil
}

// errNoContent: arguments kept by reference and no content store to read
// them from.
var errNoContent = errors.New("no content store: set ClientOptions.Content to the workers' store")

// pendingArgs reads a pending call's arguments: inline, or from the
// content store when kept by reference, checked against its digest.
func (c *Client) pendingArgs(ctx context.Context, p agent.Pending) (json.RawMessage, error) {
	if p.ArgsRef != nil && c.opts.Content == nil {
		return nil, fmt.Errorf("arguments of %s (%s) are kept by reference: %w", p.Marker, p.Tool, errNoContent)
	}
	ex := &execute.Executor{Content: c.opts.Content}
	return ex.PendingArgs(ctx, p)
}
