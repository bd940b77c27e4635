/*
 * stats.h - every figure rlockd reports, listed once.
 *
 * STATS_LIST names each figure with its INFO section, its type and a
 * line of help, as twemproxy's stats list does. The layers fill the
 * struct (the front end its clients, the lock engine its locks, the Redis
 * backend its connections); the observers (INFO, the service's STATUS
 * line) only read it, so they depend on no layer. The list generates the
 * struct and the INFO lines, and its help text is what a metrics endpoint
 * needs.
 *
 * The type column: a COUNTER only grows; a GAUGE goes up and down with
 * what it counts (a metrics exporter reads it; INFO prints both alike).
 */
#ifndef RLOCKD_STATS_H
#define RLOCKD_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/histogram.h"
#include "buffer.h"

/* STATS_LIST's type column. */
enum stats_type { STATS_COUNTER, STATS_GAUGE };

enum stats_section {
    STATS_SERVER,
    STATS_CLIENTS,
    STATS_LOCKS,
    STATS_COUNTS,
    STATS_REDIS,
};

/* clang-format off */
#define STATS_LIST(X)                                                          \
    X(SERVER,  GAUGE,   socket_activated,                                      \
      "1 when listening on sockets passed by systemd")                        \
    X(SERVER,  GAUGE,   tls_cert_not_after,                                    \
      "when the listener's TLS certificate expires, in Unix seconds (0: none)") \
    X(CLIENTS, GAUGE,   connected_clients, "client connections open")         \
    X(CLIENTS, GAUGE,   blocked_clients,                                       \
      "connections whose LOCK or TRYLOCK waits for its lock")                  \
    X(CLIENTS, GAUGE,   client_sessions, "client-ids with a connection")       \
    X(CLIENTS, GAUGE,   pubsub_clients,                                        \
      "connections subscribed to their lock-lost channel")                    \
    X(CLIENTS, GAUGE,   commands_in_flight,                                    \
      "client commands waiting for Redis")                                     \
    X(CLIENTS, GAUGE,   client_buffers_bytes,                                  \
      "memory held in client buffers (max_client_buffers_bytes caps it)")     \
    X(CLIENTS, GAUGE,   max_clients_effective,                                 \
      "max_clients, lowered if the open files limit is too low for it")       \
    X(CLIENTS, GAUGE,   http_connections, "HTTP connections open")             \
    X(LOCKS,   GAUGE,   held_locks, "holds taken through this daemon")         \
    X(LOCKS,   GAUGE,   watchdog_locks, "holds renewed by the watchdog")       \
    X(LOCKS,   GAUGE,   waiting_clients, "calls queued for a lock")            \
    X(LOCKS,   GAUGE,   lock_entries, "lock names known to this daemon")       \
    X(LOCKS,   GAUGE,   subscribed_channels, "pub/sub channels listened on")   \
    X(LOCKS,   GAUGE,   lock_bytes,                                            \
      "memory of the lock records, their names and keys inline")             \
    X(LOCKS,   GAUGE,   lock_string_bytes,                                     \
      "of it, the names and the kinds' own keys, and slack")                  \
    X(LOCKS,   GAUGE,   lock_wait_bytes,                                       \
      "memory of the waiting state of locks with waiters: queue, listener")  \
    X(LOCKS,   GAUGE,   lock_map_bytes,                                        \
      "memory of the lock table's hash slots")                               \
    X(LOCKS,   GAUGE,   hold_bytes,                                            \
      "memory of the hold records and their lease timers")                   \
    X(LOCKS,   GAUGE,   hold_string_bytes,                                     \
      "of it, fields stored inline (a permit's id) and slack")                \
    X(COUNTS,  COUNTER, total_connections_received, "connections accepted")    \
    X(COUNTS,  COUNTER, rejected_connections,                                  \
      "connections refused (max_clients, max_clients_per_peer, shutdown)")     \
    X(COUNTS,  COUNTER, heartbeat_timeouts,                                    \
      "clients ended: nothing heard for their CLIENT HEARTBEAT")              \
    X(COUNTS,  COUNTER, request_timeouts,                                      \
      "connections closed: a request unfinished for request_timeout_ms")     \
    X(COUNTS,  COUNTER, http_request_timeouts,                                 \
      "HTTP connections closed: not answered within http_request_timeout_ms") \
    X(COUNTS,  COUNTER, http_evictions,                                        \
      "HTTP connections closed to make room for a new one")                   \
    X(COUNTS,  COUNTER, buffer_cap_disconnects,                                \
      "connections closed to keep under max_client_buffers_bytes")             \
    X(COUNTS,  COUNTER, tls_handshakes,                                        \
      "TLS handshakes completed on the client listener")                      \
    X(COUNTS,  COUNTER, tls_handshake_failures,                                \
      "TLS handshakes that failed or timed out (a plaintext client too)")     \
    X(COUNTS,  COUNTER, tls_handshake_timeouts,                                \
      "of them unfinished for request_timeout_ms")                            \
    X(COUNTS,  COUNTER, tls_client_cert_refusals,                              \
      "of them for a client certificate missing or not verified")             \
    X(COUNTS,  COUNTER, total_commands_processed, "commands run")              \
    X(COUNTS,  COUNTER, protocol_errors, "malformed requests")                 \
    X(COUNTS,  COUNTER, locks_acquired, "acquisitions, reentrant included")   \
    X(COUNTS,  COUNTER, fair_locks_acquired, "of them FAIR")                  \
    X(COUNTS,  COUNTER, read_locks_acquired, "of them READ")                  \
    X(COUNTS,  COUNTER, write_locks_acquired, "of them WRITE")                \
    X(COUNTS,  COUNTER, fenced_locks_acquired, "of them FENCED")              \
    X(COUNTS,  COUNTER, fence_tokens_raised,                                   \
      "FENCED grants that found Redis's token behind one handed out here")    \
    X(COUNTS,  COUNTER, permits_acquired, "semaphore permits acquired")       \
    X(COUNTS,  COUNTER, expirable_permits_acquired,                            \
      "expirable semaphore permits acquired")                                 \
    X(COUNTS,  COUNTER, latch_waits_ended, "AWAITs that saw the latch open")  \
    X(COUNTS,  COUNTER, locks_released, "UNLOCKs that freed a lock")          \
    X(COUNTS,  COUNTER, lock_handoffs,                                         \
      "UNLOCKs sent with the next local waiter's acquire right behind")      \
    X(COUNTS,  COUNTER, acquires_queued_unasked,                               \
      "LOCKs queued at once: another owner held the lock through rlockd")    \
    X(COUNTS,  COUNTER, locks_force_released, "FORCEUNLOCKs that freed one")  \
    X(COUNTS,  COUNTER, locks_released_on_disconnect,                          \
      "releases sent because a client-id's last connection went")             \
    X(COUNTS,  COUNTER, orphan_acquires_undone,                                \
      "acquisitions undone because their client had gone")                    \
    X(COUNTS,  COUNTER, sessions_resumed,                                      \
      "sessions given back with their holds after a restart")                 \
    X(COUNTS,  COUNTER, acquires_settled,                                      \
      "owners' counts set after an acquire's reply was lost")                 \
    X(COUNTS,  COUNTER, locks_lost, "holds found gone from Redis")            \
    X(COUNTS,  COUNTER, lost_events_sent,                                      \
      "lock-lost messages pushed to subscribed connections")                  \
    X(COUNTS,  COUNTER, failover_locks_kept,                                   \
      "holds found on a new master after a failover")                         \
    X(COUNTS,  COUNTER, failover_locks_lost,                                   \
      "holds not found on a new master (their holders are told)")             \
    X(COUNTS,  COUNTER, sync_waits, "WAITs sent after acquires")              \
    X(COUNTS,  COUNTER, sync_timeouts,                                         \
      "WAITs that no replica acknowledged in sync_timeout_ms")                \
    X(COUNTS,  COUNTER, sync_rollbacks,                                        \
      "acquires undone because no replica acknowledged them")                 \
    X(COUNTS,  COUNTER, noreplicas_replies, "-NOREPLICAS replies")            \
    X(COUNTS,  COUNTER, lock_attempts, "acquire scripts sent")                \
    X(COUNTS,  COUNTER, wait_timeouts, "waits that ended without the lock")   \
    X(COUNTS,  COUNTER, deadlocks_detected,                                    \
      "waits refused -DEADLOCK: they closed a cycle of owners")               \
    X(COUNTS,  COUNTER, unlock_messages, "pub/sub messages received")         \
    X(COUNTS,  COUNTER, watchdog_renewals, "holds sent for renewal")          \
    X(COUNTS,  COUNTER, fair_place_renewals,                                   \
      "FAIR waiters' places in Redis's queue sent for renewal")               \
    X(COUNTS,  COUNTER, watchdog_batches, "renewal script calls")             \
    X(COUNTS,  COUNTER, unavailable_replies, "-UNAVAILABLE replies")          \
    X(COUNTS,  COUNTER, wrong_type_refusals,                                   \
      "lock commands refused: the key is not a lock")                         \
    X(COUNTS,  COUNTER, foreign_records,                                       \
      "rlockd records refused: rlockd did not write them")                    \
    X(COUNTS,  COUNTER, auth_failures,                                         \
      "AUTH with a wrong password or token, or an unknown user")              \
    X(COUNTS,  COUNTER, penalty_disconnects,                                   \
      "connections closed after max_auth_failures refusals")                  \
    X(COUNTS,  COUNTER, noperm_replies,                                        \
      "-NOPERM replies: a command or lock name the user may not use")        \
    X(COUNTS,  COUNTER, clientid_refusals,                                     \
      "CLIENTID of a live session without its secret")                        \
    X(COUNTS,  COUNTER, config_reloads, "SIGHUP reloads applied")             \
    X(COUNTS,  COUNTER, config_reload_failures,                                \
      "SIGHUP reloads refused (bad file)")                                     \
    X(REDIS,   GAUGE,   redis_connected,                                       \
      "1 when every Redis connection is ready")                                \
    X(REDIS,   GAUGE,   redis_pool_size, "Redis connections for commands")    \
    X(REDIS,   GAUGE,   redis_pool_ready, "of which ready")                   \
    X(REDIS,   GAUGE,   redis_subscriber_ready,                                \
      "1 when the pub/sub connection is ready")                                \
    X(REDIS,   COUNTER, redis_reconnects, "ready Redis connections lost")     \
    X(REDIS,   COUNTER, redis_connect_failures,                                \
      "connection attempts that failed or were refused (AUTH)")               \
    X(REDIS,   COUNTER, redis_master_changes,                                  \
      "switches to another master (Sentinel: confirmed by ROLE; Cluster: "    \
      "a replica promoted)")                                                  \
    X(REDIS,   COUNTER, redis_pings,                                           \
      "probes sent on idle Redis connections (PING)")                          \
    X(REDIS,   COUNTER, redis_stalls,                                          \
      "Redis connections unready: a request unanswered for ping_interval_ms") \
    X(REDIS,   COUNTER, redis_tls_handshakes,                                  \
      "TLS handshakes with Redis completed")                                  \
    X(REDIS,   COUNTER, redis_tls_failures_unknown_ca,                         \
      "TLS to Redis refused: its certificate's issuer is not trusted")        \
    X(REDIS,   COUNTER, redis_tls_failures_expired,                            \
      "TLS to Redis refused: its certificate expired or is not yet valid")    \
    X(REDIS,   COUNTER, redis_tls_failures_name_mismatch,                      \
      "TLS to Redis refused: its certificate is for another name")            \
    X(REDIS,   COUNTER, redis_tls_failures_other,                              \
      "TLS to Redis failed otherwise (handshake, alert, bad record)")         \
    X(REDIS,   COUNTER, script_reloads, "scripts sent again after NOSCRIPT")  \
    X(REDIS,   COUNTER, cluster_refreshes, "cluster maps read (CLUSTER NODES)") \
    X(REDIS,   COUNTER, cluster_moved, "MOVED redirections followed")         \
    X(REDIS,   COUNTER, cluster_asks, "ASK redirections followed")            \
    X(REDIS,   COUNTER, cluster_retries,                                       \
      "calls held back by TRYAGAIN, CLUSTERDOWN, LOADING or MASTERDOWN")
/* clang-format on */

struct stats {
#define STATS_FIELD(section, type, name, help) uint64_t name;
    STATS_LIST(STATS_FIELD)
#undef STATS_FIELD
};

extern struct stats stats;

/* The latencies, each a histogram in seconds, for the metrics endpoint:
 * name and help, as STATS_LIST. */
/* clang-format off */
#define LATENCY_LIST(X)                                                        \
    X(acquire_seconds,                                                         \
      "LOCK and TRYLOCK, from the request to the grant, waits included")     \
    X(wait_seconds,                                                            \
      "time calls spent queued for a lock, until granted or given up")        \
    X(handoff_seconds,                                                         \
      "from a release through this daemon to its next local waiter's grant") \
    X(redis_rtt_seconds, "Redis commands, from sending to the reply")
/* clang-format on */

struct latency {
#define LATENCY_FIELD(name, help) struct histogram name;
    LATENCY_LIST(LATENCY_FIELD)
#undef LATENCY_FIELD
};

extern struct latency latency;

/* The Redis topology as INFO shows it; the Redis backend keeps it. */
struct redis_status {
    char master[1024];    /* the address in use ("" while none is known); in a
                        * cluster every master and its slot count */
    const char *topology; /* "ok", "discovering" or "unreachable" */
    uint64_t changed_ms;  /* when master or topology last changed */
    uint64_t unreachable_since_ms; /* 0 while the pool can serve */
    bool ever_reached;             /* since start-up */
    const char *pubsub;  /* "global", "sharded", "both"; "auto" undecided */
    char tls_error[128]; /* why TLS to Redis last failed; "" since a link
                          * became ready */
};

extern struct redis_status redis_status;

/* Appends "name:value\r\n" for every figure of one section. 0 or -ENOMEM. */
int stats_append_section(struct buffer *out, enum stats_section section);
/* Appends every figure and latency in Prometheus's text format (0.0.4),
 * each named rlockd_<name>. 0 or -ENOMEM. */
int stats_append_prometheus(struct buffer *out);

#endif
