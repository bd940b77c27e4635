/*
 * connection.h - librlock's connection to rlockd: where it goes, how it is
 * opened (connect, AUTH, CLIENTID), and one command sent on it with its
 * reply mapped to an enum rlock_error.
 *
 * Internal to the library: neither librlock.so nor librlock.a exports
 * these names (see the Makefile), but they keep the rlock_ prefix.
 */
#ifndef RLOCK_CONNECTION_H
#define RLOCK_CONNECTION_H

#include <hiredis.h>
#include <openssl/ssl.h>
#include <stdbool.h>

#include "client_id.h"
#include "rlock.h"

/* A reply timeout of 0 means none, as for SO_RCVTIMEO. */
#define RLOCK_NO_TIMEOUT 0

/* Where rlockd is and who the client is: what each of its connections
 * needs. Filled from rlock_connect()'s arguments. */
struct rlock_target {
    char *host; /* TCP: host and port; or */
    int port;
    char *unix_path;   /* a Unix socket */
    char *auth_user;   /* NULL: AUTH <auth_token> (the default user) */
    char *auth_token;  /* the password AUTH sends; NULL: no AUTH */
    char *client_name; /* HELLO 2 SETNAME's; NULL: none */
    int connect_timeout_ms;
    int command_timeout_ms;
    int heartbeat_ms; /* 0: none */
    char client_id[CLIENT_ID_MAX_LEN + 1];
    /* the session's SECRET: a random UUID, 122 random bits */
    char secret[CLIENT_ID_RANDOM_SIZE];
    SSL_CTX *tls_ctx; /* NULL: plain; shared by every connection */
    char *tls_name;   /* the name rlockd's certificate must have */
};

/* Over TLS, hiredis still connects the socket and parses replies (its
 * context's reader), but the bytes go through tls: hiredis 0.14 has no
 * TLS of its own. */
struct rlock_conn {
    redisContext *ctx;    /* NULL: not open */
    SSL *tls;             /* NULL: plain */
    long long timeout_ms; /* what the socket's reply timeout is set to */
};

/* Checks and copies the address and options (NULL: defaults), making up a
 * client-id if none is given, and loads the TLS files (tls NULL: plain).
 * RLOCK_OK, RLOCK_EINVAL or RLOCK_ESYSTEM; rlock_target_free() is due
 * either way. */
int rlock_target_init(struct rlock_target *target, const char *addr,
                      const rlock_options *opts, const rlock_tls_options *tls);
void rlock_target_free(struct rlock_target *target);

/* The longest client name rlock_options.client_name may give. */
#define RLOCK_CLIENT_NAME_MAX 128

/* Connects and prepares the connection for lock commands. RLOCK_OK, or an
 * error with conn->ctx NULL. */
/* resume: the client holds locks, and its session must be given back
 * (CLIENTID ... RESUME): RLOCK_ELOCKLOST when rlockd has none. */
int rlock_conn_open(struct rlock_conn *conn, const struct rlock_target *target,
                    bool resume);

/* Sends one command and waits up to timeout_ms (RLOCK_NO_TIMEOUT: for
 * ever) for its reply: RLOCK_OK with *reply (not an error reply; the
 * caller frees it), or the error, an error reply's mapped. */
int rlock_conn_command(struct rlock_conn *conn, int argc, const char **argv,
                       const size_t *lens, long long timeout_ms,
                       redisReply **reply);

/* rlock_conn_command() of a command whose reply must be of want_type
 * (REDIS_REPLY_INTEGER, or REDIS_REPLY_STATUS for +OK). Stores an integer
 * reply in *value, 1 for +OK. After a failure of either,
 * rlock_conn_broken() tells whether the connection can still be used. */
int rlock_conn_exchange(struct rlock_conn *conn, int argc, const char **argv,
                        const size_t *lens, long long timeout_ms, int want_type,
                        long long *value);

/* A command of at most 5 words answered +OK: RLOCK_OK or the error. */
int rlock_conn_exchange_ok(struct rlock_conn *conn,
                           const struct rlock_target *target, int argc,
                           const char **argv);

bool rlock_conn_broken(const struct rlock_conn *conn);
void rlock_conn_close(struct rlock_conn *conn);

#endif
