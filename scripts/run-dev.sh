#!/usr/bin/env bash
#
# run-dev.sh - `make run`: rlockd in the foreground against a private
# redis-server.
#
# Everything lives under ./run/ (gitignored): the redis-server's pid, log
# and working directory, and run/rlockd.ini, which is conf/rlockd.ini with
# [redis] pointed at that server. The redis-server listens on a free
# loopback port, saves nothing, and is stopped when rlockd ends, whether by
# Ctrl-C, a signal or on its own. It never touches a system Redis.
#
# The metrics and health endpoint, off in the shipped configuration, is
# turned on at 127.0.0.1:7380 (RLOCKD_HTTP_LISTEN) unless the base
# configuration sets an address of its own.
#
# Environment: RLOCKD_BIN (default build/rlockd), RLOCKD_CONF (the base
# configuration, default conf/rlockd.ini), RLOCKD_HTTP_LISTEN.
set -euo pipefail

# A script started in the background by a non-interactive shell inherits
# SIGINT ignored, and bash cannot trap a signal ignored at entry. Start
# again with default dispositions, so that Ctrl-C, `kill -INT` and
# `kill -TERM` all stop rlockd and the redis-server, however we were run.
if [ -z "${RUN_DEV_SIGNALS_RESET:-}" ]; then
    export RUN_DEV_SIGNALS_RESET=1
    exec env --default-signal=INT,TERM,HUP "${BASH:-bash}" "$0" "$@"
fi
unset RUN_DEV_SIGNALS_RESET

cd "$(dirname "$0")/.."

rlockd_bin=${RLOCKD_BIN:-build/rlockd}
base_conf=${RLOCKD_CONF:-conf/rlockd.ini}
run_dir=$PWD/run
conf=$run_dir/rlockd.ini
redis_pid_file=$run_dir/redis.pid
rlockd_pid_file=$run_dir/rlockd.pid

die() {
    echo "run-dev: $*" >&2
    exit 1
}

[ -x "$rlockd_bin" ] || die "$rlockd_bin not found: build it with 'make'"
[ -f "$base_conf" ] || die "$base_conf not found"
command -v redis-server >/dev/null 2>&1 ||
    die "redis-server not found: run scripts/install-deps.sh"
command -v redis-cli >/dev/null 2>&1 ||
    die "redis-cli not found: run scripts/install-deps.sh"

mkdir -p "$run_dir"

# One `make run` per tree at a time. Children get fd 9 closed, so a
# redis-server orphaned by a killed run does not hold the lock.
exec 9>"$run_dir/.lock"
flock -n 9 || die "another 'make run' is using $run_dir/"

redis_pid=
rlockd_pid=

# True while pid $1 runs. A zombie (an orphan its new parent has not yet
# reaped) does not count.
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# Sends TERM to pid $1, then KILL after $2 seconds, and reaps it.
stop_process() {
    local pid=$1 grace=$2 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < grace * 10; i++)); do
        alive "$pid" || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Processes left by a run that was killed too hard to clean up (SIGKILL):
# each pid file names one, stopped only if that pid still runs the same
# program.
stop_stale() {
    local pid_file=$1 program=$2 pid
    [ -f "$pid_file" ] || return 0
    pid=$(cat "$pid_file")
    if [ -n "$pid" ] && alive "$pid" &&
        [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$program" ]; then
        echo "run-dev: stopping $program $pid left by an earlier run" >&2
        stop_process "$pid" 5
    fi
    rm -f "$pid_file"
}
# shellcheck disable=SC2317  # invoked by the traps below
cleanup() {
    trap - EXIT INT TERM HUP
    if [ -n "$rlockd_pid" ]; then
        stop_process "$rlockd_pid" 10
        rm -f "$rlockd_pid_file"
    fi
    if [ -n "$redis_pid" ]; then
        stop_process "$redis_pid" 5
        rm -f "$redis_pid_file"
        echo "run-dev: stopped redis-server (pid $redis_pid)" >&2
    fi
}
trap cleanup EXIT
# On a signal: stop both (the EXIT trap), and exit with the shell's
# conventional status for it.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

stop_stale "$rlockd_pid_file" rlockd
stop_stale "$redis_pid_file" redis-server

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# Starts redis-server on a free port; a few tries in case another process
# takes the port between the probe and redis-server's bind.
start_redis() {
    local try i
    for try in 1 2 3 4 5; do
        redis_port=$(free_port)
        redis-server --bind 127.0.0.1 --port "$redis_port" --save '' \
            --appendonly no --dir "$run_dir" --daemonize no \
            --logfile "$run_dir/redis.log" 9>&- </dev/null &
        redis_pid=$!
        echo "$redis_pid" >"$redis_pid_file"
        for ((i = 0; i < 50; i++)); do
            if ! alive "$redis_pid"; then
                break
            fi
            if [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" ping \
                2>/dev/null)" = PONG ]; then
                return 0
            fi
            sleep 0.1
        done
        echo "run-dev: redis-server on port $redis_port did not start" \
            "(try $try), see $run_dir/redis.log" >&2
        stop_process "$redis_pid" 2
        redis_pid=
        rm -f "$redis_pid_file"
    done
    die "could not start redis-server"
}

# Writes $conf: the base configuration with [redis] host, port and
# unix_socket replaced (or added at the end of the section), an empty
# [server] http_listen set, every other line kept as it is.
write_conf() {
    awk -v port="$redis_port" -v http="${RLOCKD_HTTP_LISTEN:-127.0.0.1:7380}" '
        function add_missing() {
            if (!seen_host) print "host = 127.0.0.1"
            if (!seen_port) print "port = " port
            if (!seen_unix) print "unix_socket ="
            done_redis = 1
        }
        function flush_blanks() {
            for (; blanks > 0; blanks--) print ""
        }
        /^[ \t]*\[/ {
            if (in_redis) add_missing()
            in_redis = ($0 ~ /^[ \t]*\[redis\]/)
        }
        /^[ \t]*$/ { blanks++; next }
        { flush_blanks() }
        /^[ \t]*\[server\]/ { in_server = 1 }
        /^[ \t]*\[/ && !/^[ \t]*\[server\]/ { in_server = 0 }
        in_server && /^[ \t]*http_listen[ \t]*=[ \t]*$/ {
            print "http_listen = " http; next
        }
        in_redis && /^[ \t]*host[ \t]*=/ {
            print "host = 127.0.0.1"; seen_host = 1; next
        }
        in_redis && /^[ \t]*port[ \t]*=/ {
            print "port = " port; seen_port = 1; next
        }
        in_redis && /^[ \t]*unix_socket[ \t]*=/ {
            print "unix_socket ="; seen_unix = 1; next
        }
        { print }
        END {
            if (in_redis) add_missing()
            if (!done_redis) { print ""; print "[redis]"; add_missing() }
        }
    ' "$base_conf" >"$conf.tmp"
    mv "$conf.tmp" "$conf"
}

# The address rlockd listens on, from [server] listen and unix_socket.
conf_value() {
    awk -v want_section="$1" -v want_key="$2" '
        /^[ \t]*\[/ {
            section = $0
            gsub(/^[ \t]*\[|\][ \t]*$/, "", section)
            next
        }
        section == want_section && $0 ~ "^[ \t]*" want_key "[ \t]*=" {
            value = $0
            sub(/^[^=]*=[ \t]*/, "", value)
            sub(/[ \t]*$/, "", value)
            found = 1
        }
        END { if (found) print value; else exit 1 }
    ' "$conf"
}

start_redis
write_conf

listen=$(conf_value server listen) || listen=127.0.0.1:7379
unix_socket=$(conf_value server unix_socket) || unix_socket=
http_listen=$(conf_value server http_listen) || http_listen=

echo "run-dev: redis-server pid $redis_pid on 127.0.0.1:$redis_port" \
    "(data in $run_dir/, log $run_dir/redis.log)"
echo "run-dev: starting $rlockd_bin -c $conf"
echo "run-dev: connect with:"
if [ -n "$listen" ]; then
    host=${listen%:*}
    port=${listen##*:}
    host=${host#[}
    host=${host%]}
    case $host in
    "" | 0.0.0.0 | "*") host=127.0.0.1 ;;
    ::) host=::1 ;;
    esac
    if [ "$host" = 127.0.0.1 ]; then
        echo "    redis-cli -p $port"
    else
        echo "    redis-cli -h $host -p $port"
    fi
    echo "    nc $host $port"
    echo "    telnet $host $port"
fi
if [ -n "$unix_socket" ]; then
    echo "    redis-cli -s $unix_socket"
    echo "    nc -U $unix_socket"
fi
if [ -n "$http_listen" ]; then
    echo "run-dev: metrics and health:"
    echo "    curl http://$http_listen/metrics"
    echo "    curl http://$http_listen/readyz"
fi
echo "run-dev: Ctrl-C stops rlockd and this redis-server."
if [ -z "$listen" ] && [ -z "$unix_socket" ]; then
    echo "run-dev: warning: $conf sets neither [server] listen nor unix_socket" >&2
fi

# In the background only so that the traps run as soon as a signal
# arrives; rlockd still writes to this terminal.
"$rlockd_bin" -c "$conf" 9>&- &
rlockd_pid=$!
echo "$rlockd_pid" >"$rlockd_pid_file"
status=0
wait "$rlockd_pid" || status=$?
rlockd_pid=
rm -f "$rlockd_pid_file"
echo "run-dev: rlockd exited with status $status" >&2
exit "$status"
