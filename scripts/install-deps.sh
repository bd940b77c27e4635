#!/usr/bin/env bash
#
# install-deps.sh - installs the Debian packages rlockd needs to build, test
# and run, and only those that are missing. Silent when nothing is missing.
#
# As root it runs apt-get itself; otherwise it uses sudo when there is one;
# otherwise it prints the command to run and exits 1. Safe to run again.
#
# redis-server's package starts a system service on port 6379. rlockd's
# tests and `make run` never use it: they start private redis-servers on
# free loopback ports. Where there is no init to start services (a
# container), a temporary policy-rc.d keeps the package's post-install
# step from failing on that start.
set -euo pipefail

# What the build (libssl-dev: libcrypto's SHA-256 for the daemon), the tests
# (python3-redis: the Python example and package; python3-pytest and
# python3-venv: the package's tests and its pip install; mandoc: the man
# pages' lint) and
# `make run` use.
# netcat-openbsd and telnet: the README's examples talk to rlockd with them.
# ruby and ruby-redis: the compatibility suite drives rlockd through
# ruby-redis (tests/integration/test_compat.py).
# libmicrohttpd-dev: the metrics endpoint; python3-prometheus-client: its
# test parses /metrics with Prometheus's own parser. debhelper and lintian:
# `make deb` and the package test; dh-python, pybuild-plugin-pyproject and
# python3-all: its python3-rlockd. bash-completion: rlock's completion's
# test. openssl: the TLS tests make their certificates with it. iproute2:
# ss, which shows a socket's keepalive timer. binutils: objdump, on the
# installed library. nodejs and npm (below): the Node example, package and
# clients, whose npm modules come from scripts/install-npm-deps.sh.
# chromium: test_lock_view loads the status page in headless Chromium.
# clang-format: make test's format-check. Not
# here: prometheus, whose promtool test_metrics uses when it is installed
# (the package also installs and starts a Prometheus server).
PACKAGES=(pkg-config libuv1-dev libhiredis-dev libinih-dev libsystemd-dev
    libssl-dev libmicrohttpd-dev check redis-server redis-tools python3
    python3-redis python3-pytest python3-venv python3-setuptools
    python3-wheel python3-prometheus-client mandoc
    netcat-openbsd telnet ruby ruby-redis
    debhelper lintian dh-python pybuild-plugin-pyproject python3-all
    bash-completion openssl iproute2 binutils chromium clang-format)

is_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = "install ok installed" ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: dpkg-query not found: this script supports Debian" \
        "and its derivatives only." >&2
    echo "install-deps: install a C compiler, make, pkg-config and the" \
        "libuv, hiredis, inih, libsystemd, OpenSSL (libcrypto), libmicrohttpd" \
        "and check" \
        "development packages," \
        "redis-server, redis-cli, python3 (with redis-py) and mandoc by hand." >&2
    exit 1
fi

missing=()
# A C toolchain: build-essential, or at least gcc, make and libc headers.
if ! is_installed build-essential; then
    for pkg in gcc make libc6-dev; do
        if ! is_installed "$pkg"; then
            missing+=(build-essential)
            break
        fi
    done
fi
for pkg in "${PACKAGES[@]}"; do
    if ! is_installed "$pkg"; then
        missing+=("$pkg")
    fi
done
# By command: a node from elsewhere (NodeSource's nodejs bundles npm, and
# conflicts with Debian's npm) serves as well.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing+=(nodejs npm)
fi

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps: run as root:" >&2
    echo "    apt-get update && apt-get install -y --no-install-recommends" \
        "${missing[*]}" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2

# No init system to start services with (a container): forbid service
# starts for the duration of the install, unless a policy is already set.
policy=/usr/sbin/policy-rc.d
made_policy=0
remove_policy() {
    if [ "$made_policy" -eq 1 ]; then
        "${as_root[@]}" rm -f "$policy"
    fi
}
trap remove_policy EXIT
if [ ! -d /run/systemd/system ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee "$policy" >/dev/null
    "${as_root[@]}" chmod 755 "$policy"
    made_policy=1
fi

"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"

# Check what we promised rather than trust apt-get's exit status alone.
still_missing=()
for pkg in "${missing[@]}"; do
    if ! is_installed "$pkg"; then
        still_missing+=("$pkg")
    fi
done
if [ "${#still_missing[@]}" -ne 0 ]; then
    echo "install-deps: still not installed: ${still_missing[*]}" >&2
    exit 1
fi
