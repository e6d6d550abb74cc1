package main

import "context"

// longParams sizes the long run section.
type longParams struct {
	// Turns is how many tool-calling turns the long run has (1,000 in a
	// full run), each returning ToolOutput bytes.
	Turns      int
	ToolOutput int
}

// longRun measures one AgentRun run of p.Turns turns with p.ToolOutput-byte
// tool outputs: history bytes per turn at turns 10, 100 and 1,000, the
// largest CallModel input, the content store's bytes against the content's,
// and wall time per turn near turn 1,000 against near turn 10.
//
// Not measured yet: the content store and continue-as-new land with the
// O(1) history change, whose author fills this in (the rows, their
// baselines and goals are fixed here so that the table keeps its shape).
func longRun(ctx context.Context, env *benchEnv, p longParams) ([]row, error) {
	const sec = "Long run: 1,000 turns with 4 KB tool outputs"
	const why = "waits for the content store and continue-as-new"
	return []row{
		{Section: sec, Figure: "history bytes per turn, turn 100 vs turn 10", Unit: "B", Goal: 1.2, GoalNote: "flat", Missing: why},
		{Section: sec, Figure: "history bytes per turn, turn 1,000 vs turn 10", Unit: "B", Goal: 1.2, GoalNote: "flat", Missing: why},
		{Section: sec, Figure: "largest CallModel input vs the one at turn 10", Unit: "B", Goal: 1.2, GoalNote: "O(1) in turns", Missing: why},
		{Section: sec, Figure: "content store bytes vs content bytes", Unit: "B", Goal: 1.2, Missing: why},
		{Section: sec, Figure: "wall ms per turn near turn 1,000 vs near turn 10", Unit: "ms", Goal: 1.2, GoalNote: "flat", Missing: why},
	}, nil
}
