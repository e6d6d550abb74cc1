#!/bin/sh
# Installs the TypeScript Workflow Streams client that the streams tests run
# (stream.js, with agentrun's payload codec, codec.js), and the TypeScript
# compiler that checks the README's example and codec.js,
# at the exact versions pinned in package.json and package-lock.json, into
# node_modules/ next to this script. Needs node (>= 20.3) and npm.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
