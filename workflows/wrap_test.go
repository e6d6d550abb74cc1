package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/hand"
)

func TestWrap(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"short line", "short line"},
		{"aaaa bbbb cccc", "aaaa bbbb\n  cccc"},
		{"  \"k\": \"one two three\"", "  \"k\":\n    \"one\n    two\n    three\""},
		{"abcdefghijkl", "abcdefghij\n  kl"},
		{"éééééééééééé", "éééééééééé\n  éé"},
		{"a\n\nb", "a\n\nb"},
	}
	for _, c := range cases {
		if got := wrap(c.in, 10); got != c.want {
			t.Errorf("wrap(%q, 10) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestDetailsWrapLongLines: no line of a fenced block in the current
// details is longer than the box shows, except in the commands (which must
// paste as they are); the wrapped arguments keep every word.
func TestDetailsWrapLongLines(t *testing.T) {
	t.Parallel()
	body := "Requested through agentrun; the access policy requires a ticket approved by the data owner, who reviews it within two working days."
	args, _ := json.Marshal(map[string]string{"title": hand.TicketTitle, "body": body})
	for _, st := range []State{
		{Status: agent.StatusAwaitingApproval, Pending: []agent.Pending{{Marker: hand.TicketStep, Tool: "create_ticket", Args: args}}},
		{Status: agent.StatusFailed, Reason: strings.Repeat("a long reason ", 20)},
		{Status: agent.StatusIndeterminate, Indeterminate: hand.TicketStep, Why: strings.Repeat("x", 300)},
	} {
		got := details("default", "run-1", &st)
		// Prose wraps in the box; fenced blocks do not. Commands (sh
		// blocks) must paste as they are, so only they may be longer.
		fence := ""
		for _, line := range strings.Split(got, "\n") {
			if l, ok := strings.CutPrefix(line, "```"); ok {
				if fence == "" {
					fence = "block " + l
				} else {
					fence = ""
				}
				continue
			}
			if n := utf8.RuneCountInString(line); fence != "" && fence != "block sh" && n > detailsWidth {
				t.Errorf("%s: a line of %d characters in a %s (the box shows %d):\n%s", st.Status, n, fence, detailsWidth, line)
			}
		}
		if st.Status == agent.StatusAwaitingApproval {
			text := strings.Join(strings.Fields(got), " ")
			if !strings.Contains(text, body) {
				t.Errorf("the wrapped arguments lose words of %q:\n%s", body, got)
			}
		}
	}
}
