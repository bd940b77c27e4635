#!/bin/sh
# fencing.sh - how a resource uses a FENCED lock's token: it keeps the
# highest token it has accepted and refuses any lower one, so a holder that
# stalled past its lease cannot write after the next holder did.
#
#   examples/fencing.sh [port] [lock name]      (rlockd on 127.0.0.1:port)
#
# The resource is a directory standing for a database; each run starts a
# fresh one. Prints what the resource accepted and rejected; exits 0 when
# the stale write was rejected.
set -eu
port=${1:-7379}
name=${2:-orders}
cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

resource=$(mktemp -d)
trap 'rm -rf "$resource"' EXIT

# The resource: accept a write with a token no lower than the highest seen.
write() {
    highest=$(cat "$resource/highest" 2>/dev/null || echo 0)
    if [ "$1" -lt "$highest" ]; then
        echo "rejected token $1 < $highest"
        return 1
    fi
    echo "$1" >"$resource/highest"
    echo "accepted token $1"
}

old=$(cli LOCK "$name" 1 FENCED LEASE 500) # a holder, then it stalls
sleep 1                                     # ... past its lease
new=$(cli LOCK "$name" 2 FENCED)            # the next holder
write "$new"
cli UNLOCK "$name" 2 FENCED >/dev/null
if write "$old"; then
    exit 1 # the stalled holder's late write got through
fi
