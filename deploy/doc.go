// Package deploy holds agentrun's deployment files and the test that checks
// them.
//
// The repository root has the Dockerfile (the worker, starter and reconcile
// programs in one non-root image) and docker-compose.yml (PostgreSQL,
// Temporal Server with its one-shot schema and namespace/search-attribute
// setup, the Web UI, a one-shot setup of agentrun's own database, and a fleet
// of two workers that share nothing but PostgreSQL and Temporal: their
// AGENTRUN_JOURNAL is a postgres:// URL of that database, which holds the
// write guard's journal and the content store, and no volume is shared
// between the replicas). This folder holds what the compose file mounts:
//
//   - temporal-server.sh and temporal-server.yaml: start the Temporal
//     server with its configuration (a template the server renders:
//     PostgreSQL persistence and SQL visibility, plugin postgres12, 4
//     history shards);
//   - temporal-schema.sh: creates and upgrades the Temporal databases
//     (temporal-sql-tool, plugin postgres12, the release's embedded
//     schemas);
//   - agentrun-db.sh: creates agentrun's login role and database on the
//     same PostgreSQL (psql from the postgres image); the workers create
//     their tables;
//   - temporal-setup.sh: waits for the cluster, creates the namespace and
//     registers the search attributes AgentRunStatus and AgentRunStep;
//   - worker-current.sh: on the first start of the versioned fleet, makes
//     the one build of deployment AGENTRUN_DEPLOYMENT current (nothing when
//     one is current already, or versioning is off);
//   - dynamicconfig/: the server's dynamic config;
//   - temporal-ui.yaml: the Web UI server's configuration for make cluster
//     (the compose file runs the temporalio/ui image instead).
//
// `make cluster` and the cluster tests (internal/testkit/clustertest) run the
// same temporal-server.sh, temporal-schema.sh and temporal-setup.sh on
// this machine without Docker (the server built by make temporal-server,
// Debian's PostgreSQL), so the compose topology runs here too; the test
// checks that the compose file's services run those files.
//
// The workers join the worker deployment agentrun (AGENTRUN_DEPLOYMENT),
// each as the build id its binary derives; the service worker-next (profile
// upgrade) is the worker's twin with an image of its own, for rolling
// upgrades (the compose file's header and docs/fleets.md "Upgrade a fleet").
//
// There is no Docker engine where agentrun is developed, so the files are
// checked statically: `make compose-check` runs docker-compose config, and
// this package's test (part of `go test ./...`, no Docker needed) parses the
// compose file and the Dockerfile and asserts the properties a fleet depends
// on: pinned images, a worker stop grace period above its stop timeout, no
// volume shared by the worker's replicas (only read-only configuration), an
// AGENTRUN_JOURNAL that is a postgres:// URL of the database the setup
// creates, setup before the workers start, no secrets in the file, only
// AGENTRUN_ settings the programs read, and the Worker Versioning wiring (a
// deployment name the worker accepts, no shared build id, worker-next and
// worker-current).
// The package has no code of its own.
package deploy
