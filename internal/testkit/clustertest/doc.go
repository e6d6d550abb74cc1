// Package clustertest starts a real Temporal cluster on this machine,
// without Docker: the server built from build/temporal-server (make
// temporal-server) on PostgreSQL, 4 history shards, SQL visibility, the
// namespace default and agentrun's search attributes registered, and with
// Options.UIPort its Web UI (the ui-server module the temporal CLI
// carries). It is what the cluster tests, `make cluster`, the campaign's
// cluster trials and the bench's cluster figure run.
//
// Every stage runs the files docker-compose.yml runs (ServerScript with
// ServerConfig, SchemaScript, SetupScript; go test ./deploy checks it), so
// the compose topology and this one cannot drift: only PostgreSQL differs
// (Debian's binaries through internal/testkit/pgtest, instead of the postgres
// image).
//
// [Start] starts a cluster for a program (make cluster, the campaign, the
// bench); on an error it stops what it started, and a port in use or a
// missing program is a one-line error naming it. [Shared] starts one per
// test process, on a private PostgreSQL of its own and on free ports;
// under CI=true a test fails when it cannot start, and is skipped
// otherwise. [Cluster.RestartServer] and [Cluster.RestartPostgres] take
// the server or its PostgreSQL down and up again mid-run.
//
// Children die with the process that started them (SIGKILL on its death),
// but the private PostgreSQL runs under pg_ctl: call Stop.
package clustertest
