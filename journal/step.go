package journal

import (
	"encoding/json"
	"fmt"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/operator"
)

// Step returns a step of a run as the loop executes it, with its input,
// and its recorded result (nil when it has none yet). An unknown run wraps
// operator.ErrUnknownRun; a step the run never reached wraps operator.ErrInvalid.
func (j *Journal) Step(runID, name string) (agent.Step, json.RawMessage, error) {
	if err := operator.ValidRunID(runID); err != nil {
		return agent.Step{}, nil, err
	}
	recs, err := j.Store.Load(runID)
	if err != nil {
		return agent.Step{}, nil, err
	}
	st := fold(recs)
	if !st.started {
		return agent.Step{}, nil, fmt.Errorf("%w %q: no journal for it; see the runs with the list command", operator.ErrUnknownRun, runID)
	}
	facts := st.facts()
	step, ok := j.Loop.Find(agent.Start(st.input), facts, name)
	if !ok {
		return agent.Step{}, nil, fmt.Errorf("%w step %s: run %s has not reached it", operator.ErrInvalid, name, runID)
	}
	return step, facts.Results[name], nil
}
