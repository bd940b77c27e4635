/*
 * client_id.h - what a client-id is: the rule CLIENTID checks, and the
 * random UUID v4 a client gets when it names none.
 *
 * The one definition for both sides of the wire: rlockd checks the ids
 * clients send and makes up a connection's first one; librlock checks
 * the id it is given and makes one up when given none. Pure: no I/O but
 * the kernel's random bytes.
 */
#ifndef RLOCKD_CLIENT_ID_H
#define RLOCKD_CLIENT_ID_H

#include <stdbool.h>
#include <stddef.h>

/* Client-ids are 1..CLIENT_ID_MAX_LEN bytes of CLIENT_ID_CHARS. */
#define CLIENT_ID_MAX_LEN 64
#define CLIENT_ID_CHARS                                                        \
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A random id: 36 characters of a UUID v4 and the NUL. */
#define CLIENT_ID_RANDOM_SIZE 37

/* Whether id[0..len) follows the rule; only len bytes are looked at, so a
 * NUL inside them makes the id invalid. */
bool client_id_valid(const char *id, size_t len);

/* Writes a random UUID v4 (lower-case hex), NUL-terminated. Returns 0, or
 * a negative errno when the kernel gives no random bytes (out is then
 * ""). */
int client_id_random(char out[CLIENT_ID_RANDOM_SIZE]);

#endif
