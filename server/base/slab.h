/*
 * slab.h - memory of their own for the daemon's most numerous records
 * (a held lock's struct lock and struct hold): same-size objects carved
 * from 64 KB blocks with no per-object header, as pgbouncer's
 * usual/slab.c and PostgreSQL's src/backend/utils/mmgr/slab.c do.
 *
 * The caller gives the size again at free (it can always recompute it),
 * so that no header has to remember it. One thread only: the loop's.
 * Never used for short-lived allocations: keeping those out of the
 * blocks is the point (see slab.c).
 */
#ifndef RLOCKD_SLAB_H
#define RLOCKD_SLAB_H

#include <stddef.h>

/* Objects up to this size come from blocks; larger ones from calloc. */
#define SLAB_MAX_SIZE 256

/* 1 when objects come from blocks, 0 in builds where slab_alloc is plain
 * calloc so that a sanitizer watches each object (AddressSanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_USES_BLOCKS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_USES_BLOCKS 0
#endif
#endif
#ifndef SLAB_USES_BLOCKS
#define SLAB_USES_BLOCKS 1
#endif

/* size bytes of zeroed memory aligned to 8 (pointers and 64-bit
 * integers; not long double), or NULL when out of memory. size > 0. */
void *slab_alloc(size_t size);
/* Frees p (NULL is allowed); size is the one it was allocated with. */
void slab_free(void *p, size_t size);
/* The bytes an object of that size takes: its size class, or for one
 * past SLAB_MAX_SIZE what glibc's malloc charges (header and rounding).
 * For INFO's byte gauges. */
size_t slab_size(size_t size);
/* Blocks mapped now, spares included: what the tests watch go back. */
size_t slab_blocks(void);
/* Blocks mapped since the start: a spare keeps an object taken and freed
 * in a loop from raising it each time. */
size_t slab_maps(void);

#endif
