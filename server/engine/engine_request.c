/*
 * engine_request.c - the requests the engine sends for itself.
 *
 * A background release, a fair queue's leave, a settle, a failover's
 * recheck and a resume's count have no caller. Each is one struct
 * engine_request, made by one constructor and sent through the lock's
 * kind as a call is. Its reply function frees it.
 *
 * Never: answer a caller. A request has none; what its reply means is
 * for the file that sent it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"

/* A request of op for the owner field of lock, holding a reference to
 * the lock; NULL when out of memory. */
struct engine_request *engine_request_new(struct lock *lock, enum lock_op op,
                                          const char *field, size_t field_len)
{
    struct engine_request *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->lock = lock;
    lock->refs++;
    r->op = op;
    memcpy(r->field, field, field_len);
    r->field_len = field_len;
    return r;
}

void engine_request_free(struct engine_request *r)
{
    lock_unref(r->lock);
    free(r);
}

/* Sends r; on_reply gets it and must free it. A request that cannot be
 * sent is freed here, and the error returned. */
int engine_request_send(struct engine_request *r, int64_t lease_ms,
                        backend_reply_fn *on_reply)
{
    struct lock_call_args args = {.field = r->field,
                                  .field_len = r->field_len,
                                  .lease_ms = lease_ms,
                                  .count = r->count};
    int err = call_eval(r->lock, r->op, &args, on_reply, r);

    if (err != 0)
        engine_request_free(r);
    return err;
}
