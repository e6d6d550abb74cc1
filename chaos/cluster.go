package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentrun/agentrun/internal/testkit/clustertest"
)

// engineCluster is the Temporal engine on a real cluster instead of the
// dev server: a fleet of three workers, as on engineTemporal, against the
// Temporal server on PostgreSQL (internal/testkit/clustertest: 4 history shards,
// SQL visibility, deploy/'s configuration, the one docker-compose.yml
// runs), the workers' journal in the database agentrun on the same
// PostgreSQL, as in the compose file.
const engineCluster = "cluster"

// The cluster's kill points: the server process, or its PostgreSQL, taken
// down while the chosen lookup runs (AGENTRUN_DEMO_DELAY keeps it there).
var (
	pointClusterServer   = Point{14, "server", "Temporal server process SIGKILLed inside lookup, started again (cluster on PostgreSQL)", false}
	pointClusterPostgres = Point{15, "server-postgres", "the Temporal server's PostgreSQL restarted inside lookup (with the journal's)", false}
)

// clusterCells are the cluster's rows of the campaign.
var clusterCells = []Cell{{engineCluster, pointClusterServer, ""}, {engineCluster, pointClusterPostgres, ""}}

func init() { allCells = append(allCells, clusterCells...) }

// serverDown is how long the server stays down at point server (pgDown
// at point server-postgres).
const serverDown = "2s"

// clusterEnv returns the environment of a trial on the cluster, starting
// the cluster on first use: the trial's fleet, starter and reconcile talk
// to it, and the journal is in its PostgreSQL.
func (e *env) clusterEnv(ctx context.Context) (*env, error) {
	if e.cluster == nil {
		start := time.Now()
		c, err := clustertest.Start(ctx, clustertest.Options{Dir: filepath.Join(e.dir, "cluster"), CLI: e.cli})
		if err != nil {
			return nil, fmt.Errorf("start the cluster: %w", err)
		}
		db, err := c.AgentrunDatabase(ctx)
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("the cluster's agentrun database: %w", err)
		}
		e.cluster, e.clusterDB = c, db
		e.logger.Info("cluster", "address", c.HostPort, "took", time.Since(start).Round(100*time.Millisecond))
	}
	ce := *e
	ce.hostPort, ce.client, ce.db = e.cluster.HostPort, e.cluster.Client, e.clusterDB
	return &ce, nil
}

// stopCluster stops the cluster if a trial started it.
func (e *env) stopCluster() {
	if e.cluster != nil {
		e.cluster.Stop()
		e.cluster = nil
	}
}

// restartCluster takes the cluster's server (point server) or its
// PostgreSQL (point server-postgres) down and up again.
func (f *fleet) restartCluster(ctx context.Context, p Point) error {
	switch p {
	case pointClusterServer:
		down, _ := time.ParseDuration(serverDown)
		return f.cluster.RestartServer(ctx, true, func() { time.Sleep(down) })
	case pointClusterPostgres:
		down, _ := time.ParseDuration(pgDown)
		return f.cluster.RestartPostgres(ctx, func() { time.Sleep(down) })
	}
	return fmt.Errorf("%s is not a cluster point", p.Name)
}
