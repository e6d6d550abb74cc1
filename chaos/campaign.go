package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/internal/devserver"
	"github.com/agentrun/agentrun/internal/pgtest"
)

// Config is one campaign.
type Config struct {
	// Trials is the number of trials; 100 when zero.
	Trials int
	// Points are the kill points dealt round-robin; all of them when nil.
	Points []Point
	// Seed seeds the shuffle of the trials' order.
	Seed int64
	// Out is the file the table goes to; "" writes the "## Crash
	// campaign" section of BENCHMARKS.md at the module root.
	Out string
	// Logger gets one line per trial; slog.Default() when nil.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Trials == 0 {
		c.Trials = 100
	}
	if c.Points == nil {
		c.Points = allPoints
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// env is what every trial shares: the worker and reconcile programs, the dev server, the
// database.
type env struct {
	dir      string // the campaign's temporary folder
	bins     map[string]string
	hostPort string
	client   client.Client
	db       string
	pg       *pgtest.Cluster
	logger   *slog.Logger
}

// plan deals the points round-robin over n trials and shuffles them with
// seed.
func plan(points []Point, n int, seed int64) []Point {
	out := make([]Point, n)
	for i := range out {
		out[i] = points[i%len(points)]
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
	order := plan(cfg.Points, cfg.Trials, cfg.Seed)
	cfg.Logger.Info("crash campaign", "trials", cfg.Trials, "seed", cfg.Seed)
	e, cleanup, err := setup(ctx, cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &Result{Trials: cfg.Trials, Seed: cfg.Seed, Points: cfg.Points}
	for i, p := range order {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := e.trial(ctx, i, p)
		res.Outcomes = append(res.Outcomes, t)
		cfg.Logger.Info("trial", "n", i+1, "point", p.Name, "hit", t.Hit, "indeterminate", t.Settled,
			"tickets", t.Tickets, "took", t.Took.Round(100*time.Millisecond), "failure", t.Failure)
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
	args := []string{"build", "-o", dir + "/"}
	for _, prog := range []string{"worker", "reconcile"} {
		e.bins[prog] = filepath.Join(dir, prog)
		args = append(args, "github.com/agentrun/agentrun/"+prog)
	}
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build: %v: %s", err, bytes.TrimSpace(out))
	}
	if e.pg, err = pgtest.StartCluster(); err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	closers = append(closers, e.pg.Stop)
	e.db = e.pg.URL()
	cli, err := devserver.CLI()
	if err != nil {
		return nil, nil, err
	}
	dev, err := devserver.Start(ctx, cli, io.Discard)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = dev.Stop() })
	e.hostPort = dev.FrontendHostPort()
	e.client = dev.Client()
	ok = true
	return e, cleanup, nil
}
