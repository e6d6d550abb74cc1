package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
)

func main() {
	var cfg config
	flag.BoolVar(&cfg.Quick, "quick", false, "a short smoke run: few turns, rounds and appends")
	flag.StringVar(&cfg.Out, "out", "", "the Markdown file the table is written to (replaced, keeping make chaos's crash campaign section); - for none (default BENCHMARKS.md, or none with -only)")
	flag.StringVar(&cfg.Dir, "dir", "", "folder for the journals and fsync probes (default: a temporary folder)")
	flag.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the bench process over the sections measured to this file")
	flag.StringVar(&cfg.MemProfile, "memprofile", "", "write heap and goroutine profiles of the approval sections' workers with their runs parked to PREFIX-RUNS-SIDE.pprof and .goroutines.txt")
	only := flag.String("only", "", "measure only these sections, comma-separated: "+strings.Join(sectionNames(), ", "))
	flag.Parse()
	if cfg.MemProfile != "" {
		// As early as can be: a sample's size is scaled by the rate at
		// the time the profile is written.
		runtime.MemProfileRate = heapProfileRate
	}
	var err error
	if cfg.Only, err = parseOnly(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
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
