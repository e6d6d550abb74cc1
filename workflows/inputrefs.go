package workflows

import (
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// startRefs returns why a start input's messages are refused, or "": a
// content reference names a value in the worker's content store, which
// only the worker writes, so a client that starts a run carries its text
// inline. Only a child run's input, which its parent's workflow makes
// (agent.ChildTask), may refer to a task kept by reference.
func startRefs(msgs []agent.Message, child bool) string {
	if child {
		return ""
	}
	for i, m := range msgs {
		ref := m.ContentRef != nil
		for _, c := range m.ToolCalls {
			ref = ref || c.ArgsRef != nil
		}
		if ref {
			return fmt.Sprintf("the input's message %d holds a content reference (content_ref or args_ref); a start input carries its text inline", i+1)
		}
	}
	return ""
}
