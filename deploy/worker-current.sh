#!/bin/sh
# One-shot Worker Versioning setup, run by the worker-current service of
# docker-compose.yml in temporalio/admin-tools after the workers start: on
# the first start of a versioned fleet (AGENTRUN_DEPLOYMENT set), the
# deployment has one build and no current version, and a versioned worker
# gets no task until its build is current, so this makes that one build
# current. Later builds are promoted by the operator (docs/fleets.md "Upgrade a
# fleet"): when the deployment already has a current version, or more than
# one build, this changes nothing. Safe to run again.
set -eu

ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
DEPLOYMENT=${AGENTRUN_DEPLOYMENT:-}

if [ -z "$DEPLOYMENT" ]; then
  echo "AGENTRUN_DEPLOYMENT is empty: the workers are unversioned, nothing to do"
  exit 0
fi

# The deployment exists once a worker of it polls: wait up to 3 minutes.
n=0
until out=$(temporal worker deployment describe --address "$ADDRESS" --namespace "$NAMESPACE" --name "$DEPLOYMENT" 2>/dev/null); do
  n=$((n + 1))
  if [ "$n" -ge 90 ]; then
    echo "gave up: no worker of deployment $DEPLOYMENT polls Temporal at $ADDRESS" >&2
    exit 1
  fi
  sleep 2
done

current=$(printf '%s\n' "$out" | awk '$1 == "CurrentVersionBuildID" { print $2 }')
if [ -n "$current" ]; then
  echo "deployment $DEPLOYMENT: build $current is current; nothing to do"
  exit 0
fi
# The builds: the rows of the "Version Summaries" table.
builds=$(printf '%s\n' "$out" | awk -v d="$DEPLOYMENT" 'rows && $1 == d { print $2 } $1 == "DeploymentName" && $2 == "BuildID" { rows = 1 }')
count=$(printf '%s\n' "$builds" | grep -c . || true)
if [ "$count" -ne 1 ]; then
  echo "deployment $DEPLOYMENT has $count builds and none is current: make one current with" >&2
  echo "  temporal worker deployment set-current-version --deployment-name $DEPLOYMENT --build-id BUILD" >&2
  exit 1
fi
temporal worker deployment set-current-version --address "$ADDRESS" --namespace "$NAMESPACE" \
  --deployment-name "$DEPLOYMENT" --build-id "$builds" --yes
echo "deployment $DEPLOYMENT: build $builds is current"
