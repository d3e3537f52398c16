/* chunker.c — content-defined chunking (a gear rolling hash, as in FastCDC without normalisation)
 * so an edit inside a large file changes one or two chunks instead of the whole file, and a file
 * that only grows (agent session logs) shares all earlier chunks.
 * Owns: the gear table (a fixed, seeded sequence: part of the on-disk format) and the cut rule.
 * Threads: any; the table is built once behind a release/acquire flag. */
#include "storage/storage.h"

#include <stdatomic.h>

static uint64_t gear[256];
static atomic_int gear_ready;

static void gear_init(void)
{
    uint64_t x = 0x65766f6c76653031ull; /* "evolve01": fixed forever */
    int i;

    /* acquire: pairs with the release store below, so a reader sees the whole table. */
    if (atomic_load_explicit(&gear_ready, memory_order_acquire))
        return;
    for (i = 0; i < 256; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull); /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        gear[i] = z ^ (z >> 31);
    }
    /* release: publishes the table; concurrent first callers write identical values. */
    atomic_store_explicit(&gear_ready, 1, memory_order_release);
}

static size_t cut(const unsigned char *data, size_t len, bool final, size_t min, int bits,
                  size_t max)
{
    const uint64_t mask = ((1ull << bits) - 1) << (64 - bits);
    size_t i, end = len < max ? len : max;
    uint64_t h = 0;

    gear_init();
    if (len <= min)
        return final ? len : 0;
    /* The hash only depends on the last 64 bytes, so start 64 bytes before the window opens. */
    for (i = min - 64; i < min; i++)
        h = (h << 1) + gear[data[i]];
    for (; i < end; i++) {
        h = (h << 1) + gear[data[i]];
        if (!(h & mask))
            return i + 1;
    }
    if (end == max)
        return max;
    return final ? len : 0;
}

size_t sto_chunk_next(const unsigned char *data, size_t len, bool final)
{
    return cut(data, len, final, STO_CHUNK_MIN, STO_CHUNK_AVG_BITS, STO_CHUNK_MAX);
}

size_t sto_chunk_next_small(const unsigned char *data, size_t len, bool final)
{
    return cut(data, len, final, 1024, 12, 16384);
}
