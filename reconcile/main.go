// Command reconcile is the operator's tool: list the runs waiting on a
// person, show one, approve or deny a gated call, settle an indeterminate
// write with done or retry.
//
//	go run ./reconcile --local list
//	go run ./reconcile --local approve RUN MARKER
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrun/agentrun/internal/cli"
)

func main() {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	local := fs.Bool("local", false, "act on the local journal (AGENTRUN_JOURNAL), with no server")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: reconcile [--local] COMMAND ARGS...")
		fmt.Fprintln(fs.Output(), cli.ReconcileUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *local, fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconcile:", err)
	}
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, local bool, args []string) error {
	if !local {
		return &cli.UsageError{Msg: "only --local is available in this build"}
	}
	l, err := cli.OpenLocal(os.Getenv)
	if err != nil {
		return err
	}
	return l.ReconcileLocal(ctx, os.Stdout, args)
}
