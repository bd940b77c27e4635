#!/usr/bin/env bash
# valgrind-rlockd.sh - runs the daemon under valgrind (memcheck) for
# `make valgrind`: any memory error or leak makes it exit 99, which the
# integration harness reports as a failure of the test that stopped it.
# The binary to wrap comes from RLOCKD_REAL_BIN. --vgdb=no: a daemon the
# crash tests SIGKILL would otherwise leave its gdbserver FIFOs in /tmp.
set -euo pipefail
exec valgrind --quiet --vgdb=no --leak-check=full \
    --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible \
    --error-exitcode=99 "${RLOCKD_REAL_BIN:?}" "$@"
