# lib.sh - shell helpers shared by scripts/run-dev.sh and bench/run.sh.
# shellcheck shell=bash
# Sourced, not run.

# Prints a TCP port the kernel just handed out on loopback. Another process
# could take it before the caller binds it; callers check their server
# really started and answer to it.
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}
