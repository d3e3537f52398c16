/* actors/actors.h — the actor runtime: a worker-thread pool running actors, their mailboxes,
 * one-off CPU jobs and timers. The event bus is in actors/bus.h. Design and ordering rules:
 * docs/internals/actors.md.
 *
 * Ownership:
 * - A message embeds `struct act_msg` first. The sender allocates it; once act_send() (or
 *   act_after()) is called the message belongs to the runtime until the behaviour receives it,
 *   and from then on to the behaviour, which frees it with act_msg_free() or sends it on.
 *   A message the runtime cannot deliver (actor stopped, timer cancelled, runtime shut down) is
 *   freed by the runtime through its `free` pointer (NULL: the runtime leaves it alone).
 * - act_actor_new() hands the caller one reference; every holder of an actor pointer that may
 *   send to it holds a reference (act_actor_ref/unref). The actor's state is freed with its
 *   state_free on the worker right after its last message, the struct when the last reference
 *   goes.
 * - Every function here is safe to call from any thread unless its @thread line says otherwise.
 */
#ifndef EVOLVE_ACTORS_ACTORS_H
#define EVOLVE_ACTORS_ACTORS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Messages an actor handles per turn before it yields its worker to other actors. */
#define ACT_TURN_MAX 64

struct act_runtime;
struct act_actor;
struct act_msg;

/* Frees a message the runtime could not deliver, or (through act_msg_free) one a behaviour is
 * done with. */
typedef void (*act_msg_free_fn)(struct act_msg *msg);

/* The header every message starts with. `next` belongs to the mailbox: never read or set it.
 * `type` is the sender's tag, free for the behaviour to switch on. */
struct act_msg {
    _Atomic(struct act_msg *) next; /* mailbox link; owned by the runtime */
    act_msg_free_fn free;           /* NULL: not owned by the runtime (static or embedded) */
    uint32_t type;                  /* user tag */
};

/* Fills the header of a message before its first send. @thread any */
static inline void act_msg_init(struct act_msg *msg, uint32_t type, act_msg_free_fn free_fn)
{
    atomic_store_explicit(&msg->next, NULL, memory_order_relaxed);
    msg->free = free_fn;
    msg->type = type;
}

/* Frees `msg` through its free pointer; NULL msg or NULL free pointer do nothing. @thread any */
void act_msg_free(struct act_msg *msg);

/* Runtime configuration. Zero values mean defaults. */
struct act_runtime_config {
    unsigned worker_threads; /* 0 = one per online core */
};

/* Starts the worker threads and the timer thread. `cfg` may be NULL (defaults).
 * @return 0, EVOLVE_ENOMEM, or EVOLVE_ERROR when a thread cannot be started.
 * @thread any */
int act_runtime_new(struct act_runtime **out, const struct act_runtime_config *cfg);

/* Stops accepting new actors, jobs and timers, cancels pending timers (their messages are
 * freed), stops every actor (each one first handles the messages already in its mailbox), runs
 * the queued jobs, then joins the workers. Idempotent.
 * Must not be called from a worker thread of `rt` (asserted): it waits for them.
 * @thread any thread that is not one of rt's workers */
void act_runtime_shutdown(struct act_runtime *rt);

/* Shuts down (if not done yet) and frees the runtime. NULL is a no-op. Actor references the
 * program still holds stay valid to send to (the message is freed, EVOLVE_ESHUTDOWN) and to
 * unref.
 * @thread any thread that is not one of rt's workers */
void act_runtime_free(struct act_runtime *rt);

/* Number of worker threads. @thread any */
unsigned act_runtime_workers(const struct act_runtime *rt);

/* True when the calling thread is one of rt's workers. @thread any */
bool act_runtime_on_worker(const struct act_runtime *rt);

/* Runs fn(arg) once on a worker (for CPU work: gzip, SHA-256). Jobs are not ordered with each
 * other. Queued jobs run even during shutdown.
 * @return 0, EVOLVE_ENOMEM, or EVOLVE_ESHUTDOWN (fn will not run).
 * @thread any */
int act_runtime_submit(struct act_runtime *rt, void (*fn)(void *arg), void *arg);

/* An actor's behaviour: handles one message. Runs on a worker, never concurrently with itself.
 * It owns `msg` (free it with act_msg_free or send it on). */
typedef void (*act_behaviour_fn)(struct act_actor *self, void *state, struct act_msg *msg);

/* Creates an actor. `state` is private to it; state_free (may be NULL) frees it on the worker
 * after the actor's last message.
 * @return 0, EVOLVE_ENOMEM, or EVOLVE_ESHUTDOWN.
 * @thread any */
int act_actor_new(struct act_actor **out, struct act_runtime *rt, act_behaviour_fn behaviour,
                  void *state, void (*state_free)(void *state));

/* Queues `msg` for the actor. Messages from one sender arrive in the order sent. After the
 * actor is stopped the message is freed instead (never delivered) and EVOLVE_ESHUTDOWN is
 * returned; a send racing a stop either lands before the stop marker (delivered) or after it
 * (freed). The caller must hold a reference to `a`.
 * @return 0 or EVOLVE_ESHUTDOWN.
 * @thread any */
int act_send(struct act_actor *a, struct act_msg *msg);

/* Stops the actor: messages already queued are handled, then state_free runs; later messages
 * are freed. Idempotent. Does not drop the caller's reference.
 * @thread any */
void act_actor_stop(struct act_actor *a);

/* Reference counting of the actor struct. @thread any */
void act_actor_ref(struct act_actor *a);
void act_actor_unref(struct act_actor *a);

/* The runtime an actor runs on. @thread any */
struct act_runtime *act_actor_runtime(const struct act_actor *a);

/* Delivers `msg` to `a` after delay_ms milliseconds (CLOCK_MONOTONIC). Timers with the same
 * deadline fire in the order they were set. `id_out` (may be NULL) receives an id for
 * act_timer_cancel; ids are never 0 and never reused. The timer holds its own reference to `a`.
 * @return 0, EVOLVE_ENOMEM or EVOLVE_ESHUTDOWN; on error the message is freed.
 * @thread any */
int act_after(uint64_t *id_out, struct act_actor *a, uint64_t delay_ms, struct act_msg *msg);

/* Cancels a timer: on 0 it never fires and its message has been freed. O(pending timers).
 * @return 0, or EVOLVE_ENOTFOUND (already fired, already cancelled or unknown).
 * @thread any */
int act_timer_cancel(struct act_runtime *rt, uint64_t id);

#endif
