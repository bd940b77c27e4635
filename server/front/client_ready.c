/*
 * client_ready.c - the ready list: clients that go on in the next pass.
 *
 * A command that needs Redis gets a slot on its connection's pending
 * list. The engine's done callback only writes the reply into the slot
 * and puts the connection here; a check handle, which runs once per loop
 * turn after I/O, then runs the pipeline of each client on the list:
 * answered replies go out in request order, reading goes on. So does a
 * client that used its share of the last turn, and one that must close
 * (doomed). This is Redis's unblocked-clients list.
 *
 * The same pass closes the clients holding the most memory while all
 * client buffers are over max_client_buffers_bytes.
 *
 * It must never run a client from inside another's stack: only the
 * check handle drains the list.
 */
#include "front/client_int.h"

static struct {
    struct list_node list; /* struct client.ready_link */
    uv_check_t check;
    uv_idle_t kick; /* keeps the loop from sleeping while ready */
} ready;

static void on_ready_check(uv_check_t *check);
static void on_ready_kick(uv_idle_t *idle);

/* The kick too: a call answered from a timer (before the loop polls)
 * must not wait for the poll's next event to be written. */
void client_ready_mark(struct client *c)
{
    if (list_linked(&c->ready_link))
        return;
    list_push_tail(&ready.list, &c->ready_link);
    uv_check_start(&ready.check, on_ready_check);
    uv_idle_start(&ready.kick, on_ready_kick);
}

/* Once per loop turn: clients whose calls were answered go on. */
static void on_ready_kick(uv_idle_t *idle)
{
    (void)idle;
}

/*
 * Once per loop turn: closes clients while their buffers are over
 * max_client_buffers_bytes (here, never inside another client's stack),
 * then runs the clients whose calls were answered and those that used
 * their share of the last turn. Each gets one call per turn: one made
 * ready again meanwhile waits for the next, and an active idle handle
 * keeps the loop from sleeping until then.
 */
static void on_ready_check(uv_check_t *check)
{
    struct list_node batch, *node;

    list_init(&batch);
    while ((node = list_first(&ready.list)) != NULL) {
        list_remove(node);
        list_push_tail(&batch, node);
    }
    client_limits_enforce_buffers_cap();
    while ((node = list_first(&batch)) != NULL) {
        struct client *c = list_entry(node, struct client, ready_link);

        list_remove(node);
        if (c->doomed != NULL)
            client_close(c, c->doomed);
        else
            client_pipeline_process(c);
    }
    client_limits_enforce_buffers_cap();
    if (!list_empty(&ready.list)) {
        uv_idle_start(&ready.kick, on_ready_kick);
        return;
    }
    uv_idle_stop(&ready.kick);
    uv_check_stop(check);
}

void client_ready_forget(struct client *c)
{
    if (list_linked(&c->ready_link))
        list_remove(&c->ready_link);
}

void client_ready_wake(void)
{
    uv_check_start(&ready.check, on_ready_check);
}

int client_ready_init(uv_loop_t *loop)
{
    int err;

    list_init(&ready.list);
    if ((err = uv_check_init(loop, &ready.check)) != 0)
        return err;
    return uv_idle_init(loop, &ready.kick);
}

void client_ready_close_handles(void)
{
    uv_check_stop(&ready.check);
    uv_close((uv_handle_t *)&ready.check, NULL);
    uv_idle_stop(&ready.kick);
    uv_close((uv_handle_t *)&ready.kick, NULL);
}
