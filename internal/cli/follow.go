package cli

// FollowFlags decides whether a starter follows its run from its flags:
// --follow (set tells whether it was given), --wait and --session. With
// --local, --wait and --session imply --follow, and --follow=false with
// either is a usage error naming what to drop; on Temporal a run goes on
// by itself, so --follow is refused there. It sets limits.Follow.
func FollowFlags(limits *Limits, local, wait, session, follow, set bool) error {
	if !local {
		if set && follow {
			return usagef("--follow is for --local runs: a run on Temporal goes on by itself when a person decides; --wait follows it")
		}
		return nil
	}
	switch {
	case set && !follow && session:
		return usagef("--session with --local needs a driver that follows the run: drop --follow=false (the driver answers each message)")
	case set && !follow && wait:
		return usagef("--wait with --local follows the run: drop --follow=false, or drop --wait to stop at the first wait")
	}
	limits.Follow = follow || wait || session
	return nil
}
