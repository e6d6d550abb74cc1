package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrun/agentrun/agent"
)

// ErrOtherBytes: the arguments read for a pending call do not have the
// digest the run holds pending; the content store read is not the workers'.
var ErrOtherBytes = errors.New("the content store holds other bytes")

// PendingArgs returns the whole arguments of a call waiting for approval:
// inline, or read from the content store when kept by reference. The bytes
// read must have the digest the run holds pending; an error says when they
// do not (ErrOtherBytes).
func (e *Executor) PendingArgs(ctx context.Context, p agent.Pending) (json.RawMessage, error) {
	args := []byte(p.Args)
	if p.ArgsRef != nil {
		b, err := e.Value(ctx, p.Marker, p.ArgsRef)
		if err != nil {
			return nil, err
		}
		args = b
	}
	if got := agent.ArgsDigest(args, nil); p.Digest != "" && got != p.Digest {
		return nil, fmt.Errorf("step %s: the arguments read have digest %s, the run has %s pending: %w", p.Marker, got, p.Digest, ErrOtherBytes)
	}
	return args, nil
}
