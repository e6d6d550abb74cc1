package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrun/agentrun/internal/testkit/clustertest"
)

// clusterFigures are the step overhead section's figures that the cluster
// section repeats; each is prefixed with clusterPrefix, so that every
// figure of the table stays unique.
var clusterFigures = []string{
	"ms per activity, AgentRun vs bare chain (median of rounds)",
	"median gap " + phaseCycle,
	"worker RPCs per activity (polls included)",
	figOffPair, figAgentRunGzip, figBareGzip,
}

const clusterPrefix = "cluster: "

// clusterStepOverhead is the step overhead section again on a real
// Temporal cluster that it starts and stops (internal/testkit/clustertest: the
// server built by make temporal-server on a private PostgreSQL, 4 history
// shards, SQL visibility, deploy/'s configuration and dynamic config, the
// ones docker-compose.yml runs): AgentRun against a bare chain of no-op
// activities on the same cluster, alternating. When the cluster cannot
// start, its rows say so (not measured) and the bench goes on.
func clusterStepOverhead(ctx context.Context, env *benchEnv, cli string, p stepParams) (stepResult, error) {
	n := activityCount(p.Turns)
	sec := fmt.Sprintf("Step overhead on a real cluster (the Temporal server on PostgreSQL, 4 history shards, SQL visibility): AgentRun (T=%d lookup turns, %d activities) vs a bare chain of %d no-op activities on the same cluster, %d alternating rounds each", p.Turns, n, n, p.Rounds)
	c, err := clustertest.Start(ctx, clustertest.Options{Dir: env.subdir("cluster"), CLI: cli})
	if err != nil {
		var rows []row
		for _, fig := range clusterFigures {
			rows = append(rows, row{Section: sec, Figure: clusterPrefix + fig, Missing: "the cluster did not start: " + err.Error()})
		}
		return stepResult{rows: rows}, nil
	}
	defer c.Stop()
	cenv := *env
	cenv.hostPort = c.HostPort
	res, err := stepOverhead(ctx, &cenv, p)
	if err != nil {
		return stepResult{}, err
	}
	out := stepResult{}
	for _, r := range res.rows {
		for _, fig := range clusterFigures {
			if r.Figure == fig {
				r.Section, r.Figure = sec, clusterPrefix+r.Figure
				out.rows = append(out.rows, r)
			}
		}
	}
	if len(out.rows) != len(clusterFigures) {
		return stepResult{}, fmt.Errorf("the step overhead section gave %d of the cluster's %d figures", len(out.rows), len(clusterFigures))
	}
	if len(res.findings) > 0 {
		out.findings = append(out.findings, "On the real cluster: "+strings.TrimPrefix(res.findings[0], "AgentRun spends"))
		out.findings[0] = strings.Replace(out.findings[0], "On the real cluster:  ", "On the real cluster, AgentRun spends ", 1)
	}
	return out, nil
}
