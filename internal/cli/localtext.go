package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
)

// localText is the local engine's executor when starter --local --stream
// asks for the model's text as it comes: a model step's text is printed
// while the model writes it, after a "[llm/N]" label, and its line ends
// when the step returns. The recorded reply is the same either way. Other
// steps, and a provider that does not stream, print nothing.
type localText struct {
	*execute.Executor // Prepare too, for the journal
	w                 io.Writer
	// agent names the agent tool of a child run, whose labels it prefixes
	// ("[filer llm/1]"); "" for the run itself.
	agent string
}

// Execute runs step, printing a model step's text as it arrives.
func (e localText) Execute(ctx context.Context, step agent.Step) (json.RawMessage, error) {
	if step.Kind != agent.KindModel {
		return e.Executor.Execute(ctx, step)
	}
	var (
		mu      sync.Mutex
		started bool
		midLine bool
	)
	res, err := e.Stream(ctx, step, func(delta string) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			fmt.Fprintf(e.w, "[%s] ", strings.TrimPrefix(e.agent+" "+step.Name, " "))
			started = true
		}
		fmt.Fprint(e.w, delta)
		midLine = !strings.HasSuffix(delta, "\n")
	})
	mu.Lock()
	defer mu.Unlock()
	if midLine {
		fmt.Fprintln(e.w)
	}
	return res, err
}
