/*
 * config.h - rlockd's settings: one table names every key, its type,
 * default, bounds and meaning; defaults, the ini loader and validation
 * all walk that table.
 *
 * Owns struct config values, and the user table of [user NAME] sections
 * (struct acl, see acl.h), which a loaded config holds until
 * config_free. It never opens sockets or applies a setting: callers read
 * the struct.
 */
#ifndef RLOCKD_CONFIG_H
#define RLOCKD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum on_disconnect { ON_DISCONNECT_RELEASE, ON_DISCONNECT_EXPIRE };
/* keep: a stopping rlockd leaves every lock to its TTL, for its clients
 * to resume on the next one; release: sessions end as on_disconnect says */
enum on_shutdown { ON_SHUTDOWN_KEEP, ON_SHUTDOWN_RELEASE };
/* Where the Redis master is: one fixed address, asked of Sentinel, or
 * one per slot of a Redis Cluster. */
enum redis_mode {
    REDIS_MODE_STANDALONE,
    REDIS_MODE_SENTINEL,
    REDIS_MODE_CLUSTER
};
/* [redis] pubsub: what unlock messages travel by in a cluster (auto:
 * sharded when the cluster has it); elsewhere always global. */
enum redis_pubsub { PUBSUB_AUTO, PUBSUB_SHARDED, PUBSUB_GLOBAL, PUBSUB_BOTH };
/* [server] tls_client_certs: whether a TLS client is asked for a
 * certificate, and whether one is needed */
enum tls_client_certs {
    TLS_CLIENT_CERTS_NO,
    TLS_CLIENT_CERTS_OPTIONAL,
    TLS_CLIENT_CERTS_REQUIRED
};
enum tls_min_version { TLS_MIN_1_2, TLS_MIN_1_3 };
/* [lock] sync_replicas = auto */
#define SYNC_REPLICAS_AUTO (-1)

struct acl;

struct config {
    /* [server] */
    char listen[128];
    char unix_socket[108];
    int64_t unix_socket_mode;
    char http_listen[128]; /* "": no HTTP endpoint */
    int64_t http_max_connections;
    int64_t readyz_grace_ms; /* /readyz stays ready this long into an outage */
    int64_t http_request_timeout_ms;
    int64_t locks_max_count; /* LOCKS' and GET /locks' COUNT at most */
    int64_t events_kept;     /* GET /events: the newest so many */
    char auth_token[256];
    char http_token[256]; /* "": HTTP needs no token */
    int64_t max_auth_failures;
    int64_t max_clients;
    int64_t max_clients_per_peer;
    int64_t request_timeout_ms;
    int64_t tcp_keepalive_s;  /* 0: off */
    int64_t min_heartbeat_ms; /* CLIENT HEARTBEAT's range, */
    int64_t max_heartbeat_ms; /* min <= max (config_load checks) */
    int64_t max_client_buffers_bytes;
    int64_t max_request_bytes;
    int64_t max_request_args;
    int64_t max_input_buffer_bytes;
    int64_t max_output_buffer_bytes;
    int64_t max_commands_in_flight;
    int64_t max_name_length;
    /* TLS on the client listener (base/tls_server.h); tls_listen "": none */
    char tls_listen[128];
    char tls_cert_file[1024];
    char tls_key_file[1024];
    char tls_ca_file[1024];   /* "": client certificates are not asked */
    int64_t tls_client_certs; /* enum tls_client_certs */
    int64_t tls_min_version;  /* enum tls_min_version */
    /* [redis] */
    char redis_host[256];
    int64_t redis_port;
    char redis_unix_socket[108];
    char redis_username[256]; /* Redis 6 ACL user; "": AUTH password only */
    char redis_password[512];
    int64_t redis_db;
    int64_t redis_mode;   /* enum redis_mode */
    char sentinels[1024]; /* host:port, comma-separated (config_load checks) */
    char master_name[256];
    char sentinel_username[256];
    char sentinel_password[512];
    int64_t sentinel_poll_ms;
    char cluster_nodes[1024]; /* [redis] nodes: the cluster's seeds */
    int64_t cluster_refresh_ms;
    int64_t cluster_max_masters; /* pool_size connections each */
    int64_t pubsub;              /* enum redis_pubsub */
    int64_t retry_timeout_ms;    /* how long a command waits for Redis */
    int64_t pool_size;
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int64_t reconnect_max_ms;
    int64_t first_connect_warn_ms;
    int64_t ping_interval_ms;     /* idle probe; also when a link stalls */
    int64_t redis_tls;            /* every Redis link speaks TLS */
    char redis_tls_ca_file[1024]; /* "" and no ca_dir: the system's store */
    char redis_tls_ca_dir[1024];
    char redis_tls_cert_file[1024]; /* a client certificate, with its key */
    char redis_tls_key_file[1024];
    char redis_tls_server_name[256]; /* "": the host dialled */
    int64_t redis_tls_verify;
    /* [lock] */
    char name_prefix[256];
    char allowed_names[1024]; /* glob patterns */
    int64_t watchdog_timeout_ms;
    /* how long a fair waiter's place in the queue is kept when its own
     * wait has no limit (Redisson's fairLockWaitTimeout) */
    int64_t fair_wait_timeout_ms;
    int64_t on_disconnect; /* enum on_disconnect */
    int64_t on_shutdown;   /* enum on_shutdown */
    int64_t max_waiters;
    int64_t max_held_locks;
    int64_t max_waiters_per_client;
    int64_t max_multilock_names; /* names in one MLOCK or MUNLOCK */
    int64_t max_held_locks_per_client;
    int64_t renew_batch_size;
    int64_t renew_calls_in_flight; /* a key group's renewal calls unanswered */
    int64_t fence_memory_names;
    /* local hand-offs of one lock before a release leaves it free */
    int64_t max_handoffs_in_a_row;
    int64_t deadlock_detection; /* 1: a wait closing a cycle is refused */
    int64_t sync_replicas;      /* SYNC_REPLICAS_AUTO, or how many */
    int64_t sync_timeout_ms;
    /* [log] */
    int64_t log_level;  /* enum log_level */
    int64_t log_format; /* enum log_format */
    /* [user NAME] sections; NULL: none */
    struct acl *acl;
};

/* Fills every field with its default (no users). */
void config_set_defaults(struct config *cfg);
/*
 * Loads `path` (NULL: none) over the defaults, then the environment's
 * RLOCKD_<SECTION>_<KEY> variables over both. Returns 0, or -1 with a
 * message of the form "FILE:LINE: reason" (or "environment VAR: reason")
 * in err (and nothing to free).
 */
int config_load(struct config *cfg, const char *path, char *err,
                size_t err_size);
/* "rlockd: VAR sets [section] key = value" for each key the environment
 * sets, secrets hidden: what rlockd -t shows. */
void config_print_env(const struct config *cfg, FILE *out);
/* Frees what a loaded config holds (its users). */
void config_free(struct config *cfg);
/* Sets one key as the ini file would; 0 or -1 with the reason in err. */
int config_set(struct config *cfg, const char *section, const char *key,
               const char *value, char *err, size_t err_size);

/*
 * A SIGHUP reload: copies into `live` every changed key that can change
 * at once, and logs each change; a changed key that needs a restart keeps
 * its live value and is logged as such. Users are live: when any user
 * changed, the tables are swapped, so `fresh` holds the old one (still
 * valid until config_free(fresh): look connections' users up again in
 * live->acl first). Returns the number of keys and users applied.
 */
int config_apply_reload(struct config *live, struct config *fresh);

/* Table walkers, for tests and INFO: the n-th key, NULL past the end. */
const char *config_key_section(size_t n);
const char *config_key_name(size_t n);
bool config_key_live(size_t n);
/* "host:port" -> parts; 0 or -1. Used for [server] listen. */
int config_split_host_port(const char *addr, char *host, size_t host_size,
                           int *port);
/*
 * Walks a comma-separated list of addresses ([redis] sentinels): copies
 * the next "host:port" from *list into host/port, advances *list past it,
 * and returns 1; 0 at the end of the list; -1 for an entry that is not
 * host:port.
 */
int config_next_addr(const char **list, char *host, size_t host_size,
                     int *port);

#endif
