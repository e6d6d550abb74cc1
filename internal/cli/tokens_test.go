package cli

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/progress"
)

// TestLiveTextMarksChildren: a child run's text is printed after its run
// id, the followed run's without; a child's offsets do not move where the
// follower resumes; a child id or text with terminal controls prints
// them escaped.
func TestLiveTextMarksChildren(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	lt := &liveText{w: newTermWriter(&b), run: "p"}
	for _, u := range []progress.Update{
		{Run: "p", Offset: 4, Token: &progress.Token{Step: "llm/1", Attempt: 1, Text: "asking"}},
		{Run: "p.tool.1.0.filer", Offset: 9, Token: &progress.Token{Step: "llm/1", Attempt: 1, Text: "filed ", Child: "p.tool.1.0.filer"}},
		{Run: "p.tool.1.0.filer", Offset: 10, Token: &progress.Token{Step: "llm/1", Attempt: 1, Text: "T-1\x1b[2J", Child: "p.tool.1.0.filer"}},
		{Run: "p\x1b]0;x", Offset: 11, Token: &progress.Token{Step: "llm/1", Attempt: 2, Text: "deep", Child: "p\x1b]0;x"}},
		{Run: "p", Offset: 5, Token: &progress.Token{Step: "llm/2", Attempt: 1, Text: "done"}},
	} {
		lt.token(u)
	}
	want := "[llm/1] asking\n[p.tool.1.0.filer] [llm/1] filed T-1\\x1b[2J\n[p\\x1b]0;x] [llm/1, attempt 2] deep\n[llm/2] done"
	if got := b.String(); got != want {
		t.Errorf("printed\n%q\nwant\n%q", got, want)
	}
	if lt.offset != 6 {
		t.Errorf("offset %d, want 6 (the followed run's)", lt.offset)
	}
}
