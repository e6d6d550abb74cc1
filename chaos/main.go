package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var cfg Config
	flag.IntVar(&cfg.Trials, "trials", 0, "number of trials (default: 6 per kill point, 180 for all of them)")
	flag.StringVar(&cfg.Out, "out", "", "file to write the table to (default: the \"## Crash campaign\" section of BENCHMARKS.md)")
	flag.Int64Var(&cfg.Seed, "seed", 0, "seed of the shuffle (default: the time)")
	only := flag.String("points", "", "comma-separated kill points to run, [ENGINE/]POINT[/SETTLE] (default: all; e.g. local/model,temporal/devserver,freeze-write-before,cut-temporal/probe)")
	flag.Parse()
	if *only != "" {
		cells, err := parseCells(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos: -points:", err)
			os.Exit(2)
		}
		cfg.Cells = cells
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	level := slog.LevelInfo
	if os.Getenv("CHAOS_DEBUG") != "" {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	fmt.Print(res.Table())
	if err := res.Write(cfg.Out); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if err := res.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}
