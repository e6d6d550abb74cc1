#!/bin/sh
# Starts the Temporal server (frontend, history, matching and worker
# services in one process) with the configuration temporal-server.yaml next
# to this script and the dynamic config dynamicconfig/development-sql.yaml.
# Run by the temporal service of docker-compose.yml (in temporalio/server),
# by `make cluster` and by the cluster tests (internal/testkit/clustertest), so that
# all three run one configuration.
#
# Environment: what temporal-server.yaml reads (POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, POSTGRES_PWD, the ports, ...), and TEMPORAL_SERVER, the
# server program (default temporal-server, on PATH: the image's, or ./bin's
# from make temporal-server). The server replaces this shell (exec), so a
# signal to this process reaches the server.
set -eu

dir=$(cd "$(dirname "$0")" && pwd)

: "${DYNAMIC_CONFIG_FILE_PATH:=$dir/dynamicconfig/development-sql.yaml}"
export DYNAMIC_CONFIG_FILE_PATH

# Bound to every interface (in a container), the services need the address
# the others reach them at: the container's.
if [ "${BIND_ON_IP:-127.0.0.1}" = "0.0.0.0" ] && [ -z "${TEMPORAL_BROADCAST_ADDRESS:-}" ]; then
  TEMPORAL_BROADCAST_ADDRESS=$(hostname -i | awk '{ print $1 }')
  export TEMPORAL_BROADCAST_ADDRESS
fi

exec "${TEMPORAL_SERVER:-temporal-server}" --root "$dir" --config . --env temporal-server --allow-no-auth start
