package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/api/serviceerror"

	"github.com/agentrun/agentrun/internal/cluster"
)

// TestWatchSaysOnce: what --wait says about the connection is said once
// while it lasts, followed by one line when it passes; the raw error only
// with --verbose.
func TestWatchSaysOnce(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var b strings.Builder
		wt := (&Remote{Conn: &cluster.Conn{HostPort: "127.0.0.1:7233"}, Verbose: verbose}).watch(&b, "r1")
		raw := serviceerror.NewUnavailable("connection error: desc = \"transport: Error while dialing\"")
		lost := "lost the connection to Temporal at 127.0.0.1:7233; reconnecting"
		for range 3 {
			wt.say(lost, raw)
		}
		wt.say("", nil)
		wt.say("", nil)
		want := "run r1: " + lost + "\n"
		if verbose {
			want += "  (" + raw.Error() + ")\n"
		}
		want += "run r1: Temporal at 127.0.0.1:7233 answers again\n"
		if b.String() != want {
			t.Errorf("verbose %v: said\n%s\nwant\n%s", verbose, b.String(), want)
		}
	}
}

// TestTransient: the failures of the connection pass; a missing run or a
// refused request does not.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{serviceerror.NewUnavailable("connection refused"), true},
		{serviceerror.NewCanceled("stream terminated by RST_STREAM with error code: CANCEL"), true},
		{serviceerror.NewDeadlineExceeded("context deadline exceeded"), true},
		{fmt.Errorf("describe run r1: %w", context.DeadlineExceeded), true},
		{serviceerror.NewNotFound("workflow not found"), false},
		{serviceerror.NewInvalidArgument("bad"), false},
		{errors.New("query failed"), false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
