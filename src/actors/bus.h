/* actors/bus.h — the event bus: publishers push immutable, refcounted events; every subscriber
 * has its own bounded ring and a policy for when that ring is full. Design:
 * docs/internals/actors.md ("Event bus").
 *
 * Ownership:
 * - A concrete event embeds `struct act_event` first. Once published it is immutable. The bus
 *   takes one reference per subscriber ring it lands in; the publisher keeps its own reference
 *   (and releases it with act_event_unref when done, also after a failed try_publish).
 * - A callback's event is borrowed for the call (act_event_ref to keep it). An event returned by
 *   act_sub_poll carries one reference for the caller.
 * - A subscription is released by act_bus_unsubscribe. Unsubscribe every subscription before
 *   act_bus_free.
 *
 * Publish path: lock-free unless a BLOCK subscriber is full (then act_bus_publish waits on that
 * subscriber's condition variable and act_bus_try_publish returns EVOLVE_EBUSY).
 */
#ifndef EVOLVE_ACTORS_BUS_H
#define EVOLVE_ACTORS_BUS_H

#include <stdatomic.h>
#include <stdint.h>

#include "actors/actors.h"

/* The envelope every event starts with. `seq` is set by the publisher before publishing (the
 * session numbers its events monotonically); the bus never changes it. */
struct act_event {
    atomic_uint refs;
    void (*destroy)(struct act_event *ev); /* called when the last reference goes */
    uint64_t seq;
};

/* Sets refs to 1 (the creator's) and the destroy function. @thread any */
void act_event_init(struct act_event *ev, void (*destroy)(struct act_event *ev), uint64_t seq);

/* Reference counting. unref of the last reference calls destroy. NULL is a no-op for unref.
 * @thread any */
void act_event_ref(struct act_event *ev);
void act_event_unref(struct act_event *ev);

/* What happens to a publish when a subscriber's ring is full. */
enum act_sub_policy {
    ACT_SUB_BLOCK = 0,   /* the publisher waits (act_bus_publish) or is told to (try_publish) */
    ACT_SUB_DROP_OLDEST, /* the oldest queued event is dropped; the subscriber is told how many
                          * it lost in the `gap` of the next event it receives */
};

/* A callback subscriber's function. Runs on a worker of the bus's runtime, in publish order for
 * this subscriber, never concurrently with itself. `gap` = events dropped just before this one
 * (DROP_OLDEST; always 0 for BLOCK). `ev` is borrowed for the call. */
typedef void (*act_sub_cb)(struct act_event *ev, uint64_t gap, void *payload);

struct act_sub_config {
    uint32_t capacity;              /* ring slots, rounded up to a power of two >= 2; 0 = 1024 */
    enum act_sub_policy policy;     /* when the ring is full */
    act_sub_cb cb;                  /* NULL: a poll handle (act_sub_poll) */
    void *payload;                  /* handed to cb and release untouched */
    void (*release)(void *payload); /* may be NULL; runs once after the last callback */
};

struct act_bus;
struct act_sub;

/* Creates a bus. Callback subscribers run on `rt` (may be NULL if only poll handles are used).
 * @return 0 or EVOLVE_ENOMEM. @thread any */
int act_bus_new(struct act_bus **out, struct act_runtime *rt);

/* Frees the bus. Every subscription must be unsubscribed first (asserted). NULL is a no-op.
 * @thread any; no publish may run concurrently */
void act_bus_free(struct act_bus *bus);

/* Adds a subscriber; it receives events published after this returns.
 * @return 0, EVOLVE_EINVAL (callback without runtime, capacity above 2^24), EVOLVE_ENOMEM or
 *         EVOLVE_ESHUTDOWN (the runtime is shutting down).
 * @thread any */
int act_bus_subscribe(struct act_sub **out, struct act_bus *bus, const struct act_sub_config *cfg);

/* Removes a subscriber: no callback starts after this returns (one already running may still
 * finish on its worker; cfg.release runs after it). Events still queued are released. Blocked
 * publishers waiting for this subscriber give up on it. Safe while others publish. A poll handle
 * must not be polled concurrently with its unsubscribe. NULL is a no-op.
 * May wait briefly for publishers that are inside the bus (never for a blocked one).
 * A callback subscriber also closes by itself when the runtime shuts down; it must still be
 * unsubscribed to be freed.
 * @thread any, including the subscriber's own callback */
void act_bus_unsubscribe(struct act_sub *sub);

/* Publishes `ev` to every subscriber, waiting while a BLOCK subscriber is full (backpressure).
 * Must not be called on a worker thread of the bus's runtime (asserted): a worker waiting for a
 * callback subscriber that needs a worker could deadlock the pool; actors use try_publish.
 * @return 0. @thread any thread that is not a worker */
int act_bus_publish(struct act_bus *bus, struct act_event *ev);

/* Non-blocking publish for actors. Delivers `ev` to the subscribers not yet served, in
 * subscription order, starting at *resume (0 for a new event). If a BLOCK subscriber is full it
 * stops there, sets *resume so that a later call with the same `ev` and `resume` continues with
 * that subscriber, and returns EVOLVE_EBUSY ("would block"). The caller then pauses its input
 * (e.g. stops reading the agent's pipe) and retries later. If `wake` is not NULL, `wake_msg` is
 * sent to `wake` once that subscriber has consumed an event (or unsubscribed); on EVOLVE_EBUSY
 * the bus owns wake_msg, on 0 the caller keeps it.
 * @return 0 or EVOLVE_EBUSY. @thread any */
int act_bus_try_publish(struct act_bus *bus, struct act_event *ev, uint64_t *resume,
                        struct act_actor *wake, struct act_msg *wake_msg);

/* Takes the next event of a poll handle, waiting up to timeout_ms (0: do not wait). On 0, *ev
 * holds one reference for the caller and *gap the number of events dropped just before it.
 * @return 0, EVOLVE_ETIMEDOUT, or EVOLVE_EINVAL (a callback subscriber).
 * @thread one thread at a time per handle */
int act_sub_poll(struct act_sub *sub, uint32_t timeout_ms, struct act_event **ev, uint64_t *gap);

/* Events this subscriber lost to DROP_OLDEST so far. @thread any */
uint64_t act_sub_dropped(const struct act_sub *sub);

#endif
