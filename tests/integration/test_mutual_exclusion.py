"""Mutual exclusion between clients, blocking LOCK, TRYLOCK WAIT, FIFO wake-up."""

import select
import time

from harness import RespClient, assert_eq, holds_for, wait_until

CONFIG = {"lock": {"watchdog_timeout_ms": 600}}


def test_second_client_trylock_gets_0_while_first_holds(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert_eq(a.call("TRYLOCK", n, 1), 1, "first TRYLOCK")
    assert_eq(b.call("TRYLOCK", n, 2), 0, "second client's TRYLOCK while held")
    assert_eq(b.call("ISLOCKED", n), 1, "ISLOCKED")
    assert_eq(b.call("ISHELD", n, 2), 0, "ISHELD by the loser")
    assert_eq(len(env.redis_hash(n)), 1, "owners in the Redis hash")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by holder")
    assert_eq(b.call("TRYLOCK", n, 2), 1, "TRYLOCK after release")


def test_same_thread_id_on_two_clients_is_two_owners(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert a.call("CLIENTID") != b.call("CLIENTID"), "two connections got the same default client-id"
    assert_eq(a.call("LOCK", n, 7), "OK", "LOCK by client a thread 7")
    assert_eq(b.call("TRYLOCK", n, 7), 0, "TRYLOCK by client b with the same thread-id 7")
    assert_eq(b.call("HOLDCOUNT", n, 7), 0, "HOLDCOUNT seen by client b")
    assert_eq(a.call("HOLDCOUNT", n, 7), 1, "HOLDCOUNT seen by client a")


def test_lock_blocks_until_holder_unlocks_then_is_granted_at_once(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    b_id = b.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("LOCK", n, 2)
    env.wait_waiting(1, what="b's LOCK queued behind a")
    # longer than the watchdog TTL: a's lock must be kept alive and b kept waiting
    b.expect_no_reply(env.watchdog_ms / 1000.0 + 0.2, "LOCK by b while a holds the lock")
    t0 = time.monotonic()
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    assert_eq(b.read_reply(2.0), "OK", "b's blocked LOCK")
    handoff = time.monotonic() - t0
    assert handoff < 0.5, "handoff from UNLOCK to the waiter's grant took %.3fs (want < 0.5s)" % handoff
    assert_eq(env.redis_hash(n), {"%s:2" % b_id: "1"}, "Redis hash after handoff")


def test_trylock_wait_times_out_with_0(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    t0 = time.monotonic()
    assert_eq(b.call("TRYLOCK", n, 2, "WAIT", 400, timeout=3.0), 0, "TRYLOCK WAIT 400 while held")
    dt = time.monotonic() - t0
    assert 0.35 <= dt <= 1.5, "TRYLOCK WAIT 400 returned after %.3fs (want about 0.4s)" % dt
    assert_eq(a.call("HOLDCOUNT", n, 1), 1, "holder's count after the waiter gave up")
    # and the waiter left nothing behind: the next UNLOCK frees the lock for good
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    assert_eq(env.redis("EXISTS", n), 0, "key after UNLOCK")


def test_trylock_wait_acquires_when_released_within_wait(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("TRYLOCK", n, 2, "WAIT", 5000)
    env.wait_waiting(1, what="b's TRYLOCK WAIT 5000 queued behind a")
    b.expect_no_reply(0.3, "TRYLOCK WAIT 5000")
    t0 = time.monotonic()
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    assert_eq(b.read_reply(2.0), 1, "TRYLOCK WAIT reply after release")
    assert time.monotonic() - t0 < 0.5, "waiter was not granted promptly after UNLOCK"
    assert_eq(b.call("HOLDCOUNT", n, 2), 1, "HOLDCOUNT of new holder")


def test_trylock_wait_minus_1_waits_until_released(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("TRYLOCK", n, 2, "WAIT", -1)
    env.wait_waiting(1, what="b's TRYLOCK WAIT -1 queued behind a")
    b.expect_no_reply(1.0, "TRYLOCK WAIT -1")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    assert_eq(b.read_reply(2.0), 1, "TRYLOCK WAIT -1 reply after release")


def test_trylock_without_wait_makes_one_attempt(env):
    n = env.name("mx")
    a, b = env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    t0 = time.monotonic()
    assert_eq(b.call("TRYLOCK", n, 2), 0, "TRYLOCK without WAIT")
    assert_eq(b.call("TRYLOCK", n, 2, "WAIT", 0), 0, "TRYLOCK WAIT 0")
    dt = time.monotonic() - t0
    assert dt < 0.3, "two single-attempt TRYLOCKs took %.3fs" % dt


def test_waiters_are_granted_in_fifo_order(env):
    n = env.name("fifo")
    holder = env.client(label="holder")
    waiters = [env.client(label="waiter%d" % i) for i in range(4)]
    ids = [w.call("CLIENTID") for w in waiters]
    # start from a quiet daemon: earlier tests' closed waiters are gone
    env.wait_waiting(0, what="no waiter left from earlier tests")
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by holder")
    for i, w in enumerate(waiters):
        w.send("LOCK", n, 100 + i)
        env.wait_waiting(i + 1, what="waiter%d queued" % i)
    for w in waiters:
        w.expect_no_reply(0.05, "queued LOCK")
    order = []
    assert_eq(holder.call("UNLOCK", n, 1), 1, "UNLOCK by holder")
    pending = list(range(len(waiters)))
    while pending:
        socks = {waiters[i].sock: i for i in pending}
        r, _, _ = select.select(list(socks), [], [], 2.0)
        assert r, "no waiter was granted within 2s after an UNLOCK (granted so far: %r)" % order
        i = socks[r[0]] if len(r) == 1 else min(socks[s] for s in r)
        assert_eq(waiters[i].read_reply(1.0), "OK", "waiter%d's LOCK" % i)
        order.append(i)
        pending.remove(i)
        assert_eq(env.redis_hash(n), {"%s:%d" % (ids[i], 100 + i): "1"}, "Redis hash while waiter%d holds" % i)
        for j in pending:  # one grant per UNLOCK: everyone else stays blocked
            waiters[j].expect_no_reply(0.1, "LOCK of waiter%d while waiter%d holds the lock" % (j, i))
        assert_eq(waiters[i].call("UNLOCK", n, 100 + i), 1, "UNLOCK by waiter%d" % i)
    assert_eq(order, [0, 1, 2, 3], "order in which waiters were granted")
    assert_eq(env.redis("EXISTS", n), 0, "key after the last UNLOCK")


def test_blocked_lock_does_not_delay_other_connections(env):
    n = env.name("mx")
    a, b, c = env.client(), env.client(), env.client()
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK by a")
    b.send("LOCK", n, 2)
    env.wait_waiting(1, what="b's LOCK queued behind a")
    b.expect_no_reply(0.1, "LOCK by b")
    for _ in range(5):
        t0 = time.monotonic()
        assert_eq(c.call("PING"), "PONG", "PING on another connection")
        r = c.call("ISLOCKED", n)
        dt = time.monotonic() - t0
        assert_eq(r, 1, "ISLOCKED on another connection")
        assert dt < 0.2, "PING+ISLOCKED on another connection took %.3fs while b is blocked" % dt
    other = env.name("mx")
    assert_eq(c.call("LOCK", other, 3), "OK", "LOCK of another name while b is blocked")
    assert_eq(c.call("UNLOCK", other, 3), 1, "UNLOCK of another name")
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK by a")
    assert_eq(b.read_reply(2.0), "OK", "b's LOCK after release")


def test_reentrant_lock_needs_one_unlock_per_lock(env):
    n = env.name("re")
    a, b = env.client(), env.client()
    for i in range(3):
        assert_eq(a.call("LOCK", n, 1), "OK", "LOCK #%d" % (i + 1))
    assert_eq(a.call("TRYLOCK", n, 1), 1, "reentrant TRYLOCK")
    assert_eq(a.call("HOLDCOUNT", n, 1), 4, "HOLDCOUNT")
    for left in (3, 2, 1):
        assert_eq(a.call("UNLOCK", n, 1), 0, "UNLOCK with %d holds left" % left)
        assert_eq(b.call("TRYLOCK", n, 2), 0, "other client's TRYLOCK while %d holds left" % left)
    assert_eq(a.call("UNLOCK", n, 1), 1, "last UNLOCK")
    assert_eq(b.call("TRYLOCK", n, 2), 1, "other client's TRYLOCK after the last UNLOCK")


def test_waiters_share_one_subscription_dropped_when_the_last_leaves(env):
    n = env.name("sub")
    ch = "redisson_lock__channel:{%s}" % n

    def numsub():
        r = env.redis("PUBSUB", "NUMSUB", ch)
        return int(r[1])
    holder = env.client()
    waiters = [env.client() for _ in range(3)]
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by holder")
    assert_eq(numsub(), 0, "subscribers to the channel with no waiter")
    for i, w in enumerate(waiters):
        w.send("LOCK", n, 10 + i)
        env.wait_waiting(i + 1, what="waiter%d queued" % i)
        w.expect_no_reply(0.1, "waiter%d's LOCK" % i)
    wait_until(lambda: numsub() == 1, 1.0, what="one subscription for the lock's waiters")
    holds_for(lambda: numsub() == 1, 0.1,
              what="subscribers to the channel with 3 waiters (one SUBSCRIBE per name) == 1")
    waiters[2].close()   # a waiter leaving does not drop the others' subscription
    env.wait_waiting(2, what="the closed waiter removed from the queue")
    holds_for(lambda: numsub() == 1, 0.1, what="subscribers after one of 3 waiters left == 1")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "UNLOCK by holder")
    assert_eq(waiters[0].read_reply(1.0), "OK", "first waiter")
    assert_eq(numsub(), 1, "subscribers while one waiter is left")
    assert_eq(waiters[0].call("UNLOCK", n, 10), 1, "first waiter's UNLOCK")
    assert_eq(waiters[1].read_reply(1.0), "OK", "second waiter")
    wait_until(lambda: numsub() == 0, 1.0, what="channel unsubscribed after the last waiter left")


def test_two_rlockd_daemons_on_one_redis_exclude_each_other_and_wake_across(env):
    other = env.second_rlockd()
    n = env.name("hosts")
    a = env.client(label="host1-client")
    b = env.client_of(other, label="host2-client")
    bid = b.call("CLIENTID")
    assert_eq(a.call("LOCK", n, 1), "OK", "LOCK through the first rlockd")
    assert_eq(b.call("TRYLOCK", n, 1), 0, "TRYLOCK through the second rlockd")
    b.send("LOCK", n, 1)
    env.wait_waiting(1, daemon=other, what="b's LOCK queued in the second rlockd")
    b.expect_no_reply(env.watchdog_ms / 1000.0 + 0.2, "LOCK through the second rlockd")
    t0 = time.monotonic()
    assert_eq(a.call("UNLOCK", n, 1), 1, "UNLOCK through the first rlockd")
    assert_eq(b.read_reply(2.0), "OK", "the second rlockd's waiter")
    dt = time.monotonic() - t0
    assert dt < 0.5, "waiter on the other rlockd took %.3fs after UNLOCK (want the pub/sub wake-up)" % dt
    assert_eq(env.redis_hash(n), {"%s:1" % bid: "1"}, "hash after the cross-daemon handoff")
    # and back: a disconnect on the second daemon wakes a waiter on the first
    a.send("LOCK", n, 2)
    env.wait_waiting(1, what="a's LOCK queued in the first rlockd")
    a.expect_no_reply(0.2, "LOCK through the first rlockd")
    t0 = time.monotonic()
    b.close()
    assert_eq(a.read_reply(2.0), "OK", "the first rlockd's waiter after the holder on the second disconnected")
    assert time.monotonic() - t0 < 0.5, "cross-daemon wake-up after a disconnect took over 0.5s"


def test_waiter_that_times_out_or_leaves_mid_queue_keeps_fifo_for_the_rest(env):
    n = env.name("fifo")
    holder = env.client(label="holder")
    w = [env.client(label="w%d" % i) for i in range(4)]
    assert_eq(holder.call("LOCK", n, 1), "OK", "LOCK by holder")
    timeouts = env.info_int("wait_timeouts")

    def queued(count):
        """count waiters queued so far, w1 included even after its WAIT ran out (one INFO, consistent)."""
        info = env.info()
        return int(info["waiting_clients"]) + int(info["wait_timeouts"]) - timeouts == count
    w[0].send("LOCK", n, 10)
    env.wait_waiting(1, what="w0 queued")
    w[0].expect_no_reply(0.1, "w0's LOCK")
    w[1].send("TRYLOCK", n, 11, "WAIT", 300)
    wait_until(lambda: queued(2), 5.0, interval=0.01, what="w1 queued behind w0")
    w[1].expect_no_reply(0.1, "w1's TRYLOCK WAIT 300")
    w[2].send("LOCK", n, 12)
    wait_until(lambda: queued(3), 5.0, interval=0.01, what="w2 queued behind w1")
    w[2].expect_no_reply(0.1, "w2's LOCK")
    w[3].send("LOCK", n, 13)
    wait_until(lambda: queued(4), 5.0, interval=0.01, what="w3 queued behind w2")
    w[3].expect_no_reply(0.1, "w3's LOCK")
    assert_eq(w[1].read_reply(1.0), 0, "w1's TRYLOCK WAIT 300 timed out")
    w[2].close()   # leaves the queue
    env.wait_waiting(2, what="w0 and w3 left in the queue after w1 timed out and w2 closed")
    assert_eq(holder.call("UNLOCK", n, 1), 1, "UNLOCK by holder")
    assert_eq(w[0].read_reply(1.0), "OK", "w0 (head of the queue)")
    w[3].expect_no_reply(0.1, "w3 while w0 holds")
    assert_eq(w[0].call("UNLOCK", n, 10), 1, "w0's UNLOCK")
    assert_eq(w[3].read_reply(1.0), "OK", "w3 (next live waiter)")
    assert_eq(w[3].call("UNLOCK", n, 13), 1, "w3's UNLOCK")
    assert_eq(env.redis("EXISTS", n), 0, "no lock left (not even by the waiters that left)")


def test_contended_lock_keeps_mutual_exclusion_across_two_daemons(env):
    import threading
    other = env.second_rlockd()
    n = env.name("stress")
    inside = n + ":inside"
    rounds, workers = 8, 12
    errors, grants = [], []

    def worker(i):
        try:
            daemon = env.rlockd if i % 2 == 0 else other
            c = RespClient(daemon.port, timeout=10.0, label="worker%d" % i)
            r = RespClient(env.redis_port, timeout=5.0, label="worker%d-redis" % i)
            try:
                for k in range(rounds):
                    got = c.call("LOCK", n, i)
                    if got != "OK":
                        errors.append("worker%d round %d: LOCK replied %r" % (i, k, got))
                        return
                    if r.call("INCR", inside) != 1:
                        errors.append("worker%d round %d: someone else inside the lock" % (i, k))
                    if r.call("HLEN", n) != 1:
                        errors.append("worker%d round %d: lock hash has %r fields" % (i, k, r.call("HLEN", n)))
                    time.sleep(0.002)
                    r.call("DECR", inside)
                    got = c.call("UNLOCK", n, i)
                    if got != 1:
                        errors.append("worker%d round %d: UNLOCK replied %r" % (i, k, got))
                    grants.append(i)
            finally:
                c.close()
                r.close()
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append("worker%d: %s" % (i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "workers still running after 30s"
    assert not errors, "%d problems, first: %s" % (len(errors), errors[:3])
    assert_eq(len(grants), rounds * workers, "grants")
    assert_eq(env.redis("EXISTS", n), 0, "lock left after all workers finished")
    assert time.monotonic() - t0 < 20, "contended run took %.1fs" % (time.monotonic() - t0)
