"""MLOCK and MUNLOCK: several plain RLocks taken as one, in key order, so that MLOCKs never
deadlock each other; all or nothing (a Java holder, a killed client, a refused name); each
lock an ordinary Redisson RLock in Redis; names on different Cluster masters."""

import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from harness import HOST, Env, assert_eq, assert_error, rlock_bin, wait_until
from test_cluster import Setup

# on_disconnect = expire and a long watchdog: a lock left behind by a client that went
# would stay for 30 s, so "released promptly" can only be MLOCK's own undoing.
CONFIG = {"lock": {"on_disconnect": "expire", "watchdog_timeout_ms": 30000,
                   "max_multilock_names": 8}}
SECRET = "multilock-secret-0123456789"


def _held(env, names):
    """The names that exist in Redis (held by someone)."""
    return [n for n in names if env.redis("EXISTS", n) == 1]


def test_mlock_takes_plain_redisson_rlocks_and_munlock_frees_them(env):
    a = env.client()
    aid = a.call("CLIENTID")
    names = [env.name("ml") for _ in range(3)]
    assert_eq(a.call("MLOCK", 5, names[2], names[0], names[1], names[0]), "OK", "MLOCK (one duplicate)")
    for n in names:
        assert_eq(env.redis_hash(n), {"%s:5" % aid: "1"}, "%s as Redisson's RLock hash" % n)
        assert env.redis("PTTL", n) > 20000, "%s is in watchdog mode" % n
        assert_eq(a.call("ISHELD", n, 5), 1, "ISHELD %s" % n)
    assert_eq(a.call("MUNLOCK", 5, *names), "OK", "MUNLOCK")
    assert_eq(_held(env, names), [], "held after MUNLOCK")
    # MUNLOCK of names not all held releases the others and answers the first failure
    assert_eq(a.call("MLOCK", 5, names[0], names[2]), "OK", "MLOCK of two")
    assert_error(a.call("MUNLOCK", 5, *names), "NOTOWNER", what="MUNLOCK of one not held")
    assert_eq(_held(env, names), [], "the held ones released all the same")


def test_mlock_with_wait_and_lease_expires_every_lock_together(env):
    a = env.client()
    names = [env.name("ml") for _ in range(3)]
    assert_eq(a.call("MLOCK", 1, *names, "WAIT", 3000, "LEASE", 5000), "OK", "MLOCK WAIT LEASE")
    ttls = [env.redis("PTTL", n) for n in names]
    assert all(5000 < t <= 8000 for t in ttls), "each lease is LEASE + the WAIT left: %r" % ttls
    assert max(ttls) - min(ttls) < 500, "the leases end together: %r" % ttls


def test_a_java_holder_makes_mlock_wait_200_answer_0_with_nothing_held(env):
    base = env.name("ml")
    names = [base + "-a", base + "-b", base + "-c"]   # taken in this order
    env.redis("HSET", names[1], "java-uuid:77", 1)     # Redisson's hash, another process's
    env.redis("PEXPIRE", names[1], 30000)
    a = env.client()
    t0 = time.monotonic()
    assert_eq(a.call("MLOCK", 1, names[2], names[1], names[0], "WAIT", 200), 0, "MLOCK WAIT 200")
    waited = time.monotonic() - t0
    assert waited >= 0.19, "MLOCK answered after %.3fs, before its WAIT" % waited
    assert_eq(_held(env, names), [names[1]], "held after :0 (only Java's)")
    assert_eq(env.redis_hash(names[1]), {"java-uuid:77": "1"}, "Java's hold untouched")
    assert_eq(a.call("MLOCK", 1, names[0], names[1], "WAIT", 0), 0, "MLOCK WAIT 0")
    assert_eq(_held(env, names), [names[1]], "held after MLOCK WAIT 0")


def _overlapping_worker(port, names, counters, guard, tid, deadline, out):
    """Loops MLOCK of 2-4 random names in a random order until deadline; inside, each
    name's counter must go from 0 to 1 (nobody else holds it)."""
    from harness import RespClient
    c = RespClient(port, timeout=10.0, label="mlock-%d" % tid)
    rng = random.Random(tid)
    done = 0
    try:
        while time.monotonic() < deadline:
            chosen = rng.sample(names, rng.randint(2, 4))
            got = c.call("MLOCK", tid, *chosen)
            assert got == "OK", "MLOCK %r: %r" % (chosen, got)
            with guard:
                for n in chosen:
                    counters[n] += 1
                    assert counters[n] == 1, "%s held by two MLOCKs at once" % n
            time.sleep(rng.random() * 0.002)
            with guard:
                for n in chosen:
                    counters[n] -= 1
            assert_eq(c.call("MUNLOCK", tid, *reversed(chosen)), "OK", "MUNLOCK")
            done += 1
        out[tid] = done
    except BaseException as e:   # reported by the main thread
        out[tid] = e
    finally:
        c.close()


def test_twenty_clients_mlocking_overlapping_sets_never_overlap_nor_deadlock(env):
    names = [env.name("ml") for _ in range(6)]
    counters = {n: 0 for n in names}
    guard = threading.Lock()
    out = {}
    deadline = time.monotonic() + float(os.environ.get("RLOCKD_MLOCK_SECONDS", "3"))
    threads = [threading.Thread(target=_overlapping_worker,
                                args=(env.port, names, counters, guard, tid, deadline, out))
               for tid in range(1, 21)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "some MLOCK never finished (deadlock)"
    failures = [r for r in out.values() if isinstance(r, BaseException)]
    assert not failures, "workers failed: %r" % failures[:3]
    counts = sorted(out.values())
    assert_eq(len(counts), 20, "workers that finished")
    assert counts[0] >= 1, "a client made no progress: %r" % counts
    assert sum(counts) >= 100, "too little progress in all: %r" % counts
    assert_eq(_held(env, names), [], "held at the end")


CLIENT = """
import socket, sys
s = socket.create_connection(("%s", int(sys.argv[1])))
args = sys.argv[2:]
s.sendall(("*%%d\\r\\n" %% len(args) + "".join("$%%d\\r\\n%%s\\r\\n" %% (len(a), a) for a in args)).encode())
print("sent", flush=True)
sys.stdin.read()
""" % HOST


def test_a_client_killed_mid_mlock_leaves_nothing_held(env):
    base = env.name("ml")
    names = [base + "-a", base + "-b", base + "-c"]
    holder = env.client()
    assert_eq(holder.call("LOCK", names[1], 1), "OK", "LOCK of the middle name")
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(env.port), "MLOCK", "1", *names],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert_eq(proc.stdout.readline().strip(), "sent", "the client sent its MLOCK")
        wait_until(lambda: env.redis("EXISTS", names[0]) == 1, 3.0, what="the first name taken")
        env.wait_waiting(1, what="MLOCK waiting for the middle name")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(5)
    wait_until(lambda: env.redis("EXISTS", names[0]) == 0, 3.0,
               what="the first name released after the kill (on_disconnect = expire)")
    assert_eq(holder.call("UNLOCK", names[1], 1), 1, "UNLOCK of the middle name")
    env.wait_waiting(0, what="no waiter left")
    assert_eq(_held(env, names), [], "held after the kill and the middle's release")


def test_a_lone_connection_reset_mid_mlock_leaves_nothing_held(env):
    """Its session ends at the reset (on_disconnect = expire would leave its locks for 30 s):
    MLOCK's undoing keeps the session until its releases are answered."""
    base = env.name("ml")
    names = [base + "-a", base + "-b"]
    holder, c = env.client(), env.client()
    assert_eq(holder.call("LOCK", names[1], 1), "OK", "LOCK of the second name")
    c.send("MLOCK", 1, *names)
    env.wait_waiting(1, what="MLOCK waiting for the second name")
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()   # RST
    wait_until(lambda: env.redis("EXISTS", names[0]) == 0, 3.0, what="the first name released")
    assert_eq(holder.call("UNLOCK", names[1], 1), 1, "UNLOCK of the second name")
    assert_eq(env.client().call("PING"), "PONG", "rlockd after the reset")


def test_a_session_whose_mlock_connection_is_reset_keeps_nothing_of_it(env):
    """A reset (not a half-close: the MLOCK is abandoned, not told to stop waiting), and the
    session lives on (another connection), so only MLOCK's undoing frees the lock."""
    base = env.name("ml")
    names = [base + "-a", base + "-b"]
    holder = env.client()
    assert_eq(holder.call("LOCK", names[1], 1), "OK", "LOCK of the second name")
    first, second = env.client(), env.client()
    assert_eq(first.call("CLIENTID", "mlsession", "SECRET", SECRET), "OK", "CLIENTID")
    assert_eq(second.call("CLIENTID", "mlsession", "SECRET", SECRET), "OK", "CLIENTID, 2nd")
    first.send("MLOCK", 3, *names)
    env.wait_waiting(1, what="MLOCK waiting for the second name")
    assert_eq(env.redis_hash(names[0]), {"mlsession:3": "1"}, "the first name taken")
    first.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    first.close()   # RST
    wait_until(lambda: env.redis("EXISTS", names[0]) == 0, 3.0, what="the first name released")
    assert_eq(holder.call("UNLOCK", names[1], 1), 1, "UNLOCK of the second name")
    assert_eq(second.call("PING"), "PONG", "the session's other connection")
    assert_eq(_held(env, names), [], "held once the MLOCK's connection closed")


def test_refused_names_fail_the_whole_mlock_with_nothing_held(env):
    a, other = env.client(), env.client()
    names = [env.name("ml") for _ in range(3)]
    assert_error(a.call("MLOCK", 1, *names, *[env.name("ml") for _ in range(6)]), "LIMIT",
                 "max_multilock_names is 8", what="MLOCK of 9 names")
    assert_error(a.call("MLOCK", 1, names[0], "rlockd_session:{x}"), "ERR", "reserved name",
                 what="MLOCK with a reserved name")
    assert_eq(other.call("LOCK", names[1], 1, "READ"), "OK", "a read lock on one name")
    assert_error(a.call("MLOCK", 1, *names), "WRONGTYPE", what="MLOCK over a read-write lock")
    assert_eq(_held(env, [names[0], names[2]]), [], "held after the refusals")
    assert_eq(a.call("MLOCK", 1, *[env.name("ml") for _ in range(8)]), "OK", "MLOCK of 8 names")


WORKER_PW = "worker-password-0123"


def _users_config(names="orders:*"):
    import hashlib
    return {"server": {"auth_token": "admin-token-0123456789"},
            "user worker": {"password_sha256": hashlib.sha256(WORKER_PW.encode()).hexdigest(),
                            "commands": "+@lock", "names": names}}


def test_acl_names_rules_apply_to_every_name_of_mlock():
    with Env(_users_config()) as env:
        c = env.client()
        assert_eq(c.call("AUTH", "worker", WORKER_PW), "OK", "AUTH worker")
        assert_error(c.call("MLOCK", 1, "orders:1", "stock:1", "orders:2"), "NOPERM", "stock:1",
                     what="MLOCK with a name outside the user's")
        assert_error(c.call("MUNLOCK", 1, "orders:1", "stock:1"), "NOPERM", "stock:1",
                     what="MUNLOCK with a name outside the user's")
        assert_eq(_held(env, ["orders:1", "orders:2"]), [], "held after -NOPERM")
        assert_eq(c.call("MLOCK", 1, "orders:1", "orders:2"), "OK", "MLOCK of the user's names")


def test_a_reload_narrowing_names_refuses_an_mlock_in_flight_with_nothing_held():
    """The MLOCK waits for its second name, holding its first; a reload takes the second
    away from its user: -NOPERM, and the first is given back."""
    with Env(_users_config()) as env:
        admin = env.client()
        assert_eq(admin.call("AUTH", "admin-token-0123456789"), "OK", "AUTH")
        assert_eq(admin.call("LOCK", "orders:2", 1), "OK", "LOCK of the second name")
        c = env.client()
        assert_eq(c.call("AUTH", "worker", WORKER_PW), "OK", "AUTH worker")
        c.send("MLOCK", 1, "orders:1", "orders:2")
        env.wait_waiting(1, what="MLOCK waiting for orders:2")
        assert_eq(_held(env, ["orders:1"]), ["orders:1"], "the first name taken")
        env.rlockd.rewrite_config({"user worker": {"names": "orders:1"}})
        env.rlockd.signal(signal.SIGHUP)
        assert_error(c.read_reply(3.0), "NOPERM", "orders:2", what="the MLOCK after the reload")
        assert_eq(_held(env, ["orders:1"]), [], "held after the refusal")


def test_mlock_names_on_different_cluster_masters():
    with Setup() as s:
        on_master = s.cluster.names_on_each_master("ml", count=1)
        names = [ns[0] for ns in on_master.values()]
        assert len(names) >= 3, "a name on each master: %r" % on_master
        a, b = s.client("mla"), s.client("mlb")
        assert_eq(a.call("MLOCK", 1, *names), "OK", "MLOCK across masters")
        for port, ns in on_master.items():
            assert_eq(s.node(port).call("HGETALL", ns[0]), ["mla:1", "1"], "%s on master %d" % (ns[0], port))
        other = "a-free-" + names[1]   # first in key order: taken, then given back
        assert_eq(b.call("MLOCK", 1, other, *names, "WAIT", 200), 0, "another MLOCK WAIT 200")
        assert_eq(b.call("ISLOCKED", other), 0, "nothing of the refused MLOCK held")
        assert_eq(a.call("MUNLOCK", 1, *names), "OK", "MUNLOCK across masters")
        assert_eq(b.call("MLOCK", 1, other, *names, "WAIT", 2000), "OK", "the other MLOCK now")
        assert_eq(b.call("MUNLOCK", 1, other, *names), "OK", "its MUNLOCK")
        for port, ns in on_master.items():
            assert_eq(s.node(port).call("EXISTS", ns[0]), 0, "%s freed" % ns[0])


def _rlock(env, *args, stdin=subprocess.DEVNULL):
    return subprocess.Popen([rlock_bin(), "-S", "%s:%d" % (HOST, env.port)] + list(args),
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_rlock_with_several_names_holds_them_all_or_none(env):
    base = env.name("ml")
    a, b, c = base + "-a", base + "-b", base + "-c"
    holder = _rlock(env, "hold", b, a, stdin=subprocess.PIPE)
    try:
        owner = holder.stdout.readline().strip()
        assert owner, "rlock hold printed no owner: %r" % holder.stderr.read()
        for n in (a, b):
            assert_eq(env.redis_hash(n), {owner: "1"}, "%s held by rlock hold" % n)
        other = _rlock(env, "-n", c, a, "--", "true")
        _, err = other.communicate(timeout=10)
        assert_eq(other.returncode, 1, "rlock -n of an overlapping set (stderr %r)" % err)
        assert "locks '%s' '%s'" % (c, a) in err, "its message: %r" % err
        assert_eq(_held(env, [c]), [], "nothing of the refused set held")
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert_eq(holder.returncode, 0, "rlock hold after its input ended")
    assert_eq(_held(env, [a, b]), [], "released at the end")
    run = _rlock(env, c, a, "--", "sh", "-c", 'echo "$RLOCK_NAME"')
    out, err = run.communicate(timeout=10)
    assert_eq((run.returncode, out), (0, "%s %s\n" % (c, a)), "COMMAND's RLOCK_NAME (stderr %r)" % err)
    refused = _rlock(env, "--fair", a, b, "--", "true")
    _, err = refused.communicate(timeout=10)
    assert_eq(refused.returncode, 64, "a KIND with several names (stderr %r)" % err)
