package main

import (
	"testing"
)

// TestClusterCampaign runs the cluster's kill points once each on the
// real cluster (the hand example; the server killed, then its PostgreSQL
// restarted, inside a lookup) and checks their rows: hit, no
// Indeterminate, 1 ticket, 3 model steps, none run twice. Under CI=true
// it fails when the cluster cannot start; elsewhere it skips.
func TestClusterCampaign(t *testing.T) {
	res := runCells(t, clusterCells)
	for _, s := range res.Stats() {
		if s.Trials != 1 || s.Hits != 1 || s.Dups != 0 || s.Repeated != 0 || s.Done+s.Retry != 0 {
			t.Errorf("%s: %+v, want 1 trial, 1 hit, no Indeterminate, 0 duplicates, 0 repeated model calls", s.Cell, s)
		}
	}
	for _, o := range res.Outcomes {
		if o.Tickets != 1 || o.ModelSteps != 3 {
			t.Errorf("%s: %d tickets, %d model steps; want 1 and 3", o.Cell, o.Tickets, o.ModelSteps)
		}
	}
}
