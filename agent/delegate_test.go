package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestChildRunID(t *testing.T) {
	if got := ChildRunID("planner-1", "tool/2/0/filer"); got != "planner-1.tool.2.0.filer" {
		t.Fatalf("ChildRunID = %q", got)
	}
	long := strings.Repeat("p", 120)
	a, b := ChildRunID(long, "tool/1/0/filer"), ChildRunID(long, "tool/1/1/filer")
	if len(a) != MaxRunID || len(b) != MaxRunID || a == b || !strings.HasPrefix(a, long[:100]) {
		t.Fatalf("long ids %q (%d), %q (%d): want distinct ids of %d characters keeping the parent's start", a, len(a), b, len(b), MaxRunID)
	}
	if ChildRunID(long, "tool/1/0/filer") != a {
		t.Fatal("the same parent and step gave another id")
	}
}

func TestChildTask(t *testing.T) {
	for _, c := range []struct {
		args string
		want string
	}{
		{`{"task":"file it"}`, "file it"},
		{`{"task":"  "}`, `{"task":"  "}`},
		{`{"task":"file it","priority":2}`, `{"task":"file it","priority":2}`},
		{`{"topic":"vpn"}`, `{"topic":"vpn"}`},
	} {
		m := ChildTask(ToolCall{Name: "filer", Args: json.RawMessage(c.args)})
		if m.Role != RoleUser || m.Content != c.want {
			t.Errorf("ChildTask(%s) = %+v, want a user message %q", c.args, m, c.want)
		}
	}
	ref := &Ref{Key: "k", Size: 5000}
	if m := ChildTask(ToolCall{ArgsRef: ref}); m.ContentRef != ref || m.Content != "" {
		t.Errorf("arguments by reference: %+v", m)
	}
	if in := ChildInput("You file tickets.", Message{Role: RoleUser, Content: "x"}); len(in) != 2 || in[0].Role != RoleSystem {
		t.Errorf("ChildInput with a system prompt: %+v", in)
	}
	if in := ChildInput("", Message{Role: RoleUser, Content: "x"}); len(in) != 1 {
		t.Errorf("ChildInput without one: %+v", in)
	}
}

func TestBudgetLeftAndLimitTree(t *testing.T) {
	b := Budget{MaxTurns: 5, MaxTokens: 1000}
	left, why := b.Left(1, Usage{InputTokens: 300, OutputTokens: 100})
	if why != "" || left != (Budget{MaxTurns: 4, MaxTokens: 600}) {
		t.Fatalf("Left = %+v, %q", left, why)
	}
	if _, why := b.Left(5, Usage{}); !strings.Contains(why, "its limit is 5, and an agent needs at least one") {
		t.Fatalf("no turns left: %q", why)
	}
	if _, why := b.Left(1, Usage{InputTokens: 1000}); !strings.Contains(why, "used 1000 tokens") {
		t.Fatalf("no tokens left: %q", why)
	}
	if left, why := (Budget{}).Left(3, Usage{InputTokens: 1 << 20}); why != "" || left != (Budget{MaxTurns: DefaultMaxTurns - 3}) {
		t.Fatalf("no token limit stays none: %+v, %q", left, why)
	}
	isAgent := func(tool string) bool { return tool == "filer" }
	call := Decision{Step: &Step{Name: "tool/2/0/filer", Kind: KindRead, Call: &ToolCall{Name: "filer"}}, Checkpoint: Checkpoint{Turn: 2}}
	if d := (Budget{MaxTurns: 5}).LimitTree(call, 3, Usage{}, isAgent); d.Outcome == nil || d.Outcome.Status != StatusBudgetExceeded {
		t.Fatalf("an agent call with nothing left: %+v", d)
	}
	if d := (Budget{MaxTurns: 6}).LimitTree(call, 3, Usage{}, isAgent); d.Step == nil {
		t.Fatalf("an agent call with one left: %+v", d.Outcome)
	}
	model := Decision{Step: &Step{Name: "llm/3", Kind: KindModel}, Checkpoint: Checkpoint{Turn: 2}}
	if d := (Budget{MaxTurns: 5}).LimitTree(model, 3, Usage{}, isAgent); d.Outcome == nil || !strings.Contains(d.Outcome.Reason, "made 5 model calls") {
		t.Fatalf("a model step counts the children's calls: %+v", d)
	}
	read := Decision{Step: &Step{Name: "tool/2/0/lookup", Kind: KindRead, Call: &ToolCall{Name: "lookup"}}, Checkpoint: Checkpoint{Turn: 2}}
	if d := (Budget{MaxTurns: 2}).LimitTree(read, 9, Usage{}, isAgent); d.Step == nil {
		t.Fatal("a plain tool call is never limited")
	}
}
