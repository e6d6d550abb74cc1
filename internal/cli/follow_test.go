package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/cli"
)

// TestFollowFlags: with --local, --wait and --session imply --follow and
// refuse --follow=false in one line naming what to drop; on Temporal
// --follow is refused, and --wait or --session follow nothing locally.
func TestFollowFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		local, wait, session, follow, set bool
		want                              bool
		err                               string
	}{
		{local: true, want: false},
		{local: true, follow: true, set: true, want: true},
		{local: true, wait: true, want: true},
		{local: true, session: true, want: true},
		{local: true, session: true, follow: true, set: true, want: true},
		{local: true, wait: true, set: true, err: "--wait with --local follows the run: drop --follow=false"},
		{local: true, session: true, set: true, err: "--session with --local needs a driver that follows the run: drop --follow=false"},
		{follow: true, set: true, err: "--follow is for --local runs"},
		{wait: true, session: true, want: false},
	} {
		var l cli.Limits
		err := cli.FollowFlags(&l, c.local, c.wait, c.session, c.follow, c.set)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || cli.ExitCode(err) != cli.ExitUsage):
			t.Errorf("%+v: %v, want a usage error containing %q", c, err, c.err)
		case c.err == "" && (err != nil || l.Follow != c.want):
			t.Errorf("%+v: Follow %v, %v; want %v", c, l.Follow, err, c.want)
		}
	}
}
