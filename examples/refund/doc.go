// Package refund is agentrun's worked example: a support team's refunds
// agent on the team's own Temporal worker, in the shape of Temporal's
// samples-go.
//
// The team's code is in this package:
//   - [Payments], an in-memory payments service that keeps orders and
//     counts the refunds it made; a refund with a request id it has seen
//     is answered with the first one, never made twice;
//   - two tools made with agentrun.NewTool: "order" (a read that looks an
//     order up) and "refund" (a write whose request_id the engine fills
//     with an idempotency key of its own, the same for every attempt);
//   - the team's own Temporal activity [Mailer.EmailReceipt], registered
//     on the team's worker, which the agent calls as its tool
//     "email_receipt" ([EmailTool], agentrun.ActivityTool): the run
//     schedules it as that activity, at most once per call;
//   - [Rule], the agent's approval rule: a refund of at most $20
//     ([SmallRefundCents]) goes through, a larger one waits for a person;
//   - [SupportWorkflow], the team's workflow: it runs the agent with
//     agentrun.RunAgent, a child workflow on its own task queue whose id
//     is [AgentRunID] of its own (RunAgent's default, the parent's id and
//     "-refunds"), and returns the agent's answer; a run that Failed or
//     was Cancelled fails it with an error naming the run, its status and
//     why;
//   - [Worker], one worker that runs the team's workflow and agentrun's
//     workflow and activities, with one agent, "refunds".
//
// A refund of order A-1001 (49.99) is a write the rule does not let
// through, so the run waits for a person's approval before it pays. The person drives it with an agentrun.Client over the team's
// Temporal client: agentrun.NewClient(c, agentrun.ClientOptions{TaskQueue:
// queue}).Run(AgentRunID(id)) is the agent run. [AwaitApproval] reads its
// State until it awaits approval and returns the call that waits, from
// Run.Pending: its Marker, its Digest and its arguments, which Args
// decodes into a [RefundInput] (order A-1001, 4999 cents) for the person
// to read. Run.Approve(ctx, marker, digest) lets it pay, exactly once;
// Run.Deny(ctx, marker, digest, reason) makes the model answer that
// nothing was refunded, and why. Both are pinned to the digest: arguments
// other than the ones read are refused, not approved. The program in
// cmd/refund runs the whole flow against a Temporal server:
//
//	temporal server start-dev   # in another terminal
//	go run ./examples/refund/cmd/refund
//
// # The same agent on the local engine
//
// [Local] runs the same agent, tools and journal folder on agentrun's
// local engine, in the program's own process, with no Temporal server:
// Local.Start drives a run until the refund waits for approval, and the
// run (an *agentrun.LocalRun) is operated with the same methods and types
// as a Temporal run: AwaitApproval, Approve with the digest, and Wait,
// which drives it to its answer. Only the start differs. There the team's
// EmailReceipt is called in process: the local engine has no activities.
//
// # A worker killed inside a write
//
// The tests kill the team's worker process (SIGKILL) inside EmailReceipt,
// after the email left ([Mailer.Outbox] holds it) and before it answered.
// The run never sends it again: its one attempt timed out, so it stops
// as Indeterminate, and a person who checked the outbox settles it with
// Run.Done and the email's id; a new worker finishes the run. The ledger
// ([Payments.Ledger]) and the outbox hold exactly one refund and one
// email.
//
// # The model
//
// The agent's model is the scripted one of package llm ([Script],
// [ScriptFor]): it looks the order up, asks for the refund, emails the
// receipt and answers with the refund's and the email's ids, so the
// example runs with no API key and always the same way. To use a real
// model, put a provider from package llm in Options.Model instead (the
// OpenAI or Anthropic one, built from its config with the model name and
// the API key), or any type of your own that satisfies agentrun.Model; the
// rest of the example stays as it is.
package refund
