package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/workflows"
)

// fleetLimitParams sizes the fleet limit section.
type fleetLimitParams struct {
	// Runs is how many runs each side starts.
	Runs int
	// Turns is each run's model calls: Turns-1 lookup calls (the fake's
	// -turns) and the answer.
	Turns int
	// Workers is how many worker processes each side runs.
	Workers int
	// RPM and TPM are the fake's limits within one Window: the 60
	// requests and 40,000 tokens a minute, compressed into Window.
	RPM, TPM int
	// Window is the fake's sliding window; the models file declares the
	// same limits scaled to a minute.
	Window time.Duration
}

// Goals of the fleet limit section (the figures).
const (
	// fleet429Goal bounds the 429s against all requests the fake received.
	fleet429Goal = 0.01
	// fleetRateGoal is the least share of the limit the fleet's answered
	// requests reach over the steady middle.
	fleetRateGoal = 0.9
)

// fleetSample is the fake's answered counts at one instant.
type fleetSample struct {
	at               time.Time
	requests, tokens int64
}

// fleetSamplePeriod is how often the section reads the fake's /stats.
const fleetSamplePeriod = 100 * time.Millisecond

// fleetSide is what one side of the section measured.
type fleetSide struct {
	fake              providerfake.ProviderStats
	samples           []fleetSample
	completed, failed int
	took              time.Duration
}

// steady returns the answered requests and tokens a minute from the first
// sample at or past 10% of the side's answered requests to the first at or
// past 90%, and that span.
func (s fleetSide) steady() (rpm, tpm float64, span time.Duration) {
	n := s.fake.Requests
	at := func(share float64) *fleetSample {
		for i := range s.samples {
			if float64(s.samples[i].requests) >= share*float64(n) {
				return &s.samples[i]
			}
		}
		return nil
	}
	a, b := at(0.1), at(0.9)
	if a == nil || b == nil || !b.at.After(a.at) {
		return 0, 0, 0
	}
	span = b.at.Sub(a.at)
	return float64(b.requests-a.requests) / span.Minutes(), float64(b.tokens-a.tokens) / span.Minutes(), span
}

// fleetLimit runs the fleet against the provider fake twice: once
// with Workers worker processes sharing one journal folder, hence one
// limiter of the models file's limits (the fleet's pace), and once with
// each worker on a journal folder of its own, each pacing itself to the
// whole limit (each worker alone). Each side gets a fresh fake and its own
// queue, and starts its Runs at twice the rate of runs the limit serves.
func fleetLimit(ctx context.Context, env *benchEnv, workerBin string, p fleetLimitParams) ([]row, error) {
	began := time.Now()
	dir := env.subdir("fleetlimit")
	bin := filepath.Join(dir, "bin")
	if err := testenv.Build(ctx, bin, testenv.ProviderFakePkg); err != nil {
		return nil, err
	}
	perMinute := float64(time.Minute) / float64(p.Window)
	limitRPM, limitTPM := int(float64(p.RPM)*perMinute), int(float64(p.TPM)*perMinute)
	modelsPath := filepath.Join(dir, "models.json")
	models := map[string]any{"openai:" + providerModel: map[string]any{"limits": map[string]any{"requests_per_minute": limitRPM, "tokens_per_minute": limitTPM}}}
	if err := os.WriteFile(modelsPath, []byte(testenv.MustJSON(models)), 0o600); err != nil {
		return nil, err
	}
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// Twice the limit's demand: runs start at twice the rate at which the
	// limit serves their model calls.
	startEvery := p.Window * time.Duration(p.Turns) / time.Duration(2*p.RPM)
	stamp := runStamp()
	side := func(name string, shared bool) (fleetSide, error) {
		fake, root, err := testenv.LaunchProviderFake(ctx, filepath.Join(bin, filepath.Base(testenv.ProviderFakePkg)),
			"-rpm", strconv.Itoa(p.RPM), "-tpm", strconv.Itoa(p.TPM), "-window", p.Window.String(), "-turns", strconv.Itoa(p.Turns-1))
		if err != nil {
			return fleetSide{}, err
		}
		defer fake.Stop(5 * time.Second)
		queue := fmt.Sprintf("bench-fleetlimit-%s-%s", name, stamp)
		for i := range p.Workers {
			journal := filepath.Join(dir, name, "journal")
			if !shared {
				journal = filepath.Join(dir, name, fmt.Sprintf("journal-%d", i))
			}
			wenv := append(env.workerEnv(queue, journal, 0), testenv.ProviderFakeEnv(root, providerfake.OpenAI, providerModel)...)
			w, err := startWorker(ctx, workerBin, append(wenv, "AGENTRUN_MODELS="+modelsPath))
			if err != nil {
				return fleetSide{}, err
			}
			defer w.Stop(workerStopTimeout)
		}
		return runFleet(ctx, c, root, queue, p, startEvery)
	}
	shared, err := side("shared", true)
	if err != nil {
		return nil, fmt.Errorf("shared limit: %w", err)
	}
	alone, err := side("alone", false)
	if err != nil {
		return nil, fmt.Errorf("each worker alone: %w", err)
	}

	sec := fmt.Sprintf("Fleet-wide rate limits: %d worker processes (cmd worker, openai: provider) run %d runs of %d model calls (%d lookup calls and the answer) against the provider fake (cmd providerfake) enforcing %d requests and %s tokens in any %s, the issue's 60 a minute and 40,000 a minute %.0f× faster, which the models file declares as %s requests and %s tokens a minute; runs start one every %s, twice the runs the limit serves; each side its own fake and queue; its rate over the steady middle, from the first /stats sample (every %s) at 10%% of its answered requests to the first at 90%% (the section took %s: shared %s, each worker alone %s)",
		p.Workers, p.Runs, p.Turns, p.Turns-1, p.RPM, thousands(p.TPM), p.Window, perMinute, thousands(limitRPM), thousands(limitTPM), startEvery, fleetSamplePeriod,
		time.Since(began).Round(time.Second), shared.took.Round(time.Second), alone.took.Round(time.Second))
	var rows []row
	for _, s := range []struct {
		label string
		side  fleetSide
		goals bool
	}{
		{"shared limit (one journal folder, one limiter)", shared, true},
		{"each worker alone (a journal folder each, so each paces itself to the whole limit)", alone, false},
	} {
		f := s.side.fake
		rpm, tpm, span := s.side.steady()
		r := []row{
			{Section: sec, Figure: fmt.Sprintf("%s: 429s vs all requests the fake received (%d answered)", s.label, f.Requests),
				Measured: float64(f.RateLimited), Baseline: float64(f.Requests + f.RateLimited)},
			{Section: sec, Figure: fmt.Sprintf("%s: answered requests a minute over the steady middle (%s) vs the limit", s.label, span.Round(100*time.Millisecond)),
				Measured: rpm, Baseline: float64(limitRPM)},
			{Section: sec, Figure: fmt.Sprintf("%s: answered tokens a minute over the steady middle vs the limit", s.label),
				Measured: tpm, Baseline: float64(limitTPM)},
			{Section: sec, Figure: fmt.Sprintf("%s: runs failed vs runs started", s.label),
				Measured: float64(s.side.failed), Baseline: float64(p.Runs)},
			{Section: sec, Figure: fmt.Sprintf("%s: runs completed vs runs started", s.label),
				Measured: float64(s.side.completed), Baseline: float64(p.Runs)},
		}
		if s.goals {
			r[0].Goal, r[0].GoalNote = fleet429Goal, "the issue's 1%"
			r[1].Floor, r[1].GoalNote = fleetRateGoal, "the issue's figure"
			r[3].Goal, r[3].GoalNote = 0.001, "none" // 0 of them, as the table rounds
			r[4].Floor, r[4].GoalNote = 1, "every run"
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// runFleet starts p.Runs runs on queue, one every startEvery, waits for
// them all while it samples the fake's /stats at root, and returns what the
// side measured.
func runFleet(ctx context.Context, c client.Client, root, queue string, p fleetLimitParams, startEvery time.Duration) (fleetSide, error) {
	// Every run's model calls at the limit's pace, three times over, and
	// two minutes for the workers and the dev server.
	bound := 3*time.Duration(p.Runs*p.Turns)*p.Window/time.Duration(p.RPM) + 2*time.Minute
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var s fleetSide
	var mu sync.Mutex
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(fleetSamplePeriod)
		defer tick.Stop()
		for {
			st, err := fakeStats(ctx, root)
			if err == nil {
				if f := st.Providers[providerfake.OpenAI]; f != nil {
					mu.Lock()
					s.samples = append(s.samples, fleetSample{at: time.Now(), requests: f.Requests, tokens: f.InputTokens + f.OutputTokens})
					mu.Unlock()
				}
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	began := time.Now()
	want := fmt.Sprintf("I read %d tool results.", p.Turns-1)
	var wg sync.WaitGroup
	var wrong []string
	in := workflows.Input{Messages: agent.UserMessages("Bench fleet limit: look up the policies and answer."), MaxTurns: p.Turns + 10}
	tick := time.NewTicker(startEvery)
	for i := range p.Runs {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		id := fmt.Sprintf("%s-%d", queue, i)
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
		if err != nil {
			tick.Stop()
			cancel()
			close(stopSampling)
			wg.Wait()
			<-sampled
			return s, fmt.Errorf("start %s: %w", id, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res workflows.Result
			err := r.Get(ctx, &res)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				s.failed++
			case res.Turns != p.Turns || res.Answer != want:
				wrong = append(wrong, fmt.Sprintf("%s: %d model steps answering %q", id, res.Turns, res.Answer))
			default:
				s.completed++
			}
		}()
	}
	tick.Stop()
	wg.Wait()
	s.took = time.Since(began)
	close(stopSampling)
	<-sampled
	if ctx.Err() != nil {
		return s, fmt.Errorf("%d of %d runs completed within %s: %w", s.completed, p.Runs, bound, ctx.Err())
	}
	if len(wrong) > 0 {
		return s, fmt.Errorf("%d runs did not make %d model steps answering %q, e.g. %s", len(wrong), p.Turns, want, wrong[0])
	}
	st, err := fakeStats(ctx, root)
	if err != nil {
		return s, err
	}
	f := st.Providers[providerfake.OpenAI]
	if f == nil {
		return s, fmt.Errorf("provider fake /stats: no %s counts", providerfake.OpenAI)
	}
	if f.BadRequests > 0 {
		return s, fmt.Errorf("provider fake: %d requests answered 400", f.BadRequests)
	}
	s.fake = *f
	return s, nil
}
