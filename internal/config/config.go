package config

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentrun/agentrun/agent"
	"github.com/agentrun/agentrun/codec"
	"github.com/agentrun/agentrun/internal/testhook"
	"github.com/agentrun/agentrun/llm"
	"github.com/agentrun/agentrun/plumbing/tracing/export"
	"github.com/agentrun/agentrun/tools"
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
	// GRPCCompression is how the programs' Temporal clients (worker,
	// starter, reconcile) compress their gRPC calls: nil, the sdk's
	// default, gzips every request and its reply; &client.GrpcCompressionNone{}
	// (AGENTRUN_GRPC_COMPRESSION=none) sends them as they are, which saves
	// CPU on the worker and on the server and costs bytes on the wire.
	// Default nil (AGENTRUN_GRPC_COMPRESSION unset or gzip).
	GRPCCompression client.GrpcCompression

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
	// StickyCache is how many runs a worker process keeps in memory
	// between their workflow tasks (the sdk's sticky cache,
	// worker.SetStickyWorkflowCacheSize). A smaller one bounds the memory
	// of parked runs: an evicted run costs nothing until woken, then
	// replays its history. Default 0: the sdk's, 10,000
	// (AGENTRUN_STICKY_CACHE_SIZE, a positive integer).
	StickyCache int
	// Metrics is the address where a worker serves Prometheus metrics
	// (/metrics) and its health (/healthz), HOST:PORT or :PORT, e.g. :9464.
	// Default "": off (AGENTRUN_METRICS).
	Metrics string
	// NoStream keeps a worker's model steps from publishing their text to
	// their run's stream, whatever the run asks (AGENTRUN_STREAM=off; the
	// text lands in the run's history as signals). Default: runs that ask
	// (sessions, starter --wait or --stream) stream.
	NoStream bool

	// --- Tracing (OpenTelemetry: package plumbing/tracing/export) ---

	// Tracing exports every run as one trace over OTLP: on when
	// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// which wins) is set, e.g. http://localhost:4317, or
	// OTEL_TRACES_EXPORTER is otlp or console (none, or
	// OTEL_SDK_DISABLED=true, is off); OTEL_EXPORTER_OTLP_PROTOCOL (or
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, which wins): grpc (default) or
	// http/protobuf (see export.Settings); OTEL_SERVICE_NAME
	// (default per program: agentrun-worker, agentrun-starter,
	// agentrun-reconcile), OTEL_TRACES_SAMPLER (default
	// parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (a ratio, 0 to 1,
	// default 1), OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
	// (true: spans carry prompt and completion text; not with Codec).
	// Default: off.
	Tracing export.Settings

	// Test holds the test-only hooks (package internal/testhook, which
	// documents each), set by tests through the environment of the worker
	// and starter processes they start and crash (the EnvTest variables).
	// Production leaves them unset: each is inert at its zero value.
	Test testhook.Hooks

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

// AgentModelOptions is ModelOptions for the model spec an agent tool names
// (tools.Agent.Model): the same account and timeouts, and the settings the
// models file gives that model (none when it gives none, or has no file).
func (c Config) AgentModelOptions(spec string) llm.Options {
	o := c.ModelOptions()
	o.Settings = c.models[spec]
	return o
}
