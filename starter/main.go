// Command starter starts an agent run, or resumes or attaches to one.
//
//	go run ./starter --local --id RUN PROMPT...   the local journal engine
//
// Exit codes: 0 Completed, 1 error or Failed, 2 usage, 3 AwaitingApproval,
// 4 Indeterminate.
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
)

func main() {
	fs := flag.NewFlagSet("starter", flag.ContinueOnError)
	local := fs.Bool("local", false, "run on the local journal (AGENTRUN_JOURNAL), with no server")
	id := fs.String("id", "", "the run id: "+"letters, digits, '_', '.', '-', at most 128 characters")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: starter --local --id RUN [PROMPT...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(cli.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *local, *id, strings.Join(fs.Args(), " "))
	if err != nil && cli.ExitCode(err) != cli.ExitAwaitingApproval && cli.ExitCode(err) != cli.ExitIndeterminate {
		fmt.Fprintln(os.Stderr, "starter:", err)
	}
	os.Exit(cli.ExitCode(err))
}

func run(ctx context.Context, local bool, id, prompt string) error {
	if !local {
		return &cli.UsageError{Msg: "only --local is available in this build"}
	}
	if id == "" {
		return &cli.UsageError{Msg: "--id is required: name the run (letters, digits, '_', '.', '-')"}
	}
	l, err := cli.OpenLocal(os.Getenv)
	if err != nil {
		return err
	}
	return l.StartLocal(ctx, os.Stdout, id, prompt)
}
