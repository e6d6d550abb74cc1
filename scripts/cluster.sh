#!/usr/bin/env bash
# make cluster: the compose file's topology on this machine without Docker
# (internal/testkit/clustertest/cmd/cluster, built into bin/agentrun-cluster): a
# private PostgreSQL, the Temporal server on it with deploy/'s configuration
# and set-up scripts (the ones docker-compose.yml runs), agentrun's
# database, and the Web UI. Runs in the background until make stop; logs in
# $STATE/cluster.log and $STATE/cluster/.
source "$(dirname "$0")/lib.sh"
if running "$STATE/cluster.pid"; then
  echo "the cluster already runs (pid $(cat "$STATE/cluster.pid")); make stop stops it"
  exit 0
fi
if running "$STATE/server.pid"; then
  echo "make cluster: make demo's dev server runs (pid $(cat "$STATE/server.pid")) on the cluster's ports: make stop first" >&2
  exit 1
fi
port=${TEMPORAL_ADDRESS##*:}
echo "starting the Temporal cluster at $TEMPORAL_ADDRESS (Web UI $AGENTRUN_UI_URL, log $STATE/cluster.log)"
nohup bin/agentrun-cluster -dir "$STATE/cluster" -port "$port" -ui-port "$UI_PORT" >"$STATE/cluster.log" 2>&1 &
pid=$!
echo "$pid" >"$STATE/cluster.pid"
# Wait for "cluster ready", or for the program to stop (its error is its
# last line; it stopped what it had started).
end=$((SECONDS + 600))
until grep -q '^cluster ready$' "$STATE/cluster.log"; do
  if ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$STATE/cluster.pid"
    tail -1 "$STATE/cluster.log" >&2
    exit 1
  fi
  if [ $SECONDS -ge $end ]; then
    echo "make cluster: not ready after 600s; stopping it (log $STATE/cluster.log)" >&2
    kill -TERM "$pid"
    exit 1
  fi
  sleep 0.5
done
grep -v '^cluster ready$' "$STATE/cluster.log"
echo "make stop stops it (and the data: the cluster's PostgreSQL is private to it)."
