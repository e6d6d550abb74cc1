#!/bin/sh
# One-shot cluster setup, run by the temporal-setup service of
# docker-compose.yml in temporalio/admin-tools once the server runs:
#   1. wait until the cluster answers a health check;
#   2. create the namespace (TEMPORAL_NAMESPACE, default "default") if missing;
#   3. register agentrun's search attributes AgentRunStatus, AgentRunStep and AgentRunForkOf
#      (Keyword). An upsert of an unregistered attribute wedges a run, so they
#      must exist before the first run starts (the worker also checks at
#      start-up). Creating an existing attribute of the same type is a no-op.
# Safe to run again. Also run by `make cluster` and the cluster tests
# (internal/testkit/clustertest); TEMPORAL_CLI names the temporal CLI (default
# temporal, on PATH).
set -eu

temporal() { command "${TEMPORAL_CLI:-temporal}" "$@"; }

ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
RETENTION=${NAMESPACE_RETENTION:-72h}

# retry N WHAT COMMAND...: run COMMAND until it succeeds, at most N times,
# 2 seconds apart.
retry() {
  max=$1 what=$2
  shift 2
  n=1
  until "$@"; do
    if [ "$n" -ge "$max" ]; then
      echo "gave up: $what" >&2
      return 1
    fi
    n=$((n + 1))
    sleep 2
  done
}

echo "waiting for the Temporal cluster at $ADDRESS"
retry 90 "the Temporal cluster at $ADDRESS is not healthy" \
  temporal operator cluster health --address "$ADDRESS"

# The namespace exists, or creating it succeeds. (A describe can fail while
# the server is still starting: then create fails on an existing namespace
# and the next round's describe succeeds.)
ensure_namespace() {
  temporal operator namespace describe --address "$ADDRESS" --namespace "$NAMESPACE" >/dev/null 2>&1 ||
    temporal operator namespace create --address "$ADDRESS" --namespace "$NAMESPACE" --retention "$RETENTION"
}
echo "making sure namespace $NAMESPACE exists (retention $RETENTION if created)"
retry 30 "namespace $NAMESPACE" ensure_namespace

# A namespace just created takes a few seconds to reach every service: retry.
echo "registering search attributes in $NAMESPACE"
retry 30 "search attribute AgentRunStatus" \
  temporal operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" --name AgentRunStatus --type Keyword
retry 30 "search attribute AgentRunStep" \
  temporal operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" --name AgentRunStep --type Keyword
retry 30 "search attribute AgentRunForkOf" \
  temporal operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" --name AgentRunForkOf --type Keyword

temporal operator search-attribute list --address "$ADDRESS" --namespace "$NAMESPACE"
echo "Temporal is ready for agentrun"
