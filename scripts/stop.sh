#!/usr/bin/env bash
# Stop the worker, the codec server and the dev server that the demo scripts started (by the
# pids they recorded; nothing else).
source "$(dirname "$0")/lib.sh"
for name in worker codecserver server; do
  f="$STATE/$name.pid"
  if running "$f"; then
    pid=$(cat "$f")
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped the ${name/codecserver/codec server} (pid $pid)"
  fi
  rm -f "$f"
done
rm -f "$STATE/worker.codec"
