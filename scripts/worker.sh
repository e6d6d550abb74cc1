#!/usr/bin/env bash
# Start one agentrun worker in the background, unless the demo's runs.
source "$(dirname "$0")/lib.sh"
if running "$STATE/worker.pid"; then
  echo "the worker runs (pid $(cat "$STATE/worker.pid"))"
  exit 0
fi
echo "starting a worker on task queue ${AGENTRUN_TASK_QUEUE:-agentrun} (log $STATE/worker.log)"
nohup bin/worker >"$STATE/worker.log" 2>&1 &
echo $! >"$STATE/worker.pid"
# Whether it has encryption keys: make demo refuses to use a worker without.
if [ -n "${AGENTRUN_CODEC_KEYS:-}${AGENTRUN_CODEC_KEY_FILE:-}" ]; then echo on; else echo off; fi >"$STATE/worker.codec"
wait_for 30 "the worker to start" grep -q "worker started" "$STATE/worker.log" || { tail -20 "$STATE/worker.log" >&2; exit 1; }
