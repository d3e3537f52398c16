/* ring.c — the bounded MPMC ring behind each bus subscriber (Vyukov's array queue).
 * Owns: the slot array. Does not own the items.
 * Threads: any number of producers and consumers at once; lock-free (a thread can only be held
 * up by another that claimed a slot and has not finished writing or reading it).
 * Ordering: each slot's `seq` is the handshake: a producer claims position p on `tail` when
 * seq == p, writes the item and releases seq = p + 1; a consumer claims p on `head` when
 * seq == p + 1, reads the item and releases seq = p + capacity for the producer of the next lap. */
#include "actors/ring.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"

int act_ring_init(struct act_ring *r, size_t capacity)
{
    size_t i;

    r->slots = malloc(capacity * sizeof(*r->slots));
    if (!r->slots)
        return core_error_oom();
    for (i = 0; i < capacity; i++)
        atomic_store_explicit(&r->slots[i].seq, i, memory_order_relaxed);
    r->mask = capacity - 1;
    atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
    atomic_store_explicit(&r->head, 0, memory_order_relaxed);
    return 0;
}

void act_ring_dispose(struct act_ring *r)
{
    free(r->slots);
    r->slots = NULL;
}

bool act_ring_push(struct act_ring *r, void *item)
{
    size_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    struct act_ring_slot *sl;
    size_t seq;
    intptr_t dif;

    for (;;) {
        sl = &r->slots[pos & r->mask];
        /* acquire: pairs with the release store of seq by the consumer that emptied this
         * slot; its read of sl->item is done before we overwrite it. */
        seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
        dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return false; /* full */
        } else {
            pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        }
    }
    sl->item = item;
    /* release: pairs with the consumer's acquire load of seq; the item is in the slot first. */
    atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
    return true;
}

bool act_ring_pop(struct act_ring *r, void **item, size_t *pos_out)
{
    size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    struct act_ring_slot *sl;
    size_t seq;
    intptr_t dif;

    for (;;) {
        sl = &r->slots[pos & r->mask];
        /* acquire: pairs with the producer's release store of seq; the item is visible. */
        seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
        dif = (intptr_t)seq - (intptr_t)(pos + 1);
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return false; /* empty, or the producer of this slot has not finished */
        } else {
            pos = atomic_load_explicit(&r->head, memory_order_relaxed);
        }
    }
    *item = sl->item;
    *pos_out = pos;
    /* release: pairs with the next producer's acquire load of seq. */
    atomic_store_explicit(&sl->seq, pos + r->mask + 1, memory_order_release);
    return true;
}

bool act_ring_has_space(struct act_ring *r)
{
    size_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    /* acquire: as in ring_push. */
    size_t seq = atomic_load_explicit(&r->slots[pos & r->mask].seq, memory_order_acquire);

    return (intptr_t)seq - (intptr_t)pos >= 0;
}

bool act_ring_has_data(struct act_ring *r)
{
    size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    /* acquire: as in ring_pop. */
    size_t seq = atomic_load_explicit(&r->slots[pos & r->mask].seq, memory_order_acquire);

    return (intptr_t)seq - (intptr_t)(pos + 1) >= 0;
}
