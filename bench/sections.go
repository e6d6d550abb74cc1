package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// section is one part of the bench: its name (for -only), what the
// progress line says it measures, and the measurement.
type section struct {
	name    string
	what    string
	measure func() ([]row, []string, error)
}

// sections lists the bench's sections in the order a full run measures
// them. needWorker builds the worker program (once) for the sections that
// run worker processes.
func sections(ctx context.Context, env *benchEnv, cfg config, p params, needWorker func() (string, error)) []section {
	rowsOnly := func(f func() ([]row, error)) func() ([]row, []string, error) {
		return func() ([]row, []string, error) {
			r, err := f()
			return r, nil, err
		}
	}
	withWorker := func(f func(bin string) ([]row, error)) func() ([]row, []string, error) {
		return rowsOnly(func() ([]row, error) {
			bin, err := needWorker()
			if err != nil {
				return nil, err
			}
			return f(bin)
		})
	}
	return []section{
		{"steps", fmt.Sprintf("step overhead (%d turns, %d rounds each)", p.steps.Turns, p.steps.Rounds), func() ([]row, []string, error) {
			s, err := stepOverhead(ctx, env, p.steps)
			return s.rows, s.findings, err
		}},
		{"cluster", fmt.Sprintf("step overhead on a real cluster (%d turns, %d rounds each)", p.steps.Turns, p.steps.Rounds), func() ([]row, []string, error) {
			s, err := clusterStepOverhead(ctx, env, cfg.CLI, p.steps)
			return s.rows, s.findings, err
		}},
		{"encryption", fmt.Sprintf("encryption (%d turns, %d rounds each)", p.encrypt.Turns, p.encrypt.Rounds), rowsOnly(func() ([]row, error) {
			return encryption(ctx, env, p.encrypt)
		})},
		{"tracing", fmt.Sprintf("tracing (%d turns, %d rounds each)", p.trace.Turns, p.trace.Rounds), rowsOnly(func() ([]row, error) {
			return tracingOverhead(ctx, env, p.trace)
		})},
		{"library", fmt.Sprintf("agentrun as a library: embedded worker vs the worker program (%d turns, %d rounds each), and what it links", p.lib.Turns, p.lib.Rounds), withWorker(func(bin string) ([]row, error) {
			return library(ctx, env, bin, p.lib)
		})},
		{"delegated", fmt.Sprintf("delegated step vs direct tool call (%d rounds each)", p.deleg.Rounds), rowsOnly(func() ([]row, error) {
			return delegatedStep(ctx, env, p.deleg)
		})},
		{"provider", fmt.Sprintf("the provider: prompt cache and cost (one run of %d model steps per provider)", p.prov.Steps), rowsOnly(func() ([]row, error) {
			return providerSection(ctx, env, p.prov)
		})},
		{"fleetlimit", fmt.Sprintf("fleet-wide rate limits (%d workers, %d runs of %d model calls, shared and each worker alone)", p.fleetLim.Workers, p.fleetLim.Runs, p.fleetLim.Turns), withWorker(func(bin string) ([]row, error) {
			return fleetLimit(ctx, env, bin, p.fleetLim)
		})},
		{"journal", fmt.Sprintf("local journal (%d appends each)", p.journal.Appends), rowsOnly(func() ([]row, error) {
			return localJournal(ctx, env, p.journal)
		})},
		{"long", fmt.Sprintf("long run (%d turns)", p.long.Turns), rowsOnly(func() ([]row, error) {
			return longRun(ctx, env, p.long)
		})},
		{"fork", fmt.Sprintf("fork: time to the first live step at turn %d and turn %d of a %d-turn run (%d rounds each)", p.fork.Near, p.fork.Far, p.fork.Turns, p.fork.Rounds), rowsOnly(func() ([]row, error) {
			return forkTimes(ctx, env, p.fork)
		})},
		{"streamed", fmt.Sprintf("streamed turns (%d turns of %s, streamed and not)", p.stream.Turns, p.stream.Delay), rowsOnly(func() ([]row, error) {
			return streamedTurns(ctx, env, p.stream)
		})},
		{"tokens", fmt.Sprintf("token latency (%d streamed answers of %s, Go and TypeScript subscribers)", p.tokens.Runs, p.tokens.Delay), rowsOnly(func() ([]row, error) {
			return tokenLatency(ctx, env, p.tokens)
		})},
		{"actions", fmt.Sprintf("Temporal Cloud billable actions per model step (%d turns), streamed turn (%d turns), parked run and delegated step", p.actions.Turns, p.actions.StreamTurns), rowsOnly(func() ([]row, error) {
			return cloudActions(ctx, env, p.actions)
		})},
		{"guard", fmt.Sprintf("guard journal on PostgreSQL (%d write steps each)", p.guard.Steps), rowsOnly(func() ([]row, error) {
			return guardLatency(ctx, env, p.guard)
		})},
		{"kill", fmt.Sprintf("kill → resume (%d trials)", p.kill.Trials), withWorker(func(bin string) ([]row, error) {
			return killResume(ctx, env, bin, p.kill)
		})},
		{"settle", fmt.Sprintf("kill → settled, probe-only write (%d trials)", p.settle.Trials), withWorker(func(bin string) ([]row, error) {
			return killSettled(ctx, env, bin, p.settle)
		})},
		{"parked", fmt.Sprintf("parked approvals (%d runs)", p.parked.Runs), withWorker(func(bin string) ([]row, error) {
			return parkedApprovals(ctx, env, bin, p.parked)
		})},
		{"batch", fmt.Sprintf("approval under load (%d runs each, one batch signal)", p.batch.Runs), rowsOnly(func() ([]row, error) {
			return approvalBatch(ctx, env, p.batch)
		})},
		{"fleet", fmt.Sprintf("parked runs at fleet scale (%d runs each, one batch signal)", p.fleet.Runs), rowsOnly(func() ([]row, error) {
			return approvalBatch(ctx, env, p.fleet)
		})},
		// Last: its runs' activity timers (workflows.StepTimeout) fire after
		// the bench, not during another section.
		{"saturation", fmt.Sprintf("saturation (%d runs of %d turns each, %d rounds)", p.satur.Runs, p.satur.Turns, p.satur.Rounds), rowsOnly(func() ([]row, error) {
			return saturation(ctx, env, p.satur)
		})},
	}
}

// sectionNames are the names -only accepts, in the order they run.
func sectionNames() []string {
	var names []string
	for _, s := range sections(context.Background(), nil, config{}, params{}, nil) {
		names = append(names, s.name)
	}
	return names
}

// parseOnly checks -only's comma-separated section names.
func parseOnly(v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	known := sectionNames()
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("-only: unknown section %q (valid: %s)", n, strings.Join(known, ", "))
		}
		names = append(names, n)
	}
	return names, nil
}

// runs reports whether the section named name is measured.
func (c config) runs(name string) bool { return len(c.Only) == 0 || slices.Contains(c.Only, name) }
