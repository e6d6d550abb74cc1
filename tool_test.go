package agentrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrun/agentrun"
	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/tools"
)

// A Go tool runs wherever the engine runs tools: in a tools.Set.
var _ tools.Tool = (*agentrun.Tool)(nil)

type refundIn struct {
	Order  string `json:"order" jsonschema:"the order to refund"`
	Amount int    `json:"amount_cents" jsonschema:"how much to refund, in cents"`
	Key    string `json:"request_id,omitempty"`
}

type refundOut struct {
	Refund string `json:"refund"`
}

func ExampleNewTool() {
	refund, err := agentrun.NewTool(agentrun.ToolOptions{
		Name:           "refund",
		Description:    "Refund part or all of an order.",
		Write:          true,
		IdempotencyKey: "request_id",
	}, func(ctx context.Context, in refundIn) (refundOut, error) {
		if in.Amount <= 0 {
			return refundOut{}, fmt.Errorf("amount_cents must be positive, got %d", in.Amount)
		}
		return refundOut{Refund: "R-" + in.Order}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	res, _ := refund.Call(ctx, json.RawMessage(`{"order": "A-17", "amount_cents": 1250}`))
	fmt.Println(res.Content)
	res, _ = refund.Call(ctx, json.RawMessage(`{"order": "A-17", "amount_cents": -5}`))
	fmt.Println(res.IsError, res.Content)
	// Output:
	// {"refund":"R-A-17"}
	// true amount_cents must be positive, got -5
}

func TestToolSchemaFromInput(t *testing.T) {
	tool := mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true}, okRefund(nil))
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(tool.Spec().Schema, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Properties) != 3 || !strings.Contains(string(s.Properties["order"]), "the order to refund") {
		t.Errorf("schema %s: want an object with order, amount_cents and request_id, described", tool.Spec().Schema)
	}
	if got := strings.Join(s.Required, ","); got != "order,amount_cents" {
		t.Errorf("required %q, want order,amount_cents (request_id is omitempty)", got)
	}
	if k := tool.Spec().Kind; k != agent.KindWrite {
		t.Errorf("kind %q, want write", k)
	}
	// The idempotency key is the engine's to fill: the model's schema has
	// no such argument, and a call carrying it (as the engine sends it)
	// is still valid.
	keyed := mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true, IdempotencyKey: "request_id"}, okRefund(nil))
	s.Properties = nil
	if err := json.Unmarshal(keyed.Spec().Schema, &s); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Properties["request_id"]; ok || len(s.Properties) != 2 {
		t.Errorf("schema %s: want order and amount_cents only; the engine fills request_id", keyed.Spec().Schema)
	}
	if res, err := keyed.Call(t.Context(), json.RawMessage(`{"order": "A-1", "amount_cents": 100, "request_id": "agentrun-1"}`)); err != nil || res.IsError {
		t.Errorf("a call with the engine's key: %+v, %v", res, err)
	}
}

func TestToolArgumentsCheckedBeforeCall(t *testing.T) {
	var calls atomic.Int32
	tool := mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true}, okRefund(&calls))
	for _, args := range []string{
		`{"order": "A-1"}`,                           // amount_cents missing
		`{"order": 7, "amount_cents": 1}`,            // order is no string
		`{"order": "A-1", "amount_cents": 1.5}`,      // amount is no integer
		`{"order": "A-1", "amount_cents": 1, "x":1}`, // no such argument
		`[1, 2]`,
		`{"order": `,
	} {
		res, err := tool.Call(t.Context(), json.RawMessage(args))
		if err != nil || !res.IsError || !strings.HasPrefix(res.Content, "invalid arguments for refund: ") {
			t.Errorf("args %s: got %+v, %v; want a failed result saying the arguments are invalid", args, res, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the function ran %d times on invalid arguments; want 0", n)
	}
	res, err := tool.Call(t.Context(), json.RawMessage(`{"order": "A-1", "amount_cents": 100}`))
	if err != nil || res.IsError || res.Content != `{"refund":"R-A-1"}` || calls.Load() != 1 {
		t.Errorf("valid args: got %+v, %v after %d calls; want the refund, 1 call", res, err, calls.Load())
	}
}

func TestToolErrorContract(t *testing.T) {
	cases := []struct {
		name     string
		fn       func(context.Context, refundIn) (string, error)
		unknown  bool   // Call returns an error matching ErrOutcomeUnknown
		readable string // else the result the model reads
	}{
		{"ordinary error", func(context.Context, refundIn) (string, error) { return "", errors.New("card declined") }, false, "card declined"},
		{"outcome unknown", func(context.Context, refundIn) (string, error) {
			return "", agentrun.OutcomeUnknown(errors.New("gateway timed out after the request was sent"))
		}, true, ""},
		{"wrapped sentinel", func(context.Context, refundIn) (string, error) {
			return "", fmt.Errorf("refund: %w", agentrun.ErrOutcomeUnknown)
		}, true, ""},
		{"panic", func(context.Context, refundIn) (string, error) { panic("nil map") }, true, ""},
		{"string result", func(context.Context, refundIn) (string, error) { return "R-9", nil }, false, "R-9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true}, c.fn)
			res, err := tool.Call(t.Context(), json.RawMessage(`{"order": "A-1", "amount_cents": 5}`))
			if c.unknown {
				if !errors.Is(err, agentrun.ErrOutcomeUnknown) {
					t.Fatalf("got %+v, %v; want an error matching ErrOutcomeUnknown", res, err)
				}
				return
			}
			if err != nil || res.Content != c.readable || res.IsError != (c.name == "ordinary error") {
				t.Fatalf("got %+v, %v; want the result %q", res, err, c.readable)
			}
		})
	}
}

// A panic inside a tool is the tool's outcome unknown, not the worker's
// crash, also where the engine runs it: in a Set, under its timeout.
func TestToolPanicInSet(t *testing.T) {
	tool := mustTool(t, agentrun.ToolOptions{Name: "refund", Write: true}, func(context.Context, refundIn) (string, error) {
		var gateway *struct{ url string }
		return gateway.url, nil // a nil pointer: the panic a bug would make
	})
	set, err := tools.NewSet(tool)
	if err != nil {
		t.Fatal(err)
	}
	_, err = set.Call(t.Context(), "refund", json.RawMessage(`{"order": "A-1", "amount_cents": 5}`))
	if !errors.Is(err, agentrun.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("got %v; want the panic as an outcome unknown", err)
	}
}

func TestNewToolRefusesBadOptions(t *testing.T) {
	check := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v; want one line containing %q", err, want)
		}
	}
	_, err := agentrun.NewTool(agentrun.ToolOptions{Name: "watch"}, func(context.Context, chan int) (string, error) { return "", nil })
	check(err, "tool watch: no JSON schema describes its input chan int")
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "hook"}, func(context.Context, struct{ F func() }) (string, error) { return "", nil })
	check(err, "tool hook: no JSON schema describes its input")
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "count"}, func(context.Context, int) (string, error) { return "", nil })
	check(err, "tool count: its input int is not a struct")
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "a b"}, okRefund(nil))
	check(err, `tool "a b": the name must be 1 to 64 letters`)
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: strings.Repeat("x", 65)}, okRefund(nil))
	check(err, "the name must be 1 to 64")
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Write: true, IdempotencyKey: "amount_cents"}, okRefund(nil))
	check(err, `idempotency key "amount_cents" is not a string field`)
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Write: true, IdempotencyKey: "nope"}, okRefund(nil))
	check(err, `idempotency key "nope" is not a string field`)
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "refund", IdempotencyKey: "request_id"}, okRefund(nil))
	check(err, "an idempotency key on a read")
	_, err = agentrun.NewTool(agentrun.ToolOptions{Name: "refund", Approval: "sometimes"}, okRefund(nil))
	check(err, `approval "sometimes"`)
	_, err = agentrun.NewTool[refundIn, string](agentrun.ToolOptions{Name: "refund"}, nil)
	check(err, "the function is nil")
}

func okRefund(calls *atomic.Int32) func(context.Context, refundIn) (refundOut, error) {
	return func(_ context.Context, in refundIn) (refundOut, error) {
		if calls != nil {
			calls.Add(1)
		}
		return refundOut{Refund: "R-" + in.Order}, nil
	}
}

func mustTool[In, Out any](t *testing.T, o agentrun.ToolOptions, fn func(context.Context, In) (Out, error)) *agentrun.Tool {
	t.Helper()
	tool, err := agentrun.NewTool(o, fn)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}
