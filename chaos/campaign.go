package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentrun/agentrun/internal/testkit/clustertest"
	"github.com/agentrun/agentrun/internal/testkit/devserver"
	"github.com/agentrun/agentrun/internal/testkit/pgtest"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
)

// Config is one campaign.
type Config struct {
	// Trials is the number of trials; trialsPerCell per cell when zero.
	Trials int
	// Cells are the kill points (per engine) dealt round-robin; all of
	// them when nil.
	Cells []Cell
	// Seed seeds the shuffle of the trials' order and each trial's choice
	// of the step it crashes.
	Seed int64
	// Out is the file the table goes to; "" writes the "## Crash
	// campaign" section of BENCHMARKS.md at the module root.
	Out string
	// Logger gets one line per trial; slog.Default() when nil.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Cells == nil {
		c.Cells = allCells
	}
	if c.Trials == 0 {
		c.Trials = trialsPerCell * len(c.Cells)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// trialsPerCell is the default number of trials per cell: every cell
// needs minHits hits, and one trial may miss (the process was not at the
// point any more when the fault came).
const trialsPerCell = 6

// env is what every trial shares: the worker, starter and reconcile
// programs, the dev server (on a file, restartable), the database.
type env struct {
	dir      string // the campaign's temporary folder
	bins     map[string]string
	cli      string // the temporal CLI
	devOpts  devserver.Options
	dev      *testsuite.DevServer
	hostPort string
	client   client.Client
	db       string
	pg       *pgtest.Cluster
	// cluster is the Temporal cluster of the cluster trials, started by
	// the first (clusterEnv); clusterDB the journal's database on it.
	cluster   *clustertest.Cluster
	clusterDB string
	logger    *slog.Logger
	seed      int64
}

// Plan is one trial's kill point and scenario.
type Plan struct {
	Cell     Cell
	Scenario Scenario
}

// plan deals the cells round-robin over n trials, alternating the
// scenarios within each cell, and shuffles them with seed. The first round
// runs the hand example on Temporal and the long run locally, so that a
// campaign of one trial per cell (TestCampaign) runs both scenarios and
// stays short: a long run on the fleet is the slowest trial.
func plan(cells []Cell, n int, seed int64) []Plan {
	out := make([]Plan, n)
	for i := range out {
		c := cells[i%len(cells)]
		first := 0
		if c.Engine == engineLocal {
			first = 1
		}
		out[i] = Plan{Cell: c, Scenario: scenarios[(i/len(cells)+first)%len(scenarios)]}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Run runs the campaign. An error means the campaign could not run (no
// dev server, no PostgreSQL); failed trials are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	began := time.Now()
	order := plan(cfg.Cells, cfg.Trials, cfg.Seed)
	cfg.Logger.Info("crash campaign", "trials", cfg.Trials, "seed", cfg.Seed)
	e, cleanup, err := setup(ctx, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	defer e.stopCluster()
	e.seed = cfg.Seed
	res := &Result{Trials: cfg.Trials, Seed: cfg.Seed, Cells: cfg.Cells}
	for i, p := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := e.trial(ctx, i, p)
		res.Outcomes = append(res.Outcomes, t)
		if e.dev == nil {
			return nil, fmt.Errorf("trial %d: the dev server did not come back: %s", i+1, t.Failure)
		}
		cfg.Logger.Info("trial", "n", i+1, "cell", p.Cell, "scenario", p.Scenario.Name, "target", t.Target, "hit", t.Hit,
			"indeterminate", t.Settled, "tickets", t.Tickets, "model_steps", t.ModelSteps,
			"took", t.Took.Round(100*time.Millisecond), "fault_for", t.FaultFor.Round(100*time.Millisecond), "failure", t.Failure)
	}
	res.Took = time.Since(began)
	return res, nil
}

// setup builds the programs, starts PostgreSQL and the dev server.
func setup(ctx context.Context, logger *slog.Logger) (*env, func(), error) {
	dir, err := os.MkdirTemp("", "agentrun-chaos-")
	if err != nil {
		return nil, nil, err
	}
	e := &env{dir: dir, bins: map[string]string{}, logger: logger}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		_ = os.RemoveAll(dir)
	}
	ok := false
	defer func() {
		if !ok {
			cleanup()
		}
	}()
	progs := []string{"worker", "starter", "reconcile"}
	for _, prog := range progs {
		e.bins[prog] = filepath.Join(dir, prog)
	}
	if err := testenv.Build(ctx, dir, progs...); err != nil {
		return nil, nil, err
	}
	if e.pg, err = pgtest.StartCluster(); err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	closers = append(closers, e.pg.Stop)
	e.db = e.pg.URL()
	if e.cli, err = devserver.CLI(); err != nil {
		return nil, nil, err
	}
	port, err := devserver.FreePort()
	if err != nil {
		return nil, nil, err
	}
	e.devOpts = devserver.Options{Port: port, DBFile: filepath.Join(dir, "temporal.db")}
	if e.dev, err = devserver.StartWith(ctx, e.cli, io.Discard, e.devOpts); err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() {
		if e.dev != nil {
			e.dev.Client().Close()
			_ = e.dev.Stop()
		}
	})
	e.hostPort = e.dev.FrontendHostPort()
	e.client = e.dev.Client()
	ok = true
	return e, cleanup, nil
}

// restartServer stops the dev server (an interrupt), keeps it down for
// devDown, and starts it again on the same file and port; the workers keep
// running and reconnect.
func (e *env) restartServer(ctx context.Context) error {
	old := e.dev
	e.dev = nil
	_ = old.Stop() // an interrupted server may exit non-zero
	old.Client().Close()
	down, _ := time.ParseDuration(devDown)
	time.Sleep(down)
	var err error
	for range restartAttempts { // the port may not be free again at once
		var dev *testsuite.DevServer
		if dev, err = devserver.StartWith(ctx, e.cli, io.Discard, e.devOpts); err == nil {
			e.dev, e.client = dev, dev.Client()
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("restart the dev server on %s: %w", e.devOpts.DBFile, err)
}

// restartAttempts bounds the starts of a restarted dev server.
const restartAttempts = 3
