/* actors/ring.h — a bounded MPMC ring of pointers (Vyukov's array queue): the per-subscriber
 * queue of the event bus. Positions count up forever, so a consumer can tell how many positions
 * others took between two of its own pops. */
#ifndef EVOLVE_ACTORS_RING_H
#define EVOLVE_ACTORS_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct act_ring_slot {
    atomic_size_t seq; /* position + 1 when full, position + capacity when free for it */
    void *item;
};

struct act_ring {
    atomic_size_t tail __attribute__((aligned(64))); /* next position to fill */
    atomic_size_t head __attribute__((aligned(64))); /* next position to take */
    size_t mask;
    struct act_ring_slot *slots;
};

/* capacity must be a power of two >= 2 (with one slot, "full" and "free" look the same).
 * @return 0 or EVOLVE_ENOMEM. @thread any (before sharing) */
int act_ring_init(struct act_ring *r, size_t capacity);

/* Frees the slots; the items still queued are the caller's to drain first. @thread any */
void act_ring_dispose(struct act_ring *r);

/* False when full. Lock-free. @thread any */
bool act_ring_push(struct act_ring *r, void *item);

/* False when empty (or when the producer of the next slot has not finished). On true, *pos is
 * the item's position. Lock-free. @thread any */
bool act_ring_pop(struct act_ring *r, void **item, size_t *pos);

/* Snapshots (may be stale by the time they return). @thread any */
bool act_ring_has_space(struct act_ring *r);
bool act_ring_has_data(struct act_ring *r);

#endif
