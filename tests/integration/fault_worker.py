"""One worker of test_faults.py: lock, read-modify-write a shared file, unlock.

It follows the rule for holders (protocol.md section 9): after a lost
connection it reconnects with CLIENTID, SECRET and RESUME to get its
session back, asks HOLDCOUNT before retrying a LOCK whose reply it did not
get (the LOCK may have been granted), and takes an UNLOCK's -NOTOWNER
after an UNLOCK whose reply never came as that UNLOCK having run. Each
finished section is logged: "<id> <seq> <t_in> <t_out> ok|lost|notowner":
lost means rlockd told it the lock was lost (-LOCKLOST, from UNLOCK or
from a RESUME that found no session); notowner, that an UNLOCK found a
lock it held not its own without anything saying it was lost.

argv: port lock-name client-id secret log-file counter-file stop-file
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ConnectionClosed, ReplyTimeout, RespClient, is_error  # noqa: E402

TID = 1


class Worker:
    def __init__(self, port, name, cid, secret, log, counter, stop):
        self.port, self.name, self.cid, self.secret = port, name, cid, secret
        self.log, self.counter, self.stop = log, counter, stop
        self.conn = None
        self.resume = False  # it has had a session: reconnect with RESUME
        self.told_lost = False  # a RESUME said its session is gone
        self.rng = random.Random(os.getpid())

    def connect(self):
        """Connects and resumes its session, or starts one; retries until it
        can. RESUME, once it has had a session: without it, a session
        that is gone (rlockd and Redis both restarted) would start anew in
        silence, and the locks it held would be lost untold."""
        while True:
            try:
                c = RespClient(self.port, timeout=10.0, label=self.cid)
                clientid = ("CLIENTID", self.cid, "SECRET", self.secret)
                r = c.call(*clientid, "RESUME") if self.resume else c.call(*clientid)
                if is_error(r, "LOCKLOST"):
                    self.told_lost = True
                    r = c.call(*clientid)
                if r == "OK":
                    self.conn = c
                    self.resume = True
                    return
                c.close()
            except (OSError, ConnectionClosed, ReplyTimeout):
                pass
            time.sleep(0.05)

    def call(self, *args):
        """One command; None when the connection went before its reply."""
        if self.conn is None:
            self.connect()
        try:
            return self.conn.call(*args)
        except (OSError, ConnectionClosed, ReplyTimeout):
            self.conn.close()
            self.conn = None
            return None

    def lock(self):
        while True:
            r = self.call("LOCK", self.name, TID)
            if r is None:  # outcome unknown: was it granted?
                r = "OK" if self.call("HOLDCOUNT", self.name, TID) == 1 else None
            if r == "OK":
                self.told_lost = False
                return
            time.sleep(0.02)

    def unlock(self):
        """"ok"; "lost" when rlockd told us the lock was lost; "notowner"
        when it says it was never ours: a loss nobody reported."""
        unanswered = False
        while True:
            r = self.call("UNLOCK", self.name, TID)
            if self.told_lost or is_error(r, "LOCKLOST"):
                return "lost"
            if r == 1:
                return "ok"
            if is_error(r, "NOTOWNER"):
                return "ok" if unanswered else "notowner"
            if r == 0:  # a count left over: give it back too
                continue
            unanswered = unanswered or r is None
            time.sleep(0.02)

    def section(self):
        with open(self.counter) as f:
            lines = f.read().splitlines()
        time.sleep(self.rng.uniform(0.005, 0.03))
        tmp = "%s.%d" % (self.counter, os.getpid())
        with open(tmp, "w") as f:
            f.write("\n".join(lines + ["%s:%d" % (self.cid, self.seq)]) + "\n")
        os.rename(tmp, self.counter)

    def run(self):
        self.seq = 0
        while not os.path.exists(self.stop):
            self.lock()
            t_in = time.monotonic()
            self.section()
            t_out = time.monotonic()
            result = self.unlock()
            with open(self.log, "a") as f:
                f.write("%s %d %.6f %.6f %s\n" % (self.cid, self.seq, t_in, t_out, result))
            self.seq += 1
            time.sleep(self.rng.uniform(0, 0.01))


if __name__ == "__main__":
    port, name, cid, secret, log, counter, stop = sys.argv[1:8]
    Worker(int(port), name, cid, secret, log, counter, stop).run()
