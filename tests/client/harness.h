/*
 * harness.h - the world a librlock test runs in: a private redis-server
 * and the real rlockd on free loopback ports, in a temp dir of their own.
 *
 * One world at a time per process. Everything it starts it stops by pid
 * (SIGTERM, SIGKILL after 3 s, waitpid) and removes again: in
 * harness_stop(), which is the checked teardown, and at exit, which is
 * what runs when Check ends a failed test's forked child. harness_init()
 * makes the run's base temp dir, and the process that made it removes it
 * at exit, with whatever a killed test child left inside.
 *
 * Failures to start are test failures (ck_abort_msg), with the log tail.
 */
#ifndef RLOCK_TEST_HARNESS_H
#define RLOCK_TEST_HARNESS_H

#include <hiredis.h>
#include <stdbool.h>

struct harness_options {
    const char *auth_token; /* [server] auth_token; NULL: none */
    bool unix_socket;       /* also listen on <dir>/rlockd.sock */
    int min_heartbeat_ms;   /* [server] min_heartbeat_ms; 0: the default */
};

/* The watchdog timeout the daemon runs with, in ms. */
#define HARNESS_WATCHDOG_MS 2000

/* Makes the run's base temp dir; once, in main(). */
void harness_init(void);

/* Starts redis-server and rlockd (opts NULL: defaults) and waits until
 * rlockd answers PING and INFO shows redis_connected:1. */
void harness_start(const struct harness_options *opts);
/* Stops what harness_start() started and removes its temp dir. */
void harness_stop(void);
/* For fixtures: harness_start() with the defaults, and with a Unix socket
 * besides TCP. */
void harness_start_default(void);
void harness_start_unix_socket(void);

/* "127.0.0.1:port" and "unix:<dir>/rlockd.sock" of the running rlockd. */
const char *harness_addr(void);
const char *harness_unix_addr(void);

/* Stops rlockd (SIGTERM, then waits for it), and starts it again with the
 * same configuration on the same port. */
void harness_rlockd_stop(void);
void harness_rlockd_start(void);
/* Sends a signal to rlockd: SIGSTOP / SIGCONT make it hang and resume. */
void harness_rlockd_signal(int sig);

/* An integer field of rlockd's INFO, read on a connection of its own
 * (which counts in connected_clients). */
long long harness_info(const char *field);
/* Waits up to 5 s for an INFO field to reach a value; false if it did
 * not. */
bool harness_wait_info(const char *field, long long value);

/* A new connection to the test's redis-server; the caller frees it. */
redisContext *harness_redis(void);

/* A loopback port nobody listens on (bound, then closed). */
int harness_free_port(void);
long long harness_now_ms(void);
void harness_sleep_ms(long long ms);

#endif
