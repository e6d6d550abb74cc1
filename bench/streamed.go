package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
	"github.com/agentrun/agentrun/workflows"
)

// streamParams sizes the streamed turns section.
type streamParams struct {
	// Turns is how many answers the session gives: its prompt's and
	// Turns-1 messages'.
	Turns int
	// Delay is how long the scripted model takes to write each answer,
	// spread over its pieces.
	Delay time.Duration
}

// answerText is a realistic answer of about 1.5 KB; each turn's starts
// with its number.
const answerText = `Here is what I found about read access to the orders database. ` +
	`The access policy for production data says that every request needs a ticket approved by the data owner, ` +
	`which for the orders database is the payments team; approvals usually take one business day. ` +
	`Access is granted for 90 days and is read only: you can run SELECT queries through the analytics replica, ` +
	`but not against the primary, and exports of more than 10,000 rows need a second approval from security. ` +
	`Personal data in the customers and addresses tables is masked for every role below data steward, ` +
	`so joins on e-mail addresses or phone numbers will return hashed values rather than the originals. ` +
	`If you need the staging database as well, that is a separate request: staging holds a nightly copy with ` +
	`synthetic customer data, and the platform team grants it without an owner's approval, usually within an hour. ` +
	`To connect, use the bastion host with your single sign-on credentials; the connection string is in the ` +
	`internal wiki under Data, Orders, Replica. Queries that run longer than five minutes are cancelled by the ` +
	`replica's statement timeout, so please add a date range to anything that scans the order lines table, which ` +
	`holds about 400 million rows. When your access expires you will get an e-mail a week before, and renewing ` +
	`it takes the same ticket with a short justification. Let me know if you want me to file the request now, ` +
	`or if you would like a summary of the tables and their columns first.`

// answerFor is the scripted answer of turn n.
func answerFor(n int) string { return fmt.Sprintf("Answer %d. %s", n, answerText) }

// streamedTurns runs the same scripted session twice at once on one
// worker of the bench's dev server, streamed (Input.Stream: CallModel
// publishes the text by signal, the first piece at once and then batched
// every streams.DefaultBatchInterval)
// and not, and compares their histories from the first model step to the
// end: bytes and events per turn, the publish signals, and the text they
// carried.
func streamedTurns(ctx context.Context, env *benchEnv, p streamParams) ([]row, error) {
	began := time.Now()
	var script llm.Script
	for n := 1; n <= p.Turns; n++ {
		script.Turns = append(script.Turns, llm.Turn{Text: answerFor(n), Delay: p.Delay.String()})
	}
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	queue := "bench-stream-" + runStamp()
	stop, err := startAgentWorker(c, queue, script, env.subdir("stream"), nil, env.logger, agentOptions{})
	if err != nil {
		return nil, err
	}
	defer stop()

	type result struct {
		h   streamHistory
		err error
	}
	results := make([]chan result, 2)
	for i, on := range []bool{false, true} {
		results[i] = make(chan result, 1)
		go func() {
			h, err := session(ctx, c, queue, fmt.Sprintf("%s-stream-%t", queue, on), on, p.Turns)
			results[i] <- result{h, err}
		}()
	}
	plain, streamed := <-results[0], <-results[1]
	if err := errors.Join(plain.err, streamed.err); err != nil {
		return nil, err
	}
	if plain.h.signals != 0 {
		return nil, fmt.Errorf("the unstreamed session got %d publish signals, want none", plain.h.signals)
	}
	if streamed.h.items == 0 {
		return nil, errors.New("the streamed session published no text")
	}

	turns := float64(p.Turns)
	per := func(v int) float64 { return float64(v) / turns }
	text := 0
	for n := 1; n <= p.Turns; n++ {
		text += len(answerFor(n))
	}
	interval := streams.DefaultBatchInterval
	sec := fmt.Sprintf("Streamed turns: a session of %d answers of about %d bytes, each written by the scripted model in %d-word pieces over %s, "+
		"streamed to the run's stream (Input.Stream; CallModel publishes the first piece at once, then a batch by signal every %s, and leaves the text after its last batch to the run, which publishes it on recording the reply; an answer over 256 B is recorded by reference) vs the same session unstreamed, both at once on one worker; "+
		"history from the first model step to the end (the section took %s)",
		p.Turns, text/p.Turns, llm.StreamWords, p.Delay, interval, time.Since(began).Round(time.Second))
	extraBytes := per(streamed.h.bytes - plain.h.bytes)
	extraEvents := per(streamed.h.events - plain.h.events)
	signals := per(streamed.h.signals)
	return []row{
		{Section: sec, Figure: "history bytes per turn, streamed vs unstreamed", Measured: per(streamed.h.bytes), Baseline: per(plain.h.bytes), Unit: "B"},
		{Section: sec, Figure: fmt.Sprintf("extra history bytes per streamed turn vs the text's bytes per turn (%.1f token items in %.1f signals per turn)", per(streamed.h.items), signals),
			Measured: extraBytes, Baseline: per(text), Unit: "B"},
		{Section: sec, Figure: fmt.Sprintf("bytes of the publish signal events per streamed turn vs the text's bytes per turn (the envelope: %.0f B of signal per token item of %.0f B of text; %.0f B of a turn's text went with its result)",
			float64(streamed.h.signalBytes)/float64(max(streamed.h.items, 1)), float64(streamed.h.itemText)/float64(max(streamed.h.items, 1)), per(text-streamed.h.itemText)),
			Measured: per(streamed.h.signalBytes), Baseline: per(text), Unit: "B"},
		{Section: sec, Figure: "history events per turn, streamed vs unstreamed", Measured: per(streamed.h.events), Baseline: per(plain.h.events)},
		{Section: sec, Figure: fmt.Sprintf("extra history events per streamed turn (%.1f) vs publish signals per turn (each wakes a workflow task)", extraEvents),
			Measured: extraEvents, Baseline: signals},
		{Section: sec, Figure: fmt.Sprintf("publish signals per streamed turn vs 1 (the first piece, sent at once) + the model's %s / the %s batch interval", p.Delay, interval),
			Measured: signals, Baseline: 1 + float64(p.Delay)/float64(interval), Goal: 1.5, GoalNote: "batched, not a signal per piece"},
	}, nil
}

// streamHistory is what streamedTurns reads from a session's history,
// from its first model step to the end.
type streamHistory struct {
	bytes, events int
	// signals counts the publish signals, signalBytes their events' bytes,
	// items the token items they carried.
	signals, signalBytes, items int
	// itemText counts the bytes of text the token items carried (a
	// step's text after its last batch goes with its result instead).
	itemText int
	// polls counts the subscribers' poll updates (accepted), pollBytes
	// their accepted and completed events' bytes.
	polls, pollBytes int
	// replyBytes counts the bytes of the model steps' completed events,
	// which carry their replies.
	replyBytes int
}

// session starts a session run (streamed or not) that answers its prompt
// and turns-1 messages, each sent once the run is Idle after the previous
// answer, terminates it after the last answer and reads its history.
func session(ctx context.Context, c client.Client, queue, id string, stream bool, turns int) (streamHistory, error) {
	in := workflows.Input{Messages: agent.UserMessages("How do I get read access to the orders database?"),
		Session: true, SessionIdle: "1h", Stream: &stream, MaxTurns: turns}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in); err != nil {
		return streamHistory{}, err
	}
	for n := 1; n <= turns; n++ {
		if n > 1 {
			u, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: operator.SignalMessage,
				UpdateID: fmt.Sprintf("message-%d", n), Args: []any{operator.MessagePayload(fmt.Sprintf("Thanks. Follow-up question %d?", n))},
				WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = u.Get(ctx, nil)
			}
			if err != nil {
				return streamHistory{}, fmt.Errorf("session %s: message %d: %w", id, n, err)
			}
		}
		if err := awaitAnswer(ctx, c, id, n); err != nil {
			return streamHistory{}, err
		}
	}
	if err := c.TerminateWorkflow(ctx, id, "", "bench: measured"); err != nil {
		return streamHistory{}, err
	}
	return readStreamHistory(ctx, c, id, turns)
}

// awaitAnswer polls run id's state (queries add nothing to its history)
// until it is Idle after answer n.
func awaitAnswer(ctx context.Context, c client.Client, id string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var s workflows.State
	for {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryState)
		if err == nil {
			err = v.Get(&s)
		}
		if err == nil && s.Status == agent.StatusIdle && s.AnswerTurn >= n {
			if want := answerFor(n); s.Answer != want {
				return fmt.Errorf("session %s: answer %d is %q, want the script's %q", id, n, agent.Clip(s.Answer, 40), agent.Clip(want, 40))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %s: no answer %d (status %s, answer turn %d, last error %v): %w", id, n, s.Status, s.AnswerTurn, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readStreamHistory sums the events of run id from its first CallModel
// scheduled to the end, and checks it holds all turns model steps (no
// continue-as-new in between).
func readStreamHistory(ctx context.Context, c client.Client, id string, turns int) (streamHistory, error) {
	var h streamHistory
	models, started := 0, false
	polls := map[string]bool{}   // the poll updates' ids
	modelIDs := map[int64]bool{} // the model steps' scheduled event ids
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return h, fmt.Errorf("history of %s: %w", id, err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && activities.Method(a.GetActivityType().GetName()) == "CallModel" {
			models++
			started = true
			modelIDs[e.GetEventId()] = true
		}
		if !started {
			continue
		}
		size := proto.Size(e)
		h.bytes += size
		h.events++
		if a := e.GetActivityTaskCompletedEventAttributes(); a != nil && modelIDs[a.GetScheduledEventId()] {
			h.replyBytes += size
		}
		if a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil && a.GetAcceptedRequest().GetInput().GetName() == streams.PollUpdate {
			h.polls++
			h.pollBytes += size
			polls[a.GetAcceptedRequest().GetMeta().GetUpdateId()] = true
		}
		if a := e.GetWorkflowExecutionUpdateCompletedEventAttributes(); a != nil && polls[a.GetMeta().GetUpdateId()] {
			h.pollBytes += size
		}
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == streams.PublishSignal {
			h.signals++
			h.signalBytes += size
			for _, pl := range a.GetInput().GetPayloads() {
				var batch streams.PublishInput
				if err := json.Unmarshal(pl.GetData(), &batch); err != nil {
					return h, fmt.Errorf("history of %s: publish signal %d: %w", id, e.GetEventId(), err)
				}
				for _, item := range batch.Items {
					if item.Topic == progress.TopicTokens {
						h.items++
						var tok progress.Token
						p, err := streams.DecodePayload(item.Data)
						if err == nil {
							err = converter.GetDefaultDataConverter().FromPayload(p, &tok)
						}
						if err != nil {
							return h, fmt.Errorf("history of %s: publish signal %d: a token item: %w", id, e.GetEventId(), err)
						}
						h.itemText += len(tok.Text)
					}
				}
			}
		}
	}
	if models != turns {
		return h, fmt.Errorf("history of %s: %d model steps, want %d in one execution", id, models, turns)
	}
	return h, nil
}
