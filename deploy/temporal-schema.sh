#!/bin/sh
# One-shot schema setup for the Temporal server on PostgreSQL: run by the
# temporal-schema service of docker-compose.yml (in temporalio/admin-tools),
# by `make cluster` and by the cluster tests (internal/testkit/clustertest), with
# the temporal-sql-tool of the server's release (the image's, or ./bin's
# from make temporal-server).
#
# Creates the databases DBNAME and VISIBILITY_DBNAME (if missing), sets up
# their schema and brings it up to the version that the tool's release
# embeds (postgresql/v12/temporal and postgresql/v12/visibility: the same
# release as the server). Safe to run again: create ignores an existing
# database, setup-schema keeps a newer version, and update-schema applies
# only what is missing.
#
# Environment (set by the compose file): DB (postgres12), POSTGRES_SEEDS,
# DB_PORT, POSTGRES_USER, SQL_PASSWORD (read by temporal-sql-tool), DBNAME
# [temporal], VISIBILITY_DBNAME [temporal_visibility]; TEMPORAL_SQL_TOOL,
# the tool (default temporal-sql-tool, on PATH).
set -eu

: "${DB:=postgres12}"
: "${POSTGRES_SEEDS:=postgres}"
: "${DB_PORT:=5432}"
: "${POSTGRES_USER:=temporal}"
: "${DBNAME:=temporal}"
: "${VISIBILITY_DBNAME:=temporal_visibility}"

sql() {
  "${TEMPORAL_SQL_TOOL:-temporal-sql-tool}" --plugin "$DB" --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" "$@"
}

# PostgreSQL may still be starting: the first create waits for it.
echo "waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT}"
tries=1
until sql --db "$DBNAME" create >/dev/null 2>&1; do
  if [ "$tries" -ge 60 ]; then
    sql --db "$DBNAME" create || true
    echo "PostgreSQL did not answer at ${POSTGRES_SEEDS}:${DB_PORT} after 120s" >&2
    exit 1
  fi
  tries=$((tries + 1))
  sleep 2
done

setup() { # setup DATABASE SCHEMA
  echo "schema of database $1"
  sql --db "$1" create
  sql --db "$1" setup-schema -v 0.0
  sql --db "$1" update-schema --schema-name "postgresql/v12/$2"
}

setup "$DBNAME" temporal
setup "$VISIBILITY_DBNAME" visibility
echo "Temporal schema is up to date"
