package agentrun

import (
	"context"
	"iter"

	"github.com/agentrun/agentrun/progress"
)

// Types of a run's stream (package progress).
type (
	// Update is one item of a run's stream: an Event (a step started or
	// completed, a wait, the run's status) or a Token (a piece of a
	// streamed model answer), with its run and its offset.
	Update = progress.Update
	// Event is what happened in a run: its Type (progress.EventStepStarted
	// and the others), its step, a preview of the step's result.
	Event = progress.Event
	// Token is a piece of a model step's streamed text.
	Token = progress.Token
)

// SubscribeOptions say what to follow of a run (see [Run.Subscribe]).
type SubscribeOptions struct {
	// From is the offset of the first item wanted: 0, the default, is the
	// oldest the run keeps; the Offset of the last item seen, plus one,
	// goes on after it.
	From int64
	// Tokens asks for the pieces of streamed model answers too. Default
	// false: events only.
	Tokens bool
	// RunOnly follows the run alone, not the sub-agents' child runs it
	// starts. Default false: their items come too, each with its Run.
	RunOnly bool
}

// Subscribe follows the run's stream as it happens: each step started and
// completed, each wait for a person and each status, in order, across
// continue-as-new, and the sub-agents' child runs' items merged in. The
// iteration ends when the run has ended and its stream is read, or with
// ctx; an item that does not decode is yielded as an error and the
// iteration goes on after it; any other error ends it.
//
// The stream lives in the run: subscribe while it runs. A run that ended
// (a couple of seconds ago or more) has none to read, and the iteration
// ends at once; its history, and [Run.State] of a run still open, say
// what happened.
func (r *Run) Subscribe(ctx context.Context, opts SubscribeOptions) iter.Seq2[Update, error] {
	topics := []string{progress.TopicEvents}
	if opts.Tokens {
		topics = append(topics, progress.TopicTokens)
	}
	return progress.Subscribe(ctx, r.c.c, r.id, progress.Options{Topics: topics, From: opts.From, RunOnly: opts.RunOnly})
}
