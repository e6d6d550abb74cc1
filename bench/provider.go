package main

import (
	"github.com/agentrun/agentrun/llm/providers"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/internal/testkit/providerfake"
	"github.com/agentrun/agentrun/internal/testkit/testenv"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/workflows"
)

// providerParams sizes the provider section.
type providerParams struct {
	// Steps is how many model steps each provider's run makes: Steps-1
	// calls of lookup (the fake's -turns) and the answer.
	Steps int
}

// Goals of the provider section.
const (
	// cacheShareGoal is the figure: over a run of 50 steps, at
	// least this share of the input tokens is read from the prompt cache.
	cacheShareGoal = 0.80
	// costFloor and costCeiling bound the run's recorded cost against the
	// invoice of the fake's own token counts: within 1%.
	costFloor, costCeiling = 0.99, 1.01
)

// providerModel is the fake's model, as the models file names it for
// each provider.
const providerModel = "providerfake-bench"

// providerPrices are the models file's prices, in US dollars per million
// tokens: Anthropic's Sonnet list prices (a cache read a tenth of input,
// a 5-minute cache write 1.25 times it) and OpenAI's gpt-4o (a cached
// token half of input; OpenAI writes no cache at a price of its own, so
// cache_write is left out and costs input).
var providerPrices = map[string]agent.Price{
	providerfake.Anthropic: {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	providerfake.OpenAI:    {Input: 2.5, Output: 10, CacheRead: 1.25},
}

// invoice is what the fake's counts of one API cost at price, computed
// here from the counts alone: the input the cache neither read nor wrote at
// the input price, the cached and the written tokens at their own prices
// (the input price when the price names none), the output at its price.
func invoice(s providerfake.ProviderStats, price agent.Price) float64 {
	read, write := price.Input, price.Input
	if price.CacheRead > 0 {
		read = price.CacheRead
	}
	if price.CacheWrite > 0 {
		write = price.CacheWrite
	}
	plain := s.InputTokens - s.CachedTokens - s.CacheWritten
	return (float64(plain)*price.Input + float64(s.CachedTokens)*read + float64(s.CacheWritten)*write + float64(s.OutputTokens)*price.Output) / 1e6
}

// writeModelsFile writes the models file of the fake's model for both
// providers, with providerPrices.
func writeModelsFile(path string) error {
	models := map[string]map[string]agent.Price{}
	for kind, price := range providerPrices {
		models[kind+":"+providerModel] = map[string]agent.Price{"price": price}
	}
	b, err := json.MarshalIndent(models, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// fakeStats reads the fake's /stats.
func fakeStats(ctx context.Context, root string) (providerfake.Stats, error) {
	var st providerfake.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/stats", nil)
	if err != nil {
		return st, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("provider fake /stats: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("provider fake /stats: %s", res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("provider fake /stats: %w", err)
	}
	return st, nil
}

// loggedRequest is one answered request in the fake's -log.
type loggedRequest struct{ in, cached int }

var requestLine = regexp.MustCompile(`providerfake: (\w+) 200 \S+ in=(\d+) out=\d+ cached=(\d+) `)

// requestLog reads the fake's -log output: each API's answered requests
// in order.
func requestLog(out string) map[string][]loggedRequest {
	m := map[string][]loggedRequest{}
	for _, g := range requestLine.FindAllStringSubmatch(out, -1) {
		in, _ := strconv.Atoi(g[2])
		cached, _ := strconv.Atoi(g[3])
		m[g[1]] = append(m[g[1]], loggedRequest{in: in, cached: cached})
	}
	return m
}

// providerRun is what the section reads of one provider's run.
type providerRun struct {
	kind  string
	usage agent.Usage // the run's own, from its result (the state's usage)
	turns int
	fake  providerfake.ProviderStats
}

// providerSection runs, for anthropic: and openai: in turn, one run of
// p.Steps model steps on an in-process worker whose model is llm's
// provider pointed at one provider fake process (limits far above the
// run's, so that no request waits), with the fake model's price from a
// models file, and compares the run's usage with itself (the cache's
// share of the input) and its recorded cost with the invoice of the fake's
// own token counts at that price.
func providerSection(ctx context.Context, env *benchEnv, p providerParams) ([]row, error) {
	sec := fmt.Sprintf("Provider: one run of %d model steps (%d lookup calls and the answer) per provider, llm's anthropic: and openai: providers against the provider fake (cmd providerfake, limits far above the run's, its prompt caches' real rules, 1024-token minimum), the fake model's price from a models file; one in-process worker", p.Steps, p.Steps-1)
	dir := env.subdir("provider")
	bin := filepath.Join(dir, "bin")
	if err := testenv.Build(ctx, bin, testenv.ProviderFakePkg); err != nil {
		return nil, err
	}
	fake, root, err := testenv.LaunchProviderFake(ctx, filepath.Join(bin, filepath.Base(testenv.ProviderFakePkg)),
		"-turns", strconv.Itoa(p.Steps-1), "-rpm", "1000000", "-tpm", "1000000000", "-log")
	if err != nil {
		return nil, err
	}
	defer fake.Stop(5 * time.Second)
	modelsPath := filepath.Join(dir, "models.json")
	if err := writeModelsFile(modelsPath); err != nil {
		return nil, err
	}
	models, err := llm.LoadModels(modelsPath)
	if err != nil {
		return nil, err
	}
	account := llm.Account{AnthropicAPIKey: "sk-ant-providerfake", AnthropicBaseURL: root,
		OpenAIAPIKey: "sk-providerfake", OpenAIBaseURL: root + "/v1"} // as testenv.ProviderFakeEnv sets them
	c, err := env.dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	stamp := runStamp()
	var runs []providerRun
	for _, kind := range []string{providerfake.Anthropic, providerfake.OpenAI} {
		spec := kind + ":" + providerModel
		model, err := providers.New(spec, llm.Options{Account: account, Settings: models[spec]})
		if err != nil {
			return nil, err
		}
		queue := "bench-provider-" + kind
		stop, err := startAgentWorker(c, queue, llm.Script{}, env.subdir("provider/"+kind), nil, env.logger,
			agentOptions{model: func(llm.Provider) llm.Provider { return model }})
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("provider-%s-%s", kind, stamp)
		in := workflows.Input{Messages: agent.UserMessages("Bench provider: look up the policies and answer."), MaxTurns: p.Steps + 10}
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, TypedSearchAttributes: workflows.StartAttributes("")}, workflows.WorkflowName, in)
		if err != nil {
			stop()
			return nil, err
		}
		var res workflows.Result
		err = r.Get(ctx, &res)
		stop()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		if want := fmt.Sprintf("I read %d tool results.", p.Steps-1); res.Turns != p.Steps || res.Answer != want {
			return nil, fmt.Errorf("%s: %d model steps answering %q; want %d answering %q", id, res.Turns, res.Answer, p.Steps, want)
		}
		runs = append(runs, providerRun{kind: kind, usage: res.Usage, turns: res.Turns})
	}
	st, err := fakeStats(ctx, root)
	if err != nil {
		return nil, err
	}
	steps := requestLog(fake.Output())
	var rows, costRows, stepRows []row
	for i := range runs {
		run := &runs[i]
		f := st.Providers[run.kind]
		if f == nil {
			return nil, fmt.Errorf("provider fake /stats: no %s counts", run.kind)
		}
		if f.RateLimited > 0 || f.BadRequests > 0 {
			return nil, fmt.Errorf("provider fake: %s answered %d requests 429 and %d 400; the section wants none (limits above the run's)", run.kind, f.RateLimited, f.BadRequests)
		}
		run.fake = *f
		u := run.usage
		log := steps[run.kind]
		if len(log) != int(f.Requests) {
			return nil, fmt.Errorf("provider fake: its log holds %d %s requests, its /stats %d", len(log), run.kind, f.Requests)
		}
		first := slices.IndexFunc(log, func(l loggedRequest) bool { return l.cached > 0 })
		rows = append(rows, row{Section: sec, Figure: fmt.Sprintf("%s: input tokens read from the prompt cache vs all input tokens, the run's usage (%d written to the cache; step 1's prompt %d tokens, the first read from the cache step %d, whose prompt is %d tokens)", run.kind, u.CacheWriteTokens, log[0].in, first+1, log[max(first, 0)].in),
			Measured: float64(u.CacheReadTokens), Baseline: float64(u.InputTokens), Unit: "tokens", Floor: cacheShareGoal, GoalNote: "the issue's figure"})
		costRows = append(costRows, row{Section: sec, Figure: fmt.Sprintf("%s: the run's recorded cost vs the invoice of the fake's /stats tokens (%d in, %d cached, %d written, %d out) at the models file's price (%s)", run.kind, f.InputTokens, f.CachedTokens, f.CacheWritten, f.OutputTokens, providerPrices[run.kind]),
			Measured: u.Cost, Baseline: invoice(*f, providerPrices[run.kind]), Unit: "$", Floor: costFloor, Goal: costCeiling, GoalNote: "within 1%"})
		stepRows = append(stepRows, row{Section: sec, Figure: fmt.Sprintf("%s: model steps of the run vs requests the fake answered", run.kind),
			Measured: float64(run.turns), Baseline: float64(f.Requests)})
	}
	return append(append(rows, costRows...), stepRows...), nil
}
