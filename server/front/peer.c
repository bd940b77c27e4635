/*
 * peer.c - the peer table: peers by name, each with its connection count.
 */
#include "front/peer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/hashmap.h"

static struct hashmap peer_map;

void peer_table_init(void)
{
    hashmap_init(&peer_map);
}

void peer_table_free(void)
{
    hashmap_free(&peer_map);
}

/* Writes stream's peer name to name (PEER_NAME_MAX bytes); its length,
 * or -errno. */
static int peer_name(uv_stream_t *stream, char *name)
{
    struct sockaddr_storage addr;
    int len = sizeof(addr), err;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    uv_os_fd_t fd;
    char ip[INET6_ADDRSTRLEN];

    if (stream->type == UV_TCP) {
        err = uv_tcp_getpeername((uv_tcp_t *)stream, (struct sockaddr *)&addr,
                                 &len);
        if (err == 0)
            err =
                addr.ss_family == AF_INET6
                    ? uv_ip6_name((struct sockaddr_in6 *)&addr, ip, sizeof(ip))
                    : uv_ip4_name((struct sockaddr_in *)&addr, ip, sizeof(ip));
        return err ? err : snprintf(name, PEER_NAME_MAX, "tcp %s", ip);
    }
    err = uv_fileno((uv_handle_t *)stream, &fd);
    if (err != 0)
        return err;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0)
        return -errno;
    return snprintf(name, PEER_NAME_MAX, "unix uid %u", (unsigned)cred.uid);
}

int peer_attach(uv_stream_t *stream, struct peer **out)
{
    char name[PEER_NAME_MAX];
    int len = peer_name(stream, name);
    struct peer *p;

    if (len < 0)
        return len;
    p = hashmap_get(&peer_map, name, (size_t)len);
    if (p == NULL) {
        p = calloc(1, sizeof(*p));
        if (p == NULL)
            return -ENOMEM;
        memcpy(p->name, name, (size_t)len + 1);
        p->name_len = (size_t)len;
        if (hashmap_put(&peer_map, p->name, p->name_len, p) != 0) {
            free(p);
            return -ENOMEM;
        }
    }
    p->connections++;
    *out = p;
    return 0;
}

void peer_detach(struct peer *p)
{
    if (--p->connections > 0)
        return;
    hashmap_remove(&peer_map, p->name, p->name_len);
    free(p);
}
