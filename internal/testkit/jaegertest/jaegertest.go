package jaegertest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrun/agentrun/internal/testkit"
)

// EnvBinary names the variable with the path of the Jaeger program to run
// instead of bin/jaeger at the module root.
const EnvBinary = "AGENTRUN_JAEGER"

//go:embed config.yaml
var config []byte

// The ports of config.yaml, each a variable that Run sets.
const (
	envOTLPGRPC  = "JAEGERTEST_OTLP_GRPC"
	envOTLPHTTP  = "JAEGERTEST_OTLP_HTTP"
	envQueryHTTP = "JAEGERTEST_QUERY_HTTP"
	envQueryGRPC = "JAEGERTEST_QUERY_GRPC"
)

// startTimeout bounds one start, from the exec to the query API answering
// and both receivers accepting connections: Jaeger is up in well under a
// second on an idle machine, a 2-core CI machine running other tests may
// need several.
const startTimeout = time.Minute

// startAttempts: a port that was free when Run picked it may be taken by
// the time Jaeger binds it; a start that failed on a port in use is tried
// again on new ports, this many times in all.
const startAttempts = 3

// stopTimeout bounds the wait for Jaeger to exit after SIGTERM (it shuts
// its servers down in order); then it is killed.
const stopTimeout = 10 * time.Second

// Jaeger is a running Jaeger all-in-one.
type Jaeger struct {
	// OTLPEndpoint is the OTLP/gRPC receiver, http://127.0.0.1:PORT: the
	// value of OTEL_EXPORTER_OTLP_ENDPOINT for a gRPC exporter
	// (otlptracegrpc.WithEndpointURL).
	OTLPEndpoint string
	// OTLPHTTPEndpoint is the OTLP/HTTP receiver, http://127.0.0.1:PORT
	// (traces at /v1/traces).
	OTLPHTTPEndpoint string
	// QueryURL is the query API's base, http://127.0.0.1:PORT (its
	// endpoints under /api/).
	QueryURL string
	// Log is the file with Jaeger's own log.
	Log string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
}

// Binary returns the Jaeger program: $AGENTRUN_JAEGER, or bin/jaeger at
// the module root (make jaeger builds it there).
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("no Jaeger at %s (%s): %w", p, EnvBinary, err)
		}
		return p, nil
	}
	p, err := testkit.Bin("jaeger", "jaeger")
	if err != nil {
		return "", fmt.Errorf("%w (or set %s)", err, EnvBinary)
	}
	return p, nil
}

// Start starts Jaeger for this test, stopped when the test ends; when the
// test failed, its log's last lines go to the test log. Without a program,
// or when it does not start, the test fails under CI=true and is skipped
// otherwise.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin, err := Binary()
	var j *Jaeger
	if err == nil {
		j, err = Run(t.Context(), bin, t.TempDir())
	}
	if err != nil {
		testkit.Unavailable(t, "Jaeger (make jaeger builds it)", err)
	}
	t.Cleanup(func() {
		if err := j.Stop(); err != nil {
			t.Errorf("Jaeger: %v", err)
		}
		if t.Failed() {
			t.Logf("Jaeger's log (%s) ends:\n%s", j.Log, tail(j.Log, 2000))
		}
	})
	return j
}

// Run starts the Jaeger program bin with config.yaml on free 127.0.0.1
// ports, its configuration and log in dir, and returns once it serves.
// The caller stops it with Stop. ctx bounds the start only.
func Run(ctx context.Context, bin, dir string) (*Jaeger, error) {
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, config, 0o644); err != nil {
		return nil, fmt.Errorf("start Jaeger: %w", err)
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var j *Jaeger
		j, err = start(ctx, bin, cfg, filepath.Join(dir, fmt.Sprintf("jaeger-%d.log", attempt)))
		if err == nil {
			return j, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, err
}

// errPortTaken marks a start that failed because a port was in use.
var errPortTaken = errors.New("a port was taken")

// pickPorts picks the ports of one start (a seam for the test of a port
// taken between picking and binding).
var pickPorts = freePorts

func start(ctx context.Context, bin, cfg, logPath string) (*Jaeger, error) {
	ports, err := pickPorts(4)
	if err != nil {
		return nil, fmt.Errorf("start Jaeger: %w", err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start Jaeger: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(environ(),
		envOTLPGRPC+"="+ports[0], envOTLPHTTP+"="+ports[1],
		envQueryHTTP+"="+ports[2], envQueryGRPC+"="+ports[3])
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start Jaeger (%s): %w", bin, err)
	}
	j := &Jaeger{
		OTLPEndpoint:     "http://127.0.0.1:" + ports[0],
		OTLPHTTPEndpoint: "http://127.0.0.1:" + ports[1],
		QueryURL:         "http://127.0.0.1:" + ports[2],
		Log:              logPath,
		cmd:              cmd,
		exited:           make(chan struct{}),
	}
	go func() { j.err = cmd.Wait(); close(j.exited) }()
	if err := j.waitReady(ctx, ports); err != nil {
		_ = j.Stop()
		log := tail(logPath, 600)
		if strings.Contains(log, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("start Jaeger (%s): %w; its log ends: %s", bin, err, strings.Join(strings.Fields(log), " "))
	}
	return j, nil
}

// environ is the test process's environment without the OpenTelemetry
// variables that a test may have set for the programs it traces.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

// waitReady polls until the query API answers and both receivers accept
// connections, the process exits, or startTimeout passes.
func (j *Jaeger) waitReady(ctx context.Context, ports []string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		if j.serves(ctx, client, ports) {
			return nil
		}
		select {
		case <-j.exited:
			return fmt.Errorf("it exited: %v", j.err)
		case <-ctx.Done():
			return fmt.Errorf("not serving after %s: %w", startTimeout, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (j *Jaeger) serves(ctx context.Context, client *http.Client, ports []string) bool {
	for _, port := range ports[:2] {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+port)
		if err != nil {
			return false
		}
		c.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL+"/api/services", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Env returns the variables that point a program's OpenTelemetry gRPC
// exporter at this Jaeger: OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc.
func (j *Jaeger) Env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLPEndpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}
}

// Stop stops Jaeger (SIGTERM, then SIGKILL after stopTimeout) and waits
// for it to exit; its traces are gone. It returns an error only when
// Jaeger had to be killed.
func (j *Jaeger) Stop() error {
	select {
	case <-j.exited:
		return nil
	default:
	}
	_ = j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = j.cmd.Process.Kill()
	<-j.exited
	return fmt.Errorf("stop Jaeger (pid %d): still running %s after SIGTERM; killed", j.cmd.Process.Pid, stopTimeout)
}

// freePorts returns n distinct ports on 127.0.0.1 that were free a moment
// ago.
func freePorts(n int) ([]string, error) {
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close() // held until all are picked, so they differ
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports, nil
}

// tail returns up to the last n bytes of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = append([]byte("..."), b[len(b)-n:]...)
	}
	return string(b)
}
