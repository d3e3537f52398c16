/* actor.c — actors: the mailbox, turns, stop, reference counts and the registry of live actors.
 * Owns: struct act_actor and its mailbox, an intrusive MPSC queue of struct act_msg in the style
 * of Pony's messageq: a send is ONE atomic exchange on `head`, whose low bit means "empty and
 * not scheduled", so the exchange itself tells the sender it must schedule the actor.
 * Does not own: message memory (sender allocates, the behaviour frees; undeliverable messages
 * are freed here through msg->free), the run queue (runtime.c).
 * Threads: act_send/act_actor_stop/ref/unref from any thread; actor_run only on the worker
 * that popped the actor, and only one at a time (the empty bit guarantees it; `running` checks
 * it under assert).
 * Ordering: messages of one sender are delivered in the order sent; a turn's writes to the
 * state happen-before the next turn (release CAS marking empty -> a sender's acquire exchange ->
 * run-queue push -> pop on the next worker). */
#include "actors/internal.h"

#include <assert.h>
#include <stdlib.h>

#include "core/error.h"

#define MB_EMPTY ((uintptr_t)1)

/* `head` and the consumer's `tail` on separate cache lines: the consumer writes `tail` on every
 * pop and would otherwise steal the line each sender's exchange needs. */
struct act_mailbox {
    _Atomic(uintptr_t) head; /* last pushed message | MB_EMPTY; producers exchange it */
    struct act_msg *tail __attribute__((aligned(64))); /* next to pop; the running worker's */
    struct act_msg stub;                               /* keeps the list non-empty */
};

struct act_actor {
    struct act_task task; /* first: the run queue treats actors as tasks */
    struct act_runtime *rt;
    act_behaviour_fn behaviour;
    void *state;
    void (*state_free)(void *state);
    atomic_long refs;        /* holders' refs + timers + 1 "alive" (see schedule) */
    atomic_bool stopping;    /* act_actor_stop was called */
    bool dead;               /* stop marker handled; touched only by the running worker */
    atomic_int running;      /* 1 while a worker runs a turn: asserted never to overlap */
    struct act_msg stop_msg; /* the marker act_actor_stop pushes */
    struct act_actor *live_prev, *live_next; /* registry of live actors, under rt->mu */
    struct act_mailbox mb __attribute__((aligned(64)));
};

void act_msg_free(struct act_msg *msg)
{
    if (msg && msg->free)
        msg->free(msg);
}

static void mb_init(struct act_mailbox *mb)
{
    atomic_store_explicit(&mb->stub.next, NULL, memory_order_relaxed);
    mb->stub.free = NULL;
    mb->stub.type = 0;
    mb->tail = &mb->stub;
    atomic_store_explicit(&mb->head, (uintptr_t)&mb->stub | MB_EMPTY, memory_order_relaxed);
}

/* Returns true when the mailbox was empty and unscheduled: the caller must schedule the actor. */
static bool mb_push(struct act_mailbox *mb, struct act_msg *msg)
{
    uintptr_t prev;

    atomic_store_explicit(&msg->next, NULL, memory_order_relaxed);
    /* acq_rel: release publishes msg->next = NULL to the next pusher, which links after us;
     * acquire pairs with the previous pusher's exchange (its NULL store is ordered before our
     * link) and with the consumer's release CAS that set MB_EMPTY, so when we schedule the
     * actor its last turn happens-before the next one. */
    prev = atomic_exchange_explicit(&mb->head, (uintptr_t)msg, memory_order_acq_rel);
    /* release: pairs with the acquire loads of ->next in mb_pop; the message is complete before
     * the consumer can reach it. */
    atomic_store_explicit(&((struct act_msg *)(prev & ~MB_EMPTY))->next, msg, memory_order_release);
    return (prev & MB_EMPTY) != 0;
}

/* Vyukov's intrusive MPSC pop, consumer only. NULL when empty or when a push is between its
 * exchange and its link (the turn then ends without marking empty and the actor runs again). */
static struct act_msg *mb_pop(struct act_mailbox *mb)
{
    struct act_msg *tail = mb->tail;
    /* acquire (all ->next loads): pair with the release link store in mb_push. */
    struct act_msg *next = atomic_load_explicit(&tail->next, memory_order_acquire);

    if (tail == &mb->stub) {
        if (!next)
            return NULL;
        mb->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next) {
        mb->tail = next;
        /* The next message was written on the sender's core: start fetching its line while the
         * behaviour handles this one. */
        __builtin_prefetch(next, 0, 3);
        return tail;
    }
    /* acquire: pairs with the pushers' exchange; a moved head means a push in progress. */
    if ((uintptr_t)tail != (atomic_load_explicit(&mb->head, memory_order_acquire) & ~MB_EMPTY))
        return NULL;
    mb_push(mb, &mb->stub); /* the consumer's own push never sees MB_EMPTY: it is running */
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        mb->tail = next;
        return tail;
    }
    return NULL;
}

/* Ends a turn: marks the mailbox empty when it holds nothing. False when a message is there or
 * on its way: the actor must run again (its senders saw it non-empty and will not schedule). */
static bool mb_mark_empty(struct act_mailbox *mb)
{
    uintptr_t expect = (uintptr_t)&mb->stub;

    if (mb->tail != &mb->stub || atomic_load_explicit(&mb->stub.next, memory_order_acquire) != NULL)
        return false;
    /* release: pairs with the acquire exchange of the sender that next finds MB_EMPTY; this
     * turn's writes happen-before the next turn on whatever worker. */
    return atomic_compare_exchange_strong_explicit(&mb->head, &expect, expect | MB_EMPTY,
                                                   memory_order_release, memory_order_relaxed);
}

static void registry_remove(struct act_actor *a)
{
    struct act_runtime *rt = a->rt;

    pthread_mutex_lock(&rt->mu);
    if (a->live_prev)
        a->live_prev->live_next = a->live_next;
    else
        rt->live = a->live_next;
    if (a->live_next)
        a->live_next->live_prev = a->live_prev;
    a->live_prev = a->live_next = NULL;
    if (--rt->nlive == 0)
        pthread_cond_broadcast(&rt->quiet_cv);
    pthread_mutex_unlock(&rt->mu);
}

void act_registry_stop_all(struct act_runtime *rt)
{
    struct act_actor *a;

    pthread_mutex_lock(&rt->mu);
    for (a = rt->live; a; a = a->live_next)
        act_actor_stop(a); /* pushes and schedules; takes no lock */
    pthread_mutex_unlock(&rt->mu);
}

/* The stop marker was reached: free the state and leave the registry. The "alive" reference
 * now serves as this turn's reference and goes when the turn ends with the mailbox empty. */
static void actor_die(struct act_actor *a)
{
    a->dead = true;
    if (a->state_free)
        a->state_free(a->state);
    a->state = NULL;
    registry_remove(a);
}

static void actor_run(struct act_task *task)
{
    struct act_actor *a = (struct act_actor *)task;
    struct act_msg *msg;
    bool dead;
    int n;

#ifndef NDEBUG
    /* acquire/release on `running`: only a consistency check (the empty bit is what orders
     * turns); asserts that two workers never run one actor at once. */
    int was_running = atomic_exchange_explicit(&a->running, 1, memory_order_acquire);

    assert(was_running == 0);
    (void)was_running;
#endif
    for (n = 0; n < ACT_TURN_MAX; n++) {
        msg = mb_pop(&a->mb);
        if (!msg)
            break;
        if (msg == &a->stop_msg)
            actor_die(a);
        else if (a->dead)
            act_msg_free(msg); /* sent after the stop: never delivered */
        else
            a->behaviour(a, a->state, msg);
    }
#ifndef NDEBUG
    atomic_store_explicit(&a->running, 0, memory_order_release);
#endif
    /* Read before marking empty: afterwards another turn may run (and die) at once. */
    dead = a->dead;
    if (n < ACT_TURN_MAX && mb_mark_empty(&a->mb)) {
        if (dead)
            act_actor_unref(a); /* the reference this dead actor's turn held (see schedule) */
        return;
    }
    /* More to do: run again later; a dead actor's turn reference carries over. The runtime is
     * still running: shutdown waits for the workers to empty their queues. */
    act_runq_schedule(a->rt, &a->task);
}

int act_actor_new(struct act_actor **out, struct act_runtime *rt, act_behaviour_fn behaviour,
                  void *state, void (*state_free)(void *state))
{
    struct act_actor *a;

    *out = NULL;
    a = aligned_alloc(64, sizeof(*a));
    if (!a)
        return core_error_oom();
    a->task.run = actor_run;
    atomic_store_explicit(&a->task.next, NULL, memory_order_relaxed);
    a->rt = rt;
    a->behaviour = behaviour;
    a->state = state;
    a->state_free = state_free;
    atomic_store_explicit(&a->refs, 2, memory_order_relaxed); /* the caller's + alive */
    atomic_store_explicit(&a->stopping, false, memory_order_relaxed);
    a->dead = false;
    atomic_store_explicit(&a->running, 0, memory_order_relaxed);
    act_msg_init(&a->stop_msg, 0, NULL);
    mb_init(&a->mb);
    a->live_prev = NULL;
    pthread_mutex_lock(&rt->mu);
    /* relaxed: `closing` only changes under rt->mu, which we hold. */
    if (atomic_load_explicit(&rt->closing, memory_order_relaxed)) {
        pthread_mutex_unlock(&rt->mu);
        free(a);
        return core_error_set(EVOLVE_ESHUTDOWN, "actor not created: the runtime is shutting down");
    }
    a->live_next = rt->live;
    if (rt->live)
        rt->live->live_prev = a;
    rt->live = a;
    rt->nlive++;
    pthread_mutex_unlock(&rt->mu);
    *out = a;
    return 0;
}

/* Called by the sender whose push found the mailbox empty. While the actor is alive its
 * "alive" reference keeps it through the turn, so scheduling costs no reference count. A dead
 * actor (stopped, reached by a send that raced the stop) has given that reference to its last
 * turn, so the new turn takes its own, dropped when it ends with the mailbox empty. Reading
 * `dead` is safe: our acquire exchange saw MB_EMPTY, set by the release CAS that ended the last
 * turn, which wrote `dead` before it. */
static void schedule(struct act_actor *a)
{
    if (a->dead)
        act_actor_ref(a);
    act_runq_schedule(a->rt, &a->task);
}

int act_send(struct act_actor *a, struct act_msg *msg)
{
    /* acquire: pairs with the exchange in act_actor_stop; a send that happens after the stop
     * always sees it. */
    if (atomic_load_explicit(&a->stopping, memory_order_acquire)) {
        uint32_t type = msg->type;

        act_msg_free(msg);
        return core_error_set(EVOLVE_ESHUTDOWN, "message of type %u not delivered: actor stopped",
                              (unsigned)type);
    }
    if (mb_push(&a->mb, msg))
        schedule(a);
    return 0;
}

void act_actor_stop(struct act_actor *a)
{
    /* acq_rel: release pairs with the acquire load in act_send. */
    if (atomic_exchange_explicit(&a->stopping, true, memory_order_acq_rel))
        return;
    if (mb_push(&a->mb, &a->stop_msg))
        schedule(a);
}

void act_actor_ref(struct act_actor *a)
{
    atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

void act_actor_unref(struct act_actor *a)
{
    struct act_msg *msg;

    if (!a)
        return;
    /* acq_rel: release orders this holder's uses before the free; acquire (on the last one)
     * makes every other holder's uses visible before we free. */
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Only a stopped, drained actor gets here (the alive reference goes in actor_die), but a
     * send that raced the stop may have left messages: free them, never deliver them. */
    for (;;) {
        msg = mb_pop(&a->mb);
        if (!msg)
            break;
        if (msg != &a->stop_msg)
            act_msg_free(msg);
    }
    free(a);
}

struct act_runtime *act_actor_runtime(const struct act_actor *a)
{
    return a->rt;
}
