/*
 * slab.c - same-size objects in blocks of their own (see slab.h).
 *
 * Owns: the blocks and the free slots in them. It must never give a slot
 * of one size class to an object of another, nor keep more than one empty
 * block per class.
 *
 * Why: a held lock's records are allocated by the same requests as those
 * requests' short-lived buffers (calls, replies, scripts, hiredis
 * replies). From malloc's heap they land between those, whose frees then
 * leave holes under the locks that no lock fits, and each record also
 * pays malloc's 8 B header and 16 B rounding. Here an object takes its
 * size rounded up to 8 B, beside objects of its own size only.
 *
 * Blocks are 64 KB, aligned to 64 KB, so that an object finds its block's
 * header by masking its address. They come from mmap (twice the size,
 * the unaligned excess unmapped at once), not aligned_alloc: glibc would
 * carve a block from the heap between the short-lived allocations, or
 * past its mmap threshold map it with a resident unaligned head; and an
 * emptied block goes back to the system at munmap. A block hands out its
 * never-used slots in order first, so its pages are touched only as it
 * fills, then its freed slots (a list through their first word). A class
 * keeps its blocks with free slots on a list, the last one freed into
 * first, so that allocations fill blocks rather than spread over them. A
 * block that becomes empty is unmapped, but one per class is kept as a
 * spare, so that a lock taken and released in a loop does not map and
 * unmap each time.
 *
 * What each build does:
 * - AddressSanitizer (SLAB_USES_BLOCKS 0): slab_alloc and slab_free are
 *   calloc and free, so that ASan watches each object for overflows, use
 *   after free and leaks.
 * - with valgrind's <valgrind/memcheck.h>: blocks, and each object is
 *   announced to memcheck as malloc'd and freed (VALGRIND_MALLOCLIKE_BLOCK,
 *   VALGRIND_FREELIKE_BLOCK) and free slots are no-access, so that it
 *   reports use after free, overflow into a slot's padding or a free slot,
 *   reads of unset bytes and leaked objects as it does for malloc's. Out of
 *   valgrind these are a few instructions that do nothing.
 * - otherwise: blocks, unchecked.
 */
#include "base/slab.h"

#include <stdint.h>
#include <stdlib.h>

#define SLAB_QUANTUM 8 /* size classes' step, and objects' alignment */

#if SLAB_USES_BLOCKS

#include <string.h>
#include <sys/mman.h>

#include "base/list.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif
#ifndef VALGRIND_MALLOCLIKE_BLOCK
#define VALGRIND_MALLOCLIKE_BLOCK(addr, size, redzone, zeroed) ((void)0)
#define VALGRIND_FREELIKE_BLOCK(addr, redzone) ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(addr, size) ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, size) ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, size) ((void)0)
#endif

#define SLAB_BLOCK_SIZE ((size_t)64 * 1024)
#define SLAB_CLASSES (SLAB_MAX_SIZE / SLAB_QUANTUM)

struct slab_class;

/* At the start of each block; its slots follow from SLAB_HEADER on. */
struct slab_block {
    struct list_node link; /* on its class's list while it has free slots */
    struct slab_class *cls;
    void *free;     /* freed slots, linked through their first word */
    unsigned used;  /* objects handed out and not freed */
    unsigned fresh; /* slots never handed out start at this index */
};

#define SLAB_HEADER ((sizeof(struct slab_block) + 15) & ~(size_t)15)

struct slab_class {
    struct list_node partial; /* struct slab_block.link */
    struct slab_block *spare; /* an empty block kept, or NULL */
    size_t size;
    unsigned slots; /* per block */
};

static struct slab_class classes[SLAB_CLASSES];
static size_t blocks_mapped, maps;

/* The class of objects of that size, set up at its first use. */
static struct slab_class *class_for(size_t size)
{
    struct slab_class *cls =
        &classes[size <= SLAB_QUANTUM ? 0 : (size - 1) / SLAB_QUANTUM];

    if (cls->size == 0) {
        cls->size = (size_t)(cls - classes + 1) * SLAB_QUANTUM;
        cls->slots = (unsigned)((SLAB_BLOCK_SIZE - SLAB_HEADER) / cls->size);
        list_init(&cls->partial);
    }
    return cls;
}

/* A new empty block, aligned to its size: of twice its size mapped, the
 * part before the first aligned address and the part after the block are
 * unmapped. NULL when the system has no memory. */
static struct slab_block *block_map(struct slab_class *cls)
{
    char *map = mmap(NULL, 2 * SLAB_BLOCK_SIZE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *start;
    struct slab_block *block;

    if (map == MAP_FAILED)
        return NULL;
    start = (char *)(((uintptr_t)map + SLAB_BLOCK_SIZE - 1) &
                     ~(uintptr_t)(SLAB_BLOCK_SIZE - 1));
    if (start > map)
        munmap(map, (size_t)(start - map));
    munmap(start + SLAB_BLOCK_SIZE, SLAB_BLOCK_SIZE - (size_t)(start - map));
    block = (struct slab_block *)start;
    block->cls = cls;
    block->free = NULL;
    block->used = 0;
    block->fresh = 0;
    list_init(&block->link);
    VALGRIND_MAKE_MEM_NOACCESS(start + SLAB_HEADER,
                               SLAB_BLOCK_SIZE - SLAB_HEADER);
    blocks_mapped++;
    maps++;
    return block;
}

/* The block the class's next object comes from: the first with free
 * slots, else the spare, else a new one. NULL when out of memory. */
static struct slab_block *class_block(struct slab_class *cls)
{
    struct list_node *first = list_first(&cls->partial);
    struct slab_block *block;

    if (first != NULL)
        return list_entry(first, struct slab_block, link);
    block = cls->spare != NULL ? cls->spare : block_map(cls);
    cls->spare = NULL;
    if (block != NULL)
        list_push_tail(&cls->partial, &block->link);
    return block;
}

void *slab_alloc(size_t size)
{
    struct slab_class *cls;
    struct slab_block *block;
    char *p;

    if (size > SLAB_MAX_SIZE)
        return calloc(1, size);
    cls = class_for(size);
    block = class_block(cls);
    if (block == NULL)
        return NULL;
    if (block->free != NULL) {
        p = block->free;
        VALGRIND_MAKE_MEM_DEFINED(p, sizeof(void *));
        block->free = *(void **)p;
        VALGRIND_MAKE_MEM_NOACCESS(p, sizeof(void *));
    } else {
        p = (char *)block + SLAB_HEADER + (size_t)block->fresh++ * cls->size;
    }
    if (++block->used == cls->slots)
        list_remove(&block->link);
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, 0);
    memset(p, 0, size);
    return p;
}

/* Keeps an emptied block as its class's spare, or unmaps it when the
 * class has one already. */
static void block_retire(struct slab_class *cls, struct slab_block *block)
{
    list_remove(&block->link);
    if (cls->spare == NULL) {
        cls->spare = block;
        return;
    }
    munmap(block, SLAB_BLOCK_SIZE);
    blocks_mapped--;
}

/* A size other than the one allocated with would put the slot on the
 * wrong class's lists and hand it out again as a larger object: it
 * aborts rather than corrupt memory later. */
void slab_free(void *p, size_t size)
{
    struct slab_block *block;
    struct slab_class *cls;

    if (p == NULL)
        return;
    if (size > SLAB_MAX_SIZE) {
        free(p);
        return;
    }
    block =
        (struct slab_block *)((uintptr_t)p & ~(uintptr_t)(SLAB_BLOCK_SIZE - 1));
    cls = block->cls;
    if (cls != class_for(size))
        abort();
    if (block->used-- == cls->slots)
        list_insert_before(cls->partial.next, &block->link);
    VALGRIND_FREELIKE_BLOCK(p, 0);
    VALGRIND_MAKE_MEM_UNDEFINED(p, sizeof(void *));
    *(void **)p = block->free;
    block->free = p;
    VALGRIND_MAKE_MEM_NOACCESS(p, sizeof(void *));
    if (block->used == 0)
        block_retire(cls, block);
}

size_t slab_blocks(void)
{
    return blocks_mapped;
}

size_t slab_maps(void)
{
    return maps;
}

#else /* AddressSanitizer: each object its own allocation */

void *slab_alloc(size_t size)
{
    return calloc(1, size);
}

void slab_free(void *p, size_t size)
{
    (void)size;
    free(p);
}

size_t slab_blocks(void)
{
    return 0;
}

size_t slab_maps(void)
{
    return 0;
}

#endif

/* Past SLAB_MAX_SIZE: glibc's chunk, the size and an 8 B header rounded
 * up to 16. */
size_t slab_size(size_t size)
{
    if (size > SLAB_MAX_SIZE)
        return (size + sizeof(size_t) + 15) & ~(size_t)15;
    if (size <= SLAB_QUANTUM)
        return SLAB_QUANTUM;
    return (size + SLAB_QUANTUM - 1) & ~(size_t)(SLAB_QUANTUM - 1);
}
