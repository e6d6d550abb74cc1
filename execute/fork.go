package execute

import (
	"context"
	"slices"

	"github.com/agentrun/agentrun/agent"
)

// WithSystem returns conversation c with system as its system prompt: the
// leading system message replaced, put first when c has none, dropped
// when system is "". A fork that changes its agent's prompt starts from it
// (agent.Fork.System); the messages are stored anew, as one node when
// they do not fit the inline tail.
func (e *Executor) WithSystem(ctx context.Context, c agent.Conversation, system string) (agent.Conversation, error) {
	msgs, err := e.Messages(ctx, "fork", c)
	if err != nil {
		return c, err
	}
	if len(msgs) > 0 && msgs[0].Role == agent.RoleSystem {
		msgs = msgs[1:]
	}
	if system != "" {
		msgs = slices.Insert(msgs, 0, agent.Message{Role: agent.RoleSystem, Content: system})
	}
	return e.extend(ctx, agent.Conversation{}, msgs, msgs)
}
