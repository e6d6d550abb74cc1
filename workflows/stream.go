package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
)

// streamLinger bounds how long a completing run waits for a subscriber to
// read its last items (streams.Host.Linger).
const streamLinger = 2 * time.Second

// streamState bounds the stream a run carries across continue-as-new: its
// newest items, next to a checkpoint of at most some 64 KiB.
const streamState = 32 << 10

// openStream hosts the run's stream, continuing the previous execution's.
// The run takes in its publish signals itself, with its other signals
// (takeSignals).
func (r *execution) openStream(prev *streams.State) error {
	h, err := streams.NewHost(r.ctx, prev, streams.HostConfig{
		MaxStateBytes: streamState,
		OwnReceiver:   true,
		OnReject: func(rj streams.Rejected) {
			r.rejected(streams.PublishSignal, rj.Payload, rj.Reason)
			r.showDetails()
		},
	})
	r.stream = h
	return err
}

// event publishes e on TopicEvents.
func (r *execution) event(e progress.Event) {
	if err := r.stream.Publish(progress.TopicEvents, e); err != nil {
		workflow.GetLogger(r.ctx).Warn("publish event", "type", e.Type, "error", err)
	}
}

// statusEvent publishes the run's status when it changed since the last
// one published.
func (r *execution) statusEvent() {
	e, key := StatusEvent(r.state)
	if key == r.lastStatus {
		return
	}
	r.lastStatus = key
	r.event(e)
}

// StatusEvent is the status event of a run in state s, with its key: a run
// publishes it when the key differs from the last one's. The local
// engine's subscribers (agentrun.LocalRun.Subscribe) build theirs with it.
func StatusEvent(s State) (e progress.Event, key string) {
	e = progress.Event{Type: progress.EventStatus, Status: s.Status, Step: s.Indeterminate, Reason: s.Reason}
	switch s.Status {
	case agent.StatusAwaitingApproval:
		for _, p := range s.Pending {
			e.Pending = append(e.Pending, p.Marker)
		}
	case agent.StatusIndeterminate:
		e.Reason = s.Why
	case agent.StatusCompleted, agent.StatusIdle:
		e.Preview = agent.Clip(s.Answer, agent.PreviewLen)
	}
	key = string(e.Status) + "\x00" + e.Step + "\x00" + e.Reason + "\x00" + e.Preview
	for _, m := range e.Pending {
		key += "\x00" + m
	}
	return e, key
}

// closeStream lets a subscriber catch up with the last items, then ends
// the stream's polls, before the run completes or continues as new.
func (r *execution) closeStream(completing bool) {
	ctx, _ := workflow.NewDisconnectedContext(r.ctx)
	if completing {
		_, _ = r.stream.Linger(ctx, streamLinger)
	}
	if err := r.stream.Drain(ctx); err != nil {
		workflow.GetLogger(r.ctx).Warn("drain the stream", "error", err)
	}
}
