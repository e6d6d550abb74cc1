package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/progress"
	"github.com/agentrun/agentrun/streams"
)

// sendEvery is how soon the publisher sends a joined Token (and retries a
// failed send).
const sendEvery = 100 * time.Millisecond

// flushWait bounds how long a model step waits, after the reply, for its
// last text to reach the run's stream.
const flushWait = 5 * time.Second

// streamModel runs a model step whose text goes to the run's stream while
// the model writes it: the pieces are joined and published as one Token
// about every StreamEvery (so a batch is one item, not one per piece). The
// stream is for people watching: a text that cannot be published is logged
// and dropped, and never fails the step. The recorded reply says which
// attempt streamed.
func (a *Activities) streamModel(ctx context.Context, step agent.Step) (json.RawMessage, error) {
	if _, ok := a.Exec.Model.(llm.Streamer); !ok || a.NoStream {
		return a.Exec.Execute(ctx, step)
	}
	info := activity.GetInfo(ctx)
	every := cmp.Or(a.StreamEvery, streams.DefaultBatchInterval)
	// The pieces wait here, joined; the publisher sends each joined Token
	// within sendEvery.
	pub, err := streams.NewActivityPublisher(ctx, streams.PublisherConfig{BatchInterval: sendEvery})
	if err != nil {
		a.log(ctx).Warn("stream the model's text: no publisher; the reply is recorded all the same", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", err)
		return a.Exec.Execute(ctx, step)
	}
	var (
		mu     sync.Mutex
		text   strings.Builder
		failed bool
	)
	flush := func() {
		mu.Lock()
		defer mu.Unlock()
		if text.Len() == 0 {
			return
		}
		perr := pub.Publish(progress.TopicTokens, progress.Token{Step: step.Name, Attempt: int(info.Attempt), Text: text.String()})
		text.Reset()
		if perr != nil && !failed {
			failed = true
			a.log(ctx).Warn("stream the model's text", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", perr)
		}
	}
	stop := make(chan struct{})
	ticking := make(chan struct{})
	go func() {
		defer close(ticking)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				flush()
			}
		}
	}()
	res, err := a.Exec.Stream(ctx, step, func(delta string) {
		mu.Lock()
		text.WriteString(delta)
		mu.Unlock()
	})
	close(stop)
	<-ticking
	flush()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWait)
	defer cancel()
	if cerr := pub.Close(cctx); cerr != nil {
		a.log(ctx).Warn("stream the model's text: the last pieces may be missing", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", cerr)
	}
	if err != nil {
		return nil, err
	}
	reply, derr := agent.DecodeModelReply(res)
	if derr != nil {
		return res, nil
	}
	reply.Streamed = int(info.Attempt)
	return agent.EncodeModelReply(reply)
}
