# agentrun: durable LLM agent runs on Temporal.
#   make demo    the hand example on a local Temporal dev server (leaves it running)
#   make cluster the compose topology without Docker: Temporal on PostgreSQL, Web UI
#   make stop    stop what make demo / make dev-server / make cluster started
#   make test    the test suite (the README's test command)
#   make check   gofmt, go vet, staticcheck, and the tests with -race
#   make race    the tests with -race, but for the slow end-to-end packages (CI)
#   make bench   the performance table, written to BENCHMARKS.md
#   make chaos   the crash campaign, written to BENCHMARKS.md
#   make versions / version-current / version-ramp   Worker Versioning (docs/fleets.md "Upgrade a fleet")

TEMPORAL_CLI_VERSION := $(shell awk '$$1 == "github.com/temporalio/cli" { print $$2 }' build/temporal-cli/go.mod)
TEMPORAL := bin/temporal
JAEGER_VERSION := $(shell awk '$$1 == "github.com/jaegertracing/jaeger" { print $$2 }' build/jaeger/go.mod)
JAEGER := bin/jaeger
TEMPORAL_SERVER_VERSION := $(shell awk '$$1 == "go.temporal.io/server" { print $$2 }' build/temporal-server/go.mod)
TEMPORAL_SERVER := bin/temporal-server
GO ?= go

.PHONY: all build demo dev-server cluster worker stop test test-encrypted race check lint bench chaos temporal-cli temporal-server jaeger mcp-servers streams-ts clean versions version-current version-ramp

all: build

build:
	$(GO) build -o bin/ ./worker ./starter ./reconcile ./codecserver

temporal-cli: $(TEMPORAL)

# Built from build/temporal-cli/go.mod (the release with a newer SQLite
# driver; see the comment there), and built again when that file changes.
$(TEMPORAL): build/temporal-cli/go.mod build/temporal-cli/go.sum
	@echo "building the temporal CLI $(TEMPORAL_CLI_VERSION) into ./bin (a few minutes the first time)"
	cd build/temporal-cli && $(GO) build -o $(CURDIR)/$(TEMPORAL) \
		-ldflags "-X github.com/temporalio/cli/temporalcli.Version=$(TEMPORAL_CLI_VERSION:v%=%)" \
		github.com/temporalio/cli/cmd/temporal

temporal-server: $(TEMPORAL_SERVER)

# The Temporal server $(TEMPORAL_SERVER_VERSION) (the release the CLI carries),
# its SQL schema tool and the Web UI server (the CLI's ui-server module),
# from build/temporal-server/go.mod, and again when it changes: what make
# cluster and the cluster tests run (internal/testkit/clustertest). The server is
# built last: its file stands for all three.
$(TEMPORAL_SERVER): build/temporal-server/go.mod build/temporal-server/go.sum
	@echo "building the Temporal server $(TEMPORAL_SERVER_VERSION), temporal-sql-tool and temporal-ui-server into ./bin (several minutes the first time)"
	cd build/temporal-server && $(GO) build -o $(CURDIR)/bin/temporal-sql-tool go.temporal.io/server/cmd/tools/sql
	cd build/temporal-server && $(GO) build -o $(CURDIR)/bin/temporal-ui-server github.com/temporalio/ui-server/v2/cmd/server
	cd build/temporal-server && $(GO) build -o $(CURDIR)/$(TEMPORAL_SERVER) go.temporal.io/server/cmd/server

jaeger: $(JAEGER)

# Jaeger's all-in-one program (v2: an OpenTelemetry Collector with Jaeger's
# in-memory trace store and query API), which the tracing tests start on
# loopback (internal/testkit/jaegertest); built from build/jaeger/go.mod, and again
# when it changes.
$(JAEGER): build/jaeger/go.mod build/jaeger/go.sum
	@echo "building Jaeger $(JAEGER_VERSION) into ./bin (several minutes the first time)"
	cd build/jaeger && $(GO) build -o $(CURDIR)/$(JAEGER) \
		-ldflags "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=$(JAEGER_VERSION)" \
		github.com/jaegertracing/jaeger/cmd/jaeger

MCP_SERVERS := tools/mcp/testdata/node_modules/.package-lock.json

mcp-servers: $(MCP_SERVERS)

$(MCP_SERVERS): tools/mcp/testdata/package-lock.json
	sh tools/mcp/testdata/install.sh

# The TypeScript Workflow Streams client (@temporalio/workflow-streams and
# @temporalio/client, pinned) that the streams tests run against a stream
# hosted by a Go workflow, and the TypeScript compiler that checks the
# example in docs/progress.md.
STREAMS_TS := streams/testdata/ts/node_modules/.package-lock.json

streams-ts: $(STREAMS_TS)

$(STREAMS_TS): streams/testdata/ts/package-lock.json
	sh streams/testdata/ts/install.sh

demo: $(TEMPORAL) build
	bash scripts/demo.sh

dev-server: $(TEMPORAL)
	bash scripts/dev-server.sh

# cluster: docker-compose.yml's topology without Docker: a private
# PostgreSQL (Debian's postgresql package), the Temporal server on it (4
# history shards, SQL visibility) with the configuration and set-up scripts
# in deploy/ that the compose file runs, agentrun's search attributes and
# database, and the Web UI, at the demo's addresses (localhost:7233,
# http://localhost:8233); make stop stops it (internal/testkit/clustertest).
cluster: $(TEMPORAL) $(TEMPORAL_SERVER) build
	$(GO) build -o bin/agentrun-cluster ./internal/testkit/clustertest/cmd/cluster
	bash scripts/cluster.sh

worker: $(TEMPORAL) build
	bash scripts/dev-server.sh
	bash scripts/worker.sh

stop:
	bash scripts/stop.sh

test: $(TEMPORAL) $(TEMPORAL_SERVER) $(JAEGER) $(MCP_SERVERS) $(STREAMS_TS) build
	$(GO) test -count=1 -timeout 30m ./...

# bench: AgentRun's step overhead (on the dev server, and on a real cluster
# it starts: the server on PostgreSQL, internal/testkit/clustertest; plain,
# encrypted, traced to a Jaeger it starts), the journal's appends (file and
# PostgreSQL), the history cost of streamed model text, kill → resume across
# worker processes, 1,000 runs parked on approval, approval of 1,000 and
# 10,000 parked runs by one batch signal and 500 concurrent runs on one
# worker (saturation), an embedded worker (agentrun.Register) against the
# worker program and what it links against a plain Temporal worker
# (library), against baselines measured in the same run;
# prints the table and writes it to BENCHMARKS.md. BENCH_FLAGS=-quick for a
# smoke run.
bench: $(TEMPORAL) $(TEMPORAL_SERVER) $(JAEGER)
	$(GO) run ./bench $(BENCH_FLAGS)

# chaos: the crash campaign: 180 trials of the hand example and of a longer
# scripted run, each crashed at one kill point (inside a model call, a read,
# a write before and after its effect, between steps; on Temporal also a
# PostgreSQL restart and a dev-server restart on its file) on both engines:
# a fleet of three workers on Temporal, and starter --local; and on
# Temporal a worker frozen (SIGSTOP) or cut off from the frontend or from
# PostgreSQL (a toxiproxy proxy) past the heartbeat timeout, in three
# settle modes of create_ticket; prints the table and writes it to BENCHMARKS.md.
# On a real cluster (the server on PostgreSQL, internal/testkit/clustertest) also
# the server process killed and its PostgreSQL restarted (cluster/server,
# cluster/server-postgres).
# CHAOS_FLAGS="-trials 12" for a shorter one, -points local/model,freeze-model,... for some points.
chaos: $(TEMPORAL) $(TEMPORAL_SERVER)
	$(GO) run ./chaos $(CHAOS_FLAGS)

# Worker Versioning (docs/fleets.md "Upgrade a fleet"), with the temporal CLI against
# TEMPORAL_ADDRESS: DEPLOYMENT is the workers' AGENTRUN_DEPLOYMENT (default
# agentrun), BUILD a build id of it (a worker logs its own at start-up).
#   make versions [BUILD=OLD]        the builds, which is current or ramping, and
#                                    with BUILD: its drainage and running runs
#   make version-ramp BUILD=NEW PERCENT=10   send that share of new runs to NEW
#   make version-current BUILD=NEW   new runs go to NEW; runs stay on their build
DEPLOYMENT ?= agentrun
PERCENT ?= 10

versions: $(TEMPORAL)
	$(TEMPORAL) worker deployment describe --name $(DEPLOYMENT)
	@if [ -n "$(BUILD)" ]; then \
	  set -x; \
	  $(TEMPORAL) worker deployment describe-version --deployment-name $(DEPLOYMENT) --build-id $(BUILD); \
	  $(TEMPORAL) workflow count --query 'TemporalWorkerDeploymentVersion="$(DEPLOYMENT):$(BUILD)" AND ExecutionStatus="Running"'; \
	fi

version-current: $(TEMPORAL)
	@test -n "$(BUILD)" || { echo "version-current needs BUILD=ID: a build id of deployment $(DEPLOYMENT) (make versions lists them)"; exit 2; }
	$(TEMPORAL) worker deployment set-current-version --deployment-name $(DEPLOYMENT) --build-id $(BUILD) --yes

version-ramp: $(TEMPORAL)
	@test -n "$(BUILD)" || { echo "version-ramp needs BUILD=ID: a build id of deployment $(DEPLOYMENT) (make versions lists them)"; exit 2; }
	$(TEMPORAL) worker deployment set-ramping-version --deployment-name $(DEPLOYMENT) --build-id $(BUILD) --percentage $(PERCENT) --yes

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

check: $(TEMPORAL) $(TEMPORAL_SERVER) $(JAEGER) $(MCP_SERVERS) $(STREAMS_TS) build lint
	$(GO) test -count=1 -race -timeout 40m ./...

# race: the tests with the race detector, as make check runs them, on every
# package but the end-to-end ones that take minutes even without it
# (RACE_SKIP: internal/e2e, and chaos and bench, whose tests drive the
# programs as child processes, which the detector does not see). CI runs
# it after make test.
RACE_SKIP := internal/e2e|chaos|bench
race: $(TEMPORAL) $(TEMPORAL_SERVER) $(JAEGER) $(MCP_SERVERS) $(STREAMS_TS)
	$(GO) test -count=1 -race -timeout 20m $$($(GO) list ./... | grep -v -E '^github.com/agentrun/agentrun/($(RACE_SKIP))$$')

# test-encrypted: the workflow and end-to-end suites again with a payload
# key set in the tests' environment (internal/testkit/testenv.SuiteKeys): every
# worker, starter and reconcile they start, and the tests' own client,
# encrypt with it. The key is a fixed test key, never a real one.
TEST_KEY := k1:WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo=
test-encrypted: $(TEMPORAL) $(TEMPORAL_SERVER) $(JAEGER) $(MCP_SERVERS) $(STREAMS_TS) build
	AGENTRUN_CODEC_KEYS=$(TEST_KEY) $(GO) test -count=1 -timeout 30m ./workflows ./internal/e2e

clean:
	rm -rf bin/starter bin/worker bin/reconcile

# compose-check: check docker-compose.yml and the Dockerfile without a Docker
# engine: the Compose file model (Debian's docker-compose, `apt-get install -y
# docker-compose`), then the deployment test (go test ./deploy, which also runs
# in make test).
.PHONY: compose-check
compose-check:
	@command -v docker-compose >/dev/null || { echo "compose-check needs docker-compose: apt-get install -y docker-compose"; exit 1; }
	docker-compose -f docker-compose.yml config -q
	$(GO) test -count=1 ./deploy
