package operator

import (
	"strings"

	"github.com/agentrun/agentrun/agent"
)

// Reading old records, the one place an expiry is recognised by its text:
// journals and continued Temporal runs written before the deny of an
// expiry was typed (Signal.Expired, agent.Approval.Expired) kept it only as
// the deny's reason. A record without the flag whose reason says so is read
// as an expiry, as it was then.
const oldExpiredPrefix = "approval expired after "

// ReadOldDeny returns a recorded signal with Expired set when it is a deny
// written before the flag whose reason is an expiry's.
func ReadOldDeny(sig Signal) Signal {
	if sig.Name == SignalDeny && !sig.Expired && strings.HasPrefix(sig.Reason, oldExpiredPrefix) {
		sig.Expired = true
	}
	return sig
}

// ReadOldDecisions sets Expired on the recorded denials in f written
// before the flag whose reason is an expiry's (the facts a run continued
// as new with).
func ReadOldDecisions(f *agent.Facts) {
	for m, a := range f.Decisions {
		if !a.Approved && !a.Expired && strings.HasPrefix(a.Reason, oldExpiredPrefix) {
			a.Expired = true
			f.Decisions[m] = a
		}
	}
}
