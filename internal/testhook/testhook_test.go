package testhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testhook"
)

// TestWith: hooks travel in the context, each context its own; the zero
// Hooks (production) leaves the context as it is.
func TestWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := testhook.With(ctx, testhook.Hooks{}); got != ctx {
		t.Errorf("With(zero) made a new context; want the same one")
	}
	if h := testhook.From(ctx); h != (testhook.Hooks{}) {
		t.Errorf("From(no hooks) = %+v; want zero", h)
	}
	a := testhook.Hooks{HoldBefore: "create_ticket", HoldFor: time.Second}
	b := testhook.Hooks{HoldList: true, WorkflowChange: true}
	ca, cb := testhook.With(ctx, a), testhook.With(ctx, b)
	if h := testhook.From(ca); h != a {
		t.Errorf("From = %+v; want %+v", h, a)
	}
	if h := testhook.From(cb); h != b {
		t.Errorf("From = %+v; want %+v", h, b)
	}
	child, cancel := context.WithCancel(ca)
	defer cancel()
	if h := testhook.From(child); h != a {
		t.Errorf("From(a child context) = %+v; want %+v", h, a)
	}
}
