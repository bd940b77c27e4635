/*
 * semaphores.c - the semaphore API (permits, and expirable permits with
 * their ids) and the count-down latch. The latch is here because it is
 * sent as a semaphore's count is (execute_count, execute_try_set). None
 * of these calls names a kind.
 *
 * Never touches the record of holds itself: request.c and holds.c do.
 */
#include "rlock_int.h"

#include <ctype.h>

#include "command.h" /* COMMAND_MAX_COUNT */

/* A semaphore's or latch's command with a number after its name (none
 * when amount is OPTION_ABSENT), answered with an integer in *value.
 * RLOCK_OK or an error. */
static int execute_count(rlock_client *c, enum client_command_id id,
                         const char *name, long long amount, long long *value)
{
    struct request rq = request_new(id, RLOCK_LOCK, name);

    rq.amount = amount;
    return request_execute(c, &rq, value, NULL);
}

/* trySetPermits and trySetCount: 1 set, 0 set before, or an error. */
static int execute_try_set(rlock_client *c, enum client_command_id id,
                           const char *name, long long count)
{
    long long set;
    int err;

    if (!request_valid_count(count, 0))
        return RLOCK_EINVAL;
    err = execute_count(c, id, name, count, &set);
    return err != RLOCK_OK ? err : (int)set;
}

int rlock_semaphore_set(rlock_client *c, const char *name, long long permits)
{
    return execute_try_set(c, CLIENT_CMD_SETPERMITS, name, permits);
}

int rlock_semaphore_add(rlock_client *c, const char *name, long long delta,
                        long long *available)
{
    long long unused;

    if (delta < -COMMAND_MAX_COUNT || delta > COMMAND_MAX_COUNT)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_ADDPERMITS, name, delta,
                         available != NULL ? available : &unused);
}

int rlock_semaphore_available(rlock_client *c, const char *name,
                              long long *available)
{
    if (available == NULL)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_PERMITS, name, OPTION_ABSENT, available);
}

/* ACQUIRE or RELEASE of permits, with a WAIT unless wait_ms is
 * OPTION_ABSENT: its reply (1 or 0) or an error. */
static int execute_permits(rlock_client *c, enum client_command_id id,
                           const char *name, long long permits,
                           long long wait_ms)
{
    struct request rq = request_new(id, RLOCK_LOCK, name);
    long long reply;
    int err;

    if (!request_valid_count(permits, 1))
        return RLOCK_EINVAL;
    rq.amount = permits;
    rq.wait_ms = wait_ms;
    err = request_execute(c, &rq, &reply, NULL);
    return err != RLOCK_OK ? err : reply != 0;
}

int rlock_acquire(rlock_client *c, const char *name, long long permits)
{
    int rc =
        execute_permits(c, CLIENT_CMD_ACQUIRE, name, permits, OPTION_ABSENT);

    return rc < 0 ? rc : RLOCK_OK; /* +OK */
}

int rlock_try_acquire(rlock_client *c, const char *name, long long permits,
                      long long wait_ms)
{
    if (!request_valid_wait(wait_ms))
        return RLOCK_EINVAL;
    return execute_permits(c, CLIENT_CMD_ACQUIRE, name, permits, wait_ms);
}

int rlock_release(rlock_client *c, const char *name, long long permits)
{
    return execute_permits(c, CLIENT_CMD_RELEASE, name, permits, OPTION_ABSENT);
}

/*
 * PERMITS name HELD: the permits rlockd's record in Redis says the
 * session holds. None, where the client took some, is permits that came
 * back while it lived (its rlockd's watchdog stopped, its session was not
 * given back): lost.
 */
int rlock_semaphore_held(rlock_client *c, const char *name)
{
    long long held;

    if (c == NULL || name == NULL)
        return RLOCK_EINVAL;
    if (!holds_permits_recorded(c, name, false))
        return 0;
    held = request_query(c, CLIENT_CMD_PERMITS_HELD, RLOCK_LOCK, name);
    if (held < 0)
        return (int)held;
    if (held > 0)
        return 1;
    holds_permits_recorded(c, name, true);
    return RLOCK_ELOCKLOST;
}

/* An expirable permit's id as rlockd names it, 32 hex digits in lower
 * case, into out; false if id is not one. */
static bool permit_id_copy(const char *id, char out[RLOCK_PERMIT_ID_SIZE])
{
    size_t i;

    for (i = 0; id[i] != '\0' && i < RLOCK_PERMIT_ID_SIZE - 1; i++) {
        if (!isxdigit((unsigned char)id[i]))
            return false;
        out[i] = (char)tolower((unsigned char)id[i]);
    }
    out[i] = '\0';
    return i == RLOCK_PERMIT_ID_SIZE - 1 && id[i] == '\0';
}

int rlock_acquire_expirable(rlock_client *c, const char *name,
                            long long wait_ms, long long lease_ms,
                            char id[RLOCK_PERMIT_ID_SIZE])
{
    struct request rq =
        request_new(CLIENT_CMD_ACQUIRE_EXPIRABLE, RLOCK_LOCK, name);
    redisReply *r;
    long long taken;
    int err;

    if (id == NULL || !request_valid_wait(wait_ms) ||
        !request_valid_lease(lease_ms))
        return RLOCK_EINVAL;
    id[0] = '\0';
    rq.wait_ms = wait_ms;
    rq.lease_ms = lease_ms;
    err = request_execute(c, &rq, &taken, &r);
    if (err != RLOCK_OK)
        return err;
    if (taken)
        permit_id_copy(r->str, id); /* checked: 32 characters */
    freeReplyObject(r);
    return (int)taken;
}

int rlock_release_expirable(rlock_client *c, const char *name, const char *id)
{
    struct request rq =
        request_new(CLIENT_CMD_RELEASE_EXPIRABLE, RLOCK_LOCK, name);
    char permit_id[RLOCK_PERMIT_ID_SIZE];
    long long released;

    if (id == NULL || !permit_id_copy(id, permit_id))
        return RLOCK_EINVAL;
    rq.permit_id = permit_id;
    return request_execute(c, &rq, &released, NULL);
}

int rlock_latch_set(rlock_client *c, const char *name, long long count)
{
    return execute_try_set(c, CLIENT_CMD_LATCHSET, name, count);
}

int rlock_count_down(rlock_client *c, const char *name, long long *left)
{
    long long unused;

    return execute_count(c, CLIENT_CMD_COUNTDOWN, name, OPTION_ABSENT,
                         left != NULL ? left : &unused);
}

int rlock_latch_count(rlock_client *c, const char *name, long long *count)
{
    if (count == NULL)
        return RLOCK_EINVAL;
    return execute_count(c, CLIENT_CMD_LATCHCOUNT, name, OPTION_ABSENT, count);
}

int rlock_await(rlock_client *c, const char *name, long long wait_ms)
{
    struct request rq = request_new(CLIENT_CMD_AWAIT, RLOCK_LOCK, name);
    long long open;
    int err;

    if (!request_valid_wait(wait_ms))
        return RLOCK_EINVAL;
    rq.wait_ms = wait_ms;
    err = request_execute(c, &rq, &open, NULL);
    return err != RLOCK_OK ? err : open != 0;
}
