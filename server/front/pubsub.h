/*
 * pubsub.h - lock-lost events through Redis's ordinary pub/sub.
 *
 * A connection that set its client-id subscribes with SUBSCRIBE
 * rlockd:lost:<client-id> and gets a message for every hold of that
 * client-id that is lost (docs/protocol.md, "Lock-lost events"). Owns the
 * channel's name, who may subscribe to it, and the message. The lock
 * engine tells of each loss (pubsub_on_loss, a lock_loss_fn); the front
 * end's client sends what is pushed.
 */
#ifndef RLOCKD_PUBSUB_H
#define RLOCKD_PUBSUB_H

#include "base/config.h"
#include "engine/lock_engine.h"
#include "front/commands.h"

/* The channel's prefix; the client-id follows. */
#define PUBSUB_LOST_PREFIX "rlockd:lost:"

void pubsub_init(const struct config *cfg);
void pubsub_free(void);
/* Pushes a message about the lost hold to every subscribed connection of
 * its client-id (lock_engine_on_loss). */
void pubsub_on_loss(const struct lock_loss *loss);

command_handler command_subscribe;
command_handler command_unsubscribe;

#endif
