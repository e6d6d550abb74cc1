#!/usr/bin/env bash
# The hand example on Temporal: the run stops awaiting approval, an
# operator approves it with `bin/temporal workflow signal`, the run completes.
# Every command it prints works as printed from the repository's root.
source "$(dirname "$0")/lib.sh"

# The demo encrypts its runs (docs/privacy.md): with no keys set, it makes
# one key, once, in ~/.config/agentrun/demo-codec.keys ($XDG_CONFIG_HOME
# when set; file 0600, folder 0700), outside the checkout that the demo's
# tools and a filesystem MCP server may read, and every program it starts
# reads it. A key an older demo left in $STATE/codec.keys moves there. The
# codec server lets the Web UI and the temporal CLI read the runs; the dev
# server's UI is pointed at it.
if [ -z "${AGENTRUN_CODEC_KEYS:-}" ] && [ -z "${AGENTRUN_CODEC_KEY_FILE:-}" ]; then
  keydir="${XDG_CONFIG_HOME:-$HOME/.config}/agentrun"
  (umask 077; mkdir -p "$keydir") && chmod 700 "$keydir"
  export AGENTRUN_CODEC_KEY_FILE="$keydir/demo-codec.keys"
  if [ ! -s "$AGENTRUN_CODEC_KEY_FILE" ] && [ -s "$STATE/codec.keys" ]; then
    mv "$STATE/codec.keys" "$AGENTRUN_CODEC_KEY_FILE" && chmod 600 "$AGENTRUN_CODEC_KEY_FILE"
  fi
  if [ ! -s "$AGENTRUN_CODEC_KEY_FILE" ]; then
    (umask 077; echo "demo-$(date +%Y%m%d):$(head -c 32 /dev/urandom | base64)" >"$AGENTRUN_CODEC_KEY_FILE")
  fi
fi
if running "$STATE/worker.pid" && [ "$(cat "$STATE/worker.codec" 2>/dev/null)" != on ]; then
  echo "a worker without the demo's key runs (pid $(cat "$STATE/worker.pid")): make stop, then make demo" >&2
  exit 1
fi
DEMO_CODEC_ENDPOINT="$CODEC_ENDPOINT" bash scripts/dev-server.sh
bash scripts/worker.sh
bash scripts/codecserver.sh

keys="AGENTRUN_CODEC_KEY_FILE=$AGENTRUN_CODEC_KEY_FILE"
[ -n "${AGENTRUN_CODEC_KEYS:-}" ] && keys="AGENTRUN_CODEC_KEYS=..."
echo
echo "The run is encrypted in Temporal's history (docs/privacy.md); the programs read it with its key:"
echo "\$ export $keys"
run="demo-$(date +%Y%m%d-%H%M%S)"
prompt="I need read access to the orders database."
echo
echo "\$ bin/starter --id $run '$prompt'"
bin/starter --id "$run" "$prompt"

echo
echo "waiting for the run to ask for approval..."
awaiting() { bin/temporal workflow query -w "$run" --name state --output json --codec-endpoint "$CODEC_ENDPOINT" 2>/dev/null | grep -q '"status": *"AwaitingApproval"'; }
wait_for 60 "the run to await approval" awaiting
echo "\$ bin/reconcile show $run"
bin/reconcile show "$run"

marker="tool/2/0/create_ticket"
echo
echo "an operator approves it:"
echo "\$ bin/temporal workflow signal -w $run --name approve --input '{\"Marker\":\"$marker\"}'"
bin/temporal workflow signal -w "$run" --name approve --input "{\"Marker\":\"$marker\"}"

echo
echo "\$ bin/starter --id $run --wait '$prompt'"
bin/starter --id "$run" --wait "$prompt"

echo
echo "The dev server keeps running: look at the run in the Web UI ($AGENTRUN_UI_URL/namespaces/default/workflows/$run);"
echo "it decodes the run through the codec server at $CODEC_ENDPOINT, which also shows values kept by reference in full."
echo "The temporal CLI reads it the same way:"
echo "\$ bin/temporal workflow query -w $run --name state --codec-endpoint $CODEC_ENDPOINT"
echo "make stop stops the worker, the codec server and the dev server."
echo "The commands above work as printed from this folder (after the export); to type temporal, starter and reconcile"
echo "without bin/ (as the Web UI and the docs write them): export PATH=\"\$PWD/bin:\$PATH\""
