package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	var cfg config
	flag.BoolVar(&cfg.Quick, "quick", false, "a short smoke run: few turns, rounds and appends")
	flag.StringVar(&cfg.Out, "out", "BENCHMARKS.md", "the Markdown file the table is written to (replaced, keeping make chaos's crash campaign section)")
	flag.StringVar(&cfg.Dir, "dir", "", "folder for the journals and fsync probes (default: a temporary folder)")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the step overhead section to this file")
	flag.StringVar(&cfg.LongProfile, "longprofile", "", "write a CPU profile of the long run to this file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if errors.Is(err, errDevServer) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}
