# agentrun's image: the worker, the starter and the reconcile tool.
#
#   docker build -t agentrun .                          # the programs, no Node.js
#   docker build -t agentrun --build-arg INSTALL_NODE=true .   # + node and npx for MCP stdio servers
#   docker run --rm -e TEMPORAL_ADDRESS=host:7233 -v agentrun-data:/data agentrun            # a worker
#   docker run --rm -e TEMPORAL_ADDRESS=host:7233 agentrun starter --id run-1 --wait PROMPT  # a run
#
# The worker is the default command; the starter and reconcile are on PATH
# too. Every worker of a task queue must share /data: the write guard's
# journal lives in /data/journal (docker-compose.yml mounts one named volume
# into all replicas). SIGTERM stops a worker gracefully: running steps get
# AGENTRUN_STOP_TIMEOUT (default 10s) to finish, so give the container a
# longer stop timeout than that (docker stop -t, compose stop_grace_period).

# ---- build: static binaries ----
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./worker ./starter ./reconcile ./codecserver

# ---- runtime ----
FROM debian:bookworm-slim
# true: install Node.js and npm, for MCP stdio servers started with npx in
# AGENTRUN_TOOLS (Debian bookworm's Node.js 18).
ARG INSTALL_NODE=false
# ca-certificates: TLS to model providers and Temporal Cloud. tini: a PID 1
# that forwards SIGTERM to the worker and reaps the MCP servers it starts.
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends ca-certificates tini; \
    if [ "$INSTALL_NODE" = "true" ]; then \
      apt-get install -y --no-install-recommends nodejs npm; \
    fi; \
    rm -rf /var/lib/apt/lists/*
# A non-root user that owns /data (a new named volume takes this ownership).
RUN set -eux; \
    groupadd --system --gid 10001 agentrun; \
    useradd --system --uid 10001 --gid agentrun --home-dir /home/agentrun --create-home --shell /usr/sbin/nologin agentrun; \
    mkdir -p /data/journal; \
    chown -R agentrun:agentrun /data
COPY --from=build /out/worker /out/starter /out/reconcile /out/codecserver /usr/local/bin/

ENV AGENTRUN_JOURNAL=/data/journal \
    AGENTRUN_TICKETS=/data/tickets.jsonl
VOLUME ["/data"]
WORKDIR /data
USER 10001:10001

STOPSIGNAL SIGTERM
# tini without -g: SIGTERM goes to the worker alone, which then stops its MCP
# servers itself after the running steps finish.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["worker"]
