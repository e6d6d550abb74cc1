package operator

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/agentrun/agentrun/agent"
)

// Signal is an operator's input. The JSON field names are the payloads of
// the operator contract: approve {"Marker"}, deny {"Marker","Reason"},
// reconcile {"Step","Outcome","Result"}, budget {"MaxTurns","MaxTokens","MaxCost"}, message {"Content"};
// approve and deny may add "Digest" and "Execution". The local journal
// records it as it is (its signal records); Name is the operation.
type Signal struct {
	Name    string `json:"Name"`
	Marker  string `json:"Marker,omitempty"`
	Reason  string `json:"Reason,omitempty"`
	Step    string `json:"Step,omitempty"`
	Outcome string `json:"Outcome,omitempty"`
	Result  string `json:"Result,omitempty"`
	// MaxTurns and MaxTokens are a budget's new limits; 0 keeps one.
	MaxTurns  int   `json:"MaxTurns,omitempty"`
	MaxTokens int64 `json:"MaxTokens,omitempty"`
	// MaxCost is a budget's new cost limit in US dollars; 0 keeps it.
	MaxCost float64 `json:"MaxCost,omitempty"`
	// Content is a message's text: a user message for the next model call.
	Content string `json:"Content,omitempty"`
	// Digest, optional on approve and deny, is the arguments digest the
	// operator saw (agent.ArgsDigest): the decision applies only while
	// those arguments are pending at Marker.
	Digest string `json:"Digest,omitempty"`
	// Execution, optional on approve and deny, is the run id of the run's
	// first Temporal execution: the decision applies only to that run, not
	// to another one started later under the same workflow id. The local
	// engine refuses it (a journal has no executions).
	Execution string `json:"Execution,omitempty"`
	// Expired marks the deny an engine records when the call's approval
	// timeout passed (ExpiredDeny); an operator's deny cannot carry it.
	Expired bool `json:"Expired,omitempty"`
}

// Errors of the operator contract, the same on both engines.
var (
	// ErrInvalid: an operator input or a run id was refused; nothing was
	// written.
	ErrInvalid = errors.New("invalid")
	// ErrUnknownRun: no run exists under the run id.
	ErrUnknownRun = errors.New("unknown run")
	// ErrInputMismatch: a run id was given with another input than the one
	// the run started with.
	ErrInputMismatch = errors.New("input does not match the run's recorded input")
)

// MaxRunIDLen is the longest valid run id (agent.MaxRunID, which child run
// ids keep to).
const MaxRunIDLen = agent.MaxRunID

var runIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// RunIDFormat says what a valid run id looks like, for error messages.
const RunIDFormat = "letters, digits, '_', '.', '-', starting with a letter or digit, at most 128 characters"

// ValidRunID returns nil for a valid run id and otherwise an error that
// names what is wrong and what is valid. A valid id is a safe file name
// (the local journal's) and a Temporal workflow id.
func ValidRunID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w run id: it is empty; want %s", ErrInvalid, RunIDFormat)
	case len(id) > MaxRunIDLen:
		return fmt.Errorf("%w run id: it has %d characters; want %s", ErrInvalid, len(id), RunIDFormat)
	case !runIDRE.MatchString(id):
		return fmt.Errorf("%w run id %q: want %s", ErrInvalid, id, RunIDFormat)
	}
	return nil
}
