#!/bin/sh
# One-shot setup of agentrun's own database, run by the agentrun-db service
# of docker-compose.yml (in the postgres image, for psql) before the workers
# start. The workers keep the write guard's journal and the content store
# there (AGENTRUN_JOURNAL=postgres://...), so the replicas share nothing but
# PostgreSQL and Temporal; the tables themselves are created by the first
# worker (package postgres migrates on open).
#
# Creates the login role DB_USER with DB_PASSWORD (or sets the password of
# an existing one, so it follows the compose setting) and the database
# DB_NAME owned by it, if missing. Safe to run again.
#
# Environment (set by the compose file): PGHOST, PGPORT, PGUSER and
# PGPASSWORD (a superuser: the one Temporal's databases use), DB_USER,
# DB_NAME, DB_PASSWORD.
set -eu

: "${DB_USER:=agentrun}"
: "${DB_NAME:=agentrun}"
: "${DB_PASSWORD:=agentrun}"

echo "waiting for PostgreSQL at ${PGHOST:-postgres}:${PGPORT:-5432}"
tries=0
until pg_isready -q -d postgres; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "PostgreSQL did not answer after 120s" >&2
    exit 1
  fi
  sleep 2
done

echo "role $DB_USER and database $DB_NAME"
psql -v ON_ERROR_STOP=1 -d postgres -v user="$DB_USER" -v db="$DB_NAME" -v pass="$DB_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'user')
  WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'user') \gexec
SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', :'user', :'pass') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user')
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
SQL
echo "agentrun's database is ready"
