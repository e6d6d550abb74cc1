package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/llm/providers"
	"github.com/agentrun/agentrun/metrics/prometheus"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// Reading Config from the environment: each variable once, in its form, then
// the defaults and the rules that hold between settings.

// Names are the environment variables the programs read: every one that
// Load asks getenv for, in the order of Config's sections.
var Names = []string{
	"AGENTRUN_TASK_QUEUE", "AGENTRUN_UI_URL", "AGENTRUN_DEPLOYMENT", "AGENTRUN_BUILD_ID", "AGENTRUN_GRPC_COMPRESSION",
	"AGENTRUN_JOURNAL",
	"AGENTRUN_CODEC_KEYS", "AGENTRUN_CODEC_KEY_FILE",
	"AGENTRUN_CODEC_ADDR", "AGENTRUN_CODEC_ORIGINS", "AGENTRUN_CODEC_HOSTS", "AGENTRUN_CODEC_TOKEN",
	"AGENTRUN_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
	"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AGENTRUN_MAX_TOKENS",
	"AGENTRUN_MODEL_TIMEOUT", "AGENTRUN_MODEL_IDLE_TIMEOUT", "AGENTRUN_MODELS", "AGENTRUN_FAIL_ON_CUT_ANSWER", "AGENTRUN_FAIL_ON_EMPTY_ANSWER", "AGENTRUN_CONTEXT_BUDGET",
	"AGENTRUN_TOOLS", "AGENTRUN_APPROVAL_TIMEOUT", "AGENTRUN_TICKETS", "AGENTRUN_DEMO_DELAY",
	"AGENTRUN_MAX_TURNS", "AGENTRUN_MAX_TOKENS_PER_RUN", "AGENTRUN_SESSION_IDLE",
	"AGENTRUN_LOCAL_ATTEMPTS", "AGENTRUN_LOCAL_RETRY_INTERVAL",
	"AGENTRUN_STOP_TIMEOUT", "AGENTRUN_MAX_ACTIVITIES", "AGENTRUN_STICKY_CACHE_SIZE", "AGENTRUN_METRICS", "AGENTRUN_STREAM",
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SERVICE_NAME",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
	EnvTestHoldBefore, EnvTestHoldAfter, EnvTestHoldFor, EnvTestHoldList, EnvTestWorkflowChange,
}

// Error is a setting that cannot be used: one line naming the variable,
// what is wrong with its value and what is valid.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a message formatted as fmt.Errorf does.
func Errorf(format string, args ...any) error { return &Error{fmt.Errorf(format, args...)} }

// Load reads the configuration from the environment through getenv: each
// of Names, once. A value that cannot be used is an *Error.
func Load(getenv func(string) string) (Config, error) {
	e := env{}
	for _, name := range Names {
		e[name] = getenv(name)
	}
	c, err := parse(e)
	if err != nil {
		return Config{}, &Error{err}
	}
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Config{}, &Error{err}
	}
	return c, nil
}

// env holds the value of each of Names.
type env map[string]string

// get returns the value of name, which must be one of Names: a name
// missing there is a bug in this file, which every test of Load finds.
func (e env) get(name string) string {
	v, ok := e[name]
	if !ok {
		panic("config: " + name + " is read but not listed in Names")
	}
	return v
}

// parse reads each variable's value in its form; unset ("") leaves the
// field zero for withDefaults.
func parse(e env) (Config, error) {
	c := Config{
		TaskQueue:  e.get("AGENTRUN_TASK_QUEUE"),
		UI:         e.get("AGENTRUN_UI_URL"),
		Journal:    e.get("AGENTRUN_JOURNAL"),
		Model:      e.get("AGENTRUN_MODEL"),
		Deployment: e.get("AGENTRUN_DEPLOYMENT"),
		BuildID:    e.get("AGENTRUN_BUILD_ID"),
		Account: llm.Account{
			OpenAIAPIKey:       e.get("OPENAI_API_KEY"),
			OpenAIBaseURL:      e.get("OPENAI_BASE_URL"),
			OpenAIOrganization: e.get("OPENAI_ORG_ID"),
			OpenAIProject:      e.get("OPENAI_PROJECT_ID"),
			AnthropicAPIKey:    e.get("ANTHROPIC_API_KEY"),
			AnthropicBaseURL:   e.get("ANTHROPIC_BASE_URL"),
		},
		Demo: tools.DemoConfig{Tickets: e.get("AGENTRUN_TICKETS")},
		Test: testhook.Hooks{HoldBefore: e.get(EnvTestHoldBefore), HoldAfter: e.get(EnvTestHoldAfter)},
	}
	c.uiSet = strings.TrimSpace(c.UI) != ""
	if err := checkVersionPart("AGENTRUN_DEPLOYMENT", c.Deployment, "a deployment name", deploymentName, deploymentRule); err != nil {
		return c, err
	}
	if err := checkVersionPart("AGENTRUN_BUILD_ID", c.BuildID, "a build id", buildID, buildIDRule); err != nil {
		return c, err
	}
	var err error
	if c.Codec, err = parseCodec(e); err != nil {
		return c, err
	}
	if c.CodecServer, err = parseCodecServer(e); err != nil {
		return c, err
	}
	if c.Tracing, err = parseTracing(e); err != nil {
		return c, err
	}
	if s := strings.TrimSpace(e.get("AGENTRUN_MAX_TOKENS")); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("AGENTRUN_MAX_TOKENS is %q: want a positive whole number of tokens", s)
		}
		c.Account.MaxTokens = n
	}
	if v := e.get("AGENTRUN_SESSION_IDLE"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTRUN_SESSION_IDLE=%q is not a positive duration: want a Go duration such as 30m or 24h (default 24h)", v)
		}
		c.SessionIdle = d
	}
	if v := e.get("AGENTRUN_MODEL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTRUN_MODEL_TIMEOUT=%q is not a positive duration: want a Go duration such as 90s or 5m (default 2m)", v)
		}
		c.ModelTimeout = d
	}
	if v := e.get("AGENTRUN_MODEL_IDLE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTRUN_MODEL_IDLE_TIMEOUT=%q is not a positive duration: want a Go duration such as 30s or 2m (default 1m, at most AGENTRUN_MODEL_TIMEOUT)", v)
		}
		c.ModelIdleTimeout = d
	}
	if v := strings.TrimSpace(e.get("AGENTRUN_FAIL_ON_CUT_ANSWER")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("AGENTRUN_FAIL_ON_CUT_ANSWER=%q is not a boolean: want 1 (fail runs whose final answer was cut off) or 0", v)
		}
		c.FailOnCut = b
	}
	if v := strings.TrimSpace(e.get("AGENTRUN_FAIL_ON_EMPTY_ANSWER")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("AGENTRUN_FAIL_ON_EMPTY_ANSWER=%q is not a boolean: want 1 (fail runs whose final answer has no text) or 0", v)
		}
		c.FailOnEmpty = b
	}
	switch v := e.get("AGENTRUN_GRPC_COMPRESSION"); strings.ToLower(strings.TrimSpace(v)) {
	case "", "gzip":
	case "none":
		c.GRPCCompression = &client.GrpcCompressionNone{}
	default:
		return c, fmt.Errorf("AGENTRUN_GRPC_COMPRESSION=%q is not gzip or none: want none (calls to Temporal travel uncompressed: less CPU, more bytes) or gzip (the default, the sdk's)", v)
	}
	switch v := strings.ToLower(strings.TrimSpace(e.get("AGENTRUN_STREAM"))); v {
	case "", "on", "1", "true":
	case "off", "0", "false":
		c.NoStream = true
	default:
		return c, fmt.Errorf("AGENTRUN_STREAM=%q is not on or off: want off (model text is never streamed) or on (the default: runs that ask stream)", v)
	}
	if path := e.get("AGENTRUN_MODELS"); path != "" {
		models, err := llm.LoadModels(path)
		if err != nil {
			return c, fmt.Errorf("AGENTRUN_MODELS: %w", err)
		}
		c.modelsPath, c.models = path, models
	}
	if v := e.get("AGENTRUN_MAX_TURNS"); v != "" {
		n, err := positive("AGENTRUN_MAX_TURNS", v, "a positive number of model calls, e.g. 40")
		if err != nil {
			return c, err
		}
		c.MaxTurns = int(n)
	}
	if v := e.get("AGENTRUN_MAX_TOKENS_PER_RUN"); v != "" {
		n, err := positive("AGENTRUN_MAX_TOKENS_PER_RUN", v, "a positive number of tokens (input plus output), e.g. 200000")
		if err != nil {
			return c, err
		}
		c.MaxTokens = n
	}
	if v := e.get("AGENTRUN_LOCAL_ATTEMPTS"); v != "" {
		n, err := positive("AGENTRUN_LOCAL_ATTEMPTS", v, "a positive number of attempts of a failing model or read step, e.g. 10 (1: no retry)")
		if err != nil {
			return c, err
		}
		c.LocalAttempts = int(n)
	}
	if v := e.get("AGENTRUN_LOCAL_RETRY_INTERVAL"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTRUN_LOCAL_RETRY_INTERVAL=%q is not a positive duration: want a Go duration such as 500ms or 2s (default 1s)", v)
		}
		c.LocalRetryInterval = d
	}
	if v := e.get("AGENTRUN_MAX_ACTIVITIES"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return c, fmt.Errorf("AGENTRUN_MAX_ACTIVITIES=%q is not a positive integer: want the most steps a worker runs at once, e.g. 100", v)
		}
		c.MaxActivities = n
	}
	if v := e.get("AGENTRUN_STICKY_CACHE_SIZE"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return c, fmt.Errorf("AGENTRUN_STICKY_CACHE_SIZE=%q is not a positive integer: want how many runs a worker keeps in memory between their tasks, e.g. 2000 (default the sdk's, 10000)", v)
		}
		c.StickyCache = n
	}
	if v := e.get("AGENTRUN_STOP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("AGENTRUN_STOP_TIMEOUT=%q is not a duration: want a Go duration such as 30s", v)
		}
		c.StopTimeout, c.stopTimeoutSet = d, true
	}
	if v := strings.TrimSpace(e.get("AGENTRUN_METRICS")); v != "" {
		if err := prometheus.ValidateAddr(v); err != nil {
			return c, fmt.Errorf("AGENTRUN_METRICS=%q is not a listen address (%v): want HOST:PORT or :PORT, e.g. :9464 or 127.0.0.1:9464", v, err)
		}
		c.Metrics = v
	}
	if v := e.get("AGENTRUN_CONTEXT_BUDGET"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return c, fmt.Errorf("AGENTRUN_CONTEXT_BUDGET=%q is not a positive number: want the most tokens a model request may hold, e.g. 100000", v)
		}
		c.ContextBudget = n
	}
	if v := e.get("AGENTRUN_DEMO_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("AGENTRUN_DEMO_DELAY=%q is not a duration: want a Go duration such as 500ms or 2s", v)
		}
		c.Demo.Delay = d
	}
	if path := e.get("AGENTRUN_TOOLS"); path != "" {
		var err error
		if c.Tools, err = tools.LoadConfig(path); err != nil {
			return c, fmt.Errorf("AGENTRUN_TOOLS: %w", err)
		}
	}
	if v := strings.TrimSpace(e.get("AGENTRUN_APPROVAL_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("AGENTRUN_APPROVAL_TIMEOUT=%q is not a positive duration: want a Go duration such as 30m or 24h (unset: approvals never expire)", v)
		}
		c.Tools.ApprovalTimeout = d
	}
	if v := e.get(EnvTestHoldFor); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%s=%q is not a positive duration: want a Go duration such as 45s (unset: a hold waits to be killed)", EnvTestHoldFor, v)
		}
		c.Test.HoldFor = d
	}
	if c.Test.HoldList, err = testSwitch(e, EnvTestHoldList); err != nil {
		return c, err
	}
	if c.Test.WorkflowChange, err = testSwitch(e, EnvTestWorkflowChange); err != nil {
		return c, err
	}
	return c, nil
}

// positive parses a setting that must be a positive whole number, or says
// in one line what is valid.
func positive(name, v, want string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want %s", name, v, want)
	}
	return n, nil
}

// testSwitch reads a test hook that is on with "1" and off unset or "0".
func testSwitch(e env, name string) (bool, error) {
	switch v := e.get(name); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q is not 1 or 0: want 1 (on, for tests only) or unset", name, v)
	}
}

// withDefaults is c with each unset field at its default.
func (c Config) withDefaults() Config {
	c.TaskQueue = cmp.Or(c.TaskQueue, DefaultTaskQueue)
	c.UI = cmp.Or(c.UI, DefaultUI)
	c.Journal = cmp.Or(c.Journal, DefaultJournal)
	c.Model = cmp.Or(c.Model, DefaultModel)
	c.ModelTimeout = cmp.Or(c.ModelTimeout, llm.DefaultTimeout)
	c.ModelIdleTimeout = cmp.Or(c.ModelIdleTimeout, min(llm.DefaultIdleTimeout, c.ModelTimeout))
	c.MaxTurns = cmp.Or(c.MaxTurns, agent.DefaultMaxTurns)
	c.SessionIdle = cmp.Or(c.SessionIdle, workflows.DefaultSessionIdle)
	c.LocalAttempts = cmp.Or(c.LocalAttempts, execute.RetryAttempts)
	c.LocalRetryInterval = cmp.Or(c.LocalRetryInterval, execute.RetryInterval)
	c.ContextBudget = cmp.Or(c.ContextBudget, llm.DefaultContextBudget(c.Model))
	c.Demo.Tickets = cmp.Or(c.Demo.Tickets, tools.DefaultTickets)
	if c.StopTimeout == 0 && !c.stopTimeoutSet {
		c.StopTimeout = DefaultStopTimeout
	}
	if ms, ok := c.models[c.Model]; ok && c.ModelSettings.IsZero() { // from AGENTRUN_MODELS
		c.ModelSettings = ms
	}
	if c.Deployment != "" && c.BuildID == "" {
		c.BuildID, _ = DefaultBuildID() // validate reports why, if it cannot
	}
	return c
}

// validate checks the rules between settings, once each has its value.
func (c Config) validate() error {
	switch {
	case c.Deployment == "" && c.BuildID != "":
		return fmt.Errorf("AGENTRUN_BUILD_ID=%q is set but AGENTRUN_DEPLOYMENT is not: set AGENTRUN_DEPLOYMENT (e.g. agentrun) to join a worker deployment, or unset AGENTRUN_BUILD_ID to run unversioned", c.BuildID)
	case c.Deployment != "" && c.BuildID == "":
		_, err := DefaultBuildID()
		return fmt.Errorf("AGENTRUN_BUILD_ID is unset and %v: set AGENTRUN_BUILD_ID", err)
	}
	if c.Tracing.CaptureContent && c.Codec != nil {
		return errCaptureWithCodec
	}
	if c.ModelIdleTimeout > c.ModelTimeout {
		return fmt.Errorf("AGENTRUN_MODEL_IDLE_TIMEOUT=%v is longer than AGENTRUN_MODEL_TIMEOUT=%v: want an idle timeout (each silence of a streamed answer) of at most the model timeout (the whole answer), or raise AGENTRUN_MODEL_TIMEOUT", c.ModelIdleTimeout, c.ModelTimeout)
	}
	if c.models != nil {
		if _, ok := c.models[c.Model]; !ok {
			return fmt.Errorf("AGENTRUN_MODELS: %s has no settings for AGENTRUN_MODEL=%s; it has %s", c.modelsPath, c.Model, strings.Join(slices.Sorted(maps.Keys(c.models)), ", "))
		}
	}
	if err := providers.Check(c.Model, c.ModelOptions()); err != nil {
		return fmt.Errorf("AGENTRUN_MODEL: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tools.Agents)) {
		if spec := c.Tools.Agents[name].Model; spec != "" {
			if err := providers.Check(spec, c.AgentModelOptions(spec)); err != nil {
				return fmt.Errorf("AGENTRUN_TOOLS: %s: agents[%q].model: %w", c.Tools.Path, name, err)
			}
		}
	}
	return nil
}
