package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrun/agentrun/internal/pgtest"
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
// use: its databases on the PostgreSQL that pgtest.URL uses (the test
// process's private one, or $AGENTRUN_TEST_POSTGRES_URL), named after the
// process, on free ports, without a Web UI. When it cannot start, the test
// fails under CI=true and is skipped otherwise, with the reason. Call Stop
// from TestMain.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		base, err := pgtest.ServerURL()
		if err != nil {
			sharedErr = fmt.Errorf("PostgreSQL: %w", err)
			return
		}
		if sharedDir, err = os.MkdirTemp("", "agentrun-cluster-"); err != nil {
			sharedErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		start := time.Now()
		shared, sharedErr = Start(ctx, Options{Dir: sharedDir, PostgresURL: base, Database: fmt.Sprintf("temporal_test_%d", os.Getpid())})
		if sharedErr == nil {
			t.Logf("Temporal cluster on PostgreSQL at %s, started in %v (logs in %s)", shared.HostPort, time.Since(start).Round(100*time.Millisecond), sharedDir)
		}
	})
	if sharedErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Temporal cluster: %v", sharedErr)
		}
		t.Skipf("Temporal cluster unavailable (fails under CI=true): %v", sharedErr)
	}
	return shared
}

// Stop stops the shared cluster, if this process started one, and removes
// its logs. Call it from TestMain after m.Run, before pgtest.Stop.
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
