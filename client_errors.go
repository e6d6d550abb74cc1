package agentrun

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrun/agentrun/operator"
)

// Errors of the [Client], for errors.Is. A run that refused an input
// returns a [*RefusedError], a run that ended an [*EndedError], and an
// update the run admitted without answering it in time a
// [*NotAnsweredError]; use errors.As to read them:
//
//	var refused *agentrun.RefusedError
//	if errors.As(err, &refused) {
//		log.Printf("run %s refused %s: %s", refused.RunID, refused.Op, refused.Reason)
//	}
var (
	// ErrRunNotFound: no run exists under the run id.
	ErrRunNotFound = operator.ErrUnknownRun
	// ErrRunEnded: the run ended (an [*EndedError] says how); nothing
	// changes a run after it ended.
	ErrRunEnded = errors.New("run ended")
	// ErrRefused: the run, or the client before sending, refused an input
	// (a [*RefusedError] says why); nothing changed.
	ErrRefused = errors.New("refused")
	// ErrDigestMismatch: an approve or deny named arguments other than
	// those pending at its marker (a [*RefusedError]); nothing changed.
	// Look at the call again with [Run.Pending] and decide on what it
	// shows.
	ErrDigestMismatch = errors.New("arguments digest mismatch")
)

// EndedError is the error of an input for a run that ended.
type EndedError struct {
	RunID string
	// Status is how it ended: Completed, Failed or Cancelled, or the
	// workflow's own status ("terminated", "timed_out").
	Status Status
}

func (e *EndedError) Error() string {
	return fmt.Sprintf("run %s is already %s; nothing changes a run after it ended", e.RunID, e.Status)
}

// Is reports whether target is ErrRunEnded.
func (e *EndedError) Is(target error) bool { return target == ErrRunEnded }

// RefusedError is an input a run refused, or the client refused before
// sending it (a malformed marker, an empty reason); nothing changed.
type RefusedError struct {
	RunID string
	// Op is the operation: approve, deny, reconcile, budget or message.
	Op string
	// Reason is the run's own words, in one line: what was wrong and what
	// is valid ("invalid approve: marker ... is not awaiting approval;
	// pending: ...").
	Reason string
	// digest is set when the reason is a digest mismatch.
	digest bool
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s refused by run %s: %s", e.Op, e.RunID, e.Reason)
}

// Is reports whether target is ErrRefused, or ErrDigestMismatch for a
// decision on arguments that are no longer pending.
func (e *RefusedError) Is(target error) bool {
	return target == ErrRefused || (target == ErrDigestMismatch && e.digest)
}

// refused is the refusal of sig by runID in reason, the words of
// operator.CheckShape or the run's operator.Check ("invalid approve: ...").
func refused(runID string, sig operator.Signal, reason string) *RefusedError {
	// agent.DigestMismatch's words, which the run answers a decision with
	// when another digest is pending at its marker.
	digest := sig.Digest != "" && strings.Contains(reason, sig.Name+": marker "+sig.Marker+" has arguments ") &&
		strings.Contains(reason, " pending, not "+sig.Digest+" as given;")
	return &RefusedError{RunID: runID, Op: sig.Name, Reason: reason, digest: digest}
}

// NotAnsweredError is an update the run admitted but did not answer in
// time: it is applied when a worker takes it, unless the run refuses it
// then (see [Run.State]'s Rejected). Retrying sends the input again.
type NotAnsweredError struct {
	RunID, Op string
	// UpdateID is the update's id, which Temporal's tools can look up.
	UpdateID string
	// Wait is how long the client waited for the answer.
	Wait time.Duration
	// TaskQueue is the client's, and Pollers how many workers polled it
	// lately; PollersErr is set when the client could not tell.
	TaskQueue  string
	Pollers    int
	PollersErr error
}

func (e *NotAnsweredError) Error() string {
	switch {
	case e.PollersErr != nil:
		return fmt.Sprintf("%s admitted by run %s but not answered within %s (update id %s; it applies when a worker takes it), and the task queue %s could not be described: %v", e.Op, e.RunID, e.Wait, e.UpdateID, e.TaskQueue, e.PollersErr)
	case e.Pollers == 0:
		return fmt.Sprintf("%s admitted by run %s but no worker polls task queue %s (update id %s): it applies when a worker starts", e.Op, e.RunID, e.TaskQueue, e.UpdateID)
	}
	return fmt.Sprintf("%s admitted by run %s but not answered within %s although %d worker(s) poll task queue %s (update id %s; it applies when the run's worker takes it)", e.Op, e.RunID, e.Wait, e.Pollers, e.TaskQueue, e.UpdateID)
}
