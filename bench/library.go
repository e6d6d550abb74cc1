package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit"
	"github.com/agentrun/agentrun/internal/testkit/deps"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// libraryParams sizes the library section.
type libraryParams struct {
	// Turns is T, the script's tool-calling turns: each calls lookup once;
	// a final text turn follows.
	Turns int
	// Rounds is how many measured runs of each side alternate, after one
	// warm-up run of each.
	Rounds int
}

// The section's programs, built from the module: the smallest embedded
// worker of agentrun (worker.New, agentrun.Register, the scripted model
// and one Go tool) and its baseline, a plain Temporal worker of a bare
// activity.
const (
	embeddedPkg = "bench/internal/embeddedworker"
	plainPkg    = "bench/internal/plainworker"
)

// library measures agentrun as a library: the steps of runs on an
// embedded worker (embeddedworker, a process) against the same runs on
// the worker program (workerBin), and what the embedded worker links
// against a plain Temporal worker.
func library(ctx context.Context, env *benchEnv, workerBin string, p libraryParams) ([]row, error) {
	full, stripped := env.subdir("library-bin"), env.subdir("library-bin-stripped")
	if err := testenv.Build(ctx, full, embeddedPkg, plainPkg); err != nil {
		return nil, err
	}
	if err := buildStripped(ctx, stripped, embeddedPkg, plainPkg); err != nil {
		return nil, err
	}
	rows, err := libraryStep(ctx, env, filepath.Join(full, "embeddedworker"), workerBin, p)
	if err != nil {
		return nil, err
	}
	linked, err := libraryLinks(ctx, full, stripped, workerBin)
	if err != nil {
		return nil, err
	}
	return append(rows, linked...), nil
}

// libraryStep runs the same script, T lookup turns and an answer, on
// both workers, alternating, and compares the wall time per activity.
// Both are processes on the bench's dev server, each on its own queue and
// journal folder; the worker program's lookup is its demo tool, the
// embedded worker's a Go tool made by agentrun.NewTool.
func libraryStep(ctx context.Context, env *benchEnv, embeddedBin, workerBin string, p libraryParams) ([]row, error) {
	n := activityCount(p.Turns)
	script, err := json.Marshal(agentScript(p.Turns))
	if err != nil {
		return nil, err
	}
	scriptFile := filepath.Join(env.subdir("library"), "script.json")
	if err := os.WriteFile(scriptFile, script, 0o600); err != nil {
		return nil, err
	}
	driver, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer driver.Close()
	stamp := runStamp()
	embedded := &pairSide{name: "embedded", client: driver, queue: "bench-embedded-" + stamp}
	program := &pairSide{name: "program", client: driver, queue: "bench-program-" + stamp}
	for _, w := range []struct {
		side *pairSide
		bin  string
	}{{embedded, embeddedBin}, {program, workerBin}} {
		wenv := append(env.workerEnv(w.side.queue, env.subdir("library-"+w.side.name), 0), "AGENTRUN_MODEL=scripted:"+scriptFile)
		proc, err := startWorker(ctx, w.bin, wenv)
		if err != nil {
			return nil, fmt.Errorf("%s worker: %w", w.side.name, err)
		}
		defer proc.Stop(workerStopTimeout)
	}
	in := workflows.Input{Messages: []agent.Message{{Role: agent.RoleUser, Content: "Which of my policies changed?"}}, MaxTurns: p.Turns + 1}
	if err := runPaired(ctx, "library", [2]*pairSide{embedded, program}, in, n, p.Rounds, nil); err != nil {
		return nil, err
	}
	ePhases, eBytes, err := historyPhases(ctx, driver, embedded.ids)
	if err != nil {
		return nil, err
	}
	pPhases, pBytes, err := historyPhases(ctx, driver, program.ids)
	if err != nil {
		return nil, err
	}
	perAct := func(b historyBytes, runs int) float64 { return float64(b.total) / float64(runs*n) }
	sec := fmt.Sprintf("Library: an embedded worker (worker.New + agentrun.Register, the scripted model, a Go lookup tool) vs the worker program (cmd worker, its demo lookup), processes, T=%d lookup turns (%d activities), %d alternating rounds each", p.Turns, n, p.Rounds)
	return []row{
		{Section: sec, Figure: "ms per activity, embedded worker vs the worker program (median of rounds)",
			Measured: ms(median(embedded.times)), Baseline: ms(median(program.times)), Unit: "ms", Goal: 1.02},
		{Section: sec, Figure: "ms per activity, embedded worker vs the worker program (mean of rounds)",
			Measured: ms(mean(embedded.times)), Baseline: ms(mean(program.times)), Unit: "ms"},
		{Section: sec, Figure: "embedded vs the worker program: median gap " + phaseActRun + " (the step's own work: the activity, its model or tool, the write guard)",
			Measured: ms(median(ePhases[phaseActRun])), Baseline: ms(median(pPhases[phaseActRun])), Unit: "ms"},
		{Section: sec, Figure: "embedded vs the worker program: median gap " + phaseCycle,
			Measured: ms(median(ePhases[phaseCycle])), Baseline: ms(median(pPhases[phaseCycle])), Unit: "ms"},
		{Section: sec, Figure: "embedded vs the worker program: history bytes per activity",
			Measured: perAct(eBytes, len(embedded.ids)), Baseline: perAct(pBytes, len(program.ids)), Unit: "B"},
	}, nil
}

// libraryLinks counts what the programs link (go list -deps, the standard
// library's packages included) and weighs their binaries: as go build
// makes them (symbols and DWARF kept) in full, with -ldflags='-s -w' in
// stripped.
func libraryLinks(ctx context.Context, full, stripped, workerBin string) ([]row, error) {
	root := testkit.Root()
	graphs := map[string]*deps.Graph{}
	for _, pkg := range []string{embeddedPkg, plainPkg, "worker"} {
		g, err := deps.List(ctx, root, "./"+pkg)
		if err != nil {
			return nil, err
		}
		graphs[pkg] = g
	}
	sizes := map[string]float64{}
	for name, path := range map[string]string{
		"embedded": filepath.Join(full, "embeddedworker"), "plain": filepath.Join(full, "plainworker"),
		"embedded stripped": filepath.Join(stripped, "embeddedworker"), "plain stripped": filepath.Join(stripped, "plainworker"),
		"worker": workerBin,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		sizes[name] = float64(fi.Size()) / 1e6
	}
	e, b, w := graphs[embeddedPkg], graphs[plainPkg], graphs["worker"]
	outside := func(g *deps.Graph) float64 { return float64(len(g.Packages) - len(g.Standard)) }
	sec := "Library: what a scripted-model embedded worker (bench/internal/embeddedworker: worker.New, agentrun.Register, one Go tool) links vs a plain Temporal worker of a bare activity (bench/internal/plainworker)"
	return []row{
		{Section: sec, Figure: "packages linked (go list -deps, the standard library's included), embedded vs plain worker",
			Measured: float64(len(e.Packages)), Baseline: float64(len(b.Packages)), Unit: "packages", Goal: 1.3},
		{Section: sec, Figure: "packages linked outside the standard library, embedded vs plain worker; the embedded worker's extra ones by module: " + extraByModule(e, b),
			Measured: outside(e), Baseline: outside(b), Unit: "packages"},
		{Section: sec, Figure: "binary size as go build makes it (symbols and DWARF kept), embedded vs plain worker",
			Measured: sizes["embedded"], Baseline: sizes["plain"], Unit: "MB", Goal: 1.3},
		{Section: sec, Figure: "binary size stripped (go build -ldflags='-s -w'), embedded vs plain worker",
			Measured: sizes["embedded stripped"], Baseline: sizes["plain stripped"], Unit: "MB", Goal: 1.3},
		{Section: sec, Figure: "packages linked, the worker program (cmd worker: both providers, MCP, metrics, tracing) vs plain worker",
			Measured: float64(len(w.Packages)), Baseline: float64(len(b.Packages)), Unit: "packages"},
		{Section: sec, Figure: "binary size as go build makes it, the worker program vs plain worker",
			Measured: sizes["worker"], Baseline: sizes["plain"], Unit: "MB"},
	}, nil
}

// extraByModule lists the packages g links and base does not, counted by
// module (the standard library as "std"), the largest count first.
func extraByModule(g, base *deps.Graph) string {
	linked := map[string]bool{}
	for _, p := range base.Packages {
		linked[p] = true
	}
	count := map[string]int{}
	for _, p := range g.Packages {
		if !linked[p] {
			count[cmp.Or(g.Module[p], "std")]++
		}
	}
	mods := slices.SortedFunc(maps.Keys(count), func(x, y string) int {
		return cmp.Or(cmp.Compare(count[y], count[x]), cmp.Compare(x, y))
	})
	var parts []string
	for _, m := range mods {
		parts = append(parts, fmt.Sprintf("%s %d", m, count[m]))
	}
	return orNone(strings.Join(parts, ", "))
}

// buildStripped builds the module's programs pkgs into dir as go build
// -ldflags='-s -w' makes them: no symbol table, no DWARF.
func buildStripped(ctx context.Context, dir string, pkgs ...string) error {
	dir, err := filepath.Abs(dir) // the build runs in the module root
	if err != nil {
		return err
	}
	args := []string{"build", "-ldflags=-s -w", "-o", dir + string(filepath.Separator)}
	for _, p := range pkgs {
		args = append(args, "./"+p)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = testkit.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -ldflags='-s -w' %s: %v\n%s", strings.Join(pkgs, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
