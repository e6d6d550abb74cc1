package agent

import (
	"context"
	"encoding/json"
)

// Executor executes the steps the loop names and returns their results in
// recorded form (EncodeModelReply, EncodeToolResult). Engines put their
// recording around it; the loop itself never calls it.
type Executor interface {
	Execute(ctx context.Context, step Step) (json.RawMessage, error)
}
