/*
 * test_failures.c - how librlock reports what goes wrong: unlocking what
 * is not held, locks lost to FORCEUNLOCK, to a stopped daemon or to a
 * reply timeout, rlockd stopping under a waiting LOCK, an address nobody
 * listens on, bad arguments (refused before any round trip), AUTH, the
 * reply each error code maps to, and the text of every error.
 */
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_suites.h"
#include "harness.h"
#include "in_thread.h"

#define AUTH_TOKEN "s3cret-token"

START_TEST(unlock_by_a_thread_not_holding_is_not_owner)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);

    ck_assert_int_eq(rlock_unlock(c, "never-locked"), RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_lock(c, "mine", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(in_new_thread(c, OP_UNLOCK, "mine", 0, -1),
                     RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_is_held(c, "mine"), 1);
    ck_assert_int_eq(rlock_unlock(c, "mine"), 1);
    rlock_close(c);
}
END_TEST

START_TEST(force_unlock_by_another_client_makes_unlock_report_lock_lost)
{
    rlock_client *holder = connect_or_fail(harness_addr(), NULL);
    rlock_client *other = connect_or_fail(harness_addr(), NULL);

    ck_assert_int_eq(rlock_lock(holder, "forced", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_force_unlock(other, "forced"), 1);
    ck_assert_int_eq(rlock_force_unlock(other, "forced"), 0);
    ck_assert_int_eq(rlock_is_locked(holder, "forced"), 0);
    ck_assert_int_eq(rlock_unlock(holder, "forced"), RLOCK_ELOCKLOST);
    rlock_close(holder);
    rlock_close(other);
}
END_TEST

/* rlockd stops (on_shutdown = keep) and starts again: the next call
 * resumes the client's session, the hold with it. */
START_TEST(daemon_restarted_while_holding_resumes_the_session)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    int r;

    ck_assert_int_eq(rlock_lock(c, "held", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_lock(c, "held", RLOCK_WATCHDOG), RLOCK_OK);
    harness_sleep_ms(100); /* mid-section: the hold is in the record */
    harness_rlockd_stop();
    r = rlock_is_held(c, "held");
    ck_assert_msg(r == RLOCK_ECONNLOST || r == RLOCK_EDAEMON,
                  "call after rlockd stopped: %d %s", r, rlock_strerror(r));
    ck_assert_int_eq(rlock_is_held(c, "held"), RLOCK_EDAEMON);
    harness_rlockd_start();
    ck_assert_int_eq(rlock_hold_count(c, "held"), 2);
    ck_assert_int_eq(rlock_unlock(c, "held"), 0);
    ck_assert_int_eq(rlock_unlock(c, "held"), 1);
    ck_assert_int_eq(rlock_is_locked(c, "held"), 0);
    rlock_close(c);
}
END_TEST

/* The lock went while rlockd was away: the resumed session says so. */
START_TEST(daemon_restarted_and_lock_gone_reports_lock_lost)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    redisContext *redis = harness_redis();
    redisReply *reply;

    ck_assert_int_eq(rlock_lock(c, "gone", RLOCK_WATCHDOG), RLOCK_OK);
    harness_sleep_ms(100);
    harness_rlockd_stop();
    reply = redisCommand(redis, "DEL gone");
    ck_assert_ptr_nonnull(reply);
    ck_assert_int_eq(reply->integer, 1);
    freeReplyObject(reply);
    redisFree(redis);
    harness_rlockd_start();
    /* the old connection is found closed first: the caller decides */
    ck_assert_int_eq(rlock_is_held(c, "gone"), RLOCK_ECONNLOST);
    ck_assert_int_eq(rlock_unlock(c, "gone"), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_unlock(c, "gone"), RLOCK_ENOTOWNER);
    ck_assert_int_eq(rlock_lock(c, "gone", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_unlock(c, "gone"), 1);
    rlock_close(c);
}
END_TEST

START_TEST(daemon_stopped_while_waiting_is_eshutdown)
{
    rlock_client *c = connect_or_fail(harness_addr(), NULL);
    struct thread_call waiting = {
        .client = c, .op = OP_LOCK, .name = "awaited", .lease_ms = -1};

    ck_assert_int_eq(rlock_lock(c, "awaited", RLOCK_WATCHDOG), RLOCK_OK);
    thread_call_start(&waiting);
    ck_assert(harness_wait_info("blocked_clients", 1));
    harness_rlockd_stop();
    ck_assert_int_eq(thread_call_join(&waiting), RLOCK_ESHUTDOWN);
    rlock_close(c);
}
END_TEST

START_TEST(reply_timeout_drops_the_connection_and_reports_lock_lost)
{
    const rlock_options opts = {.command_timeout_ms = 300,
                                .heartbeat_ms = RLOCK_NO_HEARTBEAT};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    long long start, elapsed;

    ck_assert_int_eq(rlock_lock(c, "stalled", RLOCK_WATCHDOG), RLOCK_OK);
    harness_rlockd_signal(SIGSTOP);
    start = harness_now_ms();
    ck_assert_int_eq(rlock_is_held(c, "stalled"), RLOCK_ETIMEOUT);
    elapsed = harness_now_ms() - start;
    harness_rlockd_signal(SIGCONT);
    ck_assert_int_ge(elapsed, 250);
    ck_assert_int_lt(elapsed, 2000);
    /* its only connection closed, the client's session ended in rlockd,
     * releasing the lock (on_disconnect = release) */
    ck_assert(harness_wait_info("connected_clients", 1));
    ck_assert_int_eq(rlock_is_locked(c, "stalled"), 0);
    ck_assert_int_eq(rlock_unlock(c, "stalled"), RLOCK_ELOCKLOST);
    rlock_close(c);
}
END_TEST

/* rlockd restarted, and its session record gone with a Redis that lost
 * its data: the reconnection asks to resume (RESUME), hears there is no
 * session, and every hold reports RLOCK_ELOCKLOST once. */
START_TEST(no_session_to_resume_makes_every_hold_lost)
{
    const rlock_options opts = {.heartbeat_ms = RLOCK_NO_HEARTBEAT};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    redisContext *redis = harness_redis();
    redisReply *reply;

    ck_assert_int_eq(rlock_lock(c, "a", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_lock(c, "b", RLOCK_WATCHDOG), RLOCK_OK);
    harness_sleep_ms(100);
    harness_rlockd_stop();
    reply = redisCommand(redis, "FLUSHDB");
    ck_assert_ptr_nonnull(reply);
    freeReplyObject(reply);
    redisFree(redis);
    harness_rlockd_start();
    ck_assert_int_eq(rlock_is_held(c, "a"), RLOCK_ECONNLOST);
    ck_assert_int_eq(rlock_unlock(c, "a"), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_lock(c, "b", RLOCK_WATCHDOG), RLOCK_ELOCKLOST);
    ck_assert_int_eq(rlock_lock(c, "b", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_unlock(c, "b"), 1);
    ck_assert_int_eq(rlock_unlock(c, "a"), RLOCK_ENOTOWNER);
    rlock_close(c);
}
END_TEST

/* The heartbeat keeps an idle client's session (and rlockd would end it
 * if the process stopped: test_rlock_cli.py stops one). */
START_TEST(the_heartbeat_connection_keeps_an_idle_client_alive)
{
    const rlock_options opts = {.heartbeat_ms = 300};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);

    ck_assert_int_eq(rlock_lock(c, "idle", RLOCK_WATCHDOG), RLOCK_OK);
    /* the caller's thread, the heartbeat's, the harness's */
    ck_assert(harness_wait_info("connected_clients", 3));
    harness_sleep_ms(1500);
    ck_assert_int_eq(harness_info("heartbeat_timeouts"), 0);
    ck_assert_int_eq(rlock_unlock(c, "idle"), 1);
    rlock_close(c);
    ck_assert(harness_wait_info("connected_clients", 1));
}
END_TEST

/* The heartbeat thread resumes the session on a restarted rlockd by
 * itself, before the caller's next call. */
START_TEST(the_heartbeat_resumes_the_session_after_an_rlockd_restart)
{
    const rlock_options opts = {.heartbeat_ms = 300};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);

    ck_assert_int_eq(rlock_lock(c, "kept", RLOCK_WATCHDOG), RLOCK_OK);
    harness_sleep_ms(100);
    harness_rlockd_stop();
    harness_rlockd_start();
    ck_assert(harness_wait_info("sessions_resumed", 1));
    rlock_close(c);
}
END_TEST

START_TEST(bad_arguments_are_einval_without_a_round_trip)
{
    const rlock_options opts = {.command_timeout_ms = 2000};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);
    long long ttl, start;

    /* a stopped rlockd: any call that went out would hang for 2 s */
    harness_rlockd_signal(SIGSTOP);
    start = harness_now_ms();
    ck_assert_int_eq(rlock_lock(NULL, "x", RLOCK_WATCHDOG), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_lock(c, NULL, RLOCK_WATCHDOG), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_lock(c, "", RLOCK_WATCHDOG), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_lock(c, "x", 0), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_lock(c, "x", -2), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_lock(c, "x", 1000000000001LL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_trylock(c, "x", -2, RLOCK_WATCHDOG), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_trylock(c, "x", 1000000000001LL, RLOCK_WATCHDOG),
                     RLOCK_EINVAL);
    ck_assert_int_eq(rlock_trylock(c, "x", 0, 0), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_trylock(c, "", 0, RLOCK_WATCHDOG), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_unlock(c, NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_unlock(NULL, "x"), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_force_unlock(c, ""), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_is_locked(c, NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_is_held(c, ""), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_hold_count(NULL, "x"), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_pttl(c, "x", NULL), RLOCK_EINVAL);
    ck_assert_int_eq(rlock_pttl(c, NULL, &ttl), RLOCK_EINVAL);
    ck_assert_int_lt(harness_now_ms() - start, 500);
    harness_rlockd_signal(SIGCONT);
    /* nothing went out: the connection is still in step */
    ck_assert_int_eq(rlock_is_locked(c, "x"), 0);
    rlock_close(c);
}
END_TEST

START_TEST(auth_token_refused_by_a_daemon_without_one_is_eauth)
{
    const rlock_options opts = {.auth_token = AUTH_TOKEN};
    int err = 0;

    ck_assert_ptr_null(rlock_connect(harness_addr(), &opts, &err));
    ck_assert_int_eq(err, RLOCK_EAUTH);
}
END_TEST

/* ---- a daemon with an auth token ------------------------------------- */

static void start_with_auth_token(void)
{
    const struct harness_options opts = {.auth_token = AUTH_TOKEN};

    harness_start(&opts);
}

START_TEST(auth_token_is_sent_on_every_new_connection)
{
    const rlock_options opts = {.auth_token = AUTH_TOKEN};
    rlock_client *c = connect_or_fail(harness_addr(), &opts);

    ck_assert_int_eq(rlock_lock(c, "guarded", RLOCK_WATCHDOG), RLOCK_OK);
    /* a new thread opens a new connection, which authenticates too */
    ck_assert_int_eq(in_new_thread(c, OP_IS_LOCKED, "guarded", 0, -1), 1);
    ck_assert_int_eq(in_new_thread(c, OP_IS_HELD, "guarded", 0, -1), 0);
    ck_assert_int_eq(rlock_unlock(c, "guarded"), 1);
    rlock_close(c);
}
END_TEST

START_TEST(missing_or_wrong_auth_token_is_eauth)
{
    const rlock_options wrong = {.auth_token = "not-the-token"};
    int err = 0;

    ck_assert_ptr_null(rlock_connect(harness_addr(), NULL, &err));
    ck_assert_int_eq(err, RLOCK_EAUTH);
    err = 0;
    ck_assert_ptr_null(rlock_connect(harness_addr(), &wrong, &err));
    ck_assert_int_eq(err, RLOCK_EAUTH);
}
END_TEST

/* ---- a daemon with a narrower heartbeat range ------------------------ */

#define MIN_HEARTBEAT_MS 1000

static void start_with_min_heartbeat(void)
{
    const struct harness_options opts = {.min_heartbeat_ms = MIN_HEARTBEAT_MS};

    harness_start(&opts);
}

/* A heartbeat rlockd refuses would leave the client without one: the
 * connect fails, and leaves no connection behind. */
START_TEST(a_heartbeat_rlockd_refuses_fails_the_connect_with_einval)
{
    const rlock_options too_short = {.heartbeat_ms = MIN_HEARTBEAT_MS - 1};
    const rlock_options shortest = {.heartbeat_ms = MIN_HEARTBEAT_MS};
    rlock_client *c;
    int err = 0;

    ck_assert_ptr_null(rlock_connect(harness_addr(), &too_short, &err));
    ck_assert_int_eq(err, RLOCK_EINVAL);
    ck_assert(harness_wait_info("connected_clients", 1)); /* the harness's */
    c = connect_or_fail(harness_addr(), &shortest);
    ck_assert_int_eq(rlock_lock(c, "beating", RLOCK_WATCHDOG), RLOCK_OK);
    ck_assert_int_eq(rlock_unlock(c, "beating"), 1);
    rlock_close(c);
}
END_TEST

/* ---- a daemon on a Unix socket --------------------------------------- */

/* A write to a Unix socket whose peer has gone fails with EPIPE at once,
 * and raises SIGPIPE, which would end this process. */
START_TEST(daemon_gone_from_unix_socket_is_connlost_not_sigpipe)
{
    rlock_client *c = connect_or_fail(harness_unix_addr(), NULL);
    int r;

    ck_assert_int_eq(rlock_lock(c, "local", RLOCK_WATCHDOG), RLOCK_OK);
    harness_rlockd_stop();
    r = rlock_is_locked(c, "local");
    ck_assert_msg(r == RLOCK_ECONNLOST, "call after rlockd stopped: %d %s", r,
                  rlock_strerror(r));
    ck_assert_int_eq(rlock_is_locked(c, "local"), RLOCK_EDAEMON);
    rlock_close(c);
}
END_TEST

/* ---- no daemon ------------------------------------------------------- */

START_TEST(connect_where_nobody_listens_is_edaemon)
{
    char addr[32];
    int err = 0;

    snprintf(addr, sizeof addr, "127.0.0.1:%d", harness_free_port());
    ck_assert_ptr_null(rlock_connect(addr, NULL, &err));
    ck_assert_int_eq(err, RLOCK_EDAEMON);
    err = 0;
    ck_assert_ptr_null(
        rlock_connect("unix:/nonexistent/rlockd.sock", NULL, &err));
    ck_assert_int_eq(err, RLOCK_EDAEMON);
    /* err may be NULL */
    ck_assert_ptr_null(rlock_connect(addr, NULL, NULL));
}
END_TEST

START_TEST(bad_connect_arguments_are_einval)
{
    static const char *const addrs[] = {
        "localhost",   "127.0.0.1:",      ":7379",
        "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:7x",
        "unix:",       "[::1:7379",       "[]:7379",
    };
    char long_id[66];
    const rlock_options bad_opts[] = {
        {.client_id = ""},          {.client_id = "has space"},
        {.client_id = long_id},     {.connect_timeout_ms = -1},
        {.command_timeout_ms = -1}, {.heartbeat_ms = -2},
        {.heartbeat_ms = 99},       {.heartbeat_ms = 86400001},
    };
    int err;

    memset(long_id, 'x', 65); /* one over the limit */
    long_id[65] = '\0';
    for (size_t i = 0; i < sizeof addrs / sizeof *addrs; i++) {
        err = 0;
        ck_assert_ptr_null(rlock_connect(addrs[i], NULL, &err));
        ck_assert_msg(err == RLOCK_EINVAL, "%s: %d", addrs[i], err);
    }
    err = 0;
    ck_assert_ptr_null(rlock_connect(NULL, NULL, &err));
    ck_assert_int_eq(err, RLOCK_EINVAL);
    for (size_t i = 0; i < sizeof bad_opts / sizeof *bad_opts; i++) {
        err = 0;
        ck_assert_ptr_null(rlock_connect("127.0.0.1:7379", &bad_opts[i], &err));
        ck_assert_msg(err == RLOCK_EINVAL, "options #%zu: %d", i, err);
    }
    ck_assert_ptr_null(rlock_client_id(NULL));
    rlock_close(NULL);
}
END_TEST

/* A fake rlockd on a loopback port: answers each request it reads with
 * the next of its canned replies, then closes the connection. (One read
 * is one request: the client waits for each reply before it sends on.) */
struct fake_daemon {
    int listen_fd;
    char addr[32];
    const char *const *replies;
    pthread_t thread;
};

static void *fake_daemon_run(void *arg)
{
    struct fake_daemon *f = arg;
    int fd = accept(f->listen_fd, NULL, NULL);
    char request[4096];

    for (const char *const *r = f->replies; fd >= 0 && *r != NULL; r++)
        if (read(fd, request, sizeof request) <= 0 ||
            write(fd, *r, strlen(*r)) < 0)
            break;
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void fake_daemon_start(struct fake_daemon *f, const char *const *replies)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;

    f->replies = replies;
    f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(f->listen_fd, 0);
    ck_assert_int_eq(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(f->listen_fd, 1), 0);
    ck_assert_int_eq(getsockname(f->listen_fd, (struct sockaddr *)&a, &len), 0);
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", ntohs(a.sin_port));
    ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_daemon_run, f), 0);
}

static void fake_daemon_stop(struct fake_daemon *f)
{
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
}

START_TEST(replies_map_to_rlock_errors)
{
    static const char *const replies[] = {"+OK\r\n", /* CLIENTID */
                                          "*0\r\n",  /* HELLO 2 SETNAME */
                                          "-NOTOWNER x\r\n",
                                          "-LOCKLOST x\r\n",
                                          "-UNAVAILABLE x\r\n",
                                          "-LIMIT x\r\n",
                                          "-SHUTDOWN x\r\n",
                                          "-NOAUTH x\r\n",
                                          "-NOPERM x\r\n",
                                          "-ERR x\r\n",
                                          "-WRONGTYPE x\r\n",
                                          "-NOREPLICAS x\r\n",
                                          "-NEWCODE x\r\n",
                                          "$1\r\n7\r\n",
                                          "+OK\r\n",
                                          ":7\r\n",
                                          NULL};
    static const int expected[] = {
        RLOCK_ENOTOWNER,  RLOCK_ELOCKLOST,
        RLOCK_EREDIS,     RLOCK_ELIMIT,
        RLOCK_ESHUTDOWN,  RLOCK_EAUTH,
        RLOCK_ENOPERM,    RLOCK_EINVAL,
        RLOCK_EWRONGTYPE, RLOCK_ENOREPLICAS,
        RLOCK_EPROTOCOL,  RLOCK_EPROTOCOL,
        RLOCK_EPROTOCOL,  7,
    };
    /* the fake daemon answers one connection: the caller's */
    const rlock_options opts = {.heartbeat_ms = RLOCK_NO_HEARTBEAT};
    struct fake_daemon fake;
    rlock_client *c;

    fake_daemon_start(&fake, replies);
    c = connect_or_fail(fake.addr, &opts);
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        ck_assert_msg(rlock_hold_count(c, "x") == expected[i],
                      "reply %s: want %d", replies[i + 1], expected[i]);
    /* the fake daemon has hung up */
    ck_assert_int_eq(rlock_hold_count(c, "x"), RLOCK_ECONNLOST);
    rlock_close(c);
    fake_daemon_stop(&fake);
}
END_TEST

START_TEST(strerror_has_a_text_for_every_code)
{
    const char *texts[1 - RLOCK_EDEADLOCK];

    for (int err = RLOCK_OK; err >= RLOCK_EDEADLOCK; err--) {
        texts[-err] = rlock_strerror(err);
        ck_assert_ptr_nonnull(texts[-err]);
        ck_assert_str_ne(texts[-err], "unknown error");
        for (int other = 0; other < -err; other++)
            ck_assert_str_ne(texts[-err], texts[other]);
    }
    ck_assert_str_eq(rlock_strerror(1), "unknown error");
    ck_assert_str_eq(rlock_strerror(RLOCK_EDEADLOCK - 1), "unknown error");
    ck_assert_str_eq(rlock_strerror(-1000), "unknown error");
}
END_TEST

Suite *failures_suite(void)
{
    Suite *s = suite_create("failures");
    TCase *tc = tcase_create("default daemon");
    TCase *auth_tc = tcase_create("auth token");
    TCase *unix_tc = tcase_create("unix socket");
    TCase *heartbeat_tc = tcase_create("heartbeat range");
    TCase *no_daemon_tc = tcase_create("no daemon");

    tcase_add_checked_fixture(tc, harness_start_default, harness_stop);
    tcase_set_timeout(tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(tc, unlock_by_a_thread_not_holding_is_not_owner);
    tcase_add_test(
        tc, force_unlock_by_another_client_makes_unlock_report_lock_lost);
    tcase_add_test(tc, daemon_restarted_while_holding_resumes_the_session);
    tcase_add_test(tc, daemon_restarted_and_lock_gone_reports_lock_lost);
    tcase_add_test(tc, the_heartbeat_connection_keeps_an_idle_client_alive);
    tcase_add_test(tc, no_session_to_resume_makes_every_hold_lost);
    tcase_add_test(tc,
                   the_heartbeat_resumes_the_session_after_an_rlockd_restart);
    tcase_add_test(tc, daemon_stopped_while_waiting_is_eshutdown);
    tcase_add_test(tc,
                   reply_timeout_drops_the_connection_and_reports_lock_lost);
    tcase_add_test(tc, bad_arguments_are_einval_without_a_round_trip);
    tcase_add_test(tc, auth_token_refused_by_a_daemon_without_one_is_eauth);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(auth_tc, start_with_auth_token, harness_stop);
    tcase_set_timeout(auth_tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(auth_tc, auth_token_is_sent_on_every_new_connection);
    tcase_add_test(auth_tc, missing_or_wrong_auth_token_is_eauth);
    suite_add_tcase(s, auth_tc);

    tcase_add_checked_fixture(heartbeat_tc, start_with_min_heartbeat,
                              harness_stop);
    tcase_set_timeout(heartbeat_tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(heartbeat_tc,
                   a_heartbeat_rlockd_refuses_fails_the_connect_with_einval);
    suite_add_tcase(s, heartbeat_tc);

    tcase_add_checked_fixture(unix_tc, harness_start_unix_socket, harness_stop);
    tcase_set_timeout(unix_tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(unix_tc,
                   daemon_gone_from_unix_socket_is_connlost_not_sigpipe);
    suite_add_tcase(s, unix_tc);

    tcase_set_timeout(no_daemon_tc, CLIENT_TEST_TIMEOUT);
    tcase_add_test(no_daemon_tc, connect_where_nobody_listens_is_edaemon);
    tcase_add_test(no_daemon_tc, bad_connect_arguments_are_einval);
    tcase_add_test(no_daemon_tc, replies_map_to_rlock_errors);
    tcase_add_test(no_daemon_tc, strerror_has_a_text_for_every_code);
    suite_add_tcase(s, no_daemon_tc);
    return s;
}
