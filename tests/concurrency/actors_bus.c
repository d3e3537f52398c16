/* The event bus: BLOCK backpressure (blocking and try_publish), DROP_OLDEST with exact gaps,
 * poll handles with timeouts, callback order without self-overlap, unsubscribe while
 * publishing, and shutdown with subscribers attached. Every event is counted: each one created
 * must be destroyed exactly once (ASan also checks). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "actors/actors.h"
#include "actors/bus.h"
#include "evolve/common.h"
#include "support/support.h"
#include "support/tap.h"

#define DEADLINE_MS 60000
#ifdef EVOLVE_TSAN
#define MANY 20000
#else
#define MANY 200000
#endif

static atomic_long events_alive;

struct tev {
    struct act_event base; /* first */
    uint32_t publisher;
};

static void tev_destroy(struct act_event *ev)
{
    atomic_fetch_sub_explicit(&events_alive, 1, memory_order_relaxed);
    free(ev);
}

static struct tev *tev_new(uint64_t seq, uint32_t publisher)
{
    struct tev *e = malloc(sizeof(*e));

    if (!e)
        ts_die("out of memory");
    act_event_init(&e->base, tev_destroy, seq);
    e->publisher = publisher;
    atomic_fetch_add_explicit(&events_alive, 1, memory_order_relaxed);
    return e;
}

/* Publishes a fresh event and drops the publisher's reference. */
static void publish_seq(struct act_bus *bus, uint64_t seq, uint32_t publisher)
{
    struct tev *e = tev_new(seq, publisher);

    act_bus_publish(bus, &e->base);
    act_event_unref(&e->base);
}

/* A flag one can wait on with a deadline. */
struct flag {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long value;
};

static void flag_init(struct flag *f)
{
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->value = 0;
}

static void flag_set(struct flag *f, long v)
{
    pthread_mutex_lock(&f->mu);
    f->value = v;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static long flag_wait(struct flag *f, long want, uint64_t timeout_ms)
{
    uint64_t end = ts_now_ms() + timeout_ms;
    struct timespec ts;
    long v;

    pthread_mutex_lock(&f->mu);
    while (f->value < want && ts_now_ms() < end) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    }
    v = f->value;
    pthread_mutex_unlock(&f->mu);
    return v;
}

/* ---- BLOCK ------------------------------------------------------------------------------ */

struct blocker {
    struct act_bus *bus;
    struct flag published; /* how many publishes returned */
    int count;
};

static void *blocker_main(void *p)
{
    struct blocker *b = p;
    int i;

    for (i = 0; i < b->count; i++) {
        publish_seq(b->bus, (uint64_t)i, 0);
        flag_set(&b->published, i + 1);
    }
    return NULL;
}

/* A full BLOCK ring holds the publisher until the subscriber consumes; nothing is lost and the
 * order is kept. */
TAP_TEST(block_policy_blocks_publisher_until_consumed)
{
    struct act_sub_config cfg = {.capacity = 4, .policy = ACT_SUB_BLOCK};
    struct act_bus *bus;
    struct act_sub *sub;
    struct blocker b = {.count = 6};
    struct act_event *ev;
    uint64_t gap;
    pthread_t th;
    int i;

    TAP_CHECK(act_bus_new(&bus, NULL) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    b.bus = bus;
    flag_init(&b.published);
    TAP_CHECK(pthread_create(&th, NULL, blocker_main, &b) == 0, "pthread_create");
    TAP_CHECK(flag_wait(&b.published, 4, DEADLINE_MS) == 4, "the first 4 publishes");
    /* The fifth must not return while the ring is full: give it 200 ms to (wrongly) do so. */
    TAP_CHECK(flag_wait(&b.published, 5, 200) == 4, "publish returned although the ring is full");
    TAP_CHECK(act_sub_poll(sub, 1000, &ev, &gap) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(ev->seq == 0 && gap == 0, "first event seq %llu gap %llu",
              (unsigned long long)ev->seq, (unsigned long long)gap);
    act_event_unref(ev);
    TAP_CHECK(flag_wait(&b.published, 5, DEADLINE_MS) == 5, "consuming one did not unblock");
    for (i = 1; i < 6; i++) {
        TAP_CHECK(act_sub_poll(sub, DEADLINE_MS, &ev, &gap) == 0, "%s",
                  evolve_error_last()->message);
        TAP_CHECK(ev->seq == (uint64_t)i && gap == 0, "event %d: seq %llu gap %llu", i,
                  (unsigned long long)ev->seq, (unsigned long long)gap);
        act_event_unref(ev);
    }
    pthread_join(th, NULL);
    act_bus_unsubscribe(sub);
    act_bus_free(bus);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* try_publish never blocks: it reports "would block" at the full subscriber, and resuming with
 * the same cursor delivers to that subscriber and the rest, each event exactly once. */
TAP_TEST(try_publish_reports_would_block_and_resumes)
{
    struct act_sub_config full = {.capacity = 2, .policy = ACT_SUB_BLOCK};
    struct act_sub_config roomy = {.capacity = 64, .policy = ACT_SUB_BLOCK};
    struct act_bus *bus;
    struct act_sub *a, *b;
    struct act_event *ev;
    struct tev *e;
    uint64_t resume = 0, gap;
    int i, rc;

    TAP_CHECK(act_bus_new(&bus, NULL) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&a, bus, &full) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_subscribe(&b, bus, &roomy) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 2; i++) {
        e = tev_new((uint64_t)i, 0);
        resume = 0;
        TAP_CHECK(act_bus_try_publish(bus, &e->base, &resume, NULL, NULL) == 0, "publish %d", i);
        act_event_unref(&e->base);
    }
    e = tev_new(2, 0);
    resume = 0;
    rc = act_bus_try_publish(bus, &e->base, &resume, NULL, NULL);
    TAP_CHECK(rc == EVOLVE_EBUSY, "third publish returned %d", rc);
    TAP_CHECK(resume != 0, "no resume point");
    /* b, after a in the list, has not received event 2 yet. */
    TAP_CHECK(act_sub_poll(b, 0, &ev, &gap) == 0 && ev->seq == 0, "b first");
    act_event_unref(ev);
    TAP_CHECK(act_sub_poll(b, 0, &ev, &gap) == 0 && ev->seq == 1, "b second");
    act_event_unref(ev);
    TAP_CHECK(act_sub_poll(b, 0, &ev, &gap) == EVOLVE_ETIMEDOUT, "b got event 2 early");
    rc = act_bus_try_publish(bus, &e->base, &resume, NULL, NULL);
    TAP_CHECK(rc == EVOLVE_EBUSY, "still full: %d", rc);
    TAP_CHECK(act_sub_poll(a, 0, &ev, &gap) == 0 && ev->seq == 0, "a first");
    act_event_unref(ev);
    TAP_CHECK(act_bus_try_publish(bus, &e->base, &resume, NULL, NULL) == 0, "resume");
    act_event_unref(&e->base);
    TAP_CHECK(act_sub_poll(a, 0, &ev, &gap) == 0 && ev->seq == 1, "a second");
    act_event_unref(ev);
    TAP_CHECK(act_sub_poll(a, 0, &ev, &gap) == 0 && ev->seq == 2, "a third");
    act_event_unref(ev);
    TAP_CHECK(act_sub_poll(b, 0, &ev, &gap) == 0 && ev->seq == 2, "b third");
    act_event_unref(ev);
    TAP_CHECK(act_sub_poll(b, 0, &ev, &gap) == EVOLVE_ETIMEDOUT, "b got a duplicate");
    act_bus_unsubscribe(a);
    act_bus_unsubscribe(b);
    act_bus_free(bus);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* An actor publishes with try_publish into a tiny BLOCK ring drained by a poll thread; on "would
 * block" it waits for the wake message instead of blocking its worker. Everything arrives once,
 * in order. */
#define PUMP_EVENTS 2000

struct pump {
    struct act_bus *bus;
    struct tev *pending; /* the event being published, or NULL */
    uint64_t resume;
    uint32_t next_seq;
    long busy;         /* how often it was told "would block" */
    struct act_msg go; /* reused as the wake message and the start message */
    struct flag done;
};

static void pump_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct pump *p = state;

    (void)msg; /* p->go, not owned by the runtime */
    while (p->next_seq < PUMP_EVENTS || p->pending) {
        if (!p->pending) {
            p->pending = tev_new(p->next_seq++, 0);
            p->resume = 0;
        }
        if (act_bus_try_publish(p->bus, &p->pending->base, &p->resume, self, &p->go) != 0) {
            p->busy++;
            return; /* p->go comes back when there is room */
        }
        act_event_unref(&p->pending->base);
        p->pending = NULL;
    }
    flag_set(&p->done, 1);
}

TAP_TEST(actor_publisher_pauses_on_would_block_and_resumes_on_wake)
{
    struct act_sub_config cfg = {.capacity = 4, .policy = ACT_SUB_BLOCK};
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    struct act_actor *a;
    struct pump p = {0};
    struct act_event *ev;
    uint64_t gap;
    uint32_t i;
    int bad = 0;

    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_new(&bus, rt) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    p.bus = bus;
    flag_init(&p.done);
    act_msg_init(&p.go, 1, NULL);
    TAP_CHECK(act_actor_new(&a, rt, pump_behaviour, &p, NULL) == 0, "%s",
              evolve_error_last()->message);
    act_send(a, &p.go);
    for (i = 0; i < PUMP_EVENTS; i++) {
        if (act_sub_poll(sub, DEADLINE_MS, &ev, &gap) != 0) {
            bad = -1;
            break;
        }
        bad += ev->seq != i || gap != 0;
        act_event_unref(ev);
    }
    TAP_CHECK(bad == 0, "%d events out of order, lost or gapped (-1: timed out at %u)", bad, i);
    TAP_CHECK(flag_wait(&p.done, 1, DEADLINE_MS) == 1, "publisher did not finish");
    act_actor_stop(a);
    act_actor_unref(a);
    act_runtime_shutdown(rt);
    TAP_CHECK(p.busy > 0, "the ring never filled: the test did not exercise would-block");
    act_bus_unsubscribe(sub);
    act_bus_free(bus);
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* ---- DROP_OLDEST ------------------------------------------------------------------------ */

/* With nobody consuming, 10 events into 4 slots keep the newest 4; the first one received says
 * exactly 6 were lost. */
TAP_TEST(drop_oldest_reports_exact_gap)
{
    struct act_sub_config cfg = {.capacity = 4, .policy = ACT_SUB_DROP_OLDEST};
    struct act_bus *bus;
    struct act_sub *sub;
    struct act_event *ev;
    uint64_t gap;
    int i;

    TAP_CHECK(act_bus_new(&bus, NULL) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 10; i++)
        publish_seq(bus, (uint64_t)i, 0); /* never blocks */
    TAP_CHECK(act_sub_dropped(sub) == 6, "dropped %llu", (unsigned long long)act_sub_dropped(sub));
    for (i = 6; i < 10; i++) {
        TAP_CHECK(act_sub_poll(sub, 0, &ev, &gap) == 0, "%s", evolve_error_last()->message);
        TAP_CHECK(ev->seq == (uint64_t)i, "got seq %llu want %d", (unsigned long long)ev->seq, i);
        TAP_CHECK(gap == (i == 6 ? 6u : 0u), "seq %d: gap %llu", i, (unsigned long long)gap);
        act_event_unref(ev);
    }
    publish_seq(bus, 10, 0);
    TAP_CHECK(act_sub_poll(sub, 0, &ev, &gap) == 0 && ev->seq == 10 && gap == 0, "after drain");
    act_event_unref(ev);
    act_bus_unsubscribe(sub);
    act_bus_free(bus);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* A slow callback subscriber with DROP_OLDEST under a fast publisher: every event it sees
 * accounts exactly for the ones before it (seq == last + gap + 1), and seen + gaps == published. */
struct dropcount {
    uint64_t next;
    uint64_t seen, gaps, mismatches;
    atomic_int in_cb;
    long overlaps;
    struct flag done;
};

static void drop_cb(struct act_event *ev, uint64_t gap, void *payload)
{
    struct dropcount *d = payload;
    volatile int spin;

    if (atomic_exchange_explicit(&d->in_cb, 1, memory_order_acquire))
        d->overlaps++;
    if (ev->seq != d->next + gap)
        d->mismatches++;
    d->next = ev->seq + 1;
    d->seen++;
    d->gaps += gap;
    for (spin = 0; spin < 200; spin++) /* slower than the publisher */
        ;
    atomic_store_explicit(&d->in_cb, 0, memory_order_release);
    if (d->next == MANY)
        flag_set(&d->done, 1);
}

TAP_TEST(drop_oldest_gaps_are_exact_under_load)
{
    struct act_sub_config cfg = {.capacity = 64, .policy = ACT_SUB_DROP_OLDEST, .cb = drop_cb};
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    struct dropcount d = {0};
    uint64_t i, dropped;

    flag_init(&d.done);
    cfg.payload = &d;
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_new(&bus, rt) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < MANY; i++)
        publish_seq(bus, i, 0);
    TAP_CHECK(flag_wait(&d.done, 1, DEADLINE_MS) == 1, "last event never arrived");
    dropped = act_sub_dropped(sub);
    act_bus_unsubscribe(sub);
    act_runtime_shutdown(rt);
    TAP_CHECK(d.mismatches == 0, "%llu events whose gap did not match",
              (unsigned long long)d.mismatches);
    TAP_CHECK(d.seen + d.gaps == MANY, "seen %llu + gaps %llu != %d", (unsigned long long)d.seen,
              (unsigned long long)d.gaps, MANY);
    TAP_CHECK(d.gaps == dropped, "gaps %llu, dropped %llu", (unsigned long long)d.gaps,
              (unsigned long long)dropped);
    TAP_CHECK(d.overlaps == 0, "callback overlapped itself %ld times", d.overlaps);
    act_bus_free(bus);
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* ---- poll handles ----------------------------------------------------------------------- */

struct late {
    struct act_bus *bus;
    struct flag polling;
};

static void *late_main(void *p)
{
    struct late *l = p;

    flag_wait(&l->polling, 1, DEADLINE_MS);
    publish_seq(l->bus, 42, 0);
    return NULL;
}

/* An empty poll times out after its timeout, not before; a poll waiting with a long timeout
 * returns as soon as an event is published. */
TAP_TEST(poll_times_out_and_wakes_on_publish)
{
    struct act_sub_config cfg = {.capacity = 8};
    struct act_bus *bus;
    struct act_sub *sub;
    struct act_event *ev;
    struct late l;
    uint64_t gap, t0, waited;
    pthread_t th;
    int rc;

    TAP_CHECK(act_bus_new(&bus, NULL) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    t0 = ts_now_ms();
    rc = act_sub_poll(sub, 50, &ev, &gap);
    waited = ts_now_ms() - t0;
    TAP_CHECK(rc == EVOLVE_ETIMEDOUT && ev == NULL, "empty poll returned %d", rc);
    TAP_CHECK(waited >= 49, "timed out after %llu ms, not 50", (unsigned long long)waited);
    l.bus = bus;
    flag_init(&l.polling);
    TAP_CHECK(pthread_create(&th, NULL, late_main, &l) == 0, "pthread_create");
    flag_set(&l.polling, 1);
    t0 = ts_now_ms();
    rc = act_sub_poll(sub, DEADLINE_MS, &ev, &gap);
    waited = ts_now_ms() - t0;
    pthread_join(th, NULL);
    TAP_CHECK(rc == 0 && ev->seq == 42, "poll returned %d", rc);
    TAP_CHECK(waited < DEADLINE_MS / 2, "poll waited %llu ms for a published event",
              (unsigned long long)waited);
    act_event_unref(ev);
    act_bus_unsubscribe(sub);
    act_bus_free(bus);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* ---- callbacks, unsubscribe, shutdown --------------------------------------------------- */

#define PUBLISHERS 3

struct ordered {
    uint64_t next[PUBLISHERS];
    long seen, bad, overlaps;
    atomic_int in_cb;
    int released;
    struct flag done;
};

static void ordered_cb(struct act_event *ev, uint64_t gap, void *payload)
{
    struct ordered *o = payload;
    struct tev *e = (struct tev *)ev;

    if (atomic_exchange_explicit(&o->in_cb, 1, memory_order_acquire))
        o->overlaps++;
    if (ev->seq != o->next[e->publisher] || gap != 0)
        o->bad++;
    o->next[e->publisher] = ev->seq + 1;
    o->seen++;
    atomic_store_explicit(&o->in_cb, 0, memory_order_release);
    if (o->seen == (long)PUBLISHERS * MANY / 4)
        flag_set(&o->done, 1);
}

static void ordered_release(void *payload)
{
    struct ordered *o = payload;

    o->released++;
    flag_set(&o->done, 2);
}

struct pubarg {
    struct act_bus *bus;
    uint32_t id;
    int count;
};

static void *publisher_main(void *p)
{
    struct pubarg *a = p;
    int i;

    for (i = 0; i < a->count; i++)
        publish_seq(a->bus, (uint64_t)i, a->id);
    return NULL;
}

/* Several publishers, a BLOCK callback subscriber: each publisher's events arrive in order, none
 * lost, the callback never overlaps itself, and release runs once after the last callback. */
TAP_TEST(callback_subscriber_in_order_never_concurrent)
{
    struct act_sub_config cfg = {
        .capacity = 16, .policy = ACT_SUB_BLOCK, .cb = ordered_cb, .release = ordered_release};
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    struct ordered o = {0};
    struct pubarg args[PUBLISHERS];
    pthread_t th[PUBLISHERS];
    int i;

    flag_init(&o.done);
    cfg.payload = &o;
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_new(&bus, rt) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < PUBLISHERS; i++) {
        args[i] = (struct pubarg){.bus = bus, .id = (uint32_t)i, .count = MANY / 4};
        TAP_CHECK(pthread_create(&th[i], NULL, publisher_main, &args[i]) == 0, "create");
    }
    for (i = 0; i < PUBLISHERS; i++)
        pthread_join(th[i], NULL);
    TAP_CHECK(flag_wait(&o.done, 1, DEADLINE_MS) >= 1, "only %ld events arrived", o.seen);
    act_bus_unsubscribe(sub);
    TAP_CHECK(flag_wait(&o.done, 2, DEADLINE_MS) == 2, "release did not run");
    act_runtime_free(rt);
    act_bus_free(bus);
    TAP_CHECK(o.seen == (long)PUBLISHERS * MANY / 4, "seen %ld", o.seen);
    TAP_CHECK(o.bad == 0, "%ld events out of order or gapped", o.bad);
    TAP_CHECK(o.overlaps == 0, "callback overlapped itself %ld times", o.overlaps);
    TAP_CHECK(o.released == 1, "released %d times", o.released);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

static void count_cb(struct act_event *ev, uint64_t gap, void *payload)
{
    (void)ev;
    (void)gap;
    atomic_fetch_add_explicit((atomic_long *)payload, 1, memory_order_relaxed);
}

/* Subscribers come and go (poll and callback, both policies) while publishers run flat out:
 * nothing crashes, leaks or deadlocks, and a blocked publisher is released by unsubscribe. */
TAP_TEST(unsubscribe_while_publishing_is_safe)
{
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    struct pubarg args[PUBLISHERS];
    pthread_t th[PUBLISHERS];
    atomic_long calls = 0;
    struct act_event *ev;
    uint64_t gap;
    int i, round;

    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_new(&bus, rt) == 0, "bus");
    for (i = 0; i < PUBLISHERS; i++) {
        args[i] = (struct pubarg){.bus = bus, .id = (uint32_t)i, .count = MANY / 4};
        TAP_CHECK(pthread_create(&th[i], NULL, publisher_main, &args[i]) == 0, "create");
    }
    for (round = 0; round < 300; round++) {
        struct act_sub_config cfg = {.capacity = (uint32_t)(1 + round % 8),
                                     .policy = round % 2 ? ACT_SUB_BLOCK : ACT_SUB_DROP_OLDEST};

        if (round % 3 == 0) {
            cfg.cb = count_cb;
            cfg.payload = &calls;
        }
        TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
        if (!cfg.cb && act_sub_poll(sub, 1, &ev, &gap) == 0)
            act_event_unref(ev);
        /* A BLOCK poll handle nobody polls fills up at once: its publishers block, and this
         * unsubscribe must release them. */
        act_bus_unsubscribe(sub);
    }
    for (i = 0; i < PUBLISHERS; i++)
        pthread_join(th[i], NULL);
    act_runtime_free(rt);
    act_bus_free(bus);
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

/* Shutdown with a callback subscriber holding queued events: the runtime stops it, later
 * publishes skip it instead of blocking, and unsubscribe afterwards frees everything. */
TAP_TEST(shutdown_with_subscribers_frees_everything)
{
    struct act_sub_config cfg = {.capacity = 4, .policy = ACT_SUB_BLOCK, .cb = count_cb};
    struct act_runtime *rt;
    struct act_bus *bus;
    struct act_sub *sub;
    atomic_long calls = 0;
    int i;

    cfg.payload = &calls;
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_bus_new(&bus, rt) == 0, "bus");
    TAP_CHECK(act_bus_subscribe(&sub, bus, &cfg) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 4; i++)
        publish_seq(bus, (uint64_t)i, 0);
    act_runtime_shutdown(rt);
    for (i = 4; i < 100; i++)
        publish_seq(bus, (uint64_t)i, 0); /* would block forever on a dead subscriber */
    act_bus_unsubscribe(sub);
    act_bus_free(bus);
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&calls) <= 4, "%ld callbacks", atomic_load(&calls));
    TAP_CHECK(atomic_load(&events_alive) == 0, "%ld events leaked", atomic_load(&events_alive));
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(block_policy_blocks_publisher_until_consumed),
        TAP_CASE(try_publish_reports_would_block_and_resumes),
        TAP_CASE(actor_publisher_pauses_on_would_block_and_resumes_on_wake),
        TAP_CASE(drop_oldest_reports_exact_gap),
        TAP_CASE(drop_oldest_gaps_are_exact_under_load),
        TAP_CASE(poll_times_out_and_wakes_on_publish),
        TAP_CASE(callback_subscriber_in_order_never_concurrent),
        TAP_CASE(unsubscribe_while_publishing_is_safe),
        TAP_CASE(shutdown_with_subscribers_frees_everything),
        {0}};
    return tap_run(cases, argc, argv);
}
