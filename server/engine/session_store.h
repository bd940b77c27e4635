/*
 * session_store.h - a session's record in Redis, which lets a restarted
 * rlockd give a client its session back.
 *
 * Owns the record's key, its format and every Redis call that reads or
 * writes it. Only a session with a secret has one (without a proof there
 * is nobody to give it back to). The record is a hash at
 * "<name_prefix>rlockd_session:{<client-id>}":
 *
 *   secret                      hex SHA-256 of the session's secret
 *   <kind>:<thread-id>:<key>    "pending" | "watchdog" | <lease ms>
 *
 * one field per hold: "pending" is written before a new hold's first
 * acquire is sent (so no acquire can land that the record does not
 * name), and the hold's lease once it is granted; the field goes when
 * the hold does. The record's TTL is at least its longest lease, and is
 * renewed with its watchdog holds, so it outlives no lock it names. The
 * counts are not in it: the lock's own field in Redis has them.
 */
#ifndef RLOCKD_SESSION_STORE_H
#define RLOCKD_SESSION_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/config.h"
#include "client_id.h"

struct session;
struct hold;
struct lock_kind;

/* What one hold field of a record says. */
struct session_entry {
    const struct lock_kind *kind;
    uint64_t thread_id;
    const char *key; /* the lock's Redis key, inside the field */
    size_t key_len;
    bool pending;     /* written before an acquire whose fate is unknown */
    int64_t lease_ms; /* < 0: watchdog mode */
};

/* The record's key: "<name_prefix>" SESSION_STORE_KEY_TAG "<client-id>}",
 * at most SESSION_STORE_KEY_SIZE bytes. */
#define SESSION_STORE_KEY_TAG "rlockd_session:{"
#define SESSION_STORE_KEY_SIZE                                                 \
    (sizeof(((struct config *)0)->name_prefix) +                               \
     sizeof(SESSION_STORE_KEY_TAG) + CLIENT_ID_MAX_LEN + 2)

void session_store_init(const struct config *cfg,
                        const struct backend *backend);

/* Whether key could be written now for the session, and whether it is
 * ordered with the lock's calls (one key group). */
bool session_store_ready(const struct session *s);
bool session_store_with_lock(const struct session *s, const char *key,
                             size_t key_len);

/*
 * Writes the hold's field: pending, or its lease (< 0: watchdog), with
 * the secret, and makes the record live at least ttl_ms. fn (NULL: only a
 * failure is logged) gets the reply. 0 or a negative errno (-ENOTCONN).
 */
int session_store_put(const struct session *s, const struct lock_kind *kind,
                      const char *key, size_t key_len, uint64_t thread_id,
                      bool pending, int64_t lease_ms, int64_t ttl_ms,
                      backend_reply_fn *fn, void *arg);
/* Removes the hold's field, and the record with its last one. */
void session_store_forget(const struct session *s, const struct lock_kind *kind,
                          const char *key, size_t key_len, uint64_t thread_id);
/* Keeps the record at least ttl_ms more. */
void session_store_touch(const struct session *s, int64_t ttl_ms);
/* Deletes the whole record of client-id id: 0 or -ENOTCONN; fn (NULL:
 * only a failure is logged) gets the reply. */
int session_store_delete(const char *id, size_t len, backend_reply_fn *fn,
                         void *arg);

/* Reads the record: fn gets the reply for session_store_check. 0 or
 * -ENOTCONN. */
int session_store_read(const struct session *s, backend_reply_fn *fn,
                       void *arg);
/*
 * Whether a reply of session_store_read is a record rlockd wrote: 0 and
 * *fields, its flat array of fields and values (empty: no record); a hash
 * with a TTL, a secret of 64 hex digits and hold fields only, else
 * -EBADMSG and why says what the key holds (record_keys_foreign); -EAGAIN
 * for a reply that is no answer (a Redis error).
 */
int session_store_check(const struct session *s,
                        const struct backend_value *reply,
                        const struct backend_value **fields, char *why,
                        size_t why_size);
/* Whether the record's fields (as session_store_check gave them) hold a
 * secret field that proves the session's secret. */
bool session_store_proved(const struct session *s,
                          const struct backend_value *fields);
/* Reads a field and value of the record: 0, or -EINVAL for the secret
 * field or anything this version cannot read. */
int session_store_entry(const char *field, size_t field_len, const char *value,
                        size_t value_len, struct session_entry *out);

#endif
