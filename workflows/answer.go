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

// answerFromStream returns model step s's result res with its streamed
// answer's text inline again, when the step recorded it by reference
// (activities.StepInput.TextInStream): the text is taken from the items
// the run's stream holds since offset from, the step's tokens of the
// attempt that streamed, and believed only when it is the text the
// reference names (its size and its key, the SHA-256 of the text). A
// stream that does not hold it so (a batch lost, or publish signals that
// were not the worker's: anyone with namespace rights can send them) makes
// the run read the text from the store instead, in a local activity, which
// only the worker writes. The fact keeps both the text, which the run
// answers with, and the reference, which its conversation carries
// (agent.Message.Recorded). Any other result is res.
func (r *execution) answerFromStream(s agent.Step, from int64, res json.RawMessage) (json.RawMessage, error) {
	reply, err := agent.DecodeModelReply(res)
	if err != nil || reply.Streamed == 0 || len(reply.Message.ToolCalls) > 0 || reply.Message.Content != "" || reply.Message.ContentRef == nil {
		return res, nil
	}
	ref := *reply.Message.ContentRef
	text := r.streamedText(s.Name, reply.Streamed, from)
	if len(text) != ref.Size || (agent.Message{Content: text}).TextKey() != ref.Key {
		workflow.GetLogger(r.ctx).Info("the stream does not hold the streamed answer as its step recorded it; reading it from the store", "step", s.Name, "size", ref.Size, "streamed", len(text))
		lao := workflow.WithLocalActivityOptions(r.ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: readAnswerTimeout,
			RetryPolicy:         retryPolicy(stepAttempts),
		})
		if err := workflow.ExecuteLocalActivity(lao, activities.NameReadAnswer, s.Name, ref).Get(r.ctx, &text); err != nil {
			return nil, err
		}
	}
	reply.Message.Content = text
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
