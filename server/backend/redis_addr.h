/*
 * redis_addr.h - where a Redis server is, as links dial it and the
 * cluster map names it; a type alone, so that parsers can use it
 * without hiredis or libuv.
 */
#ifndef RLOCKD_REDIS_ADDR_H
#define RLOCKD_REDIS_ADDR_H

/* A Unix socket when unix_socket is set. */
struct redis_addr {
    char host[256];
    int port;
    char unix_socket[108];
};

#endif
