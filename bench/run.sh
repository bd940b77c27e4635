#!/usr/bin/env bash
# bench/run.sh - the harness behind `make bench`.
#
# Owns: a private redis-server and two private rlockd, all on free
# loopback ports, with temporary configs in a mktemp -d directory; runs
# rlockd-bench against them, then stops exactly the processes it started
# (by pid, from an EXIT trap) and removes the directory. It never touches
# any other Redis or rlockd on the machine. Last, bench/failover.py runs the
# failover scenario on a Sentinel setup of its own, and bench/cluster.py the
# cluster scenarios on a Redis Cluster of its own.
#
# The first rlockd runs with the default watchdog_timeout_ms (30000) and
# carries the lock+unlock and contended scenarios. The second, fresh one
# carries only the held-locks scenario (--held-rlockd): its memory figure
# then starts from a clean heap, and its watchdog_timeout_ms is
# 3000 (held_watchdog_ms below), so that renewals come every second and
# a few seconds of measurement see several rounds. The bench reports that
# rate as measured and the one for the default 30000 ms as derived.
#
# usage: bench/run.sh BUILD_DIR [--unix] [rlockd-bench options...]
#   BUILD_DIR holds rlockd and rlockd-bench; extra options go to
#   rlockd-bench (e.g. --duration 5, or --kinds none to leave out the
#   lock kinds other than RLock, the semaphore among them, about 40 s).
#   --unix: the rlockd scenarios' clients use rlockd's Unix socket (each
#   rlockd here listens on one, $tmp/NAME.sock) instead of TCP loopback.
#
# --held-only (passed on to rlockd-bench) runs the held-locks scenario
# alone, as `make bench-million` does with --held 1000000: the held-locks
# rlockd then runs with watchdog_timeout_ms 30000, the default, since a
# million locks renewed every second would swamp Redis; and the rlock vs
# flock, failover and cluster runs are left out.
#
# RLOCKD_BASELINE=/path/to/old/rlockd (optional) compares that binary
# with BUILD_DIR's rlockd in the same run. The script then also starts
# it, with the main rlockd's config on a free port of its own against the
# same redis-server, and after the usual report runs every rlockd
# scenario (rlockd-bench --rlockd-only --results) against each daemon in
# turn, baseline then new, for RLOCKD_BASELINE_ROUNDS rounds (default 3,
# at least 2), so that drifting machine load falls on both alike. Each
# of these runs gets a fresh held-locks rlockd of the binary under test,
# stopped after it. The extra options apply to these runs too (e.g.
# --duration 2 for shorter rounds, --kinds none for fewer scenarios).
# Last comes a table: for each figure, the median over each binary's
# rounds, new/baseline, and the spread between rounds. It is reported,
# never enforced. A scenario the baseline cannot run (a kind or command
# it predates, which it answers with -ERR: rlockd-bench
# --skip-unsupported) is left out of its rounds and shown with "-" and
# the reason below the table, rather than failing the comparison.
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

baseline=${RLOCKD_BASELINE:-}
rounds=${RLOCKD_BASELINE_ROUNDS:-3}
if [ -n "$baseline" ]; then
    [ -x "$baseline" ] || die "RLOCKD_BASELINE: $baseline is not an executable"
    if ! [[ $rounds =~ ^[0-9]+$ ]] || [ "$rounds" -lt 2 ]; then
        die "RLOCKD_BASELINE_ROUNDS: '$rounds' is not a number of rounds >= 2"
    fi
    for arg in "$@"; do
        [ "$arg" != --direct-only ] ||
            die "RLOCKD_BASELINE: --direct-only leaves no rlockd scenario to compare"
    done
fi

# --unix (ours, not rlockd-bench's): the rlockd scenarios' clients reach
# rlockd through its Unix socket, as a sidecar's clients can; rlockd and
# the direct scenarios still reach Redis over TCP.
unix=
args=()
for arg in "$@"; do
    if [ "$arg" = --unix ]; then unix=1; else args+=("$arg"); fi
done
set -- "${args[@]}"

held_watchdog_ms=3000
held_only=
for arg in "$@"; do
    if [ "$arg" = --held-only ]; then
        held_only=1
        held_watchdog_ms=30000
        echo "bench/run.sh: --held-only: the held-locks rlockd runs with" \
            "watchdog_timeout_ms $held_watchdog_ms (the default), so that" \
            "renewals do not swamp Redis" >&2
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rlockd-bench.XXXXXX")
redis_pid=
rlockd_pid=
held_rlockd_pid=
baseline_pid=
cmp_held_pid=
bench_pid=

# Stops what this script started, newest first, and waits for each so
# that no process outlives the benchmark.
cleanup() {
    local status=$?
    for pid in $bench_pid $cmp_held_pid $baseline_pid $held_rlockd_pid $rlockd_pid $redis_pid; do
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
unix_socket = $tmp/$1.sock

[redis]
host = 127.0.0.1
port = $redis_port

[lock]
watchdog_timeout_ms = $3

[log]
level = warn
EOF
}

# start_rlockd NAME PORT [BINARY]: starts BINARY (BUILD_DIR's rlockd by
# default) on $tmp/NAME.ini, logging to $tmp/NAME.log, and waits until it
# serves. Its pid is left in $started_pid rather than printed, since a
# $(...) subshell would make the daemon its child instead of ours.
start_rlockd() {
    "${3:-$build/rlockd}" -c "$tmp/$1.ini" 2>"$tmp/$1.log" &
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

if [ -n "$baseline" ]; then
    baseline_port=$(another_free_port "$redis_port $rlockd_port $held_rlockd_port")
    write_rlockd_config rlockd-baseline "$baseline_port" 30000
    start_rlockd rlockd-baseline "$baseline_port" "$baseline"
    baseline_pid=$started_pid
fi

# --unix: rlockd-bench's option naming an rlockd's socket ($tmp/NAME.sock).
unix_args=()
[ -z "$unix" ] || unix_args=(--rlockd-unix "$tmp/rlockd.sock")

# In the background with `wait`: bash runs a trap only after a foreground
# child exits, and an interrupted benchmark should stop now, not in 20 s.
"$build/rlockd-bench" --redis "127.0.0.1:$redis_port" --rlockd "127.0.0.1:$rlockd_port" \
    "${unix_args[@]}" --redis-pid "$redis_pid" --rlockd-pid "$rlockd_pid" \
    --held-rlockd "127.0.0.1:$held_rlockd_port" --held-rlockd-pid "$held_rlockd_pid" "$@" &
bench_pid=$!
status=0
wait "$bench_pid" || status=$?
bench_pid=

# per_run_ms RUNS COMMAND...: mean wall time of one run of COMMAND, in
# ms; "failed" (and the reason on stderr) if a run fails, since a command
# that fails at once would otherwise look fast.
per_run_ms() {
    local runs=$1 start end
    shift
    start=$(date +%s%N)
    for ((i = 0; i < runs; i++)); do
        if ! "$@" >/dev/null; then
            echo "bench/run.sh: '$*' failed" >&2
            echo failed
            return 0
        fi
    done
    end=$(date +%s%N)
    awk -v ns=$((end - start)) -v runs="$runs" 'BEGIN { printf "%.2f", ns / runs / 1e6 }'
}

# The rlock command against flock(1), each running `true` under a lock:
# what a shell script pays per locked run (process start, connect, LOCK,
# fork/exec, UNLOCK) beside a local file lock.
if [ -n "$held_only" ]; then
    : # the held-locks scenario alone
elif [ -x "$build/rlock" ] && command -v flock >/dev/null; then
    cli_runs=300
    echo
    echo "== rlock command vs flock(1): $cli_runs runs of \`true\` under a lock, one after another"
    printf '  %-34s %8s ms per run\n' "flock FILE true" \
        "$(per_run_ms $cli_runs flock "$tmp/flock.lock" true)"
    printf '  %-34s %8s ms per run\n' "rlock NAME -- true" \
        "$(per_run_ms $cli_runs "$build/rlock" -S "127.0.0.1:$rlockd_port" bench-cli -- true)"
    printf '  %-34s %8s ms per run\n' "rlock status NAME" \
        "$(per_run_ms $cli_runs "$build/rlock" -S "127.0.0.1:$rlockd_port" status bench-cli)"
else
    echo "bench/run.sh: SKIP rlock vs flock (needs $build/rlock and flock)" >&2
fi

# compare_run SIDE ROUND BINARY PORT PID [rlockd-bench options...]: one
# run of the rlockd scenarios against the rlockd PID on PORT, with a
# fresh held-locks rlockd of BINARY; appends its figures, prefixed with
# SIDE, to $tmp/results, and the scenarios it skipped, with the reason,
# to $tmp/skipped. Only the baseline may skip: the new build must run
# every scenario. A failed run is shown and sets $status.
compare_run() {
    local side=$1 round=$2 binary=$3 port=$4 pid=$5 name held_port rc=0
    local skip=()
    shift 5
    local sock=("${unix_args[@]}")
    [ "$side" != baseline ] || skip=(--skip-unsupported)
    [ "$side" != baseline ] || [ -z "$unix" ] || sock=(--rlockd-unix "$tmp/rlockd-baseline.sock")
    name=rlockd-held-$side-$round
    echo "bench/run.sh: round $round of $rounds, $side: $binary" >&2
    held_port=$(another_free_port "$redis_port $rlockd_port $held_rlockd_port $baseline_port")
    write_rlockd_config "$name" "$held_port" "$held_watchdog_ms"
    start_rlockd "$name" "$held_port" "$binary"
    cmp_held_pid=$started_pid
    "$build/rlockd-bench" --rlockd-only --results "${skip[@]}" \
        --redis "127.0.0.1:$redis_port" --rlockd "127.0.0.1:$port" \
        "${sock[@]}" \
        --redis-pid "$redis_pid" --rlockd-pid "$pid" \
        --held-rlockd "127.0.0.1:$held_port" --held-rlockd-pid "$cmp_held_pid" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    bench_pid=$!
    wait "$bench_pid" || rc=$?
    bench_pid=
    if [ "$rc" -ne 0 ]; then
        echo "---- rlockd-bench against $side, round $round: exit status $rc ----" >&2
        cat "$tmp/$name.err" >&2
        [ "$status" -ne 0 ] || status=$rc
    fi
    if ! kill -0 "$cmp_held_pid" 2>/dev/null; then
        show_log "$tmp/$name.log"
        die "$name exited during the benchmark"
    fi
    [ ! -s "$tmp/$name.log" ] || show_log "$tmp/$name.log"
    kill "$cmp_held_pid" 2>/dev/null || true
    wait "$cmp_held_pid" 2>/dev/null || true
    cmp_held_pid=
    awk -F '\t' -v side="$side" -v OFS='\t' \
        '$1 == "result" { $1 = side; print }' "$tmp/$name.out" >>"$tmp/results"
    awk -F '\t' -v side="$side" -v OFS='\t' \
        '$1 == "skipped" { $1 = side; print }' "$tmp/$name.out" >>"$tmp/skipped"
}

# print_comparison: the table of $tmp/results (SIDE, scenario, metric,
# higher|lower is better, value): medians per side, new/baseline, and
# the spread, the larger of the two sides' (max - min) / median; then
# the scenarios of $tmp/skipped (SIDE, scenario, reason), once each.
print_comparison() {
    echo
    echo "== rlockd, new vs baseline: median of $rounds rounds each, interleaved"
    echo "  baseline $baseline"
    echo "  new      $build/rlockd"
    awk -F '\t' '
        function fmt(v) { return v >= 100 || v <= -100 ? sprintf("%.0f", v) : sprintf("%.1f", v) }
        # Sets med, and spr (the spread in %) for SIDE and KEY.
        function stats(side, key,   m, i, j, t, a) {
            m = count[side, key]
            if (m == 0) { med = ""; return }
            for (i = 1; i <= m; i++) a[i] = value[side, key, i] + 0
            for (i = 2; i <= m; i++) {
                t = a[i]
                for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
                a[j + 1] = t
            }
            med = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            if (med != 0 && 100 * (a[m] - a[1]) / med > spr) spr = 100 * (a[m] - a[1]) / med
        }
        {
            key = $2 SUBSEP $3
            if (!(key in better)) { order[++n] = key; better[key] = $4 }
            value[$1, key, ++count[$1, key]] = $5
        }
        END {
            printf "  %-26s %10s %10s %9s %7s\n", "", "baseline", "new", "new/base", "spread"
            for (k = 1; k <= n; k++) {
                key = order[k]
                split(key, part, SUBSEP)
                if (part[1] != scenario) { scenario = part[1]; print scenario }
                spr = 0
                stats("baseline", key); base = med
                stats("new", key); new = med
                ratio = "-"; note = ""
                if (base != "" && new != "" && base != 0) {
                    r = new / base
                    ratio = sprintf("%.2fx", r)
                    if (better[key] == "lower") r = 1 / r
                    note = r < 0.95 ? "  >5% worse" : r > 1.05 ? "  >5% better" : ""
                }
                printf "  %-26s %10s %10s %9s %6.0f%%%s\n", part[2],
                    base == "" ? "-" : fmt(base), new == "" ? "-" : fmt(new), ratio, spr, note
            }
            print "new/base: new median / baseline median (rates: higher is better;"
            print "latency, CPU, memory, Redis work per pair: lower). spread: (max -"
            print "min) / median over one binary'"'"'s rounds, the larger of the two."
            print "Reported, not enforced."
        }' "$tmp/results"
    [ -s "$tmp/skipped" ] || return 0
    echo "Not compared: the baseline cannot run these (it answered -ERR, as a"
    echo "build older than the command or kind does), so they show \"-\" above:"
    awk -F '\t' '!seen[$1 FS $2]++ { printf "  %s: %s (%s)\n", $1, $2, $3 }' "$tmp/skipped"
}

if [ -n "$baseline" ]; then
    : >"$tmp/results"
    : >"$tmp/skipped"
    for ((round = 1; round <= rounds; round++)); do
        compare_run baseline "$round" "$baseline" "$baseline_port" "$baseline_pid" "$@"
        compare_run new "$round" "$build/rlockd" "$rlockd_port" "$rlockd_pid" "$@"
    done
fi

# A daemon that crashed or complained during the run is worth knowing
# about even when every reply looked right.
daemons="rlockd:$rlockd_pid rlockd-held:$held_rlockd_pid"
[ -z "$baseline" ] || daemons="$daemons rlockd-baseline:$baseline_pid"
for daemon in $daemons; do
    name=${daemon%%:*}
    pid=${daemon#*:}
    if ! kill -0 "$pid" 2>/dev/null; then
        show_log "$tmp/$name.log"
        die "$name exited during the benchmark"
    fi
    if [ -s "$tmp/$name.log" ]; then
        show_log "$tmp/$name.log"
    fi
done
[ -z "$baseline" ] || print_comparison
[ -z "$held_only" ] || exit "$status"
# The failover scenario brings its own Redis, sentinels and rlockd.
python3 "$(dirname "$0")/failover.py" "$build" || status=1
python3 "$(dirname "$0")/cluster.py" "$build" || status=1
exit "$status"
