package workflows

import (
	"encoding/json"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentrun/agentrun/activities"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/progress"
)

// readAnswerTimeout bounds the local activity that reads a streamed answer
// from the store.
const readAnswerTimeout = 30 * time.Second

// answerFromStream completes the streamed text of model step s, whose
// step was asked to leave it to the run (activities.StepInput.TextInStream),
// and returns the step's result res for the loop.
//
// A streamed final answer recorded by reference gets its text inline
// again: the step's tokens of the attempt that streamed, which the run's
// stream holds since offset from, and the tail the step kept back
// (agent.ModelReply.StreamTail), believed only when they are the text the
// reference names (its size and its key, the SHA-256 of the text). A
// stream that does not hold it so (a batch lost, or publish signals that
// were not the worker's: anyone with namespace rights can send them) makes
// the run read the text from the store instead, in a local activity, which
// only the worker writes. The fact keeps both the text, which the run
// answers with, and the reference, which its conversation carries
// (agent.Message.Recorded).
//
// Whatever the reply, the end of its text that the stream does not hold
// yet (the tail the step kept back, so that no publish signal and no
// workflow task carry it) is published as the attempt's last token,
// before the step's step.completed event, when what the stream holds is
// the start of the text.
func (r *execution) answerFromStream(s agent.Step, from int64, res json.RawMessage) (json.RawMessage, error) {
	reply, err := agent.DecodeModelReply(res)
	if err != nil || reply.Streamed == 0 {
		return res, nil
	}
	streamed := r.streamedText(s.Name, reply.Streamed, from)
	text := reply.Message.Content
	stored := text == "" && reply.Message.ContentRef != nil
	answer := stored && len(reply.Message.ToolCalls) == 0
	if stored {
		text = streamed + reply.StreamTail
	}
	if ref := reply.Message.ContentRef; answer && (len(text) != ref.Size || (agent.Message{Content: text}).TextKey() != ref.Key) {
		workflow.GetLogger(r.ctx).Info("the stream does not hold the streamed answer as its step recorded it; reading it from the store", "step", s.Name, "size", ref.Size, "streamed", len(text))
		lao := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: readAnswerTimeout,
			RetryPolicy:         retryPolicy(stepAttempts),
		})
		if err := workflow.ExecuteLocalActivity(lao, activities.NameReadAnswer, s.Name, *ref).Get(r.ctx, &text); err != nil {
			return nil, err
		}
	}
	if rest, ok := strings.CutPrefix(text, streamed); ok && rest != "" {
		if err := r.stream.Publish(progress.TopicTokens, progress.Token{Step: s.Name, Attempt: reply.Streamed, Text: rest}); err != nil {
			workflow.GetLogger(r.ctx).Warn("publish the end of a streamed text", "step", s.Name, "error", err)
		}
	}
	if !answer && reply.StreamTail == "" {
		return res, nil
	}
	if answer {
		reply.Message.Content = text
	}
	reply.StreamTail = ""
	return agent.EncodeModelReply(reply)
}

// streamedText joins the text of step's tokens that attempt published to
// the run's stream from offset from on, after taking in the publish
// signals delivered with the step's completion.
func (r *execution) streamedText(step string, attempt int, from int64) string {
	r.stream.Receive()
	var b strings.Builder
	for it := range r.stream.Items(from, progress.TopicTokens) {
		var t progress.Token
		if it.Decode(&t) == nil && t.Step == step && t.Attempt == attempt && t.Child == "" {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
