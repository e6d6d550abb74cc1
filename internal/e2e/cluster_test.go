package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/testkit/clustertest"
)

// The fleet tests again on a real Temporal cluster (internal/testkit/clustertest:
// the server on PostgreSQL, 4 history shards, SQL visibility, started once
// per test process with deploy/'s configuration and scripts, the ones
// docker-compose.yml runs) instead of the CLI's dev server.

// TestClusterFleetHandExample: the hand example on the cluster, three
// workers on separate hosts sharing only PostgreSQL and the cluster, the
// approval given by reconcile on another host: 3 model calls, 1 ticket, no
// state on any host.
func TestClusterFleetHandExample(t *testing.T) {
	t.Parallel()
	fleetHandExample(t, clustertest.Shared(t).Server())
}

// TestClusterFleetCrashInsideWrite: the whole fleet SIGKILLed inside
// create_ticket, after the ticket was written; a fresh fleet makes the run
// Indeterminate, which `temporal workflow list --query
// 'AgentRunStatus="Indeterminate"'` finds in the cluster's SQL visibility;
// `reconcile done` completes it: 1 ticket, 3 model calls.
func TestClusterFleetCrashInsideWrite(t *testing.T) {
	t.Parallel()
	fleetCrashInsideWrite(t, clustertest.Shared(t).Server())
}

// TestClusterFleetPostgresRestart: the fleet's PostgreSQL (its journal and
// content store) restarted in the middle of a run on the cluster
// (TestFleetPostgresRestart): steps fail and are retried, and the run
// completes with one model step per turn. The cluster keeps its own
// PostgreSQL running; the campaign's cluster/server-postgres restarts that
// one. Not parallel: the restart takes down every database of pgtest.
func TestClusterFleetPostgresRestart(t *testing.T) {
	fleetPostgresRestart(t, clustertest.Shared(t).Server())
}

// TestClusterWorkerVersioningUpgrade: the rolling upgrade of a versioned
// fleet (TestWorkerVersioningUpgrade) on the cluster: the old run stays on
// build A and completes there, A drains (its drainage read from SQL
// visibility), the new run completes on B.
func TestClusterWorkerVersioningUpgrade(t *testing.T) {
	t.Parallel()
	workerVersioningUpgrade(t, clustertest.Shared(t).Server())
}

// TestClusterServerRestartAwaitingApproval: the server process is killed
// (SIGKILL) and started again while a run waits for approval, with the
// fleet of three workers running throughout; the approval given after the
// restart completes the run: 3 model calls, 1 ticket. Not parallel: every
// cluster test of the process loses the server meanwhile.
func TestClusterServerRestartAwaitingApproval(t *testing.T) {
	c := clustertest.Shared(t)
	srv := c.Server()
	f := newPGFleet(t, srv)
	begin := time.Now()
	f.start(t, 3, nil)
	const run = "e2e-cluster-restart"
	if code, out := f.run(t, "starter", "--id", run, prompt); code != 0 {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	t.Logf("started after %v", time.Since(begin).Round(100*time.Millisecond))
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	t.Logf("awaiting approval after %v", time.Since(begin).Round(100*time.Millisecond))
	pid := c.ServerPID()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	err := c.RestartServer(ctx, true, func() {
		hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
		defer hcancel()
		if _, err := srv.Client.CheckHealth(hctx, &client.CheckHealthRequest{}); err == nil {
			t.Errorf("the server answers while it is down")
		}
	})
	if err != nil {
		t.Fatalf("restart the server: %v", err)
	}
	if c.ServerPID() == pid {
		t.Fatalf("the server's pid is still %d after the restart", pid)
	}
	t.Logf("server killed and answering again after %v", time.Since(start).Round(100*time.Millisecond))
	// The run is still waiting, in the restarted server's history.
	waitStatus(t, srv, run, "AwaitingApproval", time.Minute)
	t.Logf("the run answers a query after %v", time.Since(start).Round(100*time.Millisecond))
	if code, out := f.run(t, "reconcile", "approve", run, ticketStep); code != 0 {
		t.Fatalf("reconcile approve: exit %d\n%s", code, out)
	}
	t.Logf("approved after %v", time.Since(start).Round(100*time.Millisecond))
	code, out := f.run(t, "starter", "--id", run, "--wait", prompt)
	t.Logf("completed after %v", time.Since(start).Round(100*time.Millisecond))
	if code != 0 || !strings.Contains(out, "TICKET-1") {
		t.Fatalf("starter --wait: exit %d\n%s", code, out)
	}
	if n := modelCalls(t, srv, run); n != 3 {
		t.Fatalf("model calls: %d, want 3", n)
	}
	if n := f.ticketCount(t); n != 1 {
		t.Fatalf("tickets: %d, want 1", n)
	}
	f.checkNoLocalState(t, true)
}
