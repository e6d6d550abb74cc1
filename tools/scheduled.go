package tools

import "encoding/json"

// Scheduled is a tool whose calls a run schedules as an activity of their
// own (its spec's Activity: an activity tool of package agentrun), on
// another worker and task queue, rather than calling it in the engine's
// tool step. The local engine, which has no activities, calls it as any
// tool.
type Scheduled interface {
	Tool
	// Input checks a call's arguments against the tool's input and
	// returns the activity's input: the arguments as the activity takes
	// them. When they do not match, it returns instead what was wrong,
	// for the model to read; the activity is not scheduled.
	Input(args json.RawMessage) (input json.RawMessage, wrong string)
}
