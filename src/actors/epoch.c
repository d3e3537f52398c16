/* epoch.c — two reader counts indexed by the parity of a generation number.
 * Owns: nothing but the counters. Why not ck_epoch: it needs a registered record per reading
 * thread (publishers are arbitrary threads) and its ck_pr atomics are invisible to
 * ThreadSanitizer (docs/internals/actors.md).
 * Threads: enter/exit from any thread; synchronize from one writer at a time.
 * Ordering: a reader counts itself in the current generation's slot, then re-reads the
 * generation; if it moved, it backs out and retries. A writer publishes the new pointer, bumps
 * the generation (all seq_cst), then waits for the old parity's count to drain. A reader that
 * saw the old pointer counted itself before the bump (or its re-check would have failed), so the
 * writer waits for it; a reader counted after the bump loads the new pointer. Readers that entered
 * two generations ago were drained by the previous writer, which finished before this one. */
#include "actors/epoch.h"

#include <sched.h>

int act_epoch_enter(struct act_epoch *e)
{
    unsigned long long g;

    for (;;) {
        g = atomic_load_explicit(&e->gen, memory_order_seq_cst);
        atomic_fetch_add_explicit(&e->readers[g & 1], 1, memory_order_seq_cst);
        if (atomic_load_explicit(&e->gen, memory_order_seq_cst) == g)
            return (int)(g & 1);
        atomic_fetch_sub_explicit(&e->readers[g & 1], 1, memory_order_release);
    }
}

void act_epoch_exit(struct act_epoch *e, int slot)
{
    /* release: pairs with the acquire load in act_epoch_synchronize; the reader's uses of the
     * old pointer happen-before the writer frees it. */
    atomic_fetch_sub_explicit(&e->readers[slot], 1, memory_order_release);
}

void act_epoch_synchronize(struct act_epoch *e)
{
    unsigned long long g = atomic_load_explicit(&e->gen, memory_order_relaxed);

    atomic_store_explicit(&e->gen, g + 1, memory_order_seq_cst);
    /* acquire: pairs with act_epoch_exit's release. Sections are short: yield while waiting. */
    while (atomic_load_explicit(&e->readers[g & 1], memory_order_acquire) != 0)
        sched_yield();
}
