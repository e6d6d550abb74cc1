#!/bin/sh
# One-shot schema setup for the Temporal server on PostgreSQL, run by the
# temporal-schema service of docker-compose.yml in temporalio/admin-tools.
#
# Creates the databases temporal and temporal_visibility (if missing), sets
# up their schema and brings it up to the version that this admin-tools
# image ships (the same release as the server). Safe to run again: create
# ignores an existing database, setup-schema keeps a newer version, and
# update-schema applies only what is missing.
#
# Environment (set by the compose file): DB (postgres12), POSTGRES_SEEDS,
# DB_PORT, POSTGRES_USER, SQL_PASSWORD (read by temporal-sql-tool),
# DBNAME, VISIBILITY_DBNAME.
set -eu

: "${DB:=postgres12}"
: "${POSTGRES_SEEDS:=postgres}"
: "${DB_PORT:=5432}"
: "${POSTGRES_USER:=temporal}"
: "${DBNAME:=temporal}"
: "${VISIBILITY_DBNAME:=temporal_visibility}"
SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

echo "waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT}"
tries=0
until nc -z "$POSTGRES_SEEDS" "$DB_PORT" 2>/dev/null; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "PostgreSQL did not answer at ${POSTGRES_SEEDS}:${DB_PORT} after 120s" >&2
    exit 1
  fi
  sleep 2
done

sql() {
  temporal-sql-tool --plugin "$DB" --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" "$@"
}

setup() { # setup DATABASE SCHEMA_SUBDIR
  echo "schema of database $1"
  sql --db "$1" create
  sql --db "$1" setup-schema -v 0.0
  sql --db "$1" update-schema -d "$SCHEMA_DIR/$2/versioned"
}

setup "$DBNAME" temporal
setup "$VISIBILITY_DBNAME" visibility
echo "Temporal schema is up to date"
