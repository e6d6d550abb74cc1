package execute

import (
	"encoding/json"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// tokens estimates the tokens of a message: about four bytes a token, and a
// few for the message's framing.
func tokens(m agent.Message) int {
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Args) + len(c.ID)
	}
	return n/4 + 4
}

// fit returns the messages of a request that fits budget tokens: when the
// estimate is above it, the oldest tool results are replaced by a marker
// naming their step and size, oldest first, never those after the last
// assistant message (they answer the call the model just made). It returns
// how many it replaced. msgs is not modified. A budget of 0 fits anything.
func fit(msgs []agent.Message, specs []agent.ToolSpec, budget int) ([]agent.Message, int) {
	if budget <= 0 {
		return msgs, 0
	}
	total := 0
	for _, m := range msgs {
		total += tokens(m)
	}
	if b, err := json.Marshal(specs); err == nil {
		total += len(b) / 4
	}
	if total <= budget {
		return msgs, 0
	}
	last := -1 // the last assistant message
	for i, m := range msgs {
		if m.Role == agent.RoleAssistant {
			last = i
		}
	}
	out := append([]agent.Message(nil), msgs...)
	elided := 0
	for i := 0; i < last && total > budget; i++ {
		m := out[i]
		if m.Role != agent.RoleTool {
			continue
		}
		before := tokens(m)
		step := m.Step
		if step == "" {
			step = "a tool call"
		}
		m.Content = fmt.Sprintf("[the result of %s (%d bytes) was left out to fit the context budget]", step, len(m.Content))
		if after := tokens(m); after < before {
			out[i] = m
			total -= before - after
			elided++
		}
	}
	return out, elided
}
