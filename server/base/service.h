/*
 * service.h - rlockd and its service manager (systemd): readiness, status
 * and stop notifications (sd_notify), and the listening sockets it passes
 * (socket activation, sd_listen_fds).
 *
 * Owns every libsystemd call. Without NOTIFY_SOCKET every notification is
 * a no-op, and without LISTEN_FDS no socket is passed, so rlockd started
 * by hand behaves as it always did.
 */
#ifndef RLOCKD_SERVICE_H
#define RLOCKD_SERVICE_H

#include <stdbool.h>

#include <uv.h>

int service_init(uv_loop_t *loop);
void service_close(void);

/*
 * The sockets passed by socket activation are fds first .. first+n-1;
 * returns n (0: none), or a negative errno. The environment variables are
 * unset, so that nothing rlockd starts inherits them. *names: each one's
 * FileDescriptorName= (systemd.socket(5); "tls" marks a TLS listener),
 * a NULL-terminated array the caller frees with service_free_names, or
 * NULL when none is passed.
 */
int service_passed_sockets(int *first, char ***names);
void service_free_names(char **names);
/* 1 a listening Unix stream socket, 0 a listening TCP one, -1 neither. */
int service_socket_kind(int fd);

/* Listening and every Redis pool connection up: READY=1, once. */
void service_ready(void);
/* SIGHUP: RELOADING=1 before, READY=1 and a status after. */
void service_reloading(void);
void service_reloaded(bool ok);
/* SIGTERM/SIGINT: STOPPING=1. */
void service_stopping(void);

#endif
