#!/usr/bin/env bash
#
# install-npm-deps.sh [DIR] - installs the npm packages the tests use, pinned,
# under DIR (default build/npm), unless those versions are there already:
# ioredis (the Node example's test), node-redisson (a Redisson-format
# Node client on a Redis Cluster, tests/integration/test_cluster.py) and
# node-redis, npm's `redis` (tests/integration/test_compat.py: it must work
# with its default options), both 5.x, whose default is RESP2, and 6.x,
# whose default is RESP3, installed beside it under the alias `redis6`.
# Silent when nothing is missing.
#
# Never fails the build: without node and npm, or when npm cannot fetch
# (offline), it says so loudly and exits 0, and the tests that need the
# package SKIP, naming this script.
set -uo pipefail

IOREDIS_VERSION=5.10.1
NODE_REDISSON_VERSION=1.0.4
NODE_REDIS_VERSION=5.9.0
NODE_REDIS6_VERSION=6.3.1

dir=${1:-build/npm}

loud() {
    echo "install-npm-deps: ********************************************" >&2
    echo "install-npm-deps: $*" >&2
    echo "install-npm-deps: the tests that need them will SKIP." >&2
    echo "install-npm-deps: ********************************************" >&2
    exit 0
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    loud "node and npm not found (Debian: apt-get install nodejs npm)"
fi
version_of() {
    DIR="$dir" PKG="$1" node -p "require(require('path').resolve(process.env.DIR,
        'node_modules', process.env.PKG, 'package.json')).version" 2>/dev/null
}
if [ "$(version_of ioredis)" = "$IOREDIS_VERSION" ] &&
    [ "$(version_of node-redisson)" = "$NODE_REDISSON_VERSION" ] &&
    [ "$(version_of redis)" = "$NODE_REDIS_VERSION" ] &&
    [ "$(version_of redis6)" = "$NODE_REDIS6_VERSION" ]; then
    exit 0
fi

wanted="ioredis@$IOREDIS_VERSION node-redisson@$NODE_REDISSON_VERSION
    redis@$NODE_REDIS_VERSION redis6@npm:redis@$NODE_REDIS6_VERSION"
echo "install-npm-deps: installing $wanted under $dir" >&2
mkdir -p "$dir"
# Bounded: an offline npm would otherwise retry for minutes. All in one
# install: npm drops what a later --no-save install does not name.
# shellcheck disable=SC2086
if ! timeout 300 npm install --prefix "$dir" --no-save --no-package-lock \
    --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 \
    $wanted >&2; then
    loud "npm install $wanted failed (offline?)"
fi
