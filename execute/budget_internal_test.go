package execute

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestFit checks the budget's arithmetic: the fewest oldest results that
// bring the estimate within the budget, and none that answer the latest
// reply or would not get shorter.
func TestFit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 4000)
	tool := func(step, text string) agent.Message {
		return agent.Message{Role: agent.RoleTool, Content: text, Step: step, ToolCallID: "id", Name: "read"}
	}
	reply := agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "id", Name: "read", Args: []byte(`{}`)}}}
	msgs := []agent.Message{
		{Role: agent.RoleUser, Content: "go"},
		reply, tool("tool/1/0/read", big),
		reply, tool("tool/2/0/read", "short"),
		reply, tool("", big),
		reply, tool("tool/4/0/read", big),
	}
	// The specs count too.
	specs := []agent.ToolSpec{{Name: "read", Description: strings.Repeat("d", 400), Kind: agent.KindRead}}
	b, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	total := len(b) / 4
	for _, m := range msgs {
		total += tokens(m)
	}
	// What eliding a 4000-byte result saves.
	saves := tokens(tool("tool/1/0/read", big)) - tokens(agent.Message{Role: agent.RoleTool, Content: "[the result of tool/1/0/read (4000 bytes) was left out to fit the context budget]", Step: "tool/1/0/read", ToolCallID: "id", Name: "read"})
	for _, tc := range []struct {
		name   string
		budget int
		elided []int // indexes of the messages replaced
	}{
		{"no budget", 0, nil},
		{"fits exactly", total, nil},
		{"one token over", total - 1, []int{2}},
		{"just past one", total - saves - 1, []int{2, 6}},
		{"nothing fits", 1, []int{2, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(msgs)
			out, n := fit(in, specs, tc.budget)
			if !reflect.DeepEqual(in, msgs) {
				t.Fatal("fit modified its input")
			}
			if n != len(tc.elided) {
				t.Errorf("elided %d, want %d", n, len(tc.elided))
			}
			for i, m := range out {
				if slices.Contains(tc.elided, i) {
					step := msgs[i].Step
					if step == "" {
						step = "a tool call"
					}
					if want := "[the result of " + step + " (4000 bytes) was left out to fit the context budget]"; m.Content != want {
						t.Errorf("message %d: %q, want %q", i, m.Content, want)
					}
					continue
				}
				if !reflect.DeepEqual(m, msgs[i]) {
					t.Errorf("message %d changed to %.60q", i, m.Content)
				}
			}
		})
	}
}

// TestPreview checks previews: at most agent.PreviewLen bytes, cut at a
// character boundary, on one line, with an ellipsis when cut.
func TestPreview(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", agent.PreviewLen+10)
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{"two\nlines\r\tand a tab", "two lines  and a tab"},
		{long, long[:agent.PreviewLen] + "…"},
		{strings.Repeat("a", agent.PreviewLen-1) + "€uro", strings.Repeat("a", agent.PreviewLen-1) + "…"},
		{strings.Repeat("€", 100), strings.Repeat("€", agent.PreviewLen/3) + "…"},
		{strings.Repeat("a", agent.PreviewLen), strings.Repeat("a", agent.PreviewLen)},
	} {
		if got := preview(tc.in); got != tc.want {
			t.Errorf("preview(%.30q…) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
