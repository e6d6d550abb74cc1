// Command bench measures agentrun's costs against baselines measured in the
// same run, and writes one Markdown table, with the machine it ran on, to
// BENCHMARKS.md (replaced, except the sections after the table that it
// keeps: "## Where the time goes", the analysis a person writes of a full
// run, and make chaos's "## Crash campaign") and to stdout. Run it with
// `make bench` or `go run ./bench` from the module root.
//
// It starts a Temporal dev server of its own for each section (so that one
// section's histories and leftover activity timers do not slow the next)
// from the pinned CLI
// ($AGENTRUN_TEMPORAL_CLI or bin/temporal; internal/testkit/devserver: in memory,
// headless, agentrun's search attributes, and the dynamic config every dev
// server of the project runs with), and runs its workers in its own
// process, except in the five sections that run worker processes (cmd
// worker, which the bench builds with go build, and in the library
// section an embedded worker of its own). Its sections:
//
//   - Step overhead: AgentRun (package workflows and activities, the
//     scripted model, the demo tools, the write guard on a FileStore) on a
//     script of T turns that each call the read tool lookup, then answer,
//     against a bare workflow that runs the same number of no-op activities
//     one after another. Runs alternate (bare, AgentRun, ...) after one
//     warm-up run of each; the figure is the median of the runs' wall time
//     per activity. Where the time goes: the median gaps between the
//     history events of every measured run (activity scheduled → started →
//     completed → workflow task scheduled → started → completed → next
//     activity scheduled), both sides, and each worker's RPCs per activity,
//     counted by a gRPC interceptor on its own client; the history bytes
//     per activity by part of the events (proto sizes), and AgentRun's
//     activity inputs by JSON field (inputFields: catalog,
//     step.model.conversation, step.model.tools, ...). The same pair runs
//     in every round again with gRPC compression off on every client of
//     theirs (client.GrpcCompressionNone on a driver of their own and on
//     their workers'; the sdk's default is gzip): ms per activity,
//     AgentRun against bare with it off, and each side with gzip against
//     off.
//   - Step overhead on a real cluster (cluster.go): the same comparison, T
//     and rounds, on a Temporal cluster the section starts and stops
//     (internal/testkit/clustertest: the server built by make temporal-server on a
//     private PostgreSQL, 4 history shards, SQL visibility, deploy/'s
//     configuration and dynamic config, as docker-compose.yml runs it):
//     ms per activity, the median step cycle and the workers' RPCs per
//     activity, AgentRun against the bare chain on the same cluster, and
//     the three figures of the pair with gRPC compression off. When the
//     cluster cannot start, its rows say why (not measured).
//   - Encryption: the same AgentRun runs (25 turns of a read tool with
//     4 KB outputs, kept by reference) on two workers, one with a payload
//     key (client, worker and sealed content store) and one without;
//     rounds alternate which side goes first. Figures: the median time
//     per activity, encrypted against plain (goal 1.05); the time the
//     codec and the content store's sealing spent per activity of the
//     encrypted runs (timed by wrappers around the same codec), against
//     the plain step, which says how much of a gap is the codec's own
//     work and how much the machine's noise; history bytes per turn; and
//     the codec server's /decode of a run's first 100 events, references
//     expanded, against the same events of a plain run.
//   - Tracing: the same AgentRun runs (25 turns of a read tool with
//     400-byte outputs) on two workers, one traced (the sdk's tracing
//     interceptor on its client and worker, agentrun's step spans, every
//     run sampled, exported over OTLP/gRPC to a Jaeger the section starts
//     on loopback, internal/testkit/jaegertest) and one not; rounds alternate
//     which side goes first. Figures: the median time per activity,
//     traced against untraced (goal 1.05); and, read back from Jaeger
//     after a flush, the step spans (chat, execute_tool) per traced step,
//     which must be one for every run, each run in one trace. Without the
//     Jaeger program (make jaeger) the rows say "not measured".
//   - Library (library.go): agentrun as a Go library. Two worker
//     processes on the section's dev server, each on its own queue and
//     journal folder: an embedded worker (bench/internal/embeddedworker:
//     worker.New, agentrun.Register with one agent, the scripted model and
//     a Go read tool lookup made by agentrun.NewTool) and the worker
//     program (cmd worker, its demo lookup), both playing one script file
//     (AGENTRUN_MODEL=scripted:PATH) of T lookup turns and an answer (25
//     turns, 30 rounds; -quick 3 and 2); rounds alternate which side goes
//     first after one warm-up run of each. Figures: the time per
//     activity, embedded against the program, median (goal 1.02) and
//     mean; from the histories, the median activity started → completed
//     and scheduled → next scheduled, and the history bytes per activity.
//     Then what a scripted-model embedded worker links against a plain
//     Temporal worker (bench/internal/plainworker: worker.New, a workflow
//     of a bare activity, the same settings read, the same start and
//     stop): the packages go list -deps lists (internal/testkit/deps, as
//     docs' TestLightImports reads them), the standard library's included
//     (goal 1.3), and those outside it, with the embedded worker's extra
//     ones by module (no goal); the binary as go build makes it (symbols
//     and DWARF kept) and stripped (-ldflags='-s -w'), in MB of 10⁶ bytes
//     (goal 1.3 each); and the worker program's packages and binary
//     against the plain worker's (no goal: it links every provider, MCP,
//     metrics and tracing). TestLibraryQuick runs the section alone.
//   - Delegated step (delegated.go): what an agent tool's call costs
//     against a direct tool call, on one in-process worker. Planner runs
//     whose middle step calls the agent tool helper (declared as the
//     tools file's agents object does, tools.Open; its child AgentRun
//     workflow, on the same worker and model, answers at once: its
//     ListAgentTools and 1 model step) against planner runs that call
//     lookup there (2 model steps + 1 tool step); one scripted model
//     plays the three scripts, chosen by the run's task. Rounds (20;
//     -quick 2) alternate which side goes first after one warm-up run of
//     each. Figures: the wall time per run, median (goal 2.1: a child
//     run's start, activities, report and completion are about twice the
//     direct run's round trips) and mean; the middle step in the
//     parent's history (child initiated → completed against CallTool
//     scheduled → completed); and the delegated tree's (parent + child)
//     history bytes, events and activities against the direct run's.
//   - Provider (provider.go): the model provider as a priced resource.
//     One run of 50 model steps (49 lookup calls and the answer, the
//     fake's -turns 49; the run's max turns 60) per provider, llm's
//     anthropic: and openai: providers (providers.New, as a worker builds them)
//     on one in-process worker, pointed at one provider fake process
//     (cmd providerfake, built by the section; limits far above the
//     run's, so nothing waits, and the prompt caches' real rules:
//     Anthropic's at the cache_control breakpoints llm sets, OpenAI's on
//     prefixes of 1,024 tokens or more in 128-token steps), the fake
//     model's price from a models file (llm.LoadModels). Figures, per
//     provider: the input tokens read from the cache against all input
//     tokens in the run's own usage (goal ≥ 0.80, the figure; the
//     figure names the first step the cache answers, before which the
//     prompt is under 1,024 tokens); the run's recorded cost (the
//     result's usage.cost) against the invoice the section computes from
//     the fake's /stats token counts (input, cached, written, output) at
//     the same price (goal 0.99 to 1.01); and the run's model steps
//     against the requests the fake answered. The section fails when the
//     fake refused a request. TestProviderQuick runs it alone.
//   - Fleet-wide rate limits (fleetlimit.go): the fleet against
//     the provider fake, compressed in time. The fake (cmd providerfake,
//     one per side) enforces 60 requests and 40,000 tokens in any 6 s,
//     the 60 and 40,000 a minute ten times faster, and the models
//     file declares the same to the workers as 600 requests and 400,000
//     tokens a minute. 4 worker processes (cmd worker, openai: provider)
//     run 200 runs of 10 model calls (9 lookup calls and the answer;
//     -quick 40 runs of 3: 120 calls, twice what one window admits, so that the baseline meets the limit), started one every 0.5 s (-quick 0.15 s):
//     twice the runs the limit serves. Side one shares the limit: the
//     workers share one journal folder, so one limiter (its limits/
//     folder). Side two is the baseline, each worker alone: a journal
//     folder each, so each paces itself to the whole limit, four times
//     what the fake allows. Figures, per side, from the fake's /stats
//     (sampled every 100 ms while the runs go): 429s against all requests
//     it received (goal ≤ 0.01); answered requests a minute over the
//     steady middle, from the first sample at 10% of the side's answered
//     requests to the first at 90%, against the declared limit (goal ≥
//     0.9), and the tokens a minute over it against theirs (no goal: it
//     says whether tokens bound instead); runs failed (goal 0) and
//     completed (goal every one) against runs started. The baseline's
//     rows have no goal. TestFleetLimitQuick runs it alone.
//   - Local journal: journal.FileStore.Append of a step.completed record
//     into runs already holding 10 and 4,000 records, interleaved with a
//     raw write+fsync of the same bytes to an O_APPEND file in the same
//     folder; the same appends by a store that seals them under a payload
//     key (journal.NewSealedFileStore) against the plain ones into a run of
//     the same size (goal 1.3); and, once the store keeps counters
//     (statsOf), the bytes read per append and the fsyncs per step of each
//     kind.
//   - Long run: 1,000 turns with 4 KiB tool outputs: history bytes per
//     turn stay flat across continue-as-new, and so does the time per turn.
//   - Fork (fork.go): the time to a fork's first live step (issue 47).
//     One in-process worker (worker.New, agentrun.Register) with two
//     agents: one playing an origin of T model calls (T-1 turns of a Go
//     read tool made by agentrun.NewTool, then the answer; 1,000, -quick
//     100), which continues as new on the way at full size, and one whose
//     scripted model answers at once (it picks its turn by the assistant
//     messages before it, so a fork at llm/N answers N's). Once the origin
//     has ended, agentrun.Client.Fork forks it onto the second agent at
//     llm/10 and llm/900 (-quick llm/90), one fork at a time, each to its
//     end, alternating which goes first, R rounds each (10; -quick 2)
//     after a warm-up fork of each. A fork's worker reads the origin's
//     history (activities.ReadRecorded, the local activity
//     agentrun.ForkPoint) and goes on live from there. Figure: the time
//     from the Fork call to the fork agent's first model call (stamped by a
//     wrapper of its model), median at turn 900 against at turn 10 (goal
//     1.2: continue-as-new and content by reference keep a late fork as
//     cheap as an early one), and the mean; as context, the origin's
//     executions. Each fork must answer its turn's answer after exactly one
//     model call on its agent, or the section fails. TestForkQuick runs
//     it alone.
//   - Streamed turns: what streaming a model's text costs in history. The
//     same scripted session (8 answers of about 1.5 KB, -quick 2, each
//     written over 3 s in 3-word pieces; a message sent once the run is
//     Idle after each answer) runs twice at once on one worker, with
//     Input.Stream on and off, and is terminated after its last answer;
//     from each history (GetWorkflowHistory, proto.Size of each event,
//     from the first CallModel scheduled to the end): bytes and events per
//     turn, streamed against unstreamed, the extra bytes against the
//     text's, and the publish signals per turn against the model's time
//     over the batch interval (streams.DefaultBatchInterval).
//   - Token latency: how soon a watcher sees a streamed answer. One answer
//     of about 1.5 KB, written over 3 s in 3-word pieces, streamed by 10
//     runs (-quick 2) watched by a Go subscriber (progress.Subscribe) and
//     10 watched by a TypeScript one (node streams/testdata/ts/stream.js),
//     one at a time, one subscriber a run; the scripted model is wrapped to
//     record in the bench's process when it emits each piece (the payloads
//     are the production ones) and waits until the subscriber read the
//     run's first event. Each piece's latency runs to the read of the token
//     that completes it: the first piece's p50 against 150 ms, any piece's
//     p99 against 1.2 s; then as many runs streamed unwatched and
//     unstreamed, all at once: history bytes per turn (readStreamHistory)
//     against 1.5× unstreamed, and the watched runs' with their poll
//     updates. Without node or the client's packages the TypeScript rows say
//     "not measured".
//   - Billable actions (actions.go, actioncount.go, actionsbare.go; issue
//     48): what Temporal Cloud would bill for AgentRun's runs, in actions,
//     against bare workflows that make the same calls. countActions counts
//     them in a history by Temporal Cloud's published list
//     (https://docs.temporal.io/cloud/actions, the documentation
//     repository's docs/evaluate/cloud/actions.mdx as stored in 2026):
//     a workflow started (client start or continue-as-new; a child's start
//     is billed on its parent: StartChildWorkflowExecutionInitiated is 2
//     actions, the intent and the start); each activity scheduled, and each
//     retry (an ActivityTaskStarted's attempt - 1); the markers one workflow
//     task records as one action, whether local activities' or version
//     markers' (workflow.GetVersion; the older list billed "version marker
//     recorded" by name), plus WorkflowTaskCompleted's
//     metering_metadata.nonfirst_local_activity_execution_attempts; each
//     UpsertWorkflowSearchAttributes, however many attributes it sets,
//     except one that sets TemporalChangeVersion alone; each signal
//     received (WorkflowExecutionSignaled; a signal from another workflow
//     is billed on the receiver only); each update accepted; each timer
//     started; each workflow options update; a reset; each Nexus operation
//     scheduled or cancelled. Start-time search attributes, workflow tasks,
//     completions and continued-as-new events bill nothing. Activity
//     heartbeats are billed when they reach the server and are not in a
//     history: the section adds the RecordActivityTaskHeartbeat(ById)
//     RPCs a gRPC interceptor counted on the client of the worker that ran
//     the run. Not counted: queries (billed per query a worker answers;
//     the runs make none, only the bench's own polls, which a watcher
//     would make too), rejected updates (not in a history; the runs have
//     none), signal-with-start (AgentRun does not use it), schedules,
//     exports and the Fairness and capacity surcharges. The runs, one of
//     each, as the other sections run them: a run of T lookup turns and
//     the answer (25; -quick 3), as the step overhead section's, against a
//     bare chain of as many no-op activities: actions per model step (goal
//     1.2); the streamed section's session (S answers over 3 s each, 4;
//     -quick 2) streamed, against a bare session (actionsbare.go) of as
//     many activities, the same message updates before each turn and, from
//     each turn's activity, as many signals as the streamed session's
//     publish signals: actions per streamed turn (goal 1.5); the same
//     session unstreamed against a bare session without signals (no goal);
//     the approval section's hand-example run, parked on its write and
//     approved once by the approve signal, against the bare approval
//     workflow (it upserts the same status, waits for one signal) running
//     as many no-op activities; and the delegated section's planner run
//     whose middle step is an agent tool (parent and child run), against a
//     bare parent of as many no-op activities and a bare child workflow of
//     as many as the child ran (no goal for these two). Each row breaks
//     the counts down by kind. TestActionsQuick runs the section alone;
//     TestCountActions checks the rules on hand-made histories. The ratios
//     depend on T: a run's few upserts and markers weigh more over 4 model
//     steps than over 26.
//   - Guard journal on PostgreSQL: RunStep of a write step (step.started,
//     step.completed) and a plain Append of one record against
//     postgres.DB.Guard() on a private PostgreSQL cluster (started through
//     internal/testkit/pgtest.Start, as the tests start theirs), interleaved with
//     the same on a journal.FileStore in the bench's folder; medians, no
//     goal. Without PostgreSQL binaries the rows say "not measured".
//   - Kill → resume: two worker processes on one queue, the demo lookup
//     slowed by AGENTRUN_DEMO_DELAY; once a run's lookup has started on one
//     of them (DescribeWorkflowExecution's pending activity and the worker
//     identity "PID@host@"), that one is SIGKILLed; the figure is the time
//     from the kill to the step's ActivityTaskCompleted event (the other
//     worker's retry), minus the known delay, against
//     workflows.HeartbeatTimeout. Median of a few trials.
//   - Kill → settled, probe-only write: the hand example with
//     create_ticket declared (a tools file the bench writes, AGENTRUN_TOOLS)
//     with a probe, find_ticket by title, no idempotency key and a 10 s
//     timeout. Per trial (3, -quick 1; each on its own queue, journal and
//     tickets file, since the probe asks by title) a worker process with
//     AGENTRUN_TEST_HOLD_BEFORE=create_ticket runs the run, which is
//     approved by signal; once that worker logs that it holds the write
//     before its effect, a second worker process without the hold joins
//     the queue and the first is SIGKILLed. The figure is the time from the
//     kill to the step's ActivityTaskCompleted event, against the tool's
//     timeout + fence.Grace + 2 s (goal ratio 1). Both workers run on one
//     host, so the retry sees the killed pid gone (fence.Attempt.Gone)
//     and probes without waiting for the killed attempt's deadline; the
//     figure is then the heartbeat timeout, the first retry interval, the
//     probe and the write. A trial whose step was not settled by its probe
//     (not found, ran again), or whose run did not complete with exactly
//     one ticket, fails the section. TestKillSettledAlone runs the section
//     alone (go test ./bench -run TestKillSettledAlone).
//   - Parked approvals: N hand-example runs (1,000; -quick 50) on one
//     worker process wait for approval at once (counted through the
//     AgentRunStatus search attribute), then are approved through the
//     approve update a few at a time; approve → completed per run from the
//     histories (update accepted → run completed), p50 against one run
//     approved alone on the idle worker first, p99 against p50; and the
//     worker's VmRSS (/proc/PID/status) against the idle worker's.
//   - Approval under load (approvebatch.go): N hand-example runs (1,000;
//     -quick 20) on one in-process AgentRun worker park on their write's
//     approval (counted through AgentRunStatus) and are
//     woken by one batch signal: StartBatchOperation with a signal
//     operation, what `temporal workflow signal --query 'TaskQueue="..."
//     AND AgentRunStatus="AwaitingApproval"' --name approve --input
//     '{"Marker":"..."}'` starts, the payload operator.ApprovePayload of
//     the marker one run alone reported first (the same for every
//     hand-example run; no digest, which approve accepts). The write is
//     file_request, a bench tool that files nothing, in create_ticket's
//     place: the demo's ticket store reads every ticket filed so far and
//     fsyncs under one lock per ticket, which thousands of runs would
//     measure instead of AgentRun; the approval gate and the write
//     guard's journal are as for any write. The baseline:
//     N bare workflows on one worker of the same options (worker.Options{},
//     as newAgentWorker's) that upsert the same status, wait for one
//     approve signal and then run as many no-op activities as the run
//     alone ran after its approval, woken by one batch signal of the same
//     query; bare first, each side's worker running only during its turn.
//     At 1,000 runs (Upserts) a third side runs between them: the bare
//     workflows that also upsert AgentRunStatus as an approved run does
//     (Running at the approval, Completed at the end), which splits the
//     ratio into what those two upserts cost and what the rest of
//     AgentRun does.
//     Figures: the batch's start → the last run's completion (goal 1.2);
//     signal → completion per run from the histories, p50 and p99; the
//     batch's own spread (first signal → last: the server's batcher, at
//     worker.batcherRPS, 50 a second by default, the dev server's; at
//     1,000 runs and more the spread is most of the batch-to-last time on
//     both sides); the waits of the workflow tasks after the approval
//     (scheduled → started, p50), those tasks per run, and those that
//     timed out on the worker's sticky queue and were replayed on the
//     task queue; the dev server's and this process's CPU per approved
//     run and the cores the server kept busy, from the batch's start
//     until the bench had read every run's result (the histories are
//     read after, so that their reads load no server the runs need); and
//     this process's VmRSS growth
//     with the runs parked and after, from a collection before the runs
//     started, and per parked run the Go heap in use, the live heap
//     objects and the goroutine stacks in use (runtime.MemStats after a
//     collection) and the goroutines (a workflow coroutine is one).
//   - Parked runs at fleet scale: the same section with 10,000 runs (-quick
//     10), plus the AgentRun side's VmRSS growth parked against 500 MiB
//     (goal 1).
//   - Saturation (saturation.go, last): N AgentRun runs of T lookup turns
//     (500 × 10; -quick 20 × 3) started at once on one in-process worker,
//     against N bare chains of as many no-op activities on one worker of
//     the same options, rounds (2; -quick 1) alternating which side goes
//     first, each round on a dev server of its own, stopped at its end (a
//     round's activity timers fire 10 min later, when the next round
//     would meet them), after one warm-up run of each side there; each
//     side's worker runs only during its turn. Figures: the wall time from the first start to the last
//     completion (goal 1.15), activities per second over it, CPU per
//     activity (getrusage of this process over the round: the worker and
//     the driver's starts and waits, alike on both sides; goal 1.25), and
//     activity scheduled → completed and activity scheduled → next
//     scheduled under that load, p50 and p99 from the histories. The
//     same two sides run again in the same rounds with gRPC compression
//     off on every client of theirs (client.GrpcCompressionNone on the
//     driver's and the worker's; the sdk's default is gzip; the order
//     reverses each round, so each compared pair runs side by side):
//     wall time and CPU per activity, AgentRun against bare with it off,
//     and each side's CPU per activity with gzip against off, in this
//     process and in the dev server's (/proc/PID/stat of the child this
//     process started; AGENTRUN_GRPC_COMPRESSION=none is the programs'
//     switch). TestSaturationQuick, TestApprovalBatchQuick and
//     TestParkedFleetQuick run these sections alone, as -quick sizes them
//     (TestSaturationQuick with 2 rounds, so that a second server runs).
//
// Each row is a figure, its baseline, their ratio and the goal for the
// ratio: at most a value (≤), at least one (≥, a share that must be high),
// or a range (a figure that must match another), judged to two decimals. A missed goal is marked ✗ and listed under the table; the bench
// measures and exits 0 anyway (1 on an error, 3 when the dev server cannot
// start).
//
// Flags: -quick (a smoke run of a few seconds; bench_test.go runs it),
// -out FILE, -dir DIR (where journals and fsync probes go; default a
// temporary folder), -only NAME,... (measure these sections alone and print
// their table; BENCHMARKS.md is written only by a full run or an explicit
// -out), -cpuprofile FILE (the in-process workers' and the driver's CPU
// over the sections measured, for go tool pprof), -memprofile PREFIX (the
// approval sections' heap, sampled every 4 KiB, and goroutines with their
// runs parked, per side: PREFIX-RUNS-SIDE.pprof and .goroutines.txt).
//
// newAgentWorker is the one place that builds AgentRun's worker: adapt it
// when the workflow or activities APIs change.
package main
