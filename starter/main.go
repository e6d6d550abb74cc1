// Command starter starts an agent run, or resumes or attaches to one.
//
//	go run ./starter --id RUN [--wait] PROMPT...   a run on Temporal
//	go run ./starter --local --id RUN PROMPT...    the local journal engine
//
// The same id with the same prompt attaches to (or resumes) the existing
// run; with no prompt it attaches to whatever run has that id; another
// prompt is refused. Exit codes: 0 Completed (or started, without --wait),
// 1 error or Failed, 2 usage, 3 AwaitingApproval, 4 Indeterminate, 5 busy
// (--local: another process drives the run, nothing was written; or the
// driver lost its PostgreSQL lock and stopped before its next step), 6
// Cancelled, 7 BudgetExceeded, 8 stopped (--local: a model call or read
// failed on every attempt, or with an error that trying again cannot
// mend; the journal says why, and starter --local --id RUN resumes it).
// --max-turns, --max-tokens and --max-cost set a new run's limits; --session keeps a
// new run open after each answer (Idle, waiting for a message; --wait then
// returns at the first Idle). --follow (--local; implied there by --wait
// and --session) keeps the driver on its run where it waits for a person
// or a message, going on when the record lands; Ctrl-C or SIGTERM then
// leaves the run as it is and exits with its status's code. --stream has
// a run stream its model text (--wait prints it); with --local the
// starter prints it as the model writes it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentrun/agentrun/internal/cli"
	"github.com/agentrun/agentrun/operator"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
)

func main() {
	fs := flag.NewFlagSet("starter", flag.ContinueOnError)
	local := fs.Bool("local", false, "run on the local journal (AGENTRUN_JOURNAL), with no server")
	wait := fs.Bool("wait", false, "follow the run, printing each status change, until it ends")
	id := fs.String("id", "", "the run id: letters, digits, '_', '.', '-', at most 128 characters")
	maxTurns := fs.String("max-turns", "", "a new run's limit on model calls (default AGENTRUN_MAX_TURNS, or 25)")
	session := fs.Bool("session", false, "keep the run open after each answer: it waits Idle for a message (reconcile message), at most AGENTRUN_SESSION_IDLE (default 24h)")
	maxTokens := fs.String("max-tokens", "", "a new run's limit on tokens, input plus output (default AGENTRUN_MAX_TOKENS_PER_RUN, or none)")
	maxCost := fs.String("max-cost", "", "a new run's limit on cost, in US dollars at the models' prices (the models file's price); default none")
	verbose := fs.Bool("verbose", false, "with --wait, also print the raw errors behind what it says about the connection to Temporal and the workers")
	follow := fs.Bool("follow", false, "with --local: where the run waits for a person (or, a session, for a message) keep its lock and go on when the record lands, instead of exiting (implied by --wait and --session); Ctrl-C leaves the run as it is")
	stream := fs.Bool("stream", false, "a new run streams the model's text to its stream as the model writes it, for --wait and subscribers to print (default: with --wait or --session); with --local, the starter prints it as it comes")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: "+cli.CommandsFor(os.Args[0]).Starter+" [--local] --id RUN [--wait] [--max-turns N] [--max-tokens N] [--max-cost USD] [--session] [--follow] [--stream=false] [--verbose] [PROMPT...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var streamSet, followSet *bool
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "stream":
			streamSet = stream
		case "follow":
			followSet = follow
		}
	})
	err := run(ctx, *local, *wait, *session, *verbose, streamSet, followSet, *id, *maxTurns, *maxTokens, *maxCost, strings.Join(fs.Args(), " "))
	if code := cli.ExitCode(err); code == cli.ExitError || code == cli.ExitUsage || code == cli.ExitBusy {
		fmt.Fprintln(os.Stderr, "starter:", cli.TermSafe(err.Error()))
	}
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, local, wait, session, verbose bool, stream, follow *bool, id, maxTurns, maxTokens, maxCost, prompt string) error {
	if id == "" {
		return &cli.UsageError{Msg: "--id is required: name the run (letters, digits, '_', '.', '-')"}
	}
	if err := operator.ValidRunID(id); err != nil {
		return &cli.UsageError{Msg: err.Error()}
	}
	settings, err := cli.LoadSettings()
	if err != nil {
		return err // a *config.Error: cli.ExitSettings
	}
	limits, err := settings.Limits(maxTurns, maxTokens, maxCost)
	if err != nil {
		return err
	}
	limits.Session, limits.Stream = session, stream
	if stream == nil && wait {
		on := true // --wait prints the model's text as it comes
		limits.Stream = &on
	}
	if err := cli.FollowFlags(&limits, local, wait, session, follow != nil && *follow, follow != nil); err != nil {
		return err
	}
	return cli.OnEngine(ctx, settings, local, export.ServiceStarter, verbose,
		func(l *cli.Local) error { return l.StartLocal(ctx, os.Stdout, id, prompt, limits) },
		func(r *cli.Remote) error { return r.Start(ctx, os.Stdout, id, prompt, limits, wait) })
}
