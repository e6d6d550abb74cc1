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

// sendEvery is how soon the publisher sends a joined Token after a burst
// (and retries a failed send); a Token after a quiet spell goes at once
// (SendFirstAtOnce).
const sendEvery = 100 * time.Millisecond

// joinLimit is the joined text that is published at once, without waiting
// for StreamEvery: a burst of text is shown when it is that large.
const joinLimit = 4 << 10

// flushWait bounds how long a model step waits, after the reply, for its
// last text to reach the run's stream.
const flushWait = 5 * time.Second

// streamModel runs a model step whose text goes to the run's stream while
// the model writes it: the first piece is published at once, and the
// pieces after it are joined and published as one Token about every
// StreamEvery after the last (so a batch is one item, not one per piece),
// or at once when the joined text reaches joinLimit: the first words at
// once, then a steady flow. The stream is for people watching: a text that
// cannot be published is logged and dropped, and never fails the step. The
// recorded reply says which attempt streamed. With keepTail (the run takes
// the text back from its stream: StepInput.TextInStream), the text joined
// since the last publish when the model is done is not sent: the run
// publishes it itself when it records the reply, which saves a publish
// signal and the workflow task it wakes; st.tail is that text, and
// st.whole reports that every piece before it reached the stream (the
// server took every batch).
func (a *Activities) streamModel(ctx context.Context, step agent.Step, keepTail bool) (res json.RawMessage, st streamed, err error) {
	if _, ok := a.Exec.Model.(llm.Streamer); !ok || a.NoStream {
		res, err = a.Exec.Execute(ctx, step)
		return res, st, err
	}
	info := activity.GetInfo(ctx)
	every := cmp.Or(a.StreamEvery, streams.DefaultBatchInterval)
	// The pieces wait here, joined; the publisher sends each joined Token
	// at once (it follows a quiet spell), or within sendEvery.
	pub, err := streams.NewActivityPublisher(ctx, streams.PublisherConfig{BatchInterval: sendEvery, SendFirstAtOnce: true})
	if err != nil {
		a.log(ctx).Warn("stream the model's text: no publisher; the reply is recorded all the same", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", err)
		res, err = a.Exec.Execute(ctx, step)
		return res, st, err
	}
	failed := false
	j := newJoiner(every, joinLimit, func(text string) {
		perr := pub.Publish(progress.TopicTokens, progress.Token{Step: step.Name, Attempt: int(info.Attempt), Text: text})
		if perr != nil && !failed {
			failed = true
			a.log(ctx).Warn("stream the model's text", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", perr)
		}
	})
	res, err = a.Exec.Stream(ctx, step, j.piece)
	if err == nil && keepTail {
		st.tail = j.take()
	} else {
		j.flush()
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushWait)
	defer cancel()
	cerr := pub.Close(cctx)
	if cerr != nil {
		a.log(ctx).Warn("stream the model's text: the last pieces may be missing", "run_id", info.WorkflowExecution.ID, "step", step.Name, "error", cerr)
	}
	if err != nil {
		return nil, st, err
	}
	reply, derr := agent.DecodeModelReply(res)
	if derr != nil {
		return res, st, nil
	}
	reply.Streamed = int(info.Attempt)
	res, err = agent.EncodeModelReply(reply)
	st.whole = err == nil && cerr == nil && !failed
	return res, st, err
}

// streamed is what streamModel says of the text it streamed.
type streamed struct {
	whole bool   // every piece published reached the run's stream
	tail  string // the text it kept back for the run to publish
}

// answerInStream returns a streamed final answer's reply res with its
// text by reference (agent.ModelReply.Streamed): the text, which the run's
// stream holds but for its tail (kept back by streamModel, carried in the
// reply's StreamTail), is put in the store, and the reply carries its
// key, size and preview instead of repeating it in the run's history. An
// answer of at most byRefAbove bytes, whose reference would be about as
// long, stays inline, and so does one the store cannot take (logged): the
// run takes the tail from its text. A reply that asks for calls and whose
// text the executor put in the store carries its tail too.
func (a *Activities) answerInStream(ctx context.Context, step string, res json.RawMessage, tail string) json.RawMessage {
	reply, err := agent.DecodeModelReply(res)
	if err != nil || reply.Streamed == 0 {
		return res
	}
	switch {
	case reply.Message.ContentRef != nil: // a reply asking for calls, its text in the store
		if tail == "" {
			return res
		}
	case len(reply.Message.ToolCalls) == 0 && len(reply.Message.Content) > byRefAbove:
		ref, err := a.Exec.KeepText(ctx, reply.Message.Content)
		if err != nil {
			a.log(ctx).Warn("keep a streamed answer by reference: it stays inline", "run_id", activity.GetInfo(ctx).WorkflowExecution.ID, "step", step, "error", err)
			return res
		}
		reply.Message.Content, reply.Message.ContentRef = "", ref
	default:
		return res // inline: the run takes the tail from the text
	}
	reply.StreamTail = tail
	out, err := agent.EncodeModelReply(reply)
	if err != nil {
		return res
	}
	return out
}

// ReadAnswer returns the text of a streamed answer that step recorded by
// reference (answerInStream), from the store: the run reads it so when its
// stream does not hold the text as the worker streamed it (a batch lost,
// or publish signals that were not the worker's). Missing or damaged
// content fails it for good (ErrTypeContent).
func (a *Activities) ReadAnswer(ctx context.Context, step string, ref agent.Ref) (string, error) {
	b, err := a.Exec.Value(ctx, step, &ref)
	if cerr := contentError(ctx, err); cerr != nil {
		return "", cerr
	}
	return string(b), err
}

// byRefAbove is the shortest streamed answer recorded by reference, plus
// one: a reference takes about 200 bytes (key, size, a preview of up to
// agent.PreviewLen bytes).
const byRefAbove = 256

// joiner joins a model's pieces of text and hands them to publish: the
// first at once, the ones after it joined, every after the last publish
// (or at once when limit bytes are waiting). Its methods are safe for
// concurrent use; publish is called with its lock held, one at a time.
type joiner struct {
	every   time.Duration
	limit   int
	publish func(text string)

	mu    sync.Mutex
	text  strings.Builder
	last  time.Time   // when the last text was published; zero: none yet
	timer *time.Timer // armed while joined text waits for its turn
}

func newJoiner(every time.Duration, limit int, publish func(string)) *joiner {
	return &joiner{every: every, limit: limit, publish: publish}
}

// piece adds delta: published at once when it follows a quiet spell of
// every (the first piece, too) or fills the limit, else at the next turn.
func (j *joiner) piece(delta string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.text.WriteString(delta)
	wait := j.every - time.Since(j.last)
	switch {
	case j.last.IsZero() || wait <= 0 || j.text.Len() >= j.limit:
		j.flushLocked()
	case j.timer == nil:
		var t *time.Timer
		t = time.AfterFunc(wait, func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			if j.timer == t { // not stopped by a flush since
				j.flushLocked()
			}
		})
		j.timer = t
	}
}

// take returns what is waiting now, unpublished (the model is done, and
// the run publishes the rest itself).
func (j *joiner) take() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	text := j.text.String()
	j.text.Reset()
	return text
}

// flush publishes what is waiting now (the model is done).
func (j *joiner) flush() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.flushLocked()
}

func (j *joiner) flushLocked() {
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	if j.text.Len() == 0 {
		return
	}
	j.publish(j.text.String())
	j.text.Reset()
	j.last = time.Now()
}
