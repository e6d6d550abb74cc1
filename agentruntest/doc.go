// Package agentruntest tests agents built with package agentrun: a run of
// your agents, your Go tools and a scripted model, on the Temporal sdk's
// test environment (go.temporal.io/sdk/testsuite), with no server and no
// model API key.
//
// [New] registers your [agentrun.Config] on a fresh test environment, as
// agentrun.Register does on a worker; [Model] scripts the model's turns
// ([Call] asks for a tool with Go arguments, [Answer] ends the run) and
// counts its calls; [Env.Run] runs one agent run to its end. A write the
// policy gates waits for a person: [Env.Approve], [Env.Deny] and
// [Env.OnApproval] decide it when the run asks, so a test asserts what
// happened after an approval and after a denial. An agent that calls
// other agents runs them as child runs on the same environment; their
// calls are decided the same way, by the markers of the child's steps. A
// write whose outcome is unknown stops the run as Indeterminate: [Env.Done]
// and [Env.Retry] settle it as a person would. An activity tool's activity
// is registered on [Env.TestEnv], as on your worker; every task queue is
// the test environment's. [Replay] replays a
// recorded history of a run against the code as it is now, so a change
// that would break runs in flight fails a test before it ships.
//
// What it guarantees:
//   - a run is deterministic: the same script and tools give the same
//     steps, model calls and answer every time; timers are skipped, not
//     waited for;
//   - the environment's and the activities' log lines are kept and shown
//     only when the test fails;
//   - a run that waits for a person the test does not answer (a call it
//     decided nothing on, an Indeterminate write, an exhausted budget) is
//     cancelled and [Env.Run] returns an error matching [ErrWaiting] that
//     names where it stopped; it never hangs the test.
//
// The scripted model does not stream, so the run's stream stays empty.
package agentruntest
