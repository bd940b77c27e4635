#!/usr/bin/env python3
"""
python_lock.py - an rlockd lock from Python, with redis-py's execute_command.

    python3 examples/python_lock.py NAME [ADDR]

ADDR is HOST:PORT or unix:PATH; without it, $RLOCK_ADDR, else
127.0.0.1:7379. Prints "locked <owner>" once it holds the lock NAME, keeps
it until a line (or end of file) comes on stdin, unlocks, prints
"unlocked" and exits 0. Needs redis-py (Debian: python3-redis).
"""

import os
import sys
import threading

import redis


def connect(addr):
    # One connection, not a pool: a lock belongs to its connection's
    # client-id, and rlockd releases it when that connection closes.
    if addr.startswith("unix:"):
        return redis.Redis(unix_socket_path=addr[5:], decode_responses=True,
                           single_connection_client=True)
    host, _, port = addr.rpartition(":")
    return redis.Redis(host=host, port=int(port), decode_responses=True,
                       single_connection_client=True)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python_lock.py NAME [ADDR]")
    name = sys.argv[1]
    addr = sys.argv[2] if len(sys.argv) == 3 else os.environ.get("RLOCK_ADDR", "127.0.0.1:7379")
    rlockd = connect(addr)
    tid = threading.get_native_id()    # the owner is <client-id>:<thread-id>

    rlockd.execute_command("LOCK", name, tid)   # waits while another owner holds it
    print("locked %s:%d" % (rlockd.execute_command("CLIENTID"), tid), flush=True)
    sys.stdin.readline()                         # ... the work done under the lock ...
    released = rlockd.execute_command("UNLOCK", name, tid)  # 1: released, 0: still held (reentrant)
    print("unlocked" if released == 1 else "still held", flush=True)
    rlockd.close()


if __name__ == "__main__":
    main()
