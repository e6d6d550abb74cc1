// Package progress is the live progress of agent runs: what a run publishes
// on its stream, and a Go API to follow it.
//
// Every AgentRun workflow hosts a stream that speaks Temporal's Workflow
// Streams protocol (package streams), so any Workflow Streams client (this
// package, @temporalio/workflow-streams in TypeScript, the Python contrib
// module) subscribes to it by the run id. Two topics:
//
//   - TopicEvents ("events"): an Event for every step started and
//     completed (with a preview of its result, the attempt whose streamed
//     reply was recorded, and how an interrupted write was settled), every
//     status change (AwaitingApproval with its markers, Indeterminate with
//     its cause, Completed with a preview of the answer, ...) and every
//     rejected operator input. The workflow publishes them: they are part
//     of its deterministic state and cost no history.
//   - TopicTokens ("tokens"): Tokens, the text of a model step while the
//     model writes it, from the activity, in batches (one signal each,
//     about one a second). Each names its step and attempt: a retried step
//     publishes again under its next attempt, and the step's step.completed
//     Event names the attempt whose reply was recorded (Event.Attempt). The
//     recorded reply, not the pieces, is the run's truth.
//
// A run streams model text when its input asks (workflows.Input.Stream),
// by default for sessions, and when its provider can (llm.Streamer);
// a worker with AGENTRUN_STREAM=off never does.
//
// Subscribe yields a run's items in order, from an offset, across
// continue-as-new (the run carries its newest items, at most 32 KiB of
// them, into the next execution), until the run closes. The stream lives in
// the run: a subscriber that is behind when the run closes misses what it
// had not read (a closing run waits up to 2 s for one subscriber to catch
// up).
//
// Subscribe follows the whole tree of a run: each child run (a sub-agent)
// a followed run starts, announced by its step.started Event with Child
// set, is followed too, and its items are merged in, marked with the
// child's run id (Update.Run, Event.Child, Token.Child); Options.RunOnly
// follows the run alone. Only the run's own offsets resume a
// subscription. Other Workflow Streams clients follow one run: subscribe
// to a child's id for its items.
//
//	for u, err := range progress.Subscribe(ctx, c, "run-7", progress.Options{}) {
//		if err != nil {
//			return err
//		}
//		if u.Token != nil {
//			fmt.Print(u.Token.Text)
//		}
//	}
package progress
