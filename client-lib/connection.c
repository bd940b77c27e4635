/*
 * connection.c - librlock's connection to rlockd: the parsed address and
 * options, opening (connect, then AUTH and CLIENTID), and one command's
 * round trip with its reply mapped to an enum rlock_error, in one place.
 *
 * Never: keeps state beyond one struct rlock_conn, or decides what a
 * broken connection means for the client's locks (threads.c and holds.c
 * do that); installs a signal handler.
 */
#include "connection.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "client_id.h"
#include "command.h" /* COMMAND_HEARTBEAT_MIN_MS, _MAX_MS */
#include "reply.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 2000
/* Twice rlockd's own [redis] command_timeout_ms default, so that a slow
 * Redis gets the caller -UNAVAILABLE (and keeps its session) instead of a
 * dropped connection (which would end the session). */
#define DEFAULT_COMMAND_TIMEOUT_MS 10000
/* A hung process loses its locks within 10 s: a third of the watchdog's
 * default lease, so that locks are freed well before a lease would be. */
#define DEFAULT_HEARTBEAT_MS 10000
/* rlock_conn.timeout_ms until the first command sets one. */
#define TIMEOUT_UNSET (-1)
/* Bytes of a TLS reply read at a time. */
#define TLS_READ_SIZE 16384

/* ---- the target ------------------------------------------------------ */

/* "unix:/path", or "host:port" with an IPv6 host in brackets. */
static int parse_address(struct rlock_target *target, const char *addr)
{
    bool bracketed = addr[0] == '[';
    char *colon, *end;
    long port;

    if (strncmp(addr, "unix:", 5) == 0) {
        if (addr[5] == '\0')
            return RLOCK_EINVAL;
        target->unix_path = strdup(addr + 5);
        return target->unix_path != NULL ? RLOCK_OK : RLOCK_ESYSTEM;
    }
    target->host = strdup(addr + bracketed);
    if (target->host == NULL)
        return RLOCK_ESYSTEM;
    colon = strrchr(target->host, ':');
    if (colon == NULL || colon == target->host)
        return RLOCK_EINVAL;
    *colon = '\0';
    if (bracketed) {
        if (colon[-1] != ']' || colon - 1 == target->host)
            return RLOCK_EINVAL;
        colon[-1] = '\0';
    }
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 ||
        port > 65535)
        return RLOCK_EINVAL;
    target->port = (int)port;
    return RLOCK_OK;
}

/* A name rlockd takes as it is: printable, no spaces (as Redis's CLIENT
 * SETNAME wants it). */
static bool client_name_valid(const char *name)
{
    size_t len = strlen(name);

    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~')
            return false;
    return len <= RLOCK_CLIENT_NAME_MAX;
}

/* "<host>/<program>/<pid>", so that CLIENT LIST, OWNERS ... NAMES and
 * rlockd's log say which process an owner is; a character the name may
 * not hold becomes '_'. NULL when out of memory. */
static char *default_client_name(void)
{
    char host[64] = "", name[RLOCK_CLIENT_NAME_MAX + 1];

    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown");
    snprintf(name, sizeof name, "%s/%s/%d", host, program_invocation_short_name,
             (int)getpid());
    for (char *p = name; *p != '\0'; p++)
        if (*p <= ' ' || *p > '~')
            *p = '_';
    return strdup(name);
}

/* The login and the name: user and password (or auth_token, the default
 * user's password), and the client name or its default. */
static int target_identity(struct rlock_target *target,
                           const rlock_options *opts)
{
    const char *password =
        opts->password != NULL ? opts->password : opts->auth_token;

    if ((opts->auth_token != NULL &&
         (opts->user != NULL || opts->password != NULL)) ||
        (opts->user != NULL && opts->password == NULL) ||
        (opts->client_name != NULL && !client_name_valid(opts->client_name)))
        return RLOCK_EINVAL;
    if ((opts->user != NULL &&
         (target->auth_user = strdup(opts->user)) == NULL) ||
        (password != NULL && (target->auth_token = strdup(password)) == NULL))
        return RLOCK_ESYSTEM;
    if (opts->client_name == NULL)
        target->client_name = default_client_name();
    else if (opts->client_name[0] != '\0')
        target->client_name = strdup(opts->client_name);
    else
        return RLOCK_OK;
    return target->client_name != NULL ? RLOCK_OK : RLOCK_ESYSTEM;
}

/* The TLS context every connection of the target shares: rlockd's
 * certificate verified (TLS 1.2 or later), the client's own loaded. A
 * file that cannot be read is a bad argument. */
static int tls_target_init(struct rlock_target *target,
                           const rlock_tls_options *tls)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    const char *name = tls->server_name ? tls->server_name : target->host;

    if (target->unix_path != NULL)
        return RLOCK_EINVAL;
    target->tls_ctx = ctx;
    if (ctx == NULL || (target->tls_name = strdup(name)) == NULL)
        return RLOCK_ESYSTEM;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((tls->ca_file != NULL
             ? SSL_CTX_load_verify_locations(ctx, tls->ca_file, NULL)
             : SSL_CTX_set_default_verify_paths(ctx)) != 1 ||
        (tls->cert_file != NULL &&
         SSL_CTX_use_certificate_chain_file(ctx, tls->cert_file) != 1) ||
        (tls->key_file != NULL &&
         SSL_CTX_use_PrivateKey_file(ctx, tls->key_file, SSL_FILETYPE_PEM) !=
             1)) {
        ERR_clear_error();
        return RLOCK_EINVAL;
    }
    return RLOCK_OK;
}

int rlock_target_init(struct rlock_target *target, const char *addr,
                      const rlock_options *opts, const rlock_tls_options *tls)
{
    const rlock_options defaults = {0};
    int err;

    memset(target, 0, sizeof *target);
    if (opts == NULL)
        opts = &defaults;
    if (addr == NULL || opts->connect_timeout_ms < 0 ||
        opts->command_timeout_ms < 0 ||
        (opts->heartbeat_ms != RLOCK_NO_HEARTBEAT &&
         (opts->heartbeat_ms < 0 ||
          (opts->heartbeat_ms > 0 &&
           opts->heartbeat_ms < COMMAND_HEARTBEAT_MIN_MS) ||
          opts->heartbeat_ms > COMMAND_HEARTBEAT_MAX_MS)) ||
        (opts->client_id != NULL &&
         !client_id_valid(opts->client_id, strlen(opts->client_id))))
        return RLOCK_EINVAL;
    target->connect_timeout_ms = opts->connect_timeout_ms
                                     ? opts->connect_timeout_ms
                                     : DEFAULT_CONNECT_TIMEOUT_MS;
    target->command_timeout_ms = opts->command_timeout_ms
                                     ? opts->command_timeout_ms
                                     : DEFAULT_COMMAND_TIMEOUT_MS;
    target->heartbeat_ms = opts->heartbeat_ms == RLOCK_NO_HEARTBEAT ? 0
                           : opts->heartbeat_ms ? opts->heartbeat_ms
                                                : DEFAULT_HEARTBEAT_MS;
    if (opts->client_id != NULL)
        strcpy(target->client_id, opts->client_id);
    else if (client_id_random(target->client_id) != 0)
        return RLOCK_ESYSTEM;
    if (client_id_random(target->secret) != 0)
        return RLOCK_ESYSTEM;
    if ((err = target_identity(target, opts)) != RLOCK_OK)
        return err;
    err = parse_address(target, addr);
    if (err != RLOCK_OK || tls == NULL)
        return err;
    return tls_target_init(target, tls);
}

void rlock_target_free(struct rlock_target *target)
{
    free(target->host);
    free(target->unix_path);
    free(target->auth_user);
    free(target->auth_token);
    free(target->tls_name);
    SSL_CTX_free(target->tls_ctx);
    free(target->client_name);
}

/* ---- one command ----------------------------------------------------- */

static struct timeval ms_to_timeval(long long ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000};
    return tv;
}

/*
 * hiredis writes with write(), so a write to a connection rlockd has
 * closed raises SIGPIPE, whose default action kills the program. The
 * calling thread blocks SIGPIPE around the command and takes back one the
 * command raised; one that was pending before stays pending (libpq does
 * the same).
 */
struct sigpipe_guard {
    sigset_t old_mask;
    bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    sigset_t pipe_set, pending;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old_mask);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
}

static void sigpipe_restore(const struct sigpipe_guard *g)
{
    sigset_t pipe_set, pending;
    const struct timespec no_wait = {0, 0};

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    if (!g->was_pending && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe_set, NULL, &no_wait);
    pthread_sigmask(SIG_SETMASK, &g->old_mask, NULL);
}

/* An error reply's code (its first word) as an enum rlock_error. */
static int error_reply_code(const redisReply *r)
{
    enum reply_error code;

    if (reply_error_code_parse(r->str, r->len, &code) != 0)
        return RLOCK_EPROTOCOL;
    switch (code) { /* no default: a new code must be mapped here */
    case REPLY_ERR:
        return RLOCK_EINVAL;
    case REPLY_NOTOWNER:
        return RLOCK_ENOTOWNER;
    case REPLY_LOCKLOST:
        return RLOCK_ELOCKLOST;
    case REPLY_UNAVAILABLE:
        return RLOCK_EREDIS;
    case REPLY_LIMIT:
        return RLOCK_ELIMIT;
    case REPLY_SHUTDOWN:
        return RLOCK_ESHUTDOWN;
    case REPLY_NOAUTH:
        return RLOCK_EAUTH;
    case REPLY_NOPERM:
        return RLOCK_ENOPERM;
    case REPLY_WRONGTYPE:
        return RLOCK_EWRONGTYPE;
    case REPLY_NOREPLICAS:
        return RLOCK_ENOREPLICAS;
    case REPLY_DEADLOCK:
        return RLOCK_EDEADLOCK;
    }
    return RLOCK_EPROTOCOL;
}

static int reply_value(const redisReply *r, int want_type, long long *value)
{
    if (r->type != want_type)
        return RLOCK_EPROTOCOL;
    if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") != 0)
        return RLOCK_EPROTOCOL;
    /* +OK means done: 1, as TRYLOCK's :1 */
    *value = r->type == REDIS_REPLY_STATUS ? 1 : r->integer;
    return RLOCK_OK;
}

/* Why redisCommandArgv() returned no reply: the context is unusable. */
static int transport_error(const redisContext *ctx, int saved_errno)
{
    if (ctx->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))
        return RLOCK_ETIMEOUT; /* SO_RCVTIMEO or SO_SNDTIMEO ran out */
    if (ctx->err == REDIS_ERR_PROTOCOL)
        return RLOCK_EPROTOCOL;
    if (ctx->err == REDIS_ERR_OOM)
        return RLOCK_ESYSTEM;
    return RLOCK_ECONNLOST;
}

/* Why a TLS read or write returned n: the connection is unusable. */
static int tls_io_error(struct rlock_conn *conn, int n)
{
    int e = SSL_get_error(conn->tls, n), saved_errno = errno;

    ERR_clear_error();
    conn->ctx->err = REDIS_ERR_IO;
    switch (e) {
    case SSL_ERROR_WANT_READ: /* SO_RCVTIMEO or SO_SNDTIMEO ran out */
    case SSL_ERROR_WANT_WRITE:
        return RLOCK_ETIMEOUT;
    case SSL_ERROR_SYSCALL:
        return saved_errno == EAGAIN || saved_errno == EWOULDBLOCK
                   ? RLOCK_ETIMEOUT
                   : RLOCK_ECONNLOST;
    case SSL_ERROR_SSL: /* a refused handshake, or a bad record */
        return RLOCK_ETLS;
    }
    return RLOCK_ECONNLOST;
}

/* redisCommandArgv over TLS: the command formatted by hiredis, its reply
 * parsed by the context's reader. */
static int tls_command(struct rlock_conn *conn, int argc, const char **argv,
                       const size_t *lens, redisReply **reply)
{
    redisReader *reader = conn->ctx->reader;
    char *cmd, buf[TLS_READ_SIZE];
    void *r = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens), n;

    if (len < 0)
        return RLOCK_ESYSTEM;
    n = SSL_write(conn->tls, cmd, len);
    redisFreeCommand(cmd);
    if (n <= 0)
        return tls_io_error(conn, n);
    while (redisReaderGetReply(reader, &r) == REDIS_OK && r == NULL) {
        n = SSL_read(conn->tls, buf, sizeof buf);
        if (n <= 0)
            return tls_io_error(conn, n);
        if (redisReaderFeed(reader, buf, (size_t)n) != REDIS_OK)
            break;
    }
    if (r == NULL) {
        conn->ctx->err = REDIS_ERR_PROTOCOL;
        return RLOCK_EPROTOCOL;
    }
    *reply = r;
    return RLOCK_OK;
}

int rlock_conn_command(struct rlock_conn *conn, int argc, const char **argv,
                       const size_t *lens, long long timeout_ms,
                       redisReply **reply)
{
    struct sigpipe_guard guard;
    redisReply *r = NULL;
    int saved_errno, err = RLOCK_OK;

    /* setsockopt only when the timeout changes, not on every command */
    if (conn->timeout_ms != timeout_ms) {
        if (redisSetTimeout(conn->ctx, ms_to_timeval(timeout_ms)) != REDIS_OK)
            return RLOCK_ESYSTEM;
        conn->timeout_ms = timeout_ms;
    }
    sigpipe_block(&guard);
    if (conn->tls != NULL)
        err = tls_command(conn, argc, argv, lens, &r);
    else
        r = redisCommandArgv(conn->ctx, argc, argv, lens);
    saved_errno = errno;
    sigpipe_restore(&guard);
    if (err != RLOCK_OK)
        return err;
    if (r == NULL)
        return transport_error(conn->ctx, saved_errno);
    if (r->type == REDIS_REPLY_ERROR) {
        err = error_reply_code(r);
        freeReplyObject(r);
        return err;
    }
    *reply = r;
    return RLOCK_OK;
}

int rlock_conn_exchange(struct rlock_conn *conn, int argc, const char **argv,
                        const size_t *lens, long long timeout_ms, int want_type,
                        long long *value)
{
    redisReply *r;
    int err = rlock_conn_command(conn, argc, argv, lens, timeout_ms, &r);

    if (err != RLOCK_OK)
        return err;
    err = reply_value(r, want_type, value);
    freeReplyObject(r);
    return err;
}

bool rlock_conn_broken(const struct rlock_conn *conn)
{
    return conn->ctx->err != 0;
}

/* ---- opening and closing --------------------------------------------- */

/* A command of the set-up (at most 4 words), answered +OK. */
int rlock_conn_exchange_ok(struct rlock_conn *conn,
                           const struct rlock_target *target, int argc,
                           const char **argv)
{
    size_t lens[5];
    long long done;

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return rlock_conn_exchange(conn, argc, argv, lens,
                               target->command_timeout_ms, REDIS_REPLY_STATUS,
                               &done);
}

/* The connection's name, with HELLO 2 SETNAME rather than CLIENT SETNAME:
 * every user may run HELLO, whatever its commands rules. */
static int set_client_name(struct rlock_conn *conn,
                           const struct rlock_target *target)
{
    const char *argv[] = {"HELLO", "2", "SETNAME", target->client_name};
    size_t lens[4];
    redisReply *reply;
    int err;

    for (int i = 0; i < 4; i++)
        lens[i] = strlen(argv[i]);
    err = rlock_conn_command(conn, 4, argv, lens, target->command_timeout_ms,
                             &reply);
    if (err == RLOCK_OK)
        freeReplyObject(reply);
    return err;
}

/* AUTH (if the client has a token) and CLIENTID go first, so that no lock
 * command ever runs under the connection's own random client-id. The
 * client's random secret lets its other connections join its session,
 * and nobody else. TCP
 * keepalive lets a LOCK waiting with no timeout notice a vanished host.
 * Close-on-exec (hiredis 0.14 does not set it): a program the caller
 * starts must not inherit the socket, or it would keep the session, and
 * so the caller's locks, alive after the caller is gone. */
/* The TLS handshake on the connected socket, within the connect
 * timeout: rlockd's certificate must have target->tls_name (an IP
 * address is matched against the certificate's IP names, and is not sent
 * as SNI, per RFC 6066). */
static int tls_open(struct rlock_conn *conn, const struct rlock_target *target)
{
    X509_VERIFY_PARAM *param;
    const char *name = target->tls_name;
    unsigned char ip[sizeof(struct in6_addr)];
    struct sigpipe_guard guard;
    bool is_ip =
        inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    int n;

    conn->tls = SSL_new(target->tls_ctx);
    if (conn->tls == NULL ||
        redisSetTimeout(conn->ctx, ms_to_timeval(target->connect_timeout_ms)) !=
            REDIS_OK ||
        SSL_set_fd(conn->tls, conn->ctx->fd) != 1)
        return RLOCK_ESYSTEM;
    param = SSL_get0_param(conn->tls);
    if (!(is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name)
                : SSL_set_tlsext_host_name(conn->tls, name) == 1 &&
                      X509_VERIFY_PARAM_set1_host(param, name, 0)))
        return RLOCK_ESYSTEM;
    sigpipe_block(&guard);
    n = SSL_connect(conn->tls);
    sigpipe_restore(&guard);
    return n == 1 ? RLOCK_OK : tls_io_error(conn, n);
}

int rlock_conn_open(struct rlock_conn *conn, const struct rlock_target *target,
                    bool resume)
{
    struct timeval tv = ms_to_timeval(target->connect_timeout_ms);
    int err;

    conn->timeout_ms = TIMEOUT_UNSET;
    conn->tls = NULL;
    conn->ctx = target->unix_path
                    ? redisConnectUnixWithTimeout(target->unix_path, tv)
                    : redisConnectWithTimeout(target->host, target->port, tv);
    if (conn->ctx == NULL)
        return RLOCK_ESYSTEM;
    if (conn->ctx->err != 0) {
        err = conn->ctx->err == REDIS_ERR_OOM ? RLOCK_ESYSTEM : RLOCK_EDAEMON;
        goto fail;
    }
    if (fcntl(conn->ctx->fd, F_SETFD, FD_CLOEXEC) != 0 ||
        (target->unix_path == NULL &&
         redisEnableKeepAlive(conn->ctx) != REDIS_OK)) {
        err = RLOCK_ESYSTEM;
        goto fail;
    }
    if (target->tls_ctx != NULL && (err = tls_open(conn, target)) != RLOCK_OK)
        goto fail;
    if (target->auth_token != NULL) {
        err = target->auth_user != NULL
                  ? rlock_conn_exchange_ok(conn, target, 3,
                                           (const char *[]){"AUTH",
                                                            target->auth_user,
                                                            target->auth_token})
                  : rlock_conn_exchange_ok(
                        conn, target, 2,
                        (const char *[]){"AUTH", target->auth_token});
        /* -ERR: a wrong user, password or token, or no login configured
         * in rlockd */
        if (err == RLOCK_EINVAL)
            err = RLOCK_EAUTH;
        if (err != RLOCK_OK)
            goto fail;
    }
    err = rlock_conn_exchange_ok(conn, target, resume ? 5 : 4,
                                 (const char *[]){"CLIENTID", target->client_id,
                                                  "SECRET", target->secret,
                                                  "RESUME"});
    if (err == RLOCK_OK && target->client_name != NULL)
        err = set_client_name(conn, target);
    if (err == RLOCK_OK)
        return RLOCK_OK;
fail:
    rlock_conn_close(conn);
    return err;
}

void rlock_conn_close(struct rlock_conn *conn)
{
    SSL_free(conn->tls); /* the socket is the context's */
    conn->tls = NULL;
    if (conn->ctx != NULL)
        redisFree(conn->ctx);
    conn->ctx = NULL;
}
