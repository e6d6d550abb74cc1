package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentrun/agentrun/internal/testkit"
)

// TestClusterStepOverheadAlone runs the cluster's step overhead section
// alone, as -quick sizes it, on a cluster it starts: its figures (clusterFigures)
// are measured (under CI=true a cluster that cannot start fails the test;
// elsewhere it skips), every one named as the cluster's.
func TestClusterStepOverheadAlone(t *testing.T) {
	env := sectionEnv(t) // for its folder and loggers; the section starts its own cluster
	cli := os.Getenv("AGENTRUN_TEMPORAL_CLI")
	res, err := clusterStepOverhead(t.Context(), env, cli, paramsFor(true).steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.rows) != len(clusterFigures) {
		t.Fatalf("rows %+v; want %d", res.rows, len(clusterFigures))
	}
	for _, r := range res.rows {
		if r.Missing != "" {
			testkit.Unavailable(t, "cluster ("+r.Figure+")", errors.New(r.Missing))
		}
		if !strings.HasPrefix(r.Figure, clusterPrefix) || r.Measured <= 0 || r.Baseline <= 0 {
			t.Errorf("%s: measured %v, baseline %v; want both measured, under %q", r.Figure, r.Measured, r.Baseline, clusterPrefix)
		}
	}
	if res.rows[0].Goal != 1.05 {
		t.Errorf("the first row's goal is %v, want the step overhead's 1.05", res.rows[0].Goal)
	}
	if len(res.findings) != 1 || !strings.HasPrefix(res.findings[0], "On the real cluster, AgentRun spends ") {
		t.Errorf("findings %q; want one, on the cluster's ms per activity", res.findings)
	}
	t.Logf("%s: %.2f ms vs %.2f ms", res.rows[0].Figure, res.rows[0].Measured, res.rows[0].Baseline)
}
