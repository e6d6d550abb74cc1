package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentrun/agentrun/internal/config"
)

// What the programs' mains share: their settings from the environment, the
// engine a command acts on, a long-running program's logger and start.

// LoadSettings reads the settings of a command-line program (starter,
// reconcile) from the environment, with the commands named as this
// program was called. A setting that cannot be used is a *config.Error
// (ExitSettings).
func LoadSettings() (Settings, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return Settings{}, err
	}
	return Settings{Config: cfg, Commands: CommandsFor(os.Args[0])}, nil
}

// OnEngine opens the engine a command acts on, the local journal's (local)
// or the Temporal server's (dialled as service, verbose as DialRemote
// takes it), runs the command's part for that engine, and closes it.
func OnEngine(ctx context.Context, s Settings, local bool, service string, verbose bool, onLocal func(*Local) error, onRemote func(*Remote) error) error {
	if local {
		l, err := OpenLocal(ctx, s)
		if err != nil {
			return err
		}
		defer l.Close()
		return onLocal(l)
	}
	r, err := DialRemote(ctx, s, service, verbose)
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	return onRemote(r)
}

// StartService is the start of a long-running program (worker,
// codecserver): its logger, text on stderr at info and above, and its
// configuration; a setting it cannot use ends the program with one line,
// "program: what is wrong", and ExitSettings.
func StartService(program string) (*slog.Logger, config.Config) {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, program+":", TermSafe(err.Error()))
		os.Exit(ExitSettings)
	}
	return logger, cfg
}
