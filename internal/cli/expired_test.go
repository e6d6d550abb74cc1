package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/local"
)

// TestShowExpiredLocal: a local show names the calls denied as expired,
// as the Temporal show does.
func TestShowExpiredLocal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	info := local.RunInfo{RunID: "run-1", Status: agent.StatusCompleted, Records: 9,
		Expired: []local.Expired{{Marker: "tool/2/0/create_ticket", Reason: "approval expired after 30m0s"}}}
	if err := printInfo(&b, localEngine(Commands{}), info); err != nil {
		t.Fatal(err)
	}
	if want := "approval expired: tool/2/0/create_ticket was denied (approval expired after 30m0s)"; !strings.Contains(b.String(), want) {
		t.Fatalf("show:\n%s\nwant a line %q", b.String(), want)
	}
}
