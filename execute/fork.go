package execute

import (
	"context"

	"github.com/agentrun/agentrun/agent"
)

// WithSystem returns conversation c with system as its system prompt: the
// first system message replaced, or system put first when c has none
// (agent.WithSystem). A fork that changes its agent's prompt starts from it
// (agent.Fork.System); the messages are stored anew, as one node when
// they do not fit the inline tail.
func (e *Executor) WithSystem(ctx context.Context, c agent.Conversation, system string) (agent.Conversation, error) {
	msgs, err := e.Messages(ctx, "fork", c)
	if err != nil {
		return c, err
	}
	msgs = agent.WithSystem(msgs, system)
	return e.extend(ctx, agent.Conversation{}, msgs, msgs)
}
