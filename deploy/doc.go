// Package deploy holds agentrun's deployment files and the test that checks
// them.
//
// The repository root has the Dockerfile (the worker, starter and reconcile
// programs in one non-root image) and docker-compose.yml (PostgreSQL,
// Temporal Server with its one-shot schema and namespace/search-attribute
// setup, the Web UI, and a fleet of two workers). This folder holds what the
// compose file mounts:
//
//   - temporal-schema.sh: creates and upgrades the Temporal databases
//     (temporalio/admin-tools, temporal-sql-tool, plugin postgres12);
//   - temporal-setup.sh: waits for the cluster, creates the namespace and
//     registers the search attributes AgentRunStatus and AgentRunStep;
//   - dynamicconfig/: the server's dynamic config.
//
// There is no Docker engine where agentrun is developed, so the files are
// checked statically: `make compose-check` runs docker-compose config, and
// this package's test (part of `go test ./...`, no Docker needed) parses the
// compose file and the Dockerfile and asserts the properties a fleet depends
// on: pinned images, a worker stop grace period above its stop timeout, one
// journal volume shared by every replica, setup before the workers start, no
// secrets in the file, and only AGENTRUN_ settings the programs read.
// The package has no code of its own.
package deploy
