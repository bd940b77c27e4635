#!/usr/bin/env bash
# check-units.sh - checks rlockd's systemd units with systemd-analyze.
#
#   tests/service/check-units.sh            the units in the source tree
#   tests/service/check-units.sh UNITDIR    installed units, e.g.
#                                           /usr/local/lib/systemd/system
#   tests/service/check-units.sh DESTDIR    a staged `make install
#                                           DESTDIR=...`: the units are
#                                           looked for in its
#                                           {usr/local,usr}/lib/systemd/system
#
# Source tree: systemd/rlockd.service.in is substituted into a temporary
# directory (@SBINDIR@ pointing at $RLOCKD, else build/rlockd, else a
# stand-in executable; verify only needs Exec*= to be executable).
# Installed: UNITDIR/rlockd.service and rlockd.socket; when ExecStart='s
# binary is not there but $DESTDIR/<binary> is (a staged install; DESTDIR
# is the argument itself in the third form), the check uses that one.
#
# Fails when `systemd-analyze verify` prints anything (it exits 0 on
# unknown keys and bad values, so its output is what counts), or when
# `systemd-analyze security --offline=true` rates rlockd.service above
# 2.0. Documentation= is checked against the man pages in docs/. Also
# dry-runs the sysusers.d file when systemd-sysusers is there.
#
# Exit status: 0 passed, 1 failed, 77 skipped (no systemd-analyze, or one
# without security --offline, i.e. older than systemd 250). Leaves no
# files behind.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
THRESHOLD=20 # tenths: exposure above 2.0 fails

skip() {
    echo "************************************************************"
    echo "*** SKIP: $*"
    echo "************************************************************"
    exit 77
}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

command -v systemd-analyze >/dev/null 2>&1 || skip "systemd-analyze not found"
systemd-analyze --help 2>/dev/null | grep -q -- '--offline' ||
    skip "systemd-analyze has no --offline (needs systemd >= 250)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rlockd-units.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/units" "$TMP/sbin" "$TMP/etc/rlockd" "$TMP/man/man1" \
    "$TMP/man/man8"

if [ $# -eq 0 ]; then
    mode="source tree"
    bin=${RLOCKD:-$REPO/build/rlockd}
    if [ -x "$bin" ]; then
        ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$TMP/sbin/rlockd"
    else
        printf '#!/bin/sh\nexit 0\n' >"$TMP/sbin/rlockd"
        chmod +x "$TMP/sbin/rlockd"
    fi
    sed -e "s|@SBINDIR@|$TMP/sbin|g" -e "s|@SYSCONFDIR@|$TMP/etc|g" \
        "$REPO/systemd/rlockd.service.in" >"$TMP/units/rlockd.service"
    cp "$REPO/systemd/rlockd.socket" "$TMP/units/"
    sysusers=$REPO/systemd/rlockd.sysusers
elif [ $# -eq 1 ]; then
    unitdir=$1
    if [ ! -f "$1/rlockd.service" ]; then
        for d in usr/local/lib/systemd/system usr/lib/systemd/system; do
            if [ -f "$1/$d/rlockd.service" ]; then
                unitdir=$1/$d
                DESTDIR=${DESTDIR:-$1}
                break
            fi
        done
    fi
    mode="installed in $unitdir"
    for u in rlockd.service rlockd.socket; do
        [ -f "$unitdir/$u" ] || fail "$unitdir/$u: no such file"
        cp "$unitdir/$u" "$TMP/units/"
    done
    grep -q '@[A-Z]*@' "$TMP/units/rlockd.service" &&
        fail "$unitdir/rlockd.service: placeholders left: $(grep -o '@[A-Z]*@' "$TMP/units/rlockd.service" | sort -u | tr '\n' ' ')"
    exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$TMP/units/rlockd.service")
    if [ ! -x "$exe" ] && [ -n "${DESTDIR:-}" ] && [ -x "$DESTDIR$exe" ]; then
        sed -i "s|^\(Exec[A-Za-z]*=\)$exe|\1$DESTDIR$exe|" "$TMP/units/rlockd.service"
    fi
    # $(PREFIX)/lib/systemd/system -> $(PREFIX)/lib/sysusers.d/rlockd.conf
    sysusers=$unitdir/../../sysusers.d/rlockd.conf
else
    echo "usage: $0 [UNITDIR | DESTDIR]" >&2
    exit 2
fi
echo "checking rlockd.service and rlockd.socket ($mode)"

# Documentation=man:... is checked against the pages this tree ships.
man_opt=--man=no
if command -v man >/dev/null 2>&1 && [ -f "$REPO/docs/rlockd.8" ] &&
    [ -f "$REPO/docs/rlock.1" ]; then
    cp "$REPO/docs/rlockd.8" "$TMP/man/man8/"
    cp "$REPO/docs/rlock.1" "$TMP/man/man1/"
    man_opt=--man=yes
fi

status=0

echo "--- systemd-analyze verify $man_opt"
if ! out=$(cd "$TMP/units" && MANPATH=$TMP/man systemd-analyze verify \
    "$man_opt" rlockd.service rlockd.socket 2>&1) || [ -n "$out" ]; then
    printf '%s\n' "$out" | sed "s|$TMP/units/||g"
    echo "FAIL: systemd-analyze verify complained" >&2
    status=1
else
    echo "ok"
fi

echo "--- systemd-analyze security --offline=true --threshold=$THRESHOLD"
rc=0
out=$(cd "$TMP/units" && systemd-analyze security --offline=true \
    --threshold=$THRESHOLD --no-pager rlockd.service 2>&1) || rc=$?
score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for rlockd.service: \([0-9.]*\).*/\1/p')
if [ "$rc" -ne 0 ] || [ -z "$score" ]; then
    printf '%s\n' "$out"
    echo "FAIL: exposure ${score:-unknown} is above 2.0 (or the analysis failed, status $rc)" >&2
    status=1
else
    echo "ok: exposure $score (at most 2.0 required)"
fi

if [ -f "$sysusers" ] && command -v systemd-sysusers >/dev/null 2>&1; then
    echo "--- systemd-sysusers --dry-run (empty root)"
    mkdir "$TMP/root"
    if ! out=$(systemd-sysusers --dry-run --root="$TMP/root" "$sysusers" 2>&1) ||
        ! printf '%s\n' "$out" | grep -q "Creating user 'rlockd'"; then
        printf '%s\n' "$out"
        echo "FAIL: $sysusers does not create the user rlockd" >&2
        status=1
    else
        echo "ok"
    fi
else
    echo "--- sysusers.d/rlockd.conf not checked (file or systemd-sysusers missing)"
fi

[ "$status" -eq 0 ] && echo "PASS: rlockd units"
exit "$status"
