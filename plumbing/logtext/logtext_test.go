package logtext_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/agentrun/agentrun/plumbing/logtext"
)

const marker = "MARKER-7f3a"

// TestHide: with payload text hidden, Text values, error values (ours or
// the sdk's, through its slog adapter), the sdk's text attributes and
// those inside groups or With print as their size and type, never their
// text; ids and counts print as they are. Not hidden, all print whole.
func TestHide(t *testing.T) {
	t.Parallel()
	log := func(hide bool) string {
		var buf bytes.Buffer
		l := logtext.For(slog.New(slog.NewTextHandler(&buf, nil)), hide)
		appErr := temporal.NewApplicationError("tool said "+marker, "ToolFailed")
		l.With("reason", logtext.Text("with "+marker)).Warn("rejected operator signal", "run_id", "r1", "step", "tool/2/0/x", "last_error", logtext.Text("boom "+marker))
		l.Info("write settled", "how", logtext.Text("probe answered "+marker), "attempt", 3)
		l.Warn("stream", "error", fmt.Errorf("publish: %w", errors.New(marker)), slog.Group("g", "inner", logtext.Text(marker)))
		sdk := tlog.NewStructuredLogger(l)
		sdk.Error("Activity error.", "ActivityType", "CallTool", "Error", appErr, "PanicError", "panic: "+marker, "Result", marker)
		return buf.String()
	}
	hidden := log(true)
	if strings.Contains(hidden, marker) {
		t.Fatalf("hidden logs hold the text:\n%s", hidden)
	}
	for _, want := range []string{
		"run_id=r1", "step=tool/2/0/x", "reason.bytes=16", "last_error.bytes=16", "how.bytes=26", "attempt=3",
		"error.type=*fmt.wrapError error.bytes=20", "g.inner.bytes=11", "ActivityType=CallTool",
		"Error.type=ToolFailed", "PanicError.bytes=18", "Result.bytes=11",
	} {
		if !strings.Contains(hidden, want) {
			t.Errorf("hidden logs lack %q:\n%s", want, hidden)
		}
	}
	if plain := log(false); strings.Count(plain, marker) != 8 {
		t.Errorf("logs not hidden hold the text %d times, want 8:\n%s", strings.Count(plain, marker), plain)
	}
}
