// Package streams hosts a Workflow Streams stream in a Go workflow and
// publishes to and subscribes from one outside it. A stream is a durable,
// append-only log of (topic, payload) items kept inside a workflow run:
// publishers add batches by signal, subscribers long-poll by update, a query
// answers the current offset. The package speaks the wire protocol of
// Temporal's Workflow Streams exactly, so that a subscriber or publisher
// written with @temporalio/workflow-streams (TypeScript; the tests run one
// against a Go-hosted stream) or temporalio.contrib.workflow_streams
// (Python; not tested here) works with a stream hosted here, and a Go
// Publisher or Subscriber with a stream hosted by either (not tested here).
// It imports only the Temporal Go sdk (with its api and protobuf modules)
// and the standard library.
//
// # Use
//
// In the workflow, before it first blocks, with the previous run's State
// (nil at first):
//
//	host, err := streams.NewHost(ctx, in.Stream, streams.HostConfig{})
//	...
//	err = host.Publish("events", ev)
//	...
//	// Before continue-as-new (Drain alone before returning):
//	err = host.Drain(ctx)
//	err = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
//	state := host.State()
//	return workflow.NewContinueAsNewError(ctx, Wf, Input{Stream: &state})
//
// Outside it (an activity: NewActivityPublisher):
//
//	pub, err := streams.NewPublisher(streams.PublisherConfig{Client: c, WorkflowID: id})
//	err = pub.Publish("tokens", chunk)
//	err = pub.Close(ctx)
//
//	sub, err := streams.NewSubscriber(streams.SubscriberConfig{Client: c, WorkflowID: id, Topics: []string{"events"}})
//	for it, err := range sub.All(ctx) { ... it.Decode(&ev) ... }
//
// # Sources
//
// The protocol below was read from @temporalio/workflow-streams 1.23.0 on
// npm (src/types.ts, src/codec.ts, src/workflow.ts, src/client.ts,
// README.md "Cross-Language Protocol"), checked against the Go contrib module
// github.com/temporalio/sdk-go/contrib/workflowstreams (types.go, codec.go,
// workflow.go, client.go, publisher.go), which is not on our module proxy,
// and against the Python package's handler names and state fields. Go sdk
// v1.51.0 exempts the "__temporal_workflow_stream_" names from its reserved
// "__temporal_" prefix (internal/internal_utils.go,
// isWorkflowStreamReservedName), so a Go workflow may register them.
//
// # Handlers
//
//	signal __temporal_workflow_stream_publish  PublishInput
//	update __temporal_workflow_stream_poll     PollInput -> PollResult
//	query  __temporal_workflow_stream_offset   -> number (base_offset + len(log))
//
// # Envelopes
//
// Every envelope is one JSON payload (encoding "json/plain") made by the
// default data converter; a client's codec (encryption, compression) applies
// to the envelope as a whole, never to items. Field names are exact:
//
//	PublishInput {"items": [PublishEntry], "publisher_id": string, "sequence": integer}
//	PublishEntry {"topic": string, "data": string}
//	PollInput    {"topics": [string], "from_offset": integer}
//	PollResult   {"items": [WireItem], "next_offset": integer, "more_ready": bool}
//	WireItem     {"topic": string, "data": string, "offset": integer}
//	State        {"log": [WireItem], "base_offset": integer,
//	              "publisher_sequences": {id: integer},
//	              "publisher_last_seen": {id: number (Unix seconds)}}
//
// State is what a host hands to its own next run; no client sees it. The
// TypeScript package and the Go contrib module use this shape; the Python
// package as read keeps its publishers as "publishers": {id: {sequence,
// last_seen}} instead.
//
// Lists are always sent as lists, never null (the TypeScript host iterates
// "items" and reads "topics.length").
//
// # Items
//
// An item's "data" is the standard, padded base64 encoding of the protobuf
// serialization of a temporal.api.common.v1.Payload (metadata map field 1,
// data field 2): the per-item payload keeps its "encoding" metadata, so a
// subscriber decodes it with a payload converter (here Item.Decode). Values
// become payloads through the default data converter, without codec; a
// ready *commonpb.Payload is published as it is. This package encodes
// deterministically and reads unpadded base64 too (as the TypeScript
// decoder does); a payload without "encoding" metadata is refused. For
// strings, numbers, booleans, lists, objects and bytes, Go and TypeScript
// encode an item to the same bytes; a Go nil becomes an empty "binary/null"
// payload where TypeScript writes JSON null (each decodes the other's).
//
// # Offsets
//
// Offsets are global across topics: the n-th item ever appended has offset
// n, from 0, whatever its topic. A topic filter ("topics", empty for all)
// skips items but keeps their offsets; "next_offset" is where the next poll
// starts (after the last item looked at, matching or not). A topic nobody
// published to yields nothing and no error.
//
// # Poll (the long-poll update)
//
// A poll waits, inside the workflow, until the log holds an item at or after
// from_offset (so a from_offset beyond the end waits for that item), then
// answers every item from there matching the topics. from_offset 0 means
// "from the oldest item kept". The answer is capped at 1,000,000 bytes,
// counted as the base64 length plus the topic length per item; the answer
// stops before the item that would pass the cap (a first item is always
// sent) with more_ready true and next_offset that item's offset, and the
// subscriber polls again at once. Otherwise subscribers wait a cooldown
// (100 ms by default) between polls. No server-side time limit applies to
// the wait. The server allows 10 updates in flight per run and 2,000 per
// run in total (one more reason for a long-lived stream to continue as
// new), and a waiting poll holds one of the 10 for as long as it waits.
//
// # Watchers never take the run's update slots (what this package adds)
//
// A host keeps at most HostConfig.MaxOpenPolls (6) polls waiting. A poll
// that would wait while that many do is refused in the update's validator
// (so nothing is written to history and the slot is freed at once) with
// ErrTypeStreamDraining, the message saying so, and the detail BusyDetail.
// A poll that finds items is answered whatever the count. So a run watched
// by any number of subscribers keeps 4 of its 10 slots for the owner's own
// updates (agentrun's approve, deny, ...). Refusing was chosen over
// answering the oldest waiting poll early (empty): an answered poll is an
// update completed in the history, so a crowd of watchers cycling through
// early answers would grow the history with every cycle, while a refusal
// writes nothing. It stays wire compatible: the TypeScript subscriber
// treats StreamDraining as "wait the cooldown, poll again"; the Subscriber
// here reads BusyDetail and backs off instead (SubscriberConfig.BusyBackoff:
// 1 s doubling to 16 s, jittered), so that refused watchers hold slots only
// for the moments their refusals take. Past the first 6, a watcher sees new
// items when it next gets in, up to its backoff later.
//
// Failures are application errors with a type: TruncatedOffset (from_offset,
// not 0, below the base offset; the subscriber restarts from 0), and, in the
// update's validator (so nothing is written to history), StreamDraining (the
// run is draining before continue-as-new; the subscriber waits its cooldown
// and polls again). This package adds InvalidPollInput for a negative
// from_offset, which no upstream client sends. The Python host (its
// workflow.py as read) refuses polls while draining with a plain error
// rather than StreamDraining, so the Subscriber here polls again, for
// SubscriberConfig.RefusalPatience (10 s), when a running run refuses or
// fails a poll with any application error.
//
// # Publishers, batching and dedup
//
// A publisher buffers items and sends them in batches (every batch
// interval: 2 s upstream, 1 s here by default; or at once when the buffer
// is full), one signal per batch, to the workflow id with an empty run id, so
// batches follow continue-as-new. Each publisher has an id (16 hex digits)
// and numbers its batches 1, 2, ...; the sequence advances only when the
// server accepted the signal, and a failed batch is resent unchanged under
// the same number for at most 10 minutes. The host keeps the last sequence
// per publisher id and drops a batch whose sequence is not above it; a batch
// without publisher_id is never deduplicated. The host remembers a
// publisher for a TTL (15 minutes) after its last batch, which is why the
// retry limit must stay below it.
//
// With PublisherConfig.SendFirstAtOnce, an item published after a quiet
// spell (no batch for a batch interval, or none yet) is sent at once, alone
// unless others follow it within the send, and the next batch goes a batch
// interval after it: a watcher gets the first words of a model's answer at
// once, then a steady flow, for one signal per interval as before.
// agentrun's CallModel publishes that way (package activities): a turn's
// first piece at once, then a joined Token about every second; the text
// after the last of them goes with the step's result, and the run publishes
// it from workflow code (Host.Publish).
//
// # Truncation and continue-as-new
//
// Truncating to offset n drops the items below n and sets base_offset to n;
// offsets of the remaining items do not change. Before continue-as-new the
// host drains (waiting polls are answered with what there is, new polls that
// would wait are rejected with StreamDraining), in-flight handlers finish,
// and the state goes into the next run's input: the log (offsets written as
// 0; they are base_offset plus the index), base_offset, and the publishers
// seen within the TTL. The next run restores it, so offsets continue and
// resent batches stay deduplicated. A subscriber whose poll fails because
// the run closed describes that run (the run id that accepted the poll): if
// it continued as new, it polls the workflow id again with an empty run id
// (the new run); if it closed otherwise, the stream has ended.
//
// # What this package adds
//
// The host validates every publish signal itself (it receives a
// converter.RawValue): a malformed batch (not a JSON object, wrong types,
// bad base64, not a Payload, no encoding) is refused as a whole, recorded
// (Host.Rejected, HostConfig.OnReject) and never panics or blocks the run;
// its sequence is not consumed. Publish signals are taken from their
// channel without a blocking Receive, so one delivered in the workflow
// task in which the owner takes State is in that State (the upstream Go
// module's blocking Receive would lose it). Host.State bounds what it
// carries (MaxStateItems, MaxStateBytes) by truncating the oldest items.
// Polls keep being answered after the workflow is cancelled, until Drain.
// After Drain, polls that find items are still answered (upstream rejects
// every poll), so a subscriber between polls does not miss the last items,
// and a drained answer never moves next_offset back. Host.Publish refuses an item
// above MaxItemBytes, which no poll answer could carry.
//
// # Guarantees
//
// An item returned by Host.Publish without error, or in a batch the server
// accepted (Publisher.Flush or Close returned nil), is in the log once, in
// order, until truncated. A Publisher that returned a *FlushTimeoutError
// does not know whether that batch arrived. A Subscriber returns items in
// offset order without gaps, except after a truncation passed it
// (Subscriber.Restarts counts those) and except the items of a topic it
// filters out. The log ends with its workflow: a subscriber that has not
// read up to the end when the workflow completes never gets the rest (it
// ends with ErrEnded), and items published in the workflow task in which the
// run closes without Drain may reach no subscriber. An owner that needs its
// last items read keeps the run open until its subscribers caught up (for
// example until a subscriber acknowledges, by signal, an offset).
//
// Measured on the dev server (CLI 1.5.1): a poll sent while the run
// continues as new is admitted by the next run after up to about 0.5 s;
// otherwise a published item reaches a waiting subscriber in tens of
// milliseconds plus the publisher's batch interval (none for an item sent at
// once: SendFirstAtOnce). make bench's token latency section measures it
// from a model's pieces to a Go and a TypeScript subscriber.
package streams
