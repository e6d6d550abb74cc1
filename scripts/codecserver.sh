#!/usr/bin/env bash
# Start the codec server (bin/codecserver) in the background with the
# demo's keys and journal, unless it runs: the Web UI of the dev server and
# `temporal --codec-endpoint` decode the runs through it.
source "$(dirname "$0")/lib.sh"
if running "$STATE/codecserver.pid"; then
  echo "the codec server runs (pid $(cat "$STATE/codecserver.pid"))"
  exit 0
fi
echo "starting the codec server at $CODEC_ENDPOINT (log $STATE/codecserver.log)"
nohup bin/codecserver >"$STATE/codecserver.log" 2>&1 &
echo $! >"$STATE/codecserver.pid"
wait_for 30 "the codec server to start" grep -q "codec server listening" "$STATE/codecserver.log" || { tail -20 "$STATE/codecserver.log" >&2; exit 1; }
