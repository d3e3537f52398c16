/* bus.c — the event bus: subscriber list, one bounded ring per subscriber, full-ring policies,
 * callback subscribers (an internal actor per subscriber) and poll handles.
 * Owns: struct act_bus, struct act_sub, the rings and the references they hold on events.
 * Does not own: the events (refcounted; the publisher keeps its own reference).
 * Threads: publish/try_publish/subscribe/unsubscribe from any thread (publish not on a worker);
 * callbacks on the workers of the bus's runtime; act_sub_poll on one thread per handle.
 *
 * Each subscriber's ring (ring.c) is multi-producer so that many publishers need no forwarder,
 * and multi-consumer so that a DROP_OLDEST publisher can itself take the oldest event out. Every
 * position the subscriber skips was taken by a dropper, so the gap it reports is exact:
 * position - (last position + 1).
 *
 * The subscriber list is an immutable array swapped by writers (under bus->mu) and read by
 * publishers without locks inside an epoch read section (epoch.c). A writer swaps the array and
 * waits for the readers that may still see the old one before freeing it.
 * Read sections never block: a publisher that must wait for space leaves the section first,
 * holding a reference on that subscriber, and continues after it by subscriber id. */
#include "actors/bus.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/epoch.h"
#include "actors/internal.h"
#include "actors/ring.h"
#include "core/error.h"

#define DEFAULT_CAPACITY 1024u
#define MAX_CAPACITY     (1u << 24)

struct wake {
    struct wake *next;
    struct act_actor *actor; /* referenced */
    struct act_msg *msg;
};

struct act_sub {
    struct act_ring ring; /* first: its positions sit on their own cache lines */
    size_t next_pos;      /* consumer only: position after the last event it received */

    uint64_t id; /* subscription order; the list is sorted by it */
    struct act_bus *bus;
    enum act_sub_policy policy;
    act_sub_cb cb;
    void *payload;
    void (*release)(void *payload);
    atomic_long refs; /* the list's + the actor's + one per kick in flight */
    atomic_bool closed;
    atomic_ullong dropped;

    /* Slow paths only. */
    pthread_mutex_t mu;
    pthread_cond_t space_cv;  /* blocked publishers */
    pthread_cond_t data_cv;   /* the poller; CLOCK_MONOTONIC */
    atomic_int space_waiters; /* blocked publishers + registered wakes */
    atomic_int data_waiters;  /* pollers about to wait */
    struct wake *wakes;       /* under mu */

    /* Callback subscribers. */
    struct act_actor *actor; /* referenced; runs the callbacks */
    atomic_bool kicked;      /* a kick message is queued or being handled */
    struct act_msg kick;     /* reused: at most one in flight (kicked) */
};

struct sub_list {
    size_t n;
    struct act_sub *subs[];
};

struct act_bus {
    struct act_runtime *rt;
    _Atomic(struct sub_list *) list;
    struct act_epoch epoch; /* read sections of publishers over `list` */
    pthread_mutex_t mu;     /* writers */
    uint64_t next_id;       /* under mu */
};

/* ---- events ---------------------------------------------------------------------------- */

void act_event_init(struct act_event *ev, void (*destroy)(struct act_event *ev), uint64_t seq)
{
    atomic_store_explicit(&ev->refs, 1, memory_order_relaxed);
    ev->destroy = destroy;
    ev->seq = seq;
}

void act_event_ref(struct act_event *ev)
{
    atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
}

void act_event_unref(struct act_event *ev)
{
    if (!ev)
        return;
    /* acq_rel: release orders this holder's reads before the destroy; acquire (last one) sees
     * every other holder's. */
    if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) == 1 && ev->destroy)
        ev->destroy(ev);
}

/* The ring stores void pointers; events come out through this. */
static bool ring_pop_event(struct act_sub *s, struct act_event **ev, size_t *pos)
{
    void *item;

    if (!act_ring_pop(&s->ring, &item, pos))
        return false;
    *ev = item;
    return true;
}

/* ---- subscriber lifetime --------------------------------------------------------------- */

static void sub_ref(struct act_sub *s)
{
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

static void sub_destroy(struct act_sub *s)
{
    struct act_event *ev;
    size_t pos;

    while (ring_pop_event(s, &ev, &pos))
        act_event_unref(ev);
    assert(s->wakes == NULL);
    if (s->release)
        s->release(s->payload);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->space_cv);
    pthread_cond_destroy(&s->data_cv);
    act_ring_dispose(&s->ring);
    if (s->actor)
        act_actor_unref(s->actor); /* never the last reference inside the actor's own turn */
    free(s);
}

static void sub_unref(struct act_sub *s)
{
    /* acq_rel: as in act_event_unref. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        sub_destroy(s);
}

/* Sends every registered wake message and wakes blocked publishers. */
static void fire_wakes(struct act_sub *s)
{
    struct wake *list, *w;

    pthread_mutex_lock(&s->mu);
    list = s->wakes;
    s->wakes = NULL;
    for (w = list; w; w = w->next)
        atomic_fetch_sub_explicit(&s->space_waiters, 1, memory_order_relaxed);
    pthread_cond_broadcast(&s->space_cv);
    pthread_mutex_unlock(&s->mu);
    while (list) {
        w = list;
        list = w->next;
        act_send(w->actor, w->msg); /* frees the message if that actor stopped */
        act_actor_unref(w->actor);
        free(w);
    }
}

/* After the consumer took an event: tell whoever waits for space. */
static void notify_space(struct act_sub *s)
{
    /* seq_cst fence: Dekker with wait_space/register_wake, which bump space_waiters, fence,
     * then look at the ring: either they see our freed slot or we see them. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->space_waiters, memory_order_relaxed) > 0)
        fire_wakes(s);
}

/* Takes the next event for the subscriber itself (not a dropper). */
static bool take(struct act_sub *s, struct act_event **ev, uint64_t *gap)
{
    size_t pos;

    if (!ring_pop_event(s, ev, &pos))
        return false;
    *gap = (uint64_t)(pos - s->next_pos);
    s->next_pos = pos + 1;
    notify_space(s);
    return true;
}

/* ---- callback subscribers -------------------------------------------------------------- */

static void kick_release(struct act_msg *msg)
{
    /* The kick was not delivered (the actor stopped): drop the reference it carried. */
    sub_unref((struct act_sub *)((char *)msg - offsetof(struct act_sub, kick)));
}

static void kick(struct act_sub *s)
{
    /* acq_rel: release pairs with the consumer's exchange in sub_behaviour, so the event we
     * just pushed is visible to the drain that follows it. */
    if (atomic_exchange_explicit(&s->kicked, true, memory_order_acq_rel))
        return; /* a kick is queued, or the consumer has not cleared the flag yet */
    sub_ref(s);
    act_send(s->actor, &s->kick);
}

static void sub_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct act_sub *s = state;
    struct act_event *ev;
    uint64_t gap;
    int n;

    (void)self;
    (void)msg; /* the kick: may be re-sent as soon as `kicked` is clear, so never touched */
    /* acq_rel: acquire pairs with the publishers' exchange in kick(): every event pushed
     * before a publisher found the flag set is visible to the drain below. */
    atomic_exchange_explicit(&s->kicked, false, memory_order_acq_rel);
    sub_unref(s); /* the kick's reference; the actor's own keeps s alive */
    for (n = 0; n < ACT_TURN_MAX; n++) {
        /* acquire: pairs with the release store in act_bus_unsubscribe. */
        if (atomic_load_explicit(&s->closed, memory_order_acquire))
            return;
        if (!take(s, &ev, &gap))
            return;
        s->cb(ev, gap, s->payload);
        act_event_unref(ev);
    }
    kick(s); /* more may be waiting: yield the worker, run again later */
}

/* The actor stopped (unsubscribe, or runtime shutdown): nobody will consume any more, so the
 * subscriber closes and publishers skip it instead of filling its ring and blocking. */
static void sub_state_free(void *state)
{
    struct act_sub *s = state;

    pthread_mutex_lock(&s->mu);
    /* release: as in act_bus_unsubscribe. */
    atomic_store_explicit(&s->closed, true, memory_order_release);
    pthread_cond_broadcast(&s->space_cv);
    pthread_mutex_unlock(&s->mu);
    fire_wakes(s);
    sub_unref(s); /* the actor's reference */
}

/* ---- poll handles ---------------------------------------------------------------------- */

static void notify_data(struct act_sub *s)
{
    if (s->cb) {
        kick(s);
        return;
    }
    /* seq_cst fence: Dekker with act_sub_poll (bump data_waiters, fence, look at the ring). */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->data_waiters, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_broadcast(&s->data_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int act_sub_poll(struct act_sub *sub, uint32_t timeout_ms, struct act_event **ev, uint64_t *gap)
{
    uint64_t deadline = now_ms() + timeout_ms;
    struct timespec ts;

    *ev = NULL;
    *gap = 0;
    if (sub->cb)
        return core_error_set(EVOLVE_EINVAL, "act_sub_poll: subscriber %llu has a callback",
                              (unsigned long long)sub->id);
    ts.tv_sec = (time_t)(deadline / 1000u);
    ts.tv_nsec = (long)(deadline % 1000u) * 1000000L;
    for (;;) {
        if (take(sub, ev, gap))
            return 0;
        if (now_ms() >= deadline)
            return core_error_set(EVOLVE_ETIMEDOUT, "subscriber %llu: no event within %u ms",
                                  (unsigned long long)sub->id, (unsigned)timeout_ms);
        pthread_mutex_lock(&sub->mu);
        atomic_fetch_add_explicit(&sub->data_waiters, 1, memory_order_relaxed);
        /* seq_cst fence: pairs with the one in notify_data. */
        atomic_thread_fence(memory_order_seq_cst);
        if (!act_ring_has_data(&sub->ring) &&
            !atomic_load_explicit(&sub->closed, memory_order_acquire))
            pthread_cond_timedwait(&sub->data_cv, &sub->mu, &ts);
        atomic_fetch_sub_explicit(&sub->data_waiters, 1, memory_order_relaxed);
        pthread_mutex_unlock(&sub->mu);
    }
}

uint64_t act_sub_dropped(const struct act_sub *sub)
{
    return atomic_load_explicit(&sub->dropped, memory_order_relaxed);
}

/* ---- the subscriber list --------------------------------------------------------------- */

/* Swaps in `next` (may be NULL) and frees the old list once no reader sees it. */
static void swap_list(struct act_bus *bus, struct sub_list *next)
{
    struct sub_list *old;

    /* seq_cst: ordered before the generation bump in act_epoch_synchronize. */
    old = atomic_exchange_explicit(&bus->list, next, memory_order_seq_cst);
    act_epoch_synchronize(&bus->epoch);
    free(old);
}

int act_bus_new(struct act_bus **out, struct act_runtime *rt)
{
    struct act_bus *bus = calloc(1, sizeof(*bus));

    *out = NULL;
    if (!bus)
        return core_error_oom();
    bus->rt = rt;
    atomic_store_explicit(&bus->list, NULL, memory_order_relaxed);
    pthread_mutex_init(&bus->mu, NULL);
    *out = bus;
    return 0;
}

void act_bus_free(struct act_bus *bus)
{
    struct sub_list *list;
    size_t i;

    if (!bus)
        return;
    list = atomic_load_explicit(&bus->list, memory_order_acquire);
    /* Only subscribers whose unsubscribe could not allocate a smaller list remain (closed). */
    for (i = 0; list && i < list->n; i++) {
        assert(atomic_load_explicit(&list->subs[i]->closed, memory_order_relaxed));
        sub_unref(list->subs[i]);
    }
    free(list);
    pthread_mutex_destroy(&bus->mu);
    free(bus);
}

int act_bus_subscribe(struct act_sub **out, struct act_bus *bus, const struct act_sub_config *cfg)
{
    struct act_sub *s;
    struct sub_list *old, *next = NULL;
    pthread_condattr_t attr;
    size_t cap = 2, n; /* at least 2: with one slot "full" and "free" look the same */
    int rc;

    *out = NULL;
    if (cfg->cb && !bus->rt)
        return core_error_set(EVOLVE_EINVAL, "act_bus_subscribe: a callback subscriber needs a "
                                             "bus with a runtime");
    if (cfg->capacity > MAX_CAPACITY)
        return core_error_set(EVOLVE_EINVAL, "act_sub_config.capacity: %u is above %u",
                              (unsigned)cfg->capacity, MAX_CAPACITY);
    while (cap < (cfg->capacity ? cfg->capacity : DEFAULT_CAPACITY))
        cap <<= 1;
    s = aligned_alloc(64, sizeof(*s));
    if (!s)
        return core_error_oom();
    memset(s, 0, sizeof(*s));
    rc = act_ring_init(&s->ring, cap);
    if (rc < 0) {
        free(s);
        return rc;
    }
    s->bus = bus;
    s->policy = cfg->policy;
    s->cb = cfg->cb;
    s->payload = cfg->payload;
    s->release = cfg->release;
    atomic_store_explicit(&s->refs, 1, memory_order_relaxed); /* the list's */
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->space_cv, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->data_cv, &attr);
    pthread_condattr_destroy(&attr);
    act_msg_init(&s->kick, 0, kick_release);
    if (s->cb) {
        rc = act_actor_new(&s->actor, bus->rt, sub_behaviour, s, sub_state_free);
        if (rc < 0) {
            s->release = NULL; /* the caller keeps its payload on failure */
            sub_destroy(s);
            return rc;
        }
        sub_ref(s); /* the actor's */
    }

    pthread_mutex_lock(&bus->mu);
    old = atomic_load_explicit(&bus->list, memory_order_relaxed); /* writers hold mu */
    n = old ? old->n : 0;
    next = malloc(sizeof(*next) + (n + 1) * sizeof(next->subs[0]));
    if (!next) {
        pthread_mutex_unlock(&bus->mu);
        s->release = NULL;
        if (s->actor) {
            atomic_store_explicit(&s->closed, true, memory_order_release);
            act_actor_stop(s->actor); /* its state_free drops the actor's reference */
        }
        sub_unref(s);
        return core_error_oom();
    }
    if (n)
        memcpy(next->subs, old->subs, n * sizeof(next->subs[0]));
    s->id = ++bus->next_id; /* larger than every id in the list: stays sorted */
    next->subs[n] = s;
    next->n = n + 1;
    swap_list(bus, next);
    pthread_mutex_unlock(&bus->mu);
    *out = s;
    return 0;
}

void act_bus_unsubscribe(struct act_sub *sub)
{
    struct act_bus *bus;
    struct sub_list *old, *next;
    size_t i, j;

    if (!sub)
        return;
    bus = sub->bus;
    pthread_mutex_lock(&sub->mu);
    /* release: pairs with the acquire loads in offer/wait_space/sub_behaviour/poll; under mu so a
     * publisher about to wait for space either sees it or is woken by this broadcast. */
    atomic_store_explicit(&sub->closed, true, memory_order_release);
    pthread_cond_broadcast(&sub->space_cv);
    pthread_cond_broadcast(&sub->data_cv);
    pthread_mutex_unlock(&sub->mu);
    fire_wakes(sub);

    pthread_mutex_lock(&bus->mu);
    old = atomic_load_explicit(&bus->list, memory_order_relaxed);
    next = old->n > 1 ? malloc(sizeof(*next) + (old->n - 1) * sizeof(next->subs[0])) : NULL;
    if (old->n > 1 && !next) {
        /* Benign OOM: the closed subscriber stays in the list (publishers skip it) and
         * act_bus_free releases it. */
        pthread_mutex_unlock(&bus->mu);
        if (sub->actor)
            act_actor_stop(sub->actor);
        return;
    }
    if (next) {
        for (i = 0, j = 0; i < old->n; i++)
            if (old->subs[i] != sub)
                next->subs[j++] = old->subs[i];
        next->n = j;
    }
    swap_list(bus, next);
    pthread_mutex_unlock(&bus->mu);
    if (sub->actor)
        act_actor_stop(sub->actor); /* events still queued are released by sub_destroy */
    sub_unref(sub);                 /* the list's reference */
}

/* ---- publishing ------------------------------------------------------------------------ */

/* Offers ev to one subscriber without blocking. False: a BLOCK subscriber is full. */
static bool offer(struct act_sub *s, struct act_event *ev)
{
    struct act_event *old;
    size_t pos;

    /* acquire: pairs with the release store in act_bus_unsubscribe. */
    if (atomic_load_explicit(&s->closed, memory_order_acquire))
        return true;
    act_event_ref(ev);
    for (;;) {
        if (act_ring_push(&s->ring, ev)) {
            notify_data(s);
            return true;
        }
        if (s->policy == ACT_SUB_BLOCK) {
            act_event_unref(ev); /* never the last: the publisher holds one */
            return false;
        }
        if (ring_pop_event(s, &old, &pos)) { /* DROP_OLDEST: this position becomes the gap */
            atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
            act_event_unref(old);
        }
    }
}

/* Delivers ev to the subscribers with id >= *resume. Returns NULL when done, else the full
 * BLOCK subscriber it stopped at, referenced, with *resume set to its id. */
static struct act_sub *deliver(struct act_bus *bus, struct act_event *ev, uint64_t *resume)
{
    struct act_sub *blocked = NULL;
    struct sub_list *list;
    size_t i;
    int slot = act_epoch_enter(&bus->epoch);

    /* seq_cst: ordered after act_epoch_enter's generation check. */
    list = atomic_load_explicit(&bus->list, memory_order_seq_cst);
    for (i = 0; list && i < list->n; i++) {
        struct act_sub *s = list->subs[i];

        if (s->id < *resume)
            continue;
        if (!offer(s, ev)) {
            sub_ref(s);
            *resume = s->id;
            blocked = s;
            break;
        }
    }
    act_epoch_exit(&bus->epoch, slot);
    return blocked;
}

/* Outside any read section: waits until ev fits in s (or s is unsubscribed). */
static void wait_space(struct act_sub *s, struct act_event *ev)
{
    bool pushed = false;

    act_event_ref(ev);
    pthread_mutex_lock(&s->mu);
    atomic_fetch_add_explicit(&s->space_waiters, 1, memory_order_relaxed);
    /* seq_cst fence: pairs with the one in notify_space. */
    atomic_thread_fence(memory_order_seq_cst);
    for (;;) {
        if (atomic_load_explicit(&s->closed, memory_order_acquire))
            break;
        if (act_ring_push(&s->ring, ev)) {
            pushed = true;
            break;
        }
        pthread_cond_wait(&s->space_cv, &s->mu);
    }
    atomic_fetch_sub_explicit(&s->space_waiters, 1, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    if (pushed)
        notify_data(s);
    else
        act_event_unref(ev);
}

int act_bus_publish(struct act_bus *bus, struct act_event *ev)
{
    struct act_sub *s;
    uint64_t resume = 0;

    assert(!bus->rt || !act_runtime_on_worker(bus->rt));
    for (;;) {
        s = deliver(bus, ev, &resume);
        if (!s)
            return 0;
        wait_space(s, ev);
        resume = s->id + 1;
        sub_unref(s);
    }
}

/* Registers a wake message on a full subscriber; sends it at once if space appeared meanwhile
 * (a spurious wake-up is harmless; a lost one would stall the publisher). */
static void register_wake(struct act_sub *s, struct act_actor *actor, struct act_msg *msg)
{
    struct wake *w = malloc(sizeof(*w));

    if (!w) {
        act_send(actor, msg); /* benign OOM: wake now, the caller simply retries sooner */
        return;
    }
    act_actor_ref(actor);
    w->actor = actor;
    w->msg = msg;
    pthread_mutex_lock(&s->mu);
    w->next = s->wakes;
    s->wakes = w;
    atomic_fetch_add_explicit(&s->space_waiters, 1, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    /* seq_cst fence: pairs with the one in notify_space. */
    atomic_thread_fence(memory_order_seq_cst);
    if (act_ring_has_space(&s->ring) || atomic_load_explicit(&s->closed, memory_order_acquire))
        fire_wakes(s);
}

int act_bus_try_publish(struct act_bus *bus, struct act_event *ev, uint64_t *resume,
                        struct act_actor *wake, struct act_msg *wake_msg)
{
    struct act_sub *s = deliver(bus, ev, resume);
    uint64_t id;

    if (!s)
        return 0;
    id = s->id;
    if (wake)
        register_wake(s, wake, wake_msg);
    sub_unref(s);
    return core_error_set(EVOLVE_EBUSY, "subscriber %llu is full: publish would block",
                          (unsigned long long)id);
}
