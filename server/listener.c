/*
 * listener.c - bind, listen, accept.
 */
#include "listener.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "log.h"

#define BACKLOG 511

static struct {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    bool tcp_open, pipe_open;
    char unix_path[108];
} LS;

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0) {
        log_warn("accept: %s", uv_strerror(status));
        return;
    }
    client_accept(server);
}

static int listen_tcp(uv_loop_t *loop, const char *addr)
{
    struct sockaddr_storage sa;
    char host[128];
    int port, err;

    if (config_split_host_port(addr, host, sizeof(host), &port) != 0)
        return UV_EINVAL;
    err = uv_ip4_addr(host, port, (struct sockaddr_in *)&sa);
    if (err != 0)
        err = uv_ip6_addr(host, port, (struct sockaddr_in6 *)&sa);
    if (err != 0) {
        log_error("listen %s: not a numeric IPv4 or IPv6 address", addr);
        return err;
    }
    err = uv_tcp_init(loop, &LS.tcp);
    if (err != 0)
        return err;
    LS.tcp_open = true;
    err = uv_tcp_bind(&LS.tcp, (const struct sockaddr *)&sa, 0);
    if (err == 0)
        err = uv_listen((uv_stream_t *)&LS.tcp, BACKLOG, on_connection);
    if (err != 0) {
        log_error("listen %s: %s", addr, uv_strerror(err));
        return err;
    }
    log_info("listening on %s", addr);
    return 0;
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

static int listen_unix(uv_loop_t *loop, const char *path)
{
    int err = clear_stale_socket(path);

    if (err == 0)
        err = uv_pipe_init(loop, &LS.pipe, 0);
    if (err != 0) {
        log_error("unix socket %s: %s", path, uv_strerror(err));
        return err;
    }
    LS.pipe_open = true;
    err = uv_pipe_bind(&LS.pipe, path);
    if (err == 0)
        err = uv_listen((uv_stream_t *)&LS.pipe, BACKLOG, on_connection);
    if (err != 0) {
        log_error("unix socket %s: %s", path, uv_strerror(err));
        return err;
    }
    snprintf(LS.unix_path, sizeof(LS.unix_path), "%s", path);
    log_info("listening on unix:%s", path);
    return 0;
}

int listener_start(uv_loop_t *loop, const struct config *cfg)
{
    int err = 0;

    if (cfg->listen[0] == '\0' && cfg->unix_socket[0] == '\0') {
        log_error("nothing to listen on: set [server] listen or unix_socket");
        return UV_EINVAL;
    }
    if (cfg->listen[0] != '\0')
        err = listen_tcp(loop, cfg->listen);
    if (err == 0 && cfg->unix_socket[0] != '\0')
        err = listen_unix(loop, cfg->unix_socket);
    return err;
}

void listener_close(void)
{
    if (LS.tcp_open)
        uv_close((uv_handle_t *)&LS.tcp, NULL);
    if (LS.pipe_open) {
        uv_close((uv_handle_t *)&LS.pipe, NULL);
        if (LS.unix_path[0] != '\0')
            unlink(LS.unix_path);
    }
    LS.tcp_open = LS.pipe_open = false;
}
