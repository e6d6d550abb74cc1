// Package pgtest gives tests a real PostgreSQL database: [URL] returns the
// URL of a fresh, empty database for one test.
//
// With $AGENTRUN_TEST_POSTGRES_URL set, the databases are created on that
// server (its user needs CREATEDB). Otherwise the first call of a test
// process starts a private cluster from the installed PostgreSQL binaries
// (pg_config --bindir, else /usr/lib/postgresql/*/bin; Debian's
// `postgresql` package): initdb in a temporary folder with a random
// password (scram-sha-256), listening on a free 127.0.0.1 port with its unix
// socket inside that folder, fsync on. Run as root, the cluster belongs to
// the unprivileged user postgres (through runuser); otherwise to the
// current user. Call [Stop] from TestMain to stop it (pg_ctl stop -m fast)
// and remove its folder. [Restart] stops the private cluster's server
// and starts it again on the same port with the same data (pg_ctl stop -m
// fast, pg_ctl start), for tests of what a server restart does to a
// running fleet; with $AGENTRUN_TEST_POSTGRES_URL set it skips the test.
//
// When no PostgreSQL can be had, the test fails under CI=true and is
// skipped otherwise, with the reason. It is imported by tests, and by the
// bench, which starts a cluster of its own the same way through [Start].
package pgtest
