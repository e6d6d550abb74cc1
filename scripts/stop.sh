#!/usr/bin/env bash
# Stop the worker, the codec server and the dev server that the demo scripts started, and the
# cluster of make cluster (by the pids they recorded; nothing else). The cluster stops its
# server, Web UI and PostgreSQL itself on SIGTERM: it gets 60 s.
source "$(dirname "$0")/lib.sh"
for name in worker codecserver server cluster; do
  f="$STATE/$name.pid"
  if running "$f"; then
    pid=$(cat "$f")
    kill -TERM "$pid"
    tries=40; [ "$name" = cluster ] && tries=240
    for _ in $(seq 1 "$tries"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped the ${name/codecserver/codec server} (pid $pid)"
  fi
  rm -f "$f"
done
rm -f "$STATE/worker.codec"
