package workflows_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/workflows"
)

// cloudOperator is a namespace whose attributes this client may list but
// not create (a Temporal Cloud namespace, say).
type cloudOperator struct {
	operatorservice.OperatorServiceClient
	have map[string]enumspb.IndexedValueType
}

func (o cloudOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: o.have}, nil
}

func (o cloudOperator) AddSearchAttributes(context.Context, *operatorservice.AddSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	return nil, serviceerror.NewPermissionDenied("not allowed", "")
}

type operatorClient struct {
	client.Client
	op operatorservice.OperatorServiceClient
}

func (c operatorClient) OperatorService() operatorservice.OperatorServiceClient { return c.op }

// TestEnsureSearchAttributesCannotCreate: where the client may not create
// attributes, the error names the missing ones and the command; when only
// the fork attribute is missing (a namespace set up before forks), it
// matches ErrForkAttributeMissing, which the worker takes as a warning.
func TestEnsureSearchAttributesCannotCreate(t *testing.T) {
	t.Parallel()
	kw := enumspb.INDEXED_VALUE_TYPE_KEYWORD
	for _, tc := range []struct {
		have     map[string]enumspb.IndexedValueType
		forkOnly bool
		want     string
	}{
		{map[string]enumspb.IndexedValueType{operator.StatusAttribute: kw, operator.StepAttribute: kw}, true,
			"search attributes AgentRunForkOf are missing in namespace ns and this client may not create them"},
		{map[string]enumspb.IndexedValueType{operator.StatusAttribute: kw}, false,
			"search attributes AgentRunForkOf, AgentRunStep are missing in namespace ns"},
	} {
		c := operatorClient{op: cloudOperator{have: tc.have}}
		err := workflows.EnsureSearchAttributes(t.Context(), c, "ns")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "temporal operator search-attribute create --namespace ns") ||
			errors.Is(err, workflows.ErrForkAttributeMissing) != tc.forkOnly {
			t.Errorf("have %v: %v (fork only: %v)", tc.have, err, errors.Is(err, workflows.ErrForkAttributeMissing))
		}
	}
}
