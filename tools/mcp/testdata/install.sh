#!/bin/sh
# Installs the MCP servers that the tools/mcp tests start, at the exact
# versions pinned in package.json and package-lock.json, into
# node_modules/ next to this script. Needs node and npm.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
