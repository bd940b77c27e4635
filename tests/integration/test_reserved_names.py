"""rlockd's own records (a session's, a semaphore's holders) share the key space of the
locks: a name whose key would land on one is refused by every command that takes a name,
whatever name_prefix, and only such names; a record rlockd did not write (planted here
straight in Redis) is refused as "not an rlockd record", logged once, never answered
-NOPERM nor retried; and ADDPERMITS keeps a semaphore's count in 0..2147483647."""

import subprocess

from harness import HOST, Env, assert_eq, rlock_bin, wait_until

SECRET = "victim-secret-0123456789"
PREFIXES = ("", "app:")
ENV_CONFIG = {"lock": {"watchdog_timeout_ms": 1500}, "redis": {"retry_timeout_ms": 600}}


def envs():
    """An Env without name_prefix, then one with "app:"."""
    for prefix in PREFIXES:
        config = {section: dict(rows) for section, rows in ENV_CONFIG.items()}
        if prefix:
            config["lock"]["name_prefix"] = prefix
        with Env(config) as env:
            yield prefix, env


def reserved(key, what):
    return "-ERR reserved name: %s is rlockd's record of %s" % (key, what)


def permit_records(prefix, sem):
    """The keys of semaphore sem's holders, as rlockd names them under prefix."""
    return ("rlockd_permits:{%s%s}" % (prefix, sem), "rlockd_permits_deadline:{%s%s}" % (prefix, sem))


# Every command that takes a name, with its other arguments.
NAME_COMMANDS = [
    ("LOCK", 1), ("LOCK", 1, "FAIR"), ("LOCK", 1, "READ"), ("LOCK", 1, "WRITE"),
    ("LOCK", 1, "FENCED"), ("TRYLOCK", 1), ("UNLOCK", 1), ("FORCEUNLOCK",), ("ISLOCKED",),
    ("ISHELD", 1), ("HOLDCOUNT", 1), ("PTTL",), ("OWNERS",), ("TOKEN",), ("SETPERMITS", 1),
    ("ADDPERMITS", 1), ("PERMITS",), ("ACQUIRE",), ("ACQUIRE", "EXPIRABLE"), ("RELEASE",),
    ("LATCHSET", 1), ("COUNTDOWN",), ("LATCHCOUNT",), ("AWAIT", "WAIT", 10),
]


def victim_joins_after(attack):
    """The attack (a command and its arguments after the name) on the victim's session
    record is refused, and the victim's CLIENTID with its secret still joins."""
    for prefix, env in envs():
        attacker, victim = env.client(), env.client()
        got = attacker.call(attack[0], "rlockd_session:{victim}", *attack[1:])
        assert_eq(repr(got), reserved(prefix + "rlockd_session:{victim}", "the session of client-id victim"),
                  "%s of the victim's record, prefix %r" % (attack[0], prefix))
        assert_eq(env.redis("EXISTS", prefix + "rlockd_session:{victim}"), 0, "the record's key")
        assert_eq(victim.call("CLIENTID", "victim", "SECRET", SECRET), "OK", "the victim's CLIENTID")


def test_lock_on_a_session_record_is_refused_and_the_victim_joins():
    victim_joins_after(("LOCK", 1))  # was: the victim's CLIENTID got -NOPERM


def test_setpermits_on_a_session_record_is_refused_and_the_victim_joins():
    victim_joins_after(("SETPERMITS", 1))  # was: -UNAVAILABLE for ever


def test_every_command_that_takes_a_name_refuses_a_reserved_one():
    for prefix, env in envs():
        c = env.client()
        key = prefix + "rlockd_session:{v}"
        for cmd in NAME_COMMANDS:
            got = c.call(cmd[0], "rlockd_session:{v}", *cmd[1:])
            assert_eq(repr(got), reserved(key, "the session of client-id v"), "%r, prefix %r" % (cmd, prefix))
        assert_eq(env.redis("EXISTS", key), 0, "the record's key")


def test_a_lock_on_a_permit_record_is_refused_and_no_permit_is_lost():
    for prefix, env in envs():
        sem = env.name("sem")
        attacker = env.client()
        names = ["rlockd_permits:{%s}" % sem, "rlockd_permits_deadline:{%s}" % sem, "{%s}:timeout" % sem]
        if prefix:
            # app:rlockd_permits:{sem} is no record (they are rlockd_permits:{app:sem}) ...
            for name in names[:2]:
                assert_eq(attacker.call("LOCK", name, 1, "LEASE", 1500), "OK", "LOCK %s under a prefix" % name)
                assert_eq(attacker.call("UNLOCK", name, 1), 1, "UNLOCK %s" % name)
            # ... but app:{sem}:timeout is semaphore "{sem}"'s expirable permits
            want = [reserved("app:{%s}:timeout" % sem, "the expirable permits of semaphore app:{%s}" % sem)]
            names = names[2:]
        else:
            want = [reserved(names[0], "the permit holders of semaphore " + sem),
                    reserved(names[1], "the permit holders' deadlines of semaphore " + sem),
                    reserved(names[2], "the expirable permits of semaphore " + sem)]
        for name, text in zip(names, want):
            assert_eq(repr(attacker.call("LOCK", name, 1, "LEASE", 1500)), text, "LOCK %s" % name)
        holder, other = env.client(), env.client()
        assert_eq(holder.call("SETPERMITS", sem, 2), 1, "SETPERMITS")
        assert_eq(holder.call("ACQUIRE", sem), "OK", "ACQUIRE")
        assert_eq(other.call("PERMITS", sem), 1, "PERMITS while held")
        holder.close()
        wait_until(lambda: other.call("PERMITS", sem) == 2, 5, what="the holder's permit back")
        for key in permit_records(prefix, sem):
            assert_eq(env.redis("EXISTS", key), 0, "%s after the holder left" % key)


def test_a_braced_semaphore_name_is_refused_it_would_share_the_plain_ones_records():
    for prefix, env in envs():
        sem = env.name("sem")
        c = env.client()
        if prefix:  # "app:{sem}" has a '{' and records of its own
            assert_eq(c.call("SETPERMITS", "{%s}" % sem, 1), 1, "SETPERMITS {sem} under a prefix")
            assert_eq(c.call("ACQUIRE", "{%s}" % sem), "OK", "ACQUIRE {sem} under a prefix")
            continue
        for cmd in (("SETPERMITS", 1), ("ACQUIRE",), ("ACQUIRE", "EXPIRABLE"), ("PERMITS",)):
            assert_eq(repr(c.call(cmd[0], "{%s}" % sem, *cmd[1:])),
                      "-ERR reserved name: its key rlockd_permits:{%s} is rlockd's record of the permit "
                      "holders of semaphore %s" % (sem, sem), "%s {sem}" % cmd[0])
        assert_eq(c.call("LOCK", "{%s}" % sem, 1), "OK", "a lock may be named {sem}")


def test_the_rlock_command_says_a_reserved_name_was_refused_and_runs_nothing():
    for prefix, env in envs():
        for args, what in ((["rlockd_session:{x}"], "lock 'rlockd_session:{x}'"),
                           (["--permits", "2", "rlockd_permits_deadline:{x}" if not prefix else "{x}:timeout"],
                            "semaphore '%s'" % ("rlockd_permits_deadline:{x}" if not prefix else "{x}:timeout"))):
            r = subprocess.run([rlock_bin(), "-S", "%s:%d" % (HOST, env.port)] + args + ["--", "echo", "ran"],
                               capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
            assert_eq((r.returncode != 0, r.stdout, r.stderr.strip()),
                      (True, "", "rlock: %s: invalid argument, or refused by rlockd (-ERR: a reserved name, a "
                       "count out of range)" % what), "rlock %s, prefix %r" % (" ".join(args), prefix))


def test_addpermits_past_the_top_or_below_zero_is_refused_and_changes_nothing():
    top = 2147483647
    for prefix, env in envs():
        c = env.client()
        s, t = env.name("sem"), env.name("sem")
        assert_eq(c.call("SETPERMITS", s, top), 1, "SETPERMITS s 2147483647")
        assert_eq(repr(c.call("ADDPERMITS", s, top)),
                  "-ERR permits out of range: the count would be 4294967294, and must stay 0 to 2147483647 "
                  "with the permits held", "ADDPERMITS s 2147483647")
        assert_eq(c.call("PERMITS", s), top, "PERMITS s after the refusal")
        assert_eq(c.call("ADDPERMITS", s, 0), top, "ADDPERMITS s 0")
        assert_eq(c.call("SETPERMITS", t, 1), 1, "SETPERMITS t 1")
        assert_eq(c.call("ADDPERMITS", t, -1), 0, "ADDPERMITS t -1")
        for n in (-1, -top, -top):
            assert_eq(repr(c.call("ADDPERMITS", t, n)),
                      "-ERR permits out of range: the count would be %d, and must stay 0 to 2147483647 "
                      "with the permits held" % n, "ADDPERMITS t %d" % n)
        assert_eq(c.call("PERMITS", t), 0, "PERMITS t after the refusals")
        assert_eq(env.redis("GET", prefix + t), "0", "t's count in Redis")


def test_addpermits_counts_the_permits_held_so_that_releases_stay_in_range():
    top = 2147483647
    for prefix, env in envs():
        c = env.client()
        u = env.name("sem")
        assert_eq(c.call("SETPERMITS", u, 10), 1, "SETPERMITS u 10")
        assert_eq(c.call("ACQUIRE", u, "PERMITS", 3), "OK", "ACQUIRE 3")
        assert_eq(repr(c.call("ADDPERMITS", u, top - 9)),
                  "-ERR permits out of range: the count would be 2147483648, and must stay 0 to 2147483647 "
                  "with the permits held", "ADDPERMITS up to the top with 3 held")
        assert_eq(c.call("ADDPERMITS", u, top - 10), top - 3, "ADDPERMITS to the top with the 3 held")
        assert_eq(c.call("RELEASE", u, "PERMITS", 3), 1, "RELEASE 3")
        assert_eq(c.call("PERMITS", u), top, "PERMITS u after the release")


def log_count(env, text):
    return env.rlockd.log_text().count(text)


def test_a_session_record_rlockd_did_not_write_is_refused_and_logged_once():
    plants = [
        ("a string", [("SET", "x")], "a string, not a hash"),
        ("a lock's hash", [("HSET", "other:1", "1"), ("PEXPIRE", 60000)], "a field that names no hold"),
        ("a hash of holds only", [("HSET", "rlock:1:L", "watchdog"), ("PEXPIRE", 60000)], "no secret"),
        ("a record without a TTL", [("HSET", "secret", "ab" * 32, "rlock:1:L", "watchdog")], "a hash with no TTL"),
        ("a secret of the wrong form", [("HSET", "secret", "xyz", "rlock:1:L", "watchdog"), ("PEXPIRE", 60000)],
         "a secret that is not 64 hex digits"),
    ]
    for prefix, env in envs():
        for i, (label, writes, why) in enumerate(plants):
            cid = "victim%d" % i
            key = "%srlockd_session:{%s}" % (prefix, cid)
            for w in writes:
                env.redis(w[0], key, *w[1:])
            before = env.info_int("foreign_records")
            c = env.client()
            for attempt in range(2):
                got = c.call("CLIENTID", cid, "SECRET", SECRET)
                assert_eq(repr(got), "-WRONGTYPE not an rlockd record: the key of this client-id's session record "
                          "holds what rlockd did not write (rlockd's log names it); delete it to use this "
                          "client-id", "CLIENTID over %s, try %d" % (label, attempt + 1))
            assert_eq(env.info_int("foreign_records") - before, 2, "INFO foreign_records, %s" % label)
            line = "not an rlockd record: %s, the session record of %s: %s" % (key, cid, why)
            assert_eq(log_count(env, line), 1, "log lines %r" % line)
            assert_eq(env.info_int("clientid_refusals"), 0, "no -NOPERM was counted")
            env.redis("DEL", key)
            assert_eq(c.call("CLIENTID", cid, "SECRET", SECRET), "OK", "CLIENTID once the key is gone")


def test_a_permit_record_rlockd_did_not_write_is_refused_and_logged_once():
    for prefix, env in envs():
        c = env.client()
        assert_eq(c.call("CLIENTID", "holder"), "OK", "CLIENTID")
        cases = []
        sem = env.name("sem")
        owners, deadlines = permit_records(prefix, sem)
        # the attack of a LOCK with a LEASE, played straight in Redis
        env.redis("HSET", owners, "attacker:1", "1")
        env.redis("PEXPIRE", owners, 60000)
        cases.append((sem, owners, "%s is a hash with a TTL" % owners))
        sem = env.name("sem")
        owners, deadlines = permit_records(prefix, sem)
        env.redis("SET", deadlines, "x")
        cases.append((sem, deadlines, "%s is a string" % deadlines))
        sem = env.name("sem")
        owners, deadlines = permit_records(prefix, sem)
        env.redis("HSET", owners, "holder:0", "many")
        cases.append((sem, owners, "%s is a hash whose field holder:0 is no count" % owners))
        for sem, key, why in cases:
            assert_eq(c.call("SETPERMITS", sem, 2), 1, "SETPERMITS")
            before = env.info_int("foreign_records")
            for attempt in range(2):
                assert_eq(repr(c.call("ACQUIRE", sem)), "-WRONGTYPE not an rlockd record: " + why,
                          "ACQUIRE, try %d" % (attempt + 1))
            assert_eq(env.info_int("foreign_records") - before, 2, "INFO foreign_records")
            assert_eq(log_count(env, "not an rlockd record: " + why), 1, "log lines of %r" % why)
            assert_eq(env.redis("GET", prefix + sem), "2", "no permit was taken")
            env.redis("DEL", key)
            assert_eq(c.call("ACQUIRE", sem), "OK", "ACQUIRE once the key is gone")
            assert_eq(c.call("RELEASE", sem), 1, "RELEASE")
