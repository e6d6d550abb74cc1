package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
)

// startTimeout bounds starting the shared cluster: the schemas, the
// server, the set-up.
const startTimeout = 6 * time.Minute

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
	sharedDir  string
)

// Shared returns the cluster of this test process, starting it on first
// use, on free ports, without a Web UI: on a private PostgreSQL of its own
// (so that a test restarting pgtest's cluster does not take Temporal down
// with it), or, with $AGENTRUN_TEST_POSTGRES_URL set, in databases named
// after the process on that server. When it cannot start, the test fails
// under CI=true and is skipped otherwise, with the reason. Call Stop from
// TestMain.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		opts := Options{Database: fmt.Sprintf("temporal_test_%d", os.Getpid())}
		if pgtest.External() {
			base, err := pgtest.ServerURL()
			if err != nil {
				sharedErr = fmt.Errorf("PostgreSQL: %w", err)
				return
			}
			opts.PostgresURL = base
		}
		var err error
		if opts.Dir, err = os.MkdirTemp("", "agentrun-cluster-"); err != nil {
			sharedErr = err
			return
		}
		sharedDir = opts.Dir
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		start := time.Now()
		shared, sharedErr = Start(ctx, opts)
		if sharedErr == nil {
			t.Logf("Temporal cluster on PostgreSQL at %s, started in %v (logs in %s)", shared.HostPort, time.Since(start).Round(100*time.Millisecond), sharedDir)
		}
	})
	if sharedErr != nil {
		testkit.Unavailable(t, "Temporal cluster", sharedErr)
	}
	return shared
}

// Stop stops the shared cluster, if this process started one, and removes
// its logs. Call it from TestMain after m.Run.
func Stop() {
	if shared != nil {
		shared.Stop()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
}

// dropDatabase drops db on the server of the maintenance database at base.
func dropDatabase(ctx context.Context, base, db string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
	return err
}
