// Command reconcile is the operator's tool: list the runs waiting on a
// person, show one, approve or deny a gated call, settle an indeterminate
// write with done or retry.
//
//	go run ./reconcile list
//	go run ./reconcile approve RUN MARKER
//	go run ./reconcile --local done RUN STEP RESULT
//
// On Temporal, approve, deny, done and retry are workflow updates: the run
// checks them at once and a refused input is an error here.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
)

func main() {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	local := fs.Bool("local", false, "act on the local journal (AGENTRUN_JOURNAL), with no server")
	verbose := fs.Bool("verbose", false, "with --wait, also print the raw errors behind what it says about the connection to Temporal and the workers")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: "+cli.CommandsFor(os.Args[0]).Reconcile+" [--local] [--verbose] COMMAND ARGS...")
		fmt.Fprintln(fs.Output(), cli.ReconcileUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *local, *verbose, fs.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconcile:", cli.TermSafe(err.Error()))
	}
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, local, verbose bool, args []string) error {
	settings, err := cli.LoadSettings()
	if err != nil {
		return err // a *config.Error: cli.ExitSettings
	}
	if err := cli.CheckOperatorArgs(args); err != nil {
		return err
	}
	return cli.OnEngine(ctx, settings, local, export.ServiceReconcile, verbose,
		func(l *cli.Local) error { return l.ReconcileLocal(ctx, os.Stdout, args) },
		func(r *cli.Remote) error { return r.Reconcile(ctx, os.Stdout, args) })
}
