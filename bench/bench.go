package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/agentrun/agentrun/internal/testkit/devserver"
)

// config is the bench's one settings struct.
type config struct {
	// Quick makes a short smoke run: a few turns, rounds and appends.
	// Default false (the full run, a few minutes).
	Quick bool
	// Out is the Markdown file the table is written to, overwritten.
	// Default "BENCHMARKS.md".
	Out string
	// CLI is the temporal CLI that runs the dev server. Default: $AGENTRUN_TEMPORAL_CLI
	// or bin/temporal at the module root (devserver.CLI).
	CLI string
	// Dir holds the journals and the fsync probes, so it should be on the
	// disk a journal would use. Default: a new folder under os.TempDir(),
	// removed at the end.
	Dir string
	// CPUProfile, when set, is where a CPU profile of the bench process
	// (its in-process workers and the driver) over the sections measured
	// goes; with Only, of those sections alone. Default none.
	CPUProfile string
	// MemProfile, when set, is the prefix of the profiles the approval
	// sections write with their runs parked, one per side: the heap,
	// PREFIX-RUNS-SIDE.pprof (e.g. heap-1000-agentrun.pprof), sampled
	// finer than the runtime's default (heapProfileRate), and the
	// goroutines, PREFIX-RUNS-SIDE.goroutines.txt. Default none.
	MemProfile string
	// Only, when set, names the sections measured (sectionNames); a run of
	// some sections prints its table and writes Out only when Out is set
	// explicitly. Default: every section.
	Only []string
}

func (c config) withDefaults() (config, error) {
	if len(c.Only) > 0 {
		c.Out = cmp.Or(c.Out, "-")
	}
	c.Out = cmp.Or(c.Out, "BENCHMARKS.md")
	if c.CLI == "" {
		cli, err := devserver.CLI()
		if err != nil {
			return c, fmt.Errorf("%w: %v", errDevServer, err)
		}
		c.CLI = cli
	}
	return c, nil
}

// errDevServer: the bench could not start its Temporal dev server.
var errDevServer = errors.New("the Temporal dev server did not start")

// benchEnv is what the sections share.
type benchEnv struct {
	hostPort string
	dir      string
	logger   *slog.Logger
	sdkLog   tlog.Logger
	// cli runs the dev servers (config.CLI), whose errors go to progress.
	cli      string
	progress io.Writer
	// memProfile is config.MemProfile.
	memProfile string
}

// devServer starts a dev server of the bench's (devserver.Start: in
// memory, tuned) and returns its address and what stops it. An error
// wraps errDevServer.
func (e *benchEnv) devServer(ctx context.Context) (hostPort string, stop func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	dev, err := devserver.Start(ctx, e.cli, e.progress)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", errDevServer, err)
	}
	return dev.FrontendHostPort(), func() { _ = dev.Stop() }, nil
}

// heapProfile is the path, less its suffix, of the profiles named name
// with -memprofile (measureMemory); "" for none.
func (e *benchEnv) heapProfile(name string) string {
	if e.memProfile == "" {
		return ""
	}
	return e.memProfile + "-" + name
}

// subdir returns a new folder under the bench's folder.
func (e *benchEnv) subdir(name string) string {
	p := filepath.Join(e.dir, name)
	_ = os.MkdirAll(p, 0o700) // a failure shows up where the folder is used
	return p
}

// runStamp is the time of day that names a section's task queue and runs
// (HHMMSS), so that one bench's runs stand apart from an earlier one's.
func runStamp() string { return time.Now().Format("150405") }

// dial returns a client of the dev server whose RPCs rpcs counts (nil: not
// counted). Each worker gets its own, so that its RPCs are its own.
func (e *benchEnv) dial(rpcs *rpcCounter) (client.Client, error) { return e.dialWith(rpcs, nil) }

// dialWith is dial with the client options that set changes (converters,
// interceptors) beyond the server's address and the logger; set nil: none.
func (e *benchEnv) dialWith(rpcs *rpcCounter, set func(*client.Options)) (client.Client, error) {
	opts := client.Options{HostPort: e.hostPort, Namespace: "default", Logger: e.sdkLog}
	if set != nil {
		set(&opts)
	}
	if rpcs != nil {
		opts.ConnectionOptions.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(rpcs.intercept)}
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", e.hostPort, err)
	}
	return c, nil
}

// run runs the bench: it starts a tuned dev server, measures every section,
// prints the report to stdout and writes it to cfg.Out. progress receives
// what it is doing and the server's errors. An error wrapping errDevServer
// means the server could not start.
func run(ctx context.Context, cfg config, stdout, progress io.Writer) error {
	began := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	p := paramsFor(cfg.Quick)
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "agentrun-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env := &benchEnv{dir: dir, logger: logger, sdkLog: tlog.NewStructuredLogger(logger), cli: cfg.CLI, progress: progress, memProfile: cfg.MemProfile}

	m, err := describeMachine(dir, p.fsyncSamples)
	if err != nil {
		return err
	}
	// Each section gets a dev server of its own: one section's histories
	// would slow the next one's, and its activities' timers (a step's
	// start-to-close timer fires minutes after the step, also once it has
	// completed) would fire in the middle of it.
	fresh := func(name string) (stop func(), err error) {
		fmt.Fprintf(progress, "bench: starting a dev server for %s (%s)\n", name, cfg.CLI)
		env.hostPort, stop, err = env.devServer(ctx)
		return stop, err
	}

	var workerBin string
	// needWorker builds the worker program once, for the sections that run
	// worker processes.
	needWorker := func() (string, error) {
		if workerBin != "" {
			return workerBin, nil
		}
		fmt.Fprintf(progress, "bench: building the worker program\n")
		var err error
		workerBin, err = buildWorker(ctx, env.subdir("bin"))
		return workerBin, err
	}
	stopProfile, err := startProfile(cfg.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var rows []row
	var findings []string
	for _, s := range sections(ctx, env, cfg, p, needWorker) {
		if !cfg.runs(s.name) {
			continue
		}
		stopDev, err := fresh(s.name)
		if err != nil {
			return err
		}
		fmt.Fprintf(progress, "bench: %s\n", s.what)
		r, f, err := s.measure()
		stopDev()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		rows, findings = append(rows, r...), append(findings, f...)
	}

	stopProfile()
	m.LoadEnd = loadAverage()
	var b bytes.Buffer
	writeReport(&b, cfg, m, serverVersion(cfg.CLI), rows, findings, time.Since(began))
	if _, err := stdout.Write(b.Bytes()); err != nil {
		return err
	}
	if cfg.Out == "-" {
		return nil
	}
	old, err := os.ReadFile(cfg.Out)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read %s: %w", cfg.Out, err)
	}
	if err := os.WriteFile(cfg.Out, append(b.Bytes(), othersSections(old)...), 0o644); err != nil {
		return fmt.Errorf("write the table: %w", err)
	}
	fmt.Fprintf(progress, "bench: wrote %s in %s\n", cfg.Out, time.Since(began).Round(time.Second))
	return nil
}

// keptHeadings head the sections after the bench's table that it keeps:
// the analysis a person writes of a full run (it names the run it
// analyses) and make chaos's crash campaign.
var keptHeadings = []string{"\n## Where the time goes\n", "\n## Crash campaign\n"}

// othersSections returns the kept sections at the end of an existing
// report: from the first kept heading on.
func othersSections(old []byte) []byte {
	first := -1
	for _, h := range keptHeadings {
		if i := bytes.Index(old, []byte(h)); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return nil
	}
	return old[first:]
}

func writeReport(w io.Writer, cfg config, m machine, server string, rows []row, findings []string, took time.Duration) {
	mode := "full run"
	if cfg.Quick {
		mode = "quick smoke run (-quick): too few samples to trust"
	}
	fmt.Fprintf(w, "# agentrun benchmarks\n\n")
	fmt.Fprintf(w, "Written by `make bench` (`go run ./bench`), %s, which overwrites this file. "+
		"The bench starts a Temporal dev server of its own for each section (%s; in memory, headless, with agentrun's search attributes and %s), so that no section's histories and leftover activity timers slow the next, "+
		"and runs its workers in its own process, except where a section says it runs worker processes (cmd worker, and the library section's embedded worker, built by the bench). Every figure is measured side by side with its baseline in the same run "+
		"(runs alternate, appends interleave); ratio = measured / baseline, and the goal applies to the ratio. "+
		"Times are medians. A missed goal is marked ✗; the bench measures and exits 0 anyway.\n\n",
		mode, server, dynamicConfigText())
	fmt.Fprintf(w, "Machine: %s.\n\n", m)
	writeTable(w, rows)
	fmt.Fprintf(w, "\n%s\n", verdict(rows))
	if len(findings) > 0 {
		fmt.Fprintf(w, "\nWhere AgentRun's step time goes (computed from this run's histories and RPC counts):\n\n")
		for _, f := range findings {
			fmt.Fprintf(w, "- %s\n", f)
		}
	}
	fmt.Fprintf(w, "\nThe bench took %s.\n", took.Round(time.Second))
}

func dynamicConfigText() string {
	var parts []string
	for _, s := range devserver.DynamicConfig {
		parts = append(parts, s.Key+"="+s.Value)
	}
	return strings.Join(parts, " and ")
}

// serverVersion asks the CLI which server and UI it runs.
func serverVersion(cli string) string {
	out, err := exec.Command(cli, "--version").Output()
	if err != nil {
		return "temporal CLI " + cli
	}
	return strings.TrimSpace(string(out))
}

// startProfile starts a CPU profile into path ("" does nothing) and returns
// the function that stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		f.Close()
	}), nil
}

// median returns the median of ds (the upper one of an even count), 0 for
// none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
