#!/usr/bin/env bash
# Start the Temporal dev server with its Web UI and agentrun's search
# attributes, state in .agentrun/temporal.db, unless one already answers.
# With DEMO_CODEC_ENDPOINT set (make demo), its Web UI decodes payloads
# through the codec server there (scripts/codecserver.sh).
# The dynamic config values lift the dev server's own rate limit of ~90 ms
# per activity, and let an old worker deployment version report "drained"
# within seconds (internal/testkit/devserver.DynamicConfig, checked against this file).
source "$(dirname "$0")/lib.sh"
if bin/temporal operator cluster health >/dev/null 2>&1; then
  echo "Temporal already answers at $TEMPORAL_ADDRESS"
  if [ -n "${DEMO_CODEC_ENDPOINT:-}" ] && ! curl -fs "$AGENTRUN_UI_URL/api/v1/settings" 2>/dev/null | grep -q "\"Endpoint\":\"$DEMO_CODEC_ENDPOINT\""; then
    echo "note: its Web UI may not decode through the codec server at $DEMO_CODEC_ENDPOINT; make stop, then make demo, to start one that does"
  fi
  exit 0
fi
codec=()
[ -n "${DEMO_CODEC_ENDPOINT:-}" ] && codec=(--ui-codec-endpoint "$DEMO_CODEC_ENDPOINT")
host=${TEMPORAL_ADDRESS%:*}; port=${TEMPORAL_ADDRESS##*:}
echo "starting the Temporal dev server at $TEMPORAL_ADDRESS (Web UI $AGENTRUN_UI_URL, log $STATE/server.log)"
nohup bin/temporal server start-dev --ip "$host" --port "$port" --ui-port "$UI_PORT" \
  --db-filename "$STATE/temporal.db" "${codec[@]}" \
  --search-attribute AgentRunStatus=Keyword --search-attribute AgentRunStep=Keyword --search-attribute AgentRunForkOf=Keyword \
  --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
  --dynamic-config-value system.enableActivityEagerExecution=true \
  --dynamic-config-value matching.wv.VersionDrainageStatusVisibilityGracePeriod=5 \
  --dynamic-config-value matching.wv.VersionDrainageStatusRefreshInterval=2 \
  --log-level warn >"$STATE/server.log" 2>&1 &
echo $! >"$STATE/server.pid"
wait_for 60 "the dev server" bin/temporal operator cluster health || { tail -20 "$STATE/server.log" >&2; exit 1; }
# A database from an older setup may lack them; creating is idempotent.
for sa in AgentRunStatus AgentRunStep AgentRunForkOf; do
  bin/temporal operator search-attribute create --name "$sa" --type Keyword >/dev/null 2>&1 || true
done
