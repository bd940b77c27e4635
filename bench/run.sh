#!/usr/bin/env bash
# bench/run.sh - the harness behind `make bench`.
#
# Owns: a private redis-server and two private rlockd, all on free
# loopback ports, with temporary configs in a mktemp -d directory; runs
# rlockd-bench against them, then stops exactly the processes it started
# (by pid, from an EXIT trap) and removes the directory. It never touches
# any other Redis or rlockd on the machine.
#
# The first rlockd runs with the default watchdog_timeout_ms (30000) and
# carries the lock+unlock and contended scenarios. The second, fresh one
# carries only the held-locks scenario (--held-rlockd): its memory figure
# then starts from a clean heap, and its watchdog_timeout_ms is
# 3000 (held_watchdog_ms below), so that renewals come every second and
# a few seconds of measurement see several rounds. The bench reports that
# rate as measured and the one for the default 30000 ms as derived.
#
# usage: bench/run.sh BUILD_DIR [rlockd-bench options...]
#   BUILD_DIR holds rlockd and rlockd-bench; extra options go to
#   rlockd-bench (e.g. --duration 5).
#
# Functions called only from traps and wait_until are not dead code,
# whatever shellcheck thinks.
# shellcheck disable=SC2317
set -euo pipefail

die() {
    echo "bench/run.sh: $*" >&2
    exit 1
}

[ $# -ge 1 ] || die "usage: bench/run.sh BUILD_DIR [rlockd-bench options...]"
build=$1
shift
for bin in rlockd rlockd-bench; do
    [ -x "$build/$bin" ] || die "$build/$bin not found (run make first)"
done
command -v redis-server >/dev/null || die "redis-server not installed"
command -v redis-cli >/dev/null || die "redis-cli not installed"

held_watchdog_ms=3000

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlockd-bench.XXXXXX")
redis_pid=
rlockd_pid=
held_rlockd_pid=
bench_pid=

# Stops what this script started, newest first, and waits for each so
# that no process outlives the benchmark.
cleanup() {
    local status=$?
    for pid in $bench_pid $held_rlockd_pid $rlockd_pid $redis_pid; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../scripts/lib.sh"

# Shows a log's tail when start-up fails: the reason is usually in it.
show_log() {
    echo "---- $1 (last 20 lines) ----" >&2
    tail -n 20 "$1" >&2 || true
}

# wait_until SECONDS PID DESCRIPTION COMMAND...: polls COMMAND until it
# succeeds; fails if PID exits or the time runs out.
wait_until() {
    local seconds=$1 pid=$2 what=$3
    shift 3
    local deadline=$((SECONDS + seconds))
    until "$@"; do
        kill -0 "$pid" 2>/dev/null || return 1
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
    echo "bench/run.sh: $what" >&2
}

answers_ping() {
    [ "$(redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null)" = PONG ]
}

rlockd_redis_connected() {
    answers_ping "$1" &&
        redis-cli -h 127.0.0.1 -p "$1" INFO 2>/dev/null | tr -d '\r' | grep -qx 'redis_connected:1'
}

# another_free_port "PORT...": a free port that is none of those listed.
another_free_port() {
    local port
    port=$(free_port)
    while [[ " $1 " == *" $port "* ]]; do
        port=$(free_port)
    done
    echo "$port"
}

redis_port=$(free_port)
rlockd_port=$(another_free_port "$redis_port")
held_rlockd_port=$(another_free_port "$redis_port $rlockd_port")

redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no >"$tmp/redis.log" 2>&1 &
redis_pid=$!
wait_until 10 "$redis_pid" "redis-server pid $redis_pid on 127.0.0.1:$redis_port" \
    answers_ping "$redis_port" || { show_log "$tmp/redis.log"; die "redis-server did not start"; }

# write_rlockd_config NAME PORT WATCHDOG_MS: writes $tmp/NAME.ini.
write_rlockd_config() {
    cat >"$tmp/$1.ini" <<EOF
; written by bench/run.sh for one benchmark run
[server]
listen = 127.0.0.1:$2

[redis]
host = 127.0.0.1
port = $redis_port

[lock]
watchdog_timeout_ms = $3

[log]
level = warn
EOF
}

# start_rlockd NAME PORT: starts rlockd on $tmp/NAME.ini, logging to
# $tmp/NAME.log, and waits until it serves. Its pid is left in
# $started_pid rather than printed, since a $(...) subshell would make
# the daemon its child instead of ours.
start_rlockd() {
    "$build/rlockd" -c "$tmp/$1.ini" 2>"$tmp/$1.log" &
    started_pid=$!
    wait_until 10 "$started_pid" "$1 pid $started_pid on 127.0.0.1:$2" \
        rlockd_redis_connected "$2" ||
        { show_log "$tmp/$1.log"; die "$1 did not start or never reported redis_connected:1"; }
}

write_rlockd_config rlockd "$rlockd_port" 30000
start_rlockd rlockd "$rlockd_port"
rlockd_pid=$started_pid

write_rlockd_config rlockd-held "$held_rlockd_port" "$held_watchdog_ms"
start_rlockd rlockd-held "$held_rlockd_port"
held_rlockd_pid=$started_pid

# In the background with `wait`: bash runs a trap only after a foreground
# child exits, and an interrupted benchmark should stop now, not in 20 s.
"$build/rlockd-bench" --redis "127.0.0.1:$redis_port" --rlockd "127.0.0.1:$rlockd_port" \
    --redis-pid "$redis_pid" --rlockd-pid "$rlockd_pid" \
    --held-rlockd "127.0.0.1:$held_rlockd_port" --held-rlockd-pid "$held_rlockd_pid" "$@" &
bench_pid=$!
status=0
wait "$bench_pid" || status=$?
bench_pid=

# per_run_ms RUNS COMMAND...: mean wall time of one run of COMMAND, in ms.
per_run_ms() {
    local runs=$1 start end
    shift
    start=$(date +%s%N)
    for ((i = 0; i < runs; i++)); do
        "$@" >/dev/null
    done
    end=$(date +%s%N)
    awk -v ns=$((end - start)) -v runs="$runs" 'BEGIN { printf "%.2f", ns / runs / 1e6 }'
}

# The rlock command against flock(1), each running `true` under a lock:
# what a shell script pays per locked run (process start, connect, LOCK,
# fork/exec, UNLOCK) beside a local file lock.
if [ -x "$build/rlock" ] && command -v flock >/dev/null; then
    cli_runs=300
    echo
    echo "== rlock command vs flock(1): $cli_runs runs of \`true\` under a lock, one after another"
    printf '  %-34s %8s ms per run\n' "flock FILE true" \
        "$(per_run_ms $cli_runs flock "$tmp/flock.lock" true)"
    printf '  %-34s %8s ms per run\n' "rlock NAME -- true" \
        "$(per_run_ms $cli_runs "$build/rlock" -s "127.0.0.1:$rlockd_port" bench-cli -- true)"
    printf '  %-34s %8s ms per run\n' "rlock status NAME" \
        "$(per_run_ms $cli_runs "$build/rlock" -s "127.0.0.1:$rlockd_port" status bench-cli)"
else
    echo "bench/run.sh: SKIP rlock vs flock (needs $build/rlock and flock)" >&2
fi

# A daemon that crashed or complained during the run is worth knowing
# about even when every reply looked right.
for name in rlockd rlockd-held; do
    pid=$rlockd_pid
    [ "$name" = rlockd ] || pid=$held_rlockd_pid
    if ! kill -0 "$pid" 2>/dev/null; then
        show_log "$tmp/$name.log"
        die "$name exited during the benchmark"
    fi
    if [ -s "$tmp/$name.log" ]; then
        show_log "$tmp/$name.log"
    fi
done
exit "$status"
