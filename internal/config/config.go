package config

import (
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/execute"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/metrics"
	"github.com/agentrun/agentrun/plumbing/secret"
	"github.com/agentrun/agentrun/plumbing/tracing"
	"github.com/agentrun/agentrun/tools"
	"github.com/agentrun/agentrun/workflows"
)

// Config is the configuration of agentrun's programs, read from the
// environment by Load. Each field's comment names its variable, its
// default and its valid form; docs/configuration.md is the reference for
// operators.
type Config struct {
	// --- Temporal (the client's own settings: package cluster) ---

	// TaskQueue is the Temporal task queue. Default "agentrun"
	// (AGENTRUN_TASK_QUEUE).
	TaskQueue string
	// UI is the Temporal Web UI's address, for links. Default
	// "http://localhost:8233" (AGENTRUN_UI_URL); unset, the links follow
	// the Temporal server (WebUI).
	UI string
	// Deployment is the Temporal worker deployment a worker joins
	// (AGENTRUN_DEPLOYMENT), e.g. "agentrun": letters, digits, _ and -.
	// Set, Worker Versioning is on: the worker polls as build BuildID of
	// Deployment, AgentRun runs are pinned to the build they started on,
	// and tasks reach a build only once an operator makes it current (or
	// ramps it). Default "": versioning off, the worker polls unversioned.
	Deployment string
	// BuildID is the worker's build id within Deployment
	// (AGENTRUN_BUILD_ID): letters, digits, _, -, . and +. Default, when
	// Deployment is set: DefaultBuildID (the git revision the binary was
	// built from). Setting it without Deployment is an error.
	BuildID string

	// --- Durable state ---

	// Journal says where durable state lives (AGENTRUN_JOURNAL): a folder
	// or a PostgreSQL URL. Default ".agentrun/journal".
	//
	// A folder holds the local engine's journal; Temporal workers keep the
	// write guard's journal in its subfolder "temporal", and both engines
	// keep the content store (large values, conversations) in "content";
	// every worker of a task queue must share it (one host, or a file
	// system with working flock).
	//
	// A postgres:// or postgresql:// URL (libpq form, e.g.
	// postgres://agentrun:PASSWORD@db:5432/agentrun?sslmode=require) keeps
	// all three in that database (package postgres), so workers on many
	// hosts share nothing but PostgreSQL and Temporal. The tables are
	// created or migrated on first use. Logs and errors name the host,
	// port, database and user, never the password.
	Journal string

	// --- Privacy ---

	// Codec encrypts every payload the programs' Temporal clients send
	// (package codec; docs/privacy.md), with keys from AGENTRUN_CODEC_KEYS
	// ("id1:BASE64,id2:BASE64", each key 32 bytes in standard base64) or
	// the file AGENTRUN_CODEC_KEY_FILE names (one "id:BASE64" a line; not
	// both): it encrypts with the first key and decrypts with any.
	// Default nil: off, payloads travel as plain JSON.
	Codec *codec.Codec
	// CodecServer are the codec server's settings (program codecserver).
	CodecServer CodecServer

	// --- Model ---

	// Model names the model provider (AGENTRUN_MODEL): llm.ModelFormat.
	// Default "scripted".
	Model string
	// Account is the provider's key, address and reply cap: OPENAI_API_KEY,
	// OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID, ANTHROPIC_API_KEY,
	// ANTHROPIC_BASE_URL and AGENTRUN_MAX_TOKENS (a positive whole number;
	// default 4096 for Anthropic, none sent to OpenAI). Default: no key,
	// the providers' own addresses.
	Account llm.Account
	// ModelTimeout bounds one model request, from sending it to reading
	// the whole answer, streamed or not: for a streamed answer it is the
	// cap on the whole answer. Expiry is a retryable Timeout. Default 2m
	// (AGENTRUN_MODEL_TIMEOUT, a positive Go duration).
	ModelTimeout time.Duration
	// ModelIdleTimeout bounds each silence of a streamed answer: the wait
	// for its first piece and between two pieces; a stream that keeps
	// producing is cut only by ModelTimeout. Expiry is a retryable
	// Timeout. Default 1m, or ModelTimeout when that is shorter
	// (AGENTRUN_MODEL_IDLE_TIMEOUT, a positive Go duration, at most
	// ModelTimeout).
	ModelIdleTimeout time.Duration
	// ModelSettings are the request settings of Model (temperature, top_p,
	// seed, max_tokens, reasoning_effort, extra), its entry in the models
	// file named by AGENTRUN_MODELS. Default: none.
	ModelSettings agent.ModelSettings
	// FailOnCut makes a run whose final answer the model's length limit
	// cut off fail instead of completing flagged as cut off. Default false
	// (AGENTRUN_FAIL_ON_CUT_ANSWER=1 sets it).
	FailOnCut bool
	// FailOnEmpty makes a run whose final answer has no text (the model
	// returned nothing) fail instead of completing flagged as empty.
	// Default false (AGENTRUN_FAIL_ON_EMPTY_ANSWER=1 sets it).
	FailOnEmpty bool
	// ContextBudget bounds the estimated tokens of a model request: past it
	// the oldest tool results are left out. Default by provider: 128000
	// (openai), 200000 (anthropic), none (scripted)
	// (AGENTRUN_CONTEXT_BUDGET, a positive number).
	ContextBudget int

	// --- Tools ---

	// Tools is the tools file named by AGENTRUN_TOOLS: MCP servers and
	// per-tool overrides. Unset: the demo tools alone. Its ApprovalTimeout
	// comes from AGENTRUN_APPROVAL_TIMEOUT (a positive Go duration; unset:
	// never).
	Tools tools.Config
	// Demo configures the demo tools: the ticket store (AGENTRUN_TICKETS,
	// default ".agentrun/tickets.jsonl") and their delay
	// (AGENTRUN_DEMO_DELAY, a Go duration, default 0).
	Demo tools.DemoConfig

	// --- New runs (the starter) ---

	// MaxTurns is the limit on model calls the starter gives a new run
	// (AGENTRUN_MAX_TURNS; the starter's --max-turns overrides it). Default
	// 25 (agent.DefaultMaxTurns).
	MaxTurns int
	// MaxTokens is the limit on tokens (input plus output) the starter gives
	// a new run (AGENTRUN_MAX_TOKENS_PER_RUN; --max-tokens overrides it).
	// Default 0: no limit.
	MaxTokens int64
	// SessionIdle is how long a session run (starter --session) waits Idle
	// for a message after an answer before it completes with that answer
	// (AGENTRUN_SESSION_IDLE, a positive Go duration). Default 24h. The
	// starter puts it in the run's input, so the run's timer does not
	// depend on the worker's settings.
	SessionIdle time.Duration

	// --- The local engine (starter --local) ---

	// LocalAttempts bounds the attempts of a model or read step that
	// fails with a transient error (a refused connection, a rate limit, a
	// server error, a timeout) in one starter --local; after the last the
	// run stops, resumable, and its journal says why. Default 10, as on
	// Temporal (execute.RetryAttempts) (AGENTRUN_LOCAL_ATTEMPTS, a
	// positive whole number).
	LocalAttempts int
	// LocalRetryInterval is the local engine's wait before a step's second
	// attempt; each later wait doubles, at most 1m (or this, when
	// longer). Default 1s, as on Temporal (execute.RetryInterval)
	// (AGENTRUN_LOCAL_RETRY_INTERVAL, a positive Go duration).
	LocalRetryInterval time.Duration

	// --- Worker ---

	// StopTimeout is how long a stopping worker lets running steps finish.
	// Default 10s (AGENTRUN_STOP_TIMEOUT, a Go duration).
	StopTimeout time.Duration
	// MaxActivities bounds the steps a worker runs at once; a worker with
	// none free asks Temporal for no more. Default 0: the sdk's, 1,000
	// (AGENTRUN_MAX_ACTIVITIES, a positive integer).
	MaxActivities int
	// Metrics is the address where a worker serves Prometheus metrics
	// (/metrics) and its health (/healthz), HOST:PORT or :PORT, e.g. :9464.
	// Default "": off (AGENTRUN_METRICS).
	Metrics string
	// NoStream keeps a worker's model steps from publishing their text to
	// their run's stream, whatever the run asks (AGENTRUN_STREAM=off; the
	// text lands in the run's history as signals). Default: runs that ask
	// (sessions, starter --wait or --stream) stream.
	NoStream bool

	// --- Tracing (OpenTelemetry: package plumbing/tracing) ---

	// Tracing exports every run as one trace over OTLP: on when
	// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// which wins) is set, e.g. http://localhost:4317, or
	// OTEL_TRACES_EXPORTER is otlp or console (none, or
	// OTEL_SDK_DISABLED=true, is off); OTEL_EXPORTER_OTLP_PROTOCOL (or
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, which wins): grpc (default) or
	// http/protobuf (see tracing.Settings); OTEL_SERVICE_NAME
	// (default per program: agentrun-worker, agentrun-starter,
	// agentrun-reconcile), OTEL_TRACES_SAMPLER (default
	// parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (a ratio, 0 to 1,
	// default 1), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
	// (true: spans carry prompt and completion text; not with Codec).
	// Default: off.
	Tracing tracing.Settings

	// Test holds test-only hooks; production leaves them zero.
	Test Test

	// modelsPath and models are the models file (AGENTRUN_MODELS) and its
	// entries, which withDefaults picks Model's settings from.
	modelsPath string
	models     map[string]agent.ModelSettings
	// uiSet says that AGENTRUN_UI_URL was set, so that a link to a server
	// that is not a local dev server is not taken to be on localhost.
	uiSet bool
	// stopTimeoutSet says that AGENTRUN_STOP_TIMEOUT was set, so that 0s
	// (let no step finish) is not taken for unset.
	stopTimeoutSet bool
}

// Test are test-only hooks, set by tests through the environment of the
// worker and starter processes they start (and crash). Production leaves
// them unset: each is inert at its zero value.
type Test struct {
	// HoldBefore holds a write of this tool (create_ticket) or step
	// (tool/5/0/create_ticket) after its start is recorded and before the
	// tool runs, until the process is killed (AGENTRUN_TEST_HOLD_BEFORE;
	// execute.Test). Default "": no hold.
	HoldBefore string
	// HoldAfter holds such a write after its effect and before its result
	// is recorded (AGENTRUN_TEST_HOLD_AFTER). Default "": no hold.
	HoldAfter string
	// HoldFor makes a hold end by itself after this long, as a frozen or
	// cut off process goes on (AGENTRUN_TEST_HOLD_FOR, a positive Go
	// duration). Default 0: a hold waits to be killed.
	HoldFor time.Duration
	// HoldList holds every ListTools activity until the worker is killed
	// (AGENTRUN_TEST_HOLD_LIST=1; activities.Test). Default false.
	HoldList bool
	// WorkflowChange starts every AgentRun execution with a 1 ms timer, a
	// deliberate non-deterministic change (AGENTRUN_TEST_WORKFLOW_CHANGE=1;
	// workflows.Test). Default false.
	WorkflowChange bool
}

// Defaults of Config.
const (
	DefaultTaskQueue   = "agentrun"
	DefaultUI          = "http://localhost:8233"
	DefaultJournal     = ".agentrun/journal"
	DefaultModel       = "scripted"
	DefaultStopTimeout = 10 * time.Second
)

// The names of the Test section's variables, which tests set on the
// processes they start.
const (
	EnvTestHoldBefore     = "AGENTRUN_TEST_HOLD_BEFORE"
	EnvTestHoldAfter      = "AGENTRUN_TEST_HOLD_AFTER"
	EnvTestHoldFor        = "AGENTRUN_TEST_HOLD_FOR"
	EnvTestHoldList       = "AGENTRUN_TEST_HOLD_LIST"
	EnvTestWorkflowChange = "AGENTRUN_TEST_WORKFLOW_CHANGE"
)

// Names are the environment variables the programs read: every one that
// Load asks getenv for, in the order of Config's sections.
var Names = []string{
	"AGENTRUN_TASK_QUEUE", "AGENTRUN_UI_URL", "AGENTRUN_DEPLOYMENT", "AGENTRUN_BUILD_ID",
	"AGENTRUN_JOURNAL",
	"AGENTRUN_CODEC_KEYS", "AGENTRUN_CODEC_KEY_FILE",
	"AGENTRUN_CODEC_ADDR", "AGENTRUN_CODEC_ORIGINS", "AGENTRUN_CODEC_HOSTS", "AGENTRUN_CODEC_TOKEN",
	"AGENTRUN_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
	"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AGENTRUN_MAX_TOKENS",
	"AGENTRUN_MODEL_TIMEOUT", "AGENTRUN_MODEL_IDLE_TIMEOUT", "AGENTRUN_MODELS", "AGENTRUN_FAIL_ON_CUT_ANSWER", "AGENTRUN_FAIL_ON_EMPTY_ANSWER", "AGENTRUN_CONTEXT_BUDGET",
	"AGENTRUN_TOOLS", "AGENTRUN_APPROVAL_TIMEOUT", "AGENTRUN_TICKETS", "AGENTRUN_DEMO_DELAY",
	"AGENTRUN_MAX_TURNS", "AGENTRUN_MAX_TOKENS_PER_RUN", "AGENTRUN_SESSION_IDLE",
	"AGENTRUN_LOCAL_ATTEMPTS", "AGENTRUN_LOCAL_RETRY_INTERVAL",
	"AGENTRUN_STOP_TIMEOUT", "AGENTRUN_MAX_ACTIVITIES", "AGENTRUN_METRICS", "AGENTRUN_STREAM",
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
		Test: Test{HoldBefore: e.get(EnvTestHoldBefore), HoldAfter: e.get(EnvTestHoldAfter)},
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
	if v := e.get("AGENTRUN_STOP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("AGENTRUN_STOP_TIMEOUT=%q is not a duration: want a Go duration such as 30s", v)
		}
		c.StopTimeout, c.stopTimeoutSet = d, true
	}
	if v := strings.TrimSpace(e.get("AGENTRUN_METRICS")); v != "" {
		if err := metrics.ValidateAddr(v); err != nil {
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
			return c, err
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

// parseCodec reads the encryption keys of AGENTRUN_CODEC_KEYS or the file
// AGENTRUN_CODEC_KEY_FILE names; neither set, the codec is off (nil).
func parseCodec(e env) (*codec.Codec, error) {
	inline, file := strings.TrimSpace(e.get("AGENTRUN_CODEC_KEYS")), strings.TrimSpace(e.get("AGENTRUN_CODEC_KEY_FILE"))
	var name string
	var keys []codec.Key
	var err error
	switch {
	case inline == "" && file == "":
		return nil, nil
	case inline != "" && file != "":
		return nil, errors.New("AGENTRUN_CODEC_KEYS and AGENTRUN_CODEC_KEY_FILE are both set: set one (the keys, or the file that holds them)")
	case inline != "":
		name = "AGENTRUN_CODEC_KEYS"
		keys, err = codec.ParseKeys(inline)
	default:
		name = "AGENTRUN_CODEC_KEY_FILE"
		b, rerr := secret.ReadKeyFile(name, file)
		if rerr != nil {
			return nil, rerr
		}
		if keys, err = codec.ParseKeyFile(b); err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	secret.Add(codecKeyForms(keys)...)
	c, err := codec.New(keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// codecKeyForms are the texts the codec's keys may show up as: each key's
// bytes, their base64 (as the settings write it) and their hex. The
// scrubber (package plumbing/secret) adds the other encodings of each.
func codecKeyForms(keys []codec.Key) []string {
	var out []string
	for _, k := range keys {
		h := hex.EncodeToString(k.Bytes)
		out = append(out, string(k.Bytes), base64.StdEncoding.EncodeToString(k.Bytes), h, strings.ToUpper(h))
	}
	return out
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
	if err := llm.Check(c.Model, c.ModelOptions()); err != nil {
		return fmt.Errorf("AGENTRUN_MODEL: %w", err)
	}
	return nil
}

// WebUI is the Web UI's address for runs on the Temporal server at
// hostPort (the frontend's HOST:PORT): UI when AGENTRUN_UI_URL is set;
// unset, the UI of a local dev server when hostPort is a loopback address
// (http://localhost:8233 for port 7233, the dev server's UI port, its own
// port plus 1000, for another); and false for any other server, whose
// Web UI agentrun cannot know.
func (c Config) WebUI(hostPort string) (string, bool) {
	if c.uiSet {
		return c.UI, true
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host, port = hostPort, ""
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", false
	}
	if p, err := strconv.Atoi(port); err == nil && p != 7233 && p > 0 && p+1000 <= 65535 {
		return fmt.Sprintf("http://localhost:%d", p+1000), true
	}
	return cmp.Or(c.UI, DefaultUI), true
}

// ModelOptions are the options of the model provider Model names.
func (c Config) ModelOptions() llm.Options {
	return llm.Options{Account: c.Account, Timeout: c.ModelTimeout, IdleTimeout: c.ModelIdleTimeout, Settings: c.ModelSettings}
}

// CodecServer are the settings of the codec server (program codecserver),
// which the Temporal Web UI and CLI call to decode payloads.
type CodecServer struct {
	// Addr is where it listens, HOST:PORT (AGENTRUN_CODEC_ADDR). Default
	// DefaultCodecAddr: loopback only. An address beyond loopback needs
	// Token: the server refuses to start without one.
	Addr string
	// Origins are the Web UI origins it admits (AGENTRUN_CODEC_ORIGINS,
	// comma-separated, each scheme://host[:port], or "*" for any): a
	// request whose Origin header is another is refused (403); one
	// without an Origin (the CLI) is not a browser's and passes. Default
	// DefaultCodecOrigin, the dev server's UI.
	Origins []string
	// Hosts are the names, beyond its listen address and the loopback
	// names (localhost, 127.0.0.1, [::1], with its port), that a
	// request's Host header may hold (AGENTRUN_CODEC_HOSTS,
	// comma-separated, each HOST or HOST:PORT; a HOST alone admits any
	// port): another Host is refused (403), which stops a page that
	// rebinds its own name to this address. Default none: the listen
	// address and the loopback names only.
	Hosts []string
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN) and the one credential that opens
	// /encode to any caller (AGENTRUN_CODEC_TOKEN). Default "": no token
	// asked, which the server allows on a loopback address only.
	Token string
}

// validHost says whether h is HOST or HOST:PORT as a Host header holds
// it: a name or IPv4 address, or an IPv6 address in brackets.
func validHost(h string) bool {
	name := h
	if n, port, err := net.SplitHostPort(h); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
		name = n
		if strings.Contains(n, ":") {
			name = "[" + n + "]"
		}
	}
	if inner, ok := strings.CutPrefix(name, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		return ok && net.ParseIP(inner) != nil && strings.Contains(inner, ":")
	}
	return name != "" && !strings.ContainsAny(name, "/@?#[]: \t")
}

// The codec server's defaults.
const (
	DefaultCodecAddr   = "127.0.0.1:8234"
	DefaultCodecOrigin = "http://localhost:8233"
)

func parseCodecServer(e env) (CodecServer, error) {
	s := CodecServer{
		Addr:  cmp.Or(strings.TrimSpace(e.get("AGENTRUN_CODEC_ADDR")), DefaultCodecAddr),
		Token: strings.TrimSpace(e.get("AGENTRUN_CODEC_TOKEN")),
	}
	if _, port, err := net.SplitHostPort(s.Addr); err != nil || port == "" {
		return s, fmt.Errorf("AGENTRUN_CODEC_ADDR=%q is not a listen address: want HOST:PORT, e.g. 127.0.0.1:8234", s.Addr)
	}
	for o := range strings.SplitSeq(cmp.Or(strings.TrimSpace(e.get("AGENTRUN_CODEC_ORIGINS")), DefaultCodecOrigin), ",") {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
				return s, fmt.Errorf("AGENTRUN_CODEC_ORIGINS: %q is not an origin: want scheme://host[:port], e.g. %s, comma-separated, or *", o, DefaultCodecOrigin)
			}
		}
		s.Origins = append(s.Origins, o)
	}
	for h := range strings.SplitSeq(e.get("AGENTRUN_CODEC_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h == "" {
			continue
		}
		if !validHost(h) {
			return s, fmt.Errorf("AGENTRUN_CODEC_HOSTS: %q is not a host name: want HOST or HOST:PORT (IPv6 as [ADDR] or [ADDR]:PORT), comma-separated, e.g. codec.internal,codec.internal:8234", h)
		}
		s.Hosts = append(s.Hosts, h)
	}
	if strings.ContainsAny(s.Token, " \t\r\n") {
		return s, errors.New("AGENTRUN_CODEC_TOKEN holds white space: want one token, sent as Authorization: Bearer TOKEN")
	}
	return s, nil
}
