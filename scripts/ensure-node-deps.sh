#!/usr/bin/env bash
# Install the JavaScript clients the tests drive (tests/js/package.json, pinned by its
# lockfile) with the machine's Node.js and npm, from the npm registry.  Idempotent: does
# nothing when tests/js/node_modules matches the lockfile.  Exit 0 when they are there.
set -euo pipefail
cd "$(dirname "$0")/../tests/js"
if ! command -v npm >/dev/null; then
    echo "ensure-node-deps: npm is missing (Node.js 20+ with npm is needed for the JavaScript client tests)" >&2
    exit 1
fi
if [ node_modules/.package-lock.json -nt package-lock.json ]; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
version() { node -e "console.log(require('./node_modules/$1/package.json').version)" 2>/dev/null || echo '?'; }
echo "ensure-node-deps: installed @prefactor/core $(version @prefactor/core)," \
     "@opentelemetry/sdk-trace $(version @opentelemetry/sdk-trace)"
