/*
 * test_call_state.c - a lock call's one state and its one writer.
 *
 * call_set_state() is the only function that changes a call's state
 * (engine_int.h lists the moves). These tests hold it to that table:
 * every legal move is walked, with the lists a state means checked
 * after it; every other move aborts the process, as pgbouncer's
 * change_client_state() does, rather than lose or twice answer a caller.
 */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "engine_harness.h"
#include "suites.h"

/* The moves engine_int.h documents, written out again as the spec. */
static const struct {
    enum call_state from, to;
} legal[] = {
    {CALL_NEW, CALL_ASKING},           {CALL_NEW, CALL_PARKED},
    {CALL_NEW, CALL_QUEUED},           {CALL_NEW, CALL_FINISHED},
    {CALL_ASKING, CALL_ASKING},        {CALL_ASKING, CALL_PARKED},
    {CALL_ASKING, CALL_QUEUED},        {CALL_ASKING, CALL_FINISHED},
    {CALL_PARKED, CALL_NEW},           {CALL_PARKED, CALL_FINISHED},
    {CALL_QUEUED, CALL_QUEUED_ASKING}, {CALL_QUEUED, CALL_FINISHED},
    {CALL_QUEUED_ASKING, CALL_QUEUED}, {CALL_QUEUED_ASKING, CALL_FINISHED},
};
#define LEGAL_COUNT (sizeof(legal) / sizeof(legal[0]))

static bool is_legal(enum call_state from, enum call_state to)
{
    for (size_t i = 0; i < LEGAL_COUNT; i++)
        if (legal[i].from == from && legal[i].to == to)
            return true;
    return false;
}

static bool queued(enum call_state state)
{
    return state == CALL_QUEUED || state == CALL_QUEUED_ASKING;
}

/* Moves call to `to` the way the engine does: waiters.c links a call in
 * its lock's queue (its waiting part, one call here) before it is QUEUED
 * and unlinks it before it leaves. */
static void move(struct lock_call *call, enum call_state to)
{
    struct lock *lock = call->lock;

    if (queued(to) && !list_linked(&call->queue_link)) {
        ck_assert_int_eq(lock_waiting_start(lock), 0);
        waiter_queue_push_tail(&lock->waiting->waiters, &call->queue_link);
    }
    if (!queued(to) && list_linked(&call->queue_link)) {
        waiter_queue_remove(&lock->waiting->waiters, &call->queue_link);
        lock_waiting_end(lock);
    }
    call_set_state(call, to);
    ck_assert_int_eq(call->state, to);
    ck_assert(list_linked(&call->park_link) == (to == CALL_PARKED));
    ck_assert(list_linked(&call->queue_link) == queued(to));
    if (to == CALL_PARKED)
        ck_assert_ptr_eq(list_first(&engine.parked), &call->park_link);
}

/* A new call of lock L, moved to state by legal moves. */
static struct lock_call *call_in(enum call_state state)
{
    struct lock *lock = lock_ref(&lock_kind_rlock, "L", 1);
    struct lock_call *call = call_new(lock, LOCK_OP_ACQUIRE);

    lock_unref(lock); /* the call holds its own reference */
    ck_assert_int_eq(call->state, CALL_NEW);
    if (state == CALL_QUEUED_ASKING)
        move(call, CALL_QUEUED);
    if (state != CALL_NEW)
        move(call, state);
    return call;
}

static void call_done(struct lock_call *call)
{
    if (call->state != CALL_FINISHED)
        move(call, CALL_FINISHED);
    call_unref(call);
}

START_TEST(every_legal_move_is_made_with_its_lists)
{
    for (size_t i = 0; i < LEGAL_COUNT; i++) {
        struct lock_call *call = call_in(legal[i].from);

        move(call, legal[i].to);
        call_done(call);
    }
}
END_TEST

/* The _i-th move the table does not list, of every from and to. */
static void illegal_move(int _i, enum call_state *from, enum call_state *to)
{
    int n = 0;

    for (int f = 0; f < CALL_STATE_COUNT; f++)
        for (int t = 0; t < CALL_STATE_COUNT; t++)
            if (!is_legal(f, t) && n++ == _i) {
                *from = f;
                *to = t;
                return;
            }
    ck_abort_msg("no illegal move %d", _i);
}

static int illegal_count(void)
{
    return CALL_STATE_COUNT * CALL_STATE_COUNT - (int)LEGAL_COUNT;
}

START_TEST(an_illegal_move_aborts)
{
    enum call_state from, to;
    struct lock_call *call;

    illegal_move(_i, &from, &to);
    call = call_in(from);
    move(call, to); /* aborts: SIGABRT is the pass */
    ck_abort_msg("the move from %d to %d was allowed", from, to);
}
END_TEST

Suite *call_state_suite(void)
{
    Suite *s = suite_create("call_state");
    TCase *legal_tc = tcase_create("legal");
    const char *fork = getenv("CK_FORK");

    tcase_add_test(legal_tc, every_legal_move_is_made_with_its_lists);
    engine_suite_add(s, legal_tc);
    /* An abort is shown in a child process: with CK_FORK=no (a run under
     * valgrind) it would end the whole run, so it is left out then. */
    if (fork == NULL || strcmp(fork, "no") != 0) {
        TCase *illegal_tc = tcase_create("illegal");

        tcase_add_loop_test_raise_signal(illegal_tc, an_illegal_move_aborts,
                                         SIGABRT, 0, illegal_count());
        engine_suite_add(s, illegal_tc);
    }
    return s;
}
