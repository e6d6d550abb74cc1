package workflows

import (
	"fmt"

	"go.temporal.io/sdk/converter"

	"github.com/agentrun/agentrun/operator"
)

// decodeOperator decodes and checks the shape of an operator's payload, as
// a Temporal client sent it: JSON (operator.Decode). It never panics and
// does not look at the run's state.
func decodeOperator(name string, raw converter.RawValue) (operator.Signal, error) {
	want := operator.Format(name)
	p := raw.Payload()
	if p == nil || len(p.GetData()) == 0 {
		return operator.Signal{}, fmt.Errorf("%s has no payload; want %s", name, want)
	}
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != converter.MetadataEncodingJSON {
		return operator.Signal{}, fmt.Errorf("%s payload has encoding %q; want JSON like %s", name, enc, want)
	}
	return operator.Decode(name, p.GetData())
}
