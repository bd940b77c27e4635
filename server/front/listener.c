/*
 * listener.c - bind, listen, accept.
 *
 * The listening sockets are either made here from [server] listen,
 * tls_listen and unix_socket, or, under socket activation, the ones
 * systemd passed: then those keys are ignored, since the socket unit
 * says where to listen, and a socket whose FileDescriptorName= is "tls"
 * is a TLS listener.
 */
#include "front/listener.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "base/service.h"
#include "base/stats.h"
#include "base/tls_server.h"
#include "front/client.h"

#define BACKLOG 511
/* Sockets a socket unit may pass; more are refused at start-up. */
#define LISTENER_MAX 8
/* The FileDescriptorName= of a passed socket that speaks TLS. */
#define TLS_SOCKET_NAME "tls"

struct listen_socket {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } io;
    bool tls; /* its clients speak TLS */
    /* a socket file of ours, removed on close */
    char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

static struct {
    struct listen_socket sockets[LISTENER_MAX];
    int count;
} listener;

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0) {
        log_warn("accept: %s", uv_strerror(status));
        return;
    }
    client_accept(server, ((struct listen_socket *)server->data)->tls);
}

/* The next free slot, or NULL. Its handle counts (and is closed by
 * listener_close) once listener_added() says it was initialised. */
static struct listen_socket *next_socket(void)
{
    return listener.count < LISTENER_MAX ? &listener.sockets[listener.count]
                                         : NULL;
}

static void listener_added(bool tls)
{
    struct listen_socket *ls = &listener.sockets[listener.count++];

    ls->io.handle.data = ls;
    ls->tls = tls;
}

static int start_listening(struct listen_socket *ls, const char *what)
{
    int err = uv_listen(&ls->io.stream, BACKLOG, on_connection);
    if (err != 0) {
        log_error("listen %s: %s", what, uv_strerror(err));
        return err;
    }
    log_info("listening on %s", what);
    return 0;
}

int listener_address(const char *addr, struct sockaddr_storage *sa)
{
    char host[128];
    int port;

    if (config_split_host_port(addr, host, sizeof(host), &port) != 0)
        return UV_EINVAL;
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)sa) == 0)
        return 0;
    return uv_ip6_addr(host, port, (struct sockaddr_in6 *)sa) == 0 ? 0
                                                                   : UV_EINVAL;
}

int listener_check(const struct config *cfg, char *why, size_t size)
{
    struct sockaddr_storage sa;

    if (cfg->listen[0] == '\0' && cfg->unix_socket[0] == '\0')
        snprintf(why, size,
                 "nothing to listen on: set [server] listen or unix_socket");
    else if (cfg->listen[0] != '\0' && listener_address(cfg->listen, &sa) != 0)
        snprintf(why, size,
                 "[server] listen %s: not a numeric IPv4 or IPv6 host:port",
                 cfg->listen);
    else if (cfg->tls_listen[0] != '\0' &&
             listener_address(cfg->tls_listen, &sa) != 0)
        snprintf(why, size,
                 "[server] tls_listen %s: not a numeric IPv4 or IPv6 host:port",
                 cfg->tls_listen);
    else
        return 0;
    return -1;
}

static int listen_tcp(uv_loop_t *loop, const char *addr, bool tls)
{
    struct listen_socket *ls = next_socket();
    struct sockaddr_storage sa;
    char what[160];
    int err;

    if (listener_address(addr, &sa) != 0)
        return UV_EINVAL; /* listener_check told why */
    err = uv_tcp_init(loop, &ls->io.tcp);
    if (err != 0)
        return err;
    listener_added(tls);
    err = uv_tcp_bind(&ls->io.tcp, (const struct sockaddr *)&sa, 0);
    if (err != 0) {
        log_error("listen %s: %s", addr, uv_strerror(err));
        return err;
    }
    if (!tls)
        return start_listening(ls, addr);
    snprintf(what, sizeof(what), "%s (TLS)", addr);
    return start_listening(ls, what);
}

/* A socket file nobody accepts on is left over from a crash: remove it.
 * One that accepts belongs to a running daemon: refuse to take it over. */
static int clear_stale_socket(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, rc;

    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return UV_EEXIST;
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return -errno;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    close(fd);
    if (rc == 0)
        return UV_EADDRINUSE;
    return unlink(path) == 0 ? 0 : -errno;
}

/* libuv's uv_pipe_bind reports a directory that does not exist as
 * UV_EACCES (it turns ENOENT into EACCES, as Windows would say): logs
 * which it was, and returns UV_ENOENT for the former. */
static int unix_bind_failed(const char *path, int err)
{
    char dir[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
    char *slash;
    struct stat st;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        slash[slash == dir] = '\0'; /* "/x.sock": the directory is "/" */
    if (err == UV_EACCES && stat(dir, &st) != 0 &&
        (errno == ENOENT || errno == ENOTDIR)) {
        log_error("unix socket %s: directory %s does not exist", path, dir);
        return UV_ENOENT;
    }
    log_error("unix socket %s: %s", path, uv_strerror(err));
    return err;
}

/* The file's mode is set before listen(), so no client connects while
 * it still has the umask's. */
static int listen_unix(uv_loop_t *loop, const char *path, mode_t mode)
{
    struct listen_socket *ls = next_socket();
    char what[120];
    int err = clear_stale_socket(path);

    if (err == 0)
        err = uv_pipe_init(loop, &ls->io.pipe, 0);
    if (err != 0) {
        log_error("unix socket %s: %s", path, uv_strerror(err));
        return err;
    }
    listener_added(false);
    err = uv_pipe_bind(&ls->io.pipe, path);
    if (err == 0) {
        snprintf(ls->unix_path, sizeof(ls->unix_path), "%s", path);
        if (chmod(path, mode) != 0)
            err = -errno;
    }
    if (err != 0)
        return unix_bind_failed(path, err);
    snprintf(what, sizeof(what), "unix:%s", path);
    return start_listening(ls, what);
}

/* Adopts one socket systemd passed, named name. Its file, if any, is
 * systemd's. */
static int adopt_socket(uv_loop_t *loop, const struct config *cfg, int fd,
                        const char *name)
{
    struct listen_socket *ls = next_socket();
    int kind = service_socket_kind(fd), err;
    bool tls = name != NULL && strcmp(name, TLS_SOCKET_NAME) == 0;
    char what[48];

    if (ls == NULL) {
        log_error("socket activation: more than %d sockets", LISTENER_MAX);
        return UV_EINVAL;
    }
    if (kind < 0) {
        log_error("socket activation: fd %d is not a listening TCP or Unix "
                  "stream socket",
                  fd);
        return UV_EINVAL;
    }
    if (tls && !tls_server_configured(cfg)) {
        log_error("socket activation: fd %d is named \"%s\" but [server] "
                  "tls_cert_file is not set",
                  fd, TLS_SOCKET_NAME);
        return UV_EINVAL;
    }
    err = kind ? uv_pipe_init(loop, &ls->io.pipe, 0)
               : uv_tcp_init(loop, &ls->io.tcp);
    if (err != 0)
        return err;
    listener_added(tls);
    err = kind ? uv_pipe_open(&ls->io.pipe, fd) : uv_tcp_open(&ls->io.tcp, fd);
    if (err != 0) {
        log_error("socket activation: fd %d: %s", fd, uv_strerror(err));
        return err;
    }
    snprintf(what, sizeof(what), "passed %s socket (fd %d)%s",
             kind ? "unix" : "TCP", fd, tls ? " (TLS)" : "");
    return start_listening(ls, what);
}

static int listen_configured(uv_loop_t *loop, const struct config *cfg)
{
    char why[256];
    int err = 0;

    if (listener_check(cfg, why, sizeof(why)) != 0) {
        log_error("%s", why);
        return UV_EINVAL;
    }
    if (cfg->listen[0] != '\0')
        err = listen_tcp(loop, cfg->listen, false);
    if (err == 0 && cfg->tls_listen[0] != '\0')
        err = listen_tcp(loop, cfg->tls_listen, true);
    if (err == 0 && cfg->unix_socket[0] != '\0')
        err =
            listen_unix(loop, cfg->unix_socket, (mode_t)cfg->unix_socket_mode);
    return err;
}

int listener_start(uv_loop_t *loop, const struct config *cfg)
{
    char **names;
    int first, n = service_passed_sockets(&first, &names), err = 0;

    if (n < 0) {
        log_error("socket activation: %s", strerror(-n));
        return n;
    }
    if (n == 0)
        return listen_configured(loop, cfg);
    stats.socket_activated = 1;
    log_info("socket activation: %d socket(s) passed; [server] listen, "
             "tls_listen and unix_socket are not used",
             n);
    for (int i = 0; i < n && err == 0; i++)
        err = adopt_socket(loop, cfg, first + i, names ? names[i] : NULL);
    service_free_names(names);
    return err;
}

void listener_close(void)
{
    for (int i = 0; i < listener.count; i++) {
        struct listen_socket *ls = &listener.sockets[i];

        uv_close(&ls->io.handle, NULL);
        if (ls->unix_path[0] != '\0')
            unlink(ls->unix_path);
    }
    listener.count = 0;
}
