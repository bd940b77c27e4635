/*
 * in_thread.c - one librlock call on a thread of its own (see in_thread.h).
 */
#include "in_thread.h"

#include <check.h>
#include <string.h>

#include "harness.h"

static void *run_call(void *arg)
{
    struct thread_call *call = arg;
    long long start = harness_now_ms();

    switch (call->op) {
    case OP_LOCK:
        call->result = rlock_lock_kind(call->client, call->name, call->kind,
                                       call->lease_ms, &call->token);
        break;
    case OP_TRYLOCK:
        call->result =
            rlock_trylock_kind(call->client, call->name, call->kind,
                               call->wait_ms, call->lease_ms, &call->token);
        break;
    case OP_UNLOCK:
        call->result = rlock_unlock_kind(call->client, call->name, call->kind);
        break;
    case OP_IS_LOCKED:
        call->result =
            rlock_is_locked_kind(call->client, call->name, call->kind);
        break;
    case OP_IS_HELD:
        call->result = rlock_is_held_kind(call->client, call->name, call->kind);
        break;
    case OP_ACQUIRE:
        call->result = rlock_try_acquire(call->client, call->name,
                                         call->permits, call->wait_ms);
        break;
    case OP_AWAIT:
        call->result = rlock_await(call->client, call->name, call->wait_ms);
        break;
    }
    call->elapsed_ms = harness_now_ms() - start;
    return NULL;
}

void thread_call_start(struct thread_call *call)
{
    int err = pthread_create(&call->thread, NULL, run_call, call);

    ck_assert_msg(err == 0, "pthread_create: %s", strerror(err));
}

long long thread_call_join(struct thread_call *call)
{
    pthread_join(call->thread, NULL);
    return call->result;
}

long long in_new_thread(rlock_client *c, enum thread_op op, const char *name,
                        long long wait_ms, long long lease_ms)
{
    struct thread_call call = {.client = c,
                               .op = op,
                               .name = name,
                               .wait_ms = wait_ms,
                               .lease_ms = lease_ms};

    thread_call_start(&call);
    return thread_call_join(&call);
}
