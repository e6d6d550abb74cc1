package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/operator"
)

// Setting is one dynamic config value of the server.
type Setting struct {
	Key   string
	Value string
}

// DynamicConfig is what every dev server the project starts runs with.
//
// history.transferProcessorMaxPollRPS: the dev server has one history
// shard, and its transfer queue reader defaults to 20 polls a second, so
// each dispatch (an activity, then the next workflow task) waits for a 50 ms
// slot. system.enableActivityEagerExecution: the server otherwise ignores
// the SDK's requests to hand an activity straight back to the worker that
// scheduled it. Raising the rate alone caused 2 s stalls on some dispatches;
// with both, a chain of no-op activities costs 5–7 ms per activity.
//
// matching.wv.VersionDrainageStatus*: a worker deployment version that is
// no longer current counts as draining, and is checked for open pinned
// runs, only after a grace period and then at an interval, both 3 minutes
// by default; here 5 and 2 seconds (a number is seconds), so that `temporal worker deployment
// describe-version` reports an old build drained within seconds of its
// last run ending.
var DynamicConfig = []Setting{
	{"history.transferProcessorMaxPollRPS", "1000"},
	{"system.enableActivityEagerExecution", "true"},
	{"matching.wv.VersionDrainageStatusVisibilityGracePeriod", "5"},
	{"matching.wv.VersionDrainageStatusRefreshInterval", "2"},
}

// SearchAttributes are agentrun's search attributes, NAME=TYPE.
var SearchAttributes = []string{operator.StatusAttribute + "=Keyword", operator.StepAttribute + "=Keyword", operator.ForkOfAttribute + "=Keyword"}

// Args returns the `temporal server start-dev` flags for SearchAttributes
// and DynamicConfig.
func Args() []string {
	var args []string
	for _, sa := range SearchAttributes {
		args = append(args, "--search-attribute", sa)
	}
	for _, s := range DynamicConfig {
		args = append(args, "--dynamic-config-value", s.Key+"="+s.Value)
	}
	return args
}

// CLI returns the pinned temporal CLI: $AGENTRUN_TEMPORAL_CLI, or
// bin/temporal at the module root (make temporal-cli installs it there).
func CLI() (string, error) {
	if p := os.Getenv("AGENTRUN_TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	p, err := testkit.Bin("temporal", "temporal-cli")
	if err != nil {
		return "", fmt.Errorf("%w (or set AGENTRUN_TEMPORAL_CLI)", err)
	}
	return p, nil
}

// Options are where a dev server keeps its state and listens.
type Options struct {
	// Port is the frontend's port on 127.0.0.1; a free one when "".
	// A server restarted on the same DBFile needs the same port, so that
	// its workers and clients reconnect.
	Port string
	// DBFile is the SQLite file the server keeps its state in; "" keeps
	// it in memory (lost when the server stops).
	DBFile string
	// UIPort is the Web UI's port on 127.0.0.1; "" runs the server
	// headless (no Web UI).
	UIPort string
	// UICodecEndpoint is the codec server the Web UI calls to decode
	// payloads (`--ui-codec-endpoint`), e.g. http://127.0.0.1:8234; ""
	// for none. Only with UIPort.
	UICodecEndpoint string
}

// Start starts a dev server with the CLI at cli, its state in memory, on a
// free port: StartWith with no Options.
func Start(ctx context.Context, cli string, stderr io.Writer) (*testsuite.DevServer, error) {
	return StartWith(ctx, cli, stderr, Options{})
}

// StartWith starts a dev server with the CLI at cli, the flags of Args and
// opts, and returns it once its default namespace answers; the caller
// stops it with Stop (an interrupt: the server shuts down in order). The
// server's log goes to stderr (errors only).
func StartWith(ctx context.Context, cli string, stderr io.Writer, opts Options) (*testsuite.DevServer, error) {
	port := opts.Port
	if port == "" {
		var err error
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("start the dev server: %w", err)
		}
	}
	if opts.UICodecEndpoint != "" && opts.UIPort == "" {
		return nil, fmt.Errorf("start the dev server: a UI codec endpoint (%s) needs a UI port", opts.UICodecEndpoint)
	}
	args := Args()
	if opts.UICodecEndpoint != "" {
		args = append(args, "--ui-codec-endpoint", opts.UICodecEndpoint)
	}
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  cli,
		ClientOptions: &client.Options{HostPort: "127.0.0.1:" + port, Logger: quiet},
		DBFilename:    opts.DBFile,
		EnableUI:      opts.UIPort != "",
		UIPort:        opts.UIPort,
		LogLevel:      "error",
		ExtraArgs:     args,
		Stdout:        io.Discard,
		Stderr:        stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("start the dev server (%s): %w", cli, err)
	}
	return dev, nil
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago.
func FreePort() (string, error) { return freePort() }

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
