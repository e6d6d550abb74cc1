package workflows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/operator"
)

// ErrForkAttributeMissing matches the error of EnsureSearchAttributes when
// only operator.ForkOfAttribute is missing and could not be created: runs
// work, but a fork fails to start until it exists (a namespace set up
// before there were forks, on a cluster where this client may not create
// attributes).
var ErrForkAttributeMissing = errors.New("only the fork search attribute is missing")

// SearchAttributes are the attributes AgentRun upserts, with their types,
// and the one a fork starts with (operator.ForkOfAttribute).
var SearchAttributes = map[string]enumspb.IndexedValueType{
	operator.StatusAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	operator.StepAttribute:   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	operator.ForkOfAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers the run's search attributes in
// namespace where they are missing. An attribute registered with another
// type is an error: runs would fail on every workflow task. When only the
// fork attribute is missing and cannot be created, the error matches
// ErrForkAttributeMissing: runs work, forks do not start.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		have, ok := list.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return fmt.Errorf("search attribute %s is registered as %s in namespace %s; agentrun needs %s", name, have, namespace, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		cmd := "temporal operator search-attribute create --namespace " + namespace
		for _, name := range keys(missing) {
			cmd += " --name " + name + " --type " + missing[name].String()
		}
		err = fmt.Errorf("search attributes %s are missing in namespace %s and this client may not create them (%w); create them with: %s", strings.Join(keys(missing), ", "), namespace, err, cmd)
		if _, fork := missing[operator.ForkOfAttribute]; fork && len(missing) == 1 {
			return fmt.Errorf("%w: %w", ErrForkAttributeMissing, err)
		}
		return err
	}
	return nil
}

func keys(m map[string]enumspb.IndexedValueType) []string {
	return slices.Sorted(maps.Keys(m))
}
