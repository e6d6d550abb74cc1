# Shared by the demo scripts: where state lives and how to wait.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.agentrun
mkdir -p "$STATE"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
UI_PORT="${AGENTRUN_UI_PORT:-8233}"
export AGENTRUN_UI_URL="${AGENTRUN_UI_URL:-http://localhost:$UI_PORT}"

# The codec server's address (scripts/codecserver.sh) and the Web UI
# origins it admits.
export AGENTRUN_CODEC_ADDR="${AGENTRUN_CODEC_ADDR:-127.0.0.1:8234}"
export AGENTRUN_CODEC_ORIGINS="${AGENTRUN_CODEC_ORIGINS:-$AGENTRUN_UI_URL,http://127.0.0.1:$UI_PORT}"
CODEC_ENDPOINT="http://$AGENTRUN_CODEC_ADDR"

# running PIDFILE: whether the process in PIDFILE is alive.
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS WHAT COMMAND...: poll COMMAND until it succeeds.
wait_for() {
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then echo "timed out after ${secs}s waiting for $what" >&2; return 1; fi
    sleep 0.5
  done
}
