package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
)

// TestCleanChildView: what a parent shows of its child is bounded whatever
// the child's state holds: a long or malformed step name is dropped, an
// unknown status shows Running, counts are not negative, arguments kept by
// reference become a note with no reference, inline arguments carry their
// own digest, a nested child not named as its parent names it is dropped,
// and the chain stops at maxChildDepth.
func TestCleanChildView(t *testing.T) {
	const run = "p.tool.1.0.filer"
	long := "tool/1/0/" + strings.Repeat("x", 3000)
	key := "sha256:" + strings.Repeat("ab", 32)
	in := &Child{Run: run, Status: "Whatever", Indeterminate: long, Reason: strings.Repeat("r", 2000),
		Turns: -5, Usage: agent.Usage{InputTokens: -1, OutputTokens: 7, Cost: -2},
		Pending: []agent.Pending{
			{Marker: long, Tool: "create_ticket", Args: json.RawMessage(`{}`)},
			{Marker: "tool/1/0/create_ticket", Tool: "create_ticket", Args: json.RawMessage(`{"title":"t"}`), Digest: "sha256:0000000000000000"},
			{Marker: "tool/1/1/create_ticket", Tool: "create_ticket", ArgsRef: &agent.Ref{Key: key, Size: 5000, Preview: "big"}},
		},
		Child: &Child{Run: "someone-else", Step: "tool/2/0/x", Status: agent.StatusAwaitingApproval}}
	c := clean(in, maxChildDepth)
	if c.Status != agent.StatusRunning || c.Indeterminate != "" || len(c.Reason) > maxReason+len("…") || c.Turns != 0 || c.Usage.InputTokens != 0 || c.Usage.OutputTokens != 7 || c.Usage.Cost != 0 {
		t.Fatalf("clean: %+v", c)
	}
	if len(c.Pending) != 2 {
		t.Fatalf("pending %+v; want the 2 with well-formed markers", c.Pending)
	}
	if p := c.Pending[0]; string(p.Args) != `{"title":"t"}` || p.Digest != agent.ArgsDigest(p.Args, nil) {
		t.Fatalf("inline pending %+v; want its own digest %s", p, agent.ArgsDigest(p.Args, nil))
	}
	p := c.Pending[1]
	if p.ArgsRef != nil || p.Digest != key[:len("sha256:")+16] || !strings.Contains(string(p.Args), "5000 bytes, kept by reference in run "+run) {
		t.Fatalf("pending by reference %+v; want a note and the content key's digest", p)
	}
	if b, _ := json.Marshal(c); strings.Contains(string(b), "args_ref") || strings.Contains(string(b), key) {
		t.Fatalf("the view holds a reference: %s", b)
	}
	if c.Child != nil {
		t.Fatalf("a nested child not named after its parent is shown: %+v", c.Child)
	}

	// A chain deeper than maxChildDepth, each named as its parent names it.
	top := &Child{Run: run, Status: agent.StatusRunning}
	at := top
	for range maxChildDepth + 3 {
		step := "tool/1/0/filer"
		at.Child = &Child{Run: agent.ChildRunID(at.Run, step), Step: step, Status: agent.StatusRunning}
		at = at.Child
	}
	depth := 0
	for c := clean(top, maxChildDepth); c != nil; c = c.Child {
		depth++
	}
	if depth != maxChildDepth {
		t.Fatalf("depth %d, want %d", depth, maxChildDepth)
	}
}
