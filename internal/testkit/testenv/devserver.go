package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/cluster"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
)

// Server is a Temporal dev server shared by the tests of one process.
type Server struct {
	HostPort string
	Client   client.Client
	// CLI is the path of the temporal CLI that runs it.
	CLI string
	dev *testsuite.DevServer
}

var (
	serverOnce sync.Once
	server     *Server
	serverErr  error
)

// TemporalCLI returns the pinned temporal CLI: $AGENTRUN_TEMPORAL_CLI, or
// bin/temporal at the module root (make temporal-cli installs it there).
func TemporalCLI() (string, error) { return devserver.CLI() }

// DevServer returns the dev server of this test process, starting it on
// first use with agentrun's search attributes and the project's dynamic
// config (devserver.DynamicConfig). When it cannot start, the test fails
// under CI=true and is skipped otherwise. Call Stop from TestMain.
func DevServer(t testing.TB) *Server {
	t.Helper()
	serverOnce.Do(func() {
		cli, err := TemporalCLI()
		if err != nil {
			serverErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		dev, err := devserver.Start(ctx, cli, os.Stderr)
		if err != nil {
			serverErr = err
			return
		}
		c, err := suiteClient(dev.Client())
		if err != nil {
			serverErr = err
			_ = dev.Stop()
			return
		}
		server = &Server{HostPort: dev.FrontendHostPort(), Client: c, CLI: cli, dev: dev}
	})
	if serverErr != nil {
		testkit.Unavailable(t, "Temporal dev server", serverErr)
	}
	return server
}

// SuiteKeys is set to run a whole test package with encryption on: with
// AGENTRUN_CODEC_KEYS in the test process's environment, every child
// process inherits it (Env builds on os.Environ) and the shared client
// decodes with the same keys (make test-encrypted).
const SuiteKeys = "AGENTRUN_CODEC_KEYS"

// Encrypted reports whether this test process runs with encryption on.
func Encrypted() bool { return os.Getenv(SuiteKeys) != "" }

// SuiteCodec is the codec of SuiteKeys, nil when it is not set.
func SuiteCodec() (*codec.Codec, error) {
	if !Encrypted() {
		return nil, nil
	}
	keys, err := codec.ParseKeys(os.Getenv(SuiteKeys))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SuiteKeys, err)
	}
	cdc, err := codec.New(keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SuiteKeys, err)
	}
	return cdc, nil
}

// suiteClient is the dev server's client, with the codec of SuiteKeys when
// it is set.
func suiteClient(c client.Client) (client.Client, error) {
	cdc, err := SuiteCodec()
	if err != nil || cdc == nil {
		return c, err
	}
	opts := client.Options{}
	cluster.WithCodec(&opts, cdc)
	return client.NewClientFromExisting(c, opts)
}

// DevServerWith starts a dev server of the test's own with opts (e.g. a
// Web UI and its codec endpoint), stopped when the test ends. When it cannot
// start, the test fails under CI=true and is skipped otherwise, as with
// DevServer.
func DevServerWith(t testing.TB, opts devserver.Options) *Server {
	t.Helper()
	cli, err := TemporalCLI()
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		var dev *testsuite.DevServer
		if dev, err = devserver.StartWith(ctx, cli, os.Stderr, opts); err == nil {
			t.Cleanup(func() { dev.Client().Close(); _ = dev.Stop() })
			return &Server{HostPort: dev.FrontendHostPort(), Client: dev.Client(), CLI: cli, dev: dev}
		}
	}
	testkit.Unavailable(t, "Temporal dev server", err)
	return nil
}

// Stop stops the dev server if one was started.
func Stop() {
	if server != nil {
		_ = server.dev.Stop()
	}
}

// Env returns the environment for a child process talking to the server.
func (s *Server) Env(extra ...string) []string {
	return append(append(os.Environ(), "TEMPORAL_ADDRESS="+s.HostPort, "TEMPORAL_NAMESPACE=default"), extra...)
}

// Describe returns the server's description of the latest run of an id.
func (s *Server) Describe(t testing.TB, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := s.Client.DescribeWorkflow(t.Context(), runID, "")
	if err != nil {
		return nil, err
	}
	return d.RawResponse, nil
}
