/*
 * fake_backend.h - a struct backend for the lock engine's unit tests:
 * no Redis, and every request waits until the test answers it.
 *
 * Owns what the engine asked of its backend: each eval (script or plain
 * command, key, arguments, copied) in the order sent, the listeners by
 * channel, the scripts added; and what key_ready, key_group and eval
 * itself say. A test answers any pending request, in any order, with a
 * struct backend_value of its choice or NULL (Redis did not answer), and
 * delivers a message, or the "subscribed" notification (payload NULL), to
 * a channel's listeners. It calls the engine only through the callbacks
 * the engine gave it, and only when the test says so.
 */
#ifndef RLOCKD_TEST_FAKE_BACKEND_H
#define RLOCKD_TEST_FAKE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"
#include "base/list.h"

/* Room for every kind's scripts (lock_kinds[]) and the session store's. */
#define FAKE_BACKEND_MAX_SCRIPTS 64

/* One eval the engine sent and the test has not answered yet. */
struct fake_eval {
    struct list_node link;
    const struct backend_script *script; /* NULL: a plain command */
    const char *name; /* the script's name, or the command (argv[0]) */
    char *key;        /* NUL-terminated copy */
    int nkeys;
    int argc;
    char **argv; /* NUL-terminated copies */
    backend_reply_fn *fn;
    void *arg;
};

struct fake_backend {
    struct list_node evals;     /* struct fake_eval, oldest first */
    struct list_node listeners; /* struct backend_listener.link */
    struct backend_script *scripts[FAKE_BACKEND_MAX_SCRIPTS];
    size_t script_count;
    bool ready;       /* key_ready's answer for every key */
    int eval_error;   /* non-zero: eval refuses every call with it */
    unsigned refused; /* calls eval refused so */
    /* listen on a listener already listening, or more scripts added
     * than there is room for */
    unsigned misuse;
    /* key_group's answer; NULL puts every key in group 0 */
    unsigned (*group)(const char *key, size_t len);
    /* sync: true sends it as an eval of the plain command "WAIT" (answer
     * it with the replicas that acknowledged); false: -ENOENT, no
     * replica to wait for */
    bool syncing;
};

/* The fake's state, which tests read and set directly. */
extern struct fake_backend fake_backend;
/* The backend to pass to lock_engine_init. */
extern const struct backend fake_backend_ops;

/* Empty queues, keys ready, evals accepted, one key group. */
void fake_backend_init(void);
/* Frees what is still pending without answering it. */
void fake_backend_free(void);

size_t fake_backend_pending(void);
/* The oldest pending eval named name (a script's name or a command) for
 * key, either NULL for any; NULL when there is none. */
struct fake_eval *fake_backend_find(const char *name, const char *key);
/* How many pending evals fake_backend_find would choose from. */
size_t fake_backend_count(const char *name, const char *key);
/* Answers e and forgets it; reply NULL: Redis did not answer. */
void fake_eval_answer(struct fake_eval *e, const struct backend_value *reply);
/* e's argv[i], or NULL past the end. */
const char *fake_eval_arg(const struct fake_eval *e, int i);

/* Listeners on channel (NULL: on any channel). */
size_t fake_backend_listeners(const char *channel);
/* Delivers payload (NULL: "subscribed") to each listener on channel;
 * returns how many it reached. */
size_t fake_backend_publish(const char *channel, const char *payload);
bool fake_backend_has_script(const char *name);

#endif
