#!/bin/sh
# redis_cli_lock.sh - rlockd's commands typed into redis-cli.
#
#   examples/redis_cli_lock.sh NAME [HOST:PORT]
#
# Without HOST:PORT, $RLOCK_ADDR, else 127.0.0.1:7379. Prints the three
# replies, one a line: OK (locked), 0 (another owner's TRYLOCK) and 1
# (unlocked). Needs redis-cli (Debian: redis-tools).
#
# All three go through one redis-cli, one connection: rlockd releases a
# client's locks when its connection closes, so a LOCK sent by a redis-cli
# of its own would be released as soon as that redis-cli exits. The owner
# is the connection's client-id plus the thread-id given (1, then 2).
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: redis_cli_lock.sh NAME [HOST:PORT]" >&2; exit 2; }
name=$1
addr=${2:-${RLOCK_ADDR:-127.0.0.1:7379}}
host=${addr%:*} port=${addr##*:}

redis-cli -h "$host" -p "$port" <<EOF_
LOCK $name 1 LEASE 30000
TRYLOCK $name 2
UNLOCK $name 1
EOF_
