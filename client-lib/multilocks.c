/*
 * multilocks.c - several plain locks taken and released together:
 * rlock_multilock() (rlockd's MLOCK) and rlock_multiunlock() (MUNLOCK).
 *
 * Its own file because one request (struct request) names one lock, and
 * these commands name many: this file builds and sends their words
 * itself, and records each lock's hold as request_execute() records a
 * LOCK's or an UNLOCK's, with the holds_ functions.
 */
#include "rlock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The words of an MLOCK or MUNLOCK, in words (count + 6 of room): the
 * command, the thread-id, the names, then WAIT and LEASE unless absent
 * (a watchdog lease is sent as none). Returns argc. */
static int multilock_argv(const char *command, const struct thread_state *t,
                          const char *const *names, size_t count,
                          long long wait_ms, long long lease_ms,
                          const char **words, size_t *lens, char numbers[2][24])
{
    int argc = 0;

    words[argc++] = command;
    words[argc++] = t->tid_text;
    for (size_t i = 0; i < count; i++)
        words[argc++] = names[i];
    if (wait_ms != OPTION_ABSENT) {
        snprintf(numbers[0], sizeof numbers[0], "%lld", wait_ms);
        words[argc++] = "WAIT";
        words[argc++] = numbers[0];
    }
    if (lease_ms != OPTION_ABSENT && lease_ms != RLOCK_WATCHDOG) {
        snprintf(numbers[1], sizeof numbers[1], "%lld", lease_ms);
        words[argc++] = "LEASE";
        words[argc++] = numbers[1];
    }
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(words[i]);
    return argc;
}

/* Sends an MLOCK or MUNLOCK on the thread's connection: its reply, +OK
 * (1) or :0 (0), or an error. rq carries the WAIT the timeout needs. */
static int multilock_send(rlock_client *c, struct thread_state *t,
                          const struct request *rq, const char *command,
                          const char *const *names, size_t count,
                          long long lease_ms, long long *value)
{
    const char **words = calloc(count + 6, sizeof *words);
    size_t *lens = calloc(count + 6, sizeof *lens);
    char numbers[2][24];
    redisReply *r = NULL;
    int argc, err = RLOCK_ESYSTEM;

    if (words != NULL && lens != NULL) {
        argc = multilock_argv(command, t, names, count, rq->wait_ms, lease_ms,
                              words, lens, numbers);
        err = rlock_conn_command(&t->conn, argc, words, lens,
                                 request_reply_timeout(c, rq), &r);
    }
    if (err == RLOCK_OK) {
        if (r->type == REDIS_REPLY_STATUS)
            *value = 1;
        else if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
            *value = 0;
        else
            err = RLOCK_EPROTOCOL;
        freeReplyObject(r);
    }
    free(words);
    free(lens);
    if (err != RLOCK_OK && rlock_conn_broken(&t->conn))
        threads_lost(c, t);
    return err;
}

/* Whether every name is a name: at least one, none empty. */
static bool multilock_names_valid(const char *const *names, size_t count)
{
    if (names == NULL || count == 0)
        return false;
    for (size_t i = 0; i < count; i++)
        if (names[i] == NULL || names[i][0] == '\0')
            return false;
    return true;
}

/*
 * MLOCK: each lock is recorded as rlock_lock() records it (a record made
 * before the command goes out, so that a granted lock is never left
 * unrecorded). A name whose hold was lost with its session is told once
 * (RLOCK_ELOCKLOST), as rlock_lock() tells it, and nothing is sent.
 */
int rlock_multilock(rlock_client *c, const char *const *names, size_t count,
                    long long wait_ms, long long lease_ms)
{
    struct request rq = request_new(CLIENT_CMD_LOCK, RLOCK_LOCK, NULL);
    struct rlock_hold **spares = NULL;
    struct thread_state *t;
    long long held = 0;
    bool lost = false;
    int err;

    if (c == NULL || !multilock_names_valid(names, count) ||
        !request_valid_wait(wait_ms) || !request_valid_lease(lease_ms))
        return RLOCK_EINVAL;
    if ((spares = calloc(count, sizeof *spares)) == NULL)
        return RLOCK_ESYSTEM;
    err = threads_get(c, &t);
    for (size_t i = 0; err == RLOCK_OK && i < count; i++) {
        rq.name = names[i];
        if ((spares[i] = holds_new(&rq)) == NULL)
            err = RLOCK_ESYSTEM;
        else
            lost |= holds_take_lost(c, t, &rq);
    }
    if (err == RLOCK_OK && lost)
        err = RLOCK_ELOCKLOST; /* told once; nothing sent */
    rq.wait_ms = wait_ms;
    if (err == RLOCK_OK)
        err = multilock_send(c, t, &rq, "MLOCK", names, count, lease_ms, &held);
    for (size_t i = 0; err == RLOCK_OK && held == 1 && i < count; i++) {
        rq.name = names[i];
        holds_update(c, t, &rq, RLOCK_OK, 1, &spares[i]);
    }
    for (size_t i = 0; i < count; i++)
        free(spares[i]);
    free(spares);
    return err != RLOCK_OK ? err : (int)held;
}

/*
 * MUNLOCK: MUNLOCK's +OK does not say which holds ended and which only
 * went down by one, so each named lock stays recorded while
 * rlock_hold_count() says it is held (a query per name, after the one
 * round trip that released them).
 */
int rlock_multiunlock(rlock_client *c, const char *const *names, size_t count)
{
    struct request rq = request_new(CLIENT_CMD_UNLOCK, RLOCK_LOCK, NULL);
    struct rlock_hold *none = NULL;
    struct thread_state *t;
    long long done;
    int err;

    if (c == NULL || !multilock_names_valid(names, count))
        return RLOCK_EINVAL;
    if ((err = threads_get(c, &t)) != RLOCK_OK)
        return err;
    err = multilock_send(c, t, &rq, "MUNLOCK", names, count, OPTION_ABSENT,
                         &done);
    for (size_t i = 0; err != RLOCK_ECONNLOST && i < count; i++) {
        rq.name = names[i];
        if (request_query(c, CLIENT_CMD_HOLDCOUNT, RLOCK_LOCK, names[i]) == 0)
            holds_update(c, t, &rq, RLOCK_OK, 1, &none);
    }
    return err;
}
