#!/usr/bin/env bash
#
# install-npm-deps.sh [DIR] - installs the npm packages that the tests of
# examples/ use (ioredis, pinned) under DIR (default build/npm), unless
# that version is there already. Silent when nothing is missing.
#
# Never fails the build: without node and npm, or when npm cannot fetch
# (offline), it says so loudly and exits 0, and the tests that need the
# package SKIP, naming this script.
set -uo pipefail

IOREDIS_VERSION=5.10.1

dir=${1:-build/npm}

loud() {
    echo "install-npm-deps: ********************************************" >&2
    echo "install-npm-deps: $*" >&2
    echo "install-npm-deps: the Node example's test will SKIP." >&2
    echo "install-npm-deps: ********************************************" >&2
    exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    loud "node and npm not found (Debian: apt-get install nodejs npm)"
fi
installed=$(DIR="$dir" node -p "require(require('path').resolve(process.env.DIR,
    'node_modules/ioredis/package.json')).version" 2>/dev/null) || installed=
if [ "$installed" = "$IOREDIS_VERSION" ]; then
    exit 0
fi

echo "install-npm-deps: installing ioredis@$IOREDIS_VERSION under $dir" >&2
mkdir -p "$dir"
# Bounded: an offline npm would otherwise retry for minutes.
if ! timeout 300 npm install --prefix "$dir" --no-save --no-package-lock \
    --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 \
    "ioredis@$IOREDIS_VERSION" >&2; then
    loud "npm install ioredis@$IOREDIS_VERSION failed (offline?)"
fi
