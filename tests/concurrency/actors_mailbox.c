/* The actor runtime under load: mailbox order and completeness, no actor running on two workers
 * at once, stop semantics, jobs, and shutdown while busy. Runs under ASan and TSan; under TSan
 * the big counts are scaled down (EVOLVE_TSAN): 8 x 1,000,000 there took 16 s and 2.1 GB of
 * shadow memory on the shared 2-core machine, so it runs 8 x 100,000. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "actors/actors.h"
#include "evolve/common.h"
#include "support/support.h"
#include "support/tap.h"

#ifdef EVOLVE_TSAN
#define PER_PRODUCER 100000 /* 8 x 100,000 under TSan */
#else
#define PER_PRODUCER 1000000 /* 8 x 1,000,000 */
#endif
#define PRODUCERS   8
#define DEADLINE_MS 120000

/* A counter one can wait on with a deadline (no sleeping as synchronisation). */
struct gauge {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long value;
};

static void gauge_init(struct gauge *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->value = 0;
}

static void gauge_add(struct gauge *g, long n)
{
    pthread_mutex_lock(&g->mu);
    g->value += n;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits until value >= want or the deadline passes; returns the value seen. */
static long gauge_wait(struct gauge *g, long want, uint64_t timeout_ms)
{
    uint64_t end = ts_now_ms() + timeout_ms;
    struct timespec ts;
    long v;

    pthread_mutex_lock(&g->mu);
    while (g->value < want && ts_now_ms() < end) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    v = g->value;
    pthread_mutex_unlock(&g->mu);
    return v;
}

static void gauge_dispose(struct gauge *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

static atomic_long msgs_alive; /* allocated and not yet freed: must be 0 at the end */

struct tmsg {
    struct act_msg hdr; /* first */
    uint32_t producer;
    uint32_t seq;
};

static void tmsg_free(struct act_msg *m)
{
    atomic_fetch_sub_explicit(&msgs_alive, 1, memory_order_relaxed);
    free(m);
}

static struct tmsg *tmsg_new(uint32_t producer, uint32_t seq)
{
    struct tmsg *m = malloc(sizeof(*m));

    if (!m)
        ts_die("out of memory");
    act_msg_init(&m->hdr, 1, tmsg_free);
    m->producer = producer;
    m->seq = seq;
    atomic_fetch_add_explicit(&msgs_alive, 1, memory_order_relaxed);
    return m;
}

/* State of the counting actor. */
struct counter {
    atomic_int in_turn; /* 1 while the behaviour runs: must never be seen set on entry */
    long overlaps;
    long out_of_order;
    uint32_t next_seq[PRODUCERS];
    long handled;
    long signal_at; /* `done` gets 1 when handled reaches this */
    struct gauge done;
    struct gauge freed; /* state_free ran */
    long handled_at_free;
};

static void counter_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct counter *c = state;
    struct tmsg *m = (struct tmsg *)msg;

    (void)self;
    if (atomic_exchange_explicit(&c->in_turn, 1, memory_order_acquire))
        c->overlaps++;
    if (m->seq != c->next_seq[m->producer])
        c->out_of_order++;
    c->next_seq[m->producer] = m->seq + 1;
    c->handled++;
    act_msg_free(msg);
    atomic_store_explicit(&c->in_turn, 0, memory_order_release);
    if (c->handled == c->signal_at)
        gauge_add(&c->done, 1);
}

static void counter_state_free(void *state)
{
    struct counter *c = state;

    c->handled_at_free = c->handled;
    gauge_add(&c->freed, 1);
}

static struct counter *counter_new(void)
{
    struct counter *c = calloc(1, sizeof(*c));

    if (!c)
        ts_die("out of memory");
    gauge_init(&c->done);
    gauge_init(&c->freed);
    return c;
}

static void counter_free(struct counter *c)
{
    gauge_dispose(&c->done);
    gauge_dispose(&c->freed);
    free(c);
}

struct producer_arg {
    struct act_actor *target;
    uint32_t id;
    uint32_t count;
    int failures;
};

static void *producer_main(void *p)
{
    struct producer_arg *a = p;
    uint32_t i;

    for (i = 0; i < a->count; i++) {
        if (act_send(a->target, &tmsg_new(a->id, i)->hdr) != 0)
            a->failures++;
    }
    return NULL;
}

/* 8 producers x PER_PRODUCER messages to one actor: each producer's messages arrive in order,
 * none is lost or duplicated, and the behaviour never overlaps itself. */
TAP_TEST(eight_producers_one_actor_nothing_lost_in_order)
{
    struct act_runtime_config cfg = {.worker_threads = 2};
    struct act_runtime *rt;
    struct act_actor *a;
    struct counter *c = counter_new();
    struct producer_arg args[PRODUCERS];
    pthread_t th[PRODUCERS];
    long total = (long)PRODUCERS * PER_PRODUCER, seen;
    int i, fails = 0;

    TAP_CHECK(act_runtime_new(&rt, &cfg) == 0, "%s", evolve_error_last()->message);
    c->signal_at = total;
    TAP_CHECK(act_actor_new(&a, rt, counter_behaviour, c, counter_state_free) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < PRODUCERS; i++) {
        args[i] = (struct producer_arg){.target = a, .id = (uint32_t)i, .count = PER_PRODUCER};
        TAP_CHECK(pthread_create(&th[i], NULL, producer_main, &args[i]) == 0, "pthread_create");
    }
    for (i = 0; i < PRODUCERS; i++) {
        pthread_join(th[i], NULL);
        fails += args[i].failures;
    }
    seen = gauge_wait(&c->done, 1, DEADLINE_MS);
    act_actor_stop(a);
    gauge_wait(&c->freed, 1, DEADLINE_MS);
    act_actor_unref(a);
    act_runtime_free(rt);
    TAP_CHECK(fails == 0, "%d sends failed", fails);
    TAP_CHECK(seen == 1, "not all %ld handled before the deadline", total);
    TAP_CHECK(c->handled == total, "handled %ld, want %ld", c->handled, total);
    TAP_CHECK(c->out_of_order == 0, "%ld messages out of per-sender order", c->out_of_order);
    for (i = 0; i < PRODUCERS; i++)
        TAP_CHECK(c->next_seq[i] == PER_PRODUCER, "producer %d: last seq %u", i, c->next_seq[i]);
    TAP_CHECK(c->overlaps == 0, "the behaviour overlapped itself %ld times", c->overlaps);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
    counter_free(c);
}

/* Many actors, many workers, many senders: no actor's behaviour ever runs on two workers at
 * once, and each actor sees each sender's messages in order. */
#define NACTORS  16
#define NSENDERS 4
#ifdef EVOLVE_TSAN
#define PER_SENDER_PER_ACTOR 2000
#else
#define PER_SENDER_PER_ACTOR 20000
#endif

struct fan_arg {
    struct act_actor **actors;
    uint32_t id;
};

static void *fan_main(void *p)
{
    struct fan_arg *a = p;
    uint32_t i;
    int k;

    for (i = 0; i < PER_SENDER_PER_ACTOR; i++)
        for (k = 0; k < NACTORS; k++)
            act_send(a->actors[k], &tmsg_new(a->id, i)->hdr);
    return NULL;
}

TAP_TEST(actor_never_runs_concurrently_with_itself)
{
    struct act_runtime_config cfg = {.worker_threads = 4};
    struct act_runtime *rt;
    struct act_actor *actors[NACTORS];
    struct counter *cs[NACTORS];
    struct fan_arg args[NSENDERS];
    pthread_t th[NSENDERS];
    int i;

    TAP_CHECK(act_runtime_new(&rt, &cfg) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < NACTORS; i++) {
        cs[i] = counter_new();
        TAP_CHECK(act_actor_new(&actors[i], rt, counter_behaviour, cs[i], counter_state_free) == 0,
                  "%s", evolve_error_last()->message);
    }
    for (i = 0; i < NSENDERS; i++) {
        args[i] = (struct fan_arg){.actors = actors, .id = (uint32_t)i};
        TAP_CHECK(pthread_create(&th[i], NULL, fan_main, &args[i]) == 0, "pthread_create");
    }
    for (i = 0; i < NSENDERS; i++)
        pthread_join(th[i], NULL);
    /* Shutdown drains every mailbox before it returns. */
    act_runtime_shutdown(rt);
    for (i = 0; i < NACTORS; i++) {
        TAP_CHECK(cs[i]->handled == (long)NSENDERS * PER_SENDER_PER_ACTOR, "actor %d handled %ld",
                  i, cs[i]->handled);
        TAP_CHECK(cs[i]->overlaps == 0, "actor %d overlapped itself %ld times", i, cs[i]->overlaps);
        TAP_CHECK(cs[i]->out_of_order == 0, "actor %d: %ld out of order", i, cs[i]->out_of_order);
        TAP_CHECK(cs[i]->freed.value == 1, "actor %d: state freed %ld times", i,
                  cs[i]->freed.value);
        act_actor_unref(actors[i]);
        counter_free(cs[i]);
    }
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
}

/* Messages sent before a stop are delivered, those sent after it are freed (never delivered)
 * and the send says so; the state is freed once, after the last delivered message. */
TAP_TEST(stop_delivers_earlier_messages_and_frees_later_ones)
{
    struct act_runtime *rt;
    struct act_actor *a;
    struct counter *c = counter_new();
    uint32_t i;
    int rc = 0;

    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&a, rt, counter_behaviour, c, counter_state_free) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < 5000; i++)
        act_send(a, &tmsg_new(0, i)->hdr);
    act_actor_stop(a);
    act_actor_stop(a); /* idempotent */
    for (i = 0; i < 100; i++)
        rc |= act_send(a, &tmsg_new(1, i)->hdr);
    TAP_CHECK(rc == EVOLVE_ESHUTDOWN, "send after stop returned %d", rc);
    TAP_CHECK(gauge_wait(&c->freed, 1, DEADLINE_MS) == 1, "state never freed");
    TAP_CHECK(c->handled_at_free == 5000, "state freed after %ld messages", c->handled_at_free);
    TAP_CHECK(c->next_seq[1] == 0, "a message sent after the stop was delivered");
    act_actor_unref(a);
    act_runtime_free(rt);
    TAP_CHECK(c->handled == 5000, "handled %ld", c->handled);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
    counter_free(c);
}

/* Sends racing a stop from other threads: every message is either delivered or freed. */
struct racer_arg {
    struct act_actor *a;
    uint32_t id;
    long accepted;
};

static void *racer_main(void *p)
{
    struct racer_arg *r = p;
    uint32_t i;

    for (i = 0; i < 20000; i++)
        if (act_send(r->a, &tmsg_new(r->id, i)->hdr) == 0)
            r->accepted++;
    return NULL;
}

TAP_TEST(send_racing_stop_is_delivered_or_freed)
{
    struct act_runtime *rt;
    struct act_actor *a;
    struct counter *c = counter_new();
    struct racer_arg r[3];
    pthread_t th[3];
    int i;

    c->signal_at = 1024;
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&a, rt, counter_behaviour, c, counter_state_free) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < 3; i++) {
        r[i] = (struct racer_arg){.a = a, .id = (uint32_t)i};
        TAP_CHECK(pthread_create(&th[i], NULL, racer_main, &r[i]) == 0, "pthread_create");
    }
    gauge_wait(&c->done, 1, DEADLINE_MS);
    act_actor_stop(a);
    for (i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    TAP_CHECK(gauge_wait(&c->freed, 1, DEADLINE_MS) == 1, "state never freed");
    act_actor_unref(a); /* last reference: frees what raced in after the marker */
    act_runtime_free(rt);
    TAP_CHECK(c->out_of_order == 0, "%ld out of order", c->out_of_order);
    TAP_CHECK(c->handled <= r[0].accepted + r[1].accepted + r[2].accepted, "handled %ld > accepted",
              c->handled);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
    counter_free(c);
}

/* Jobs run exactly once each, on the pool. */
static atomic_long job_runs;

static void job_fn(void *arg)
{
    struct gauge *g = arg;

    atomic_fetch_add_explicit(&job_runs, 1, memory_order_relaxed);
    gauge_add(g, 1);
}

TAP_TEST(submitted_jobs_run_once_each)
{
    struct act_runtime *rt;
    struct gauge g;
    int i, rc = 0;

    gauge_init(&g);
    atomic_store(&job_runs, 0);
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 10000; i++)
        rc |= act_runtime_submit(rt, job_fn, &g);
    TAP_CHECK(rc == 0, "submit failed: %s", evolve_error_last()->message);
    TAP_CHECK(gauge_wait(&g, 10000, DEADLINE_MS) == 10000, "only %ld jobs ran", g.value);
    act_runtime_shutdown(rt);
    TAP_CHECK(act_runtime_submit(rt, job_fn, &g) == EVOLVE_ESHUTDOWN, "submit after shutdown");
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&job_runs) == 10000, "%ld runs", atomic_load(&job_runs));
    gauge_dispose(&g);
}

/* Shutdown while busy: actors forwarding messages to each other in a ring, a backlog in every
 * mailbox and jobs queued. Shutdown returns with every state freed and every message either
 * handled or freed (ASan reports any leak). */
#define RING 8

struct hop {
    struct act_actor *next; /* referenced */
    long handled;
    int state_freed;
};

static void hop_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct hop *h = state;
    struct tmsg *m = (struct tmsg *)msg;

    (void)self;
    h->handled++;
    if (m->seq > 0) {
        m->seq--;
        act_send(h->next, msg); /* forwards: ownership moves with it */
    } else {
        act_msg_free(msg);
    }
}

static void hop_state_free(void *state)
{
    struct hop *h = state;

    h->state_freed++;
    act_actor_unref(h->next);
    h->next = NULL;
}

static void slow_job(void *arg)
{
    volatile long x = 0;
    long i;

    (void)arg;
    for (i = 0; i < 100000; i++)
        x += i;
    atomic_fetch_add_explicit(&job_runs, 1, memory_order_relaxed);
}

TAP_TEST(shutdown_while_busy_drains_and_frees_everything)
{
    struct act_runtime *rt;
    struct act_actor *ring[RING];
    struct hop hops[RING] = {{0}};
    int i, j;

    atomic_store(&job_runs, 0);
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < RING; i++)
        TAP_CHECK(act_actor_new(&ring[i], rt, hop_behaviour, &hops[i], hop_state_free) == 0, "%s",
                  evolve_error_last()->message);
    for (i = 0; i < RING; i++) {
        hops[i].next = ring[(i + 1) % RING];
        act_actor_ref(hops[i].next);
    }
    for (i = 0; i < RING; i++)
        for (j = 0; j < 2000; j++)
            act_send(ring[i], &tmsg_new(0, 1000000)->hdr); /* would hop for a long time */
    for (i = 0; i < 50; i++)
        TAP_CHECK(act_runtime_submit(rt, slow_job, NULL) == 0, "submit");
    act_runtime_shutdown(rt);
    for (i = 0; i < RING; i++) {
        TAP_CHECK(hops[i].state_freed == 1, "actor %d state freed %d times", i,
                  hops[i].state_freed);
        TAP_CHECK(hops[i].handled >= 2000, "actor %d handled only %ld", i, hops[i].handled);
        act_actor_unref(ring[i]);
    }
    TAP_CHECK(atomic_load(&job_runs) == 50, "%ld of 50 queued jobs ran", atomic_load(&job_runs));
    {
        struct act_actor *late;
        TAP_CHECK(act_actor_new(&late, rt, hop_behaviour, NULL, NULL) == EVOLVE_ESHUTDOWN,
                  "actor created after shutdown");
    }
    act_runtime_free(rt);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(eight_producers_one_actor_nothing_lost_in_order),
        TAP_CASE(actor_never_runs_concurrently_with_itself),
        TAP_CASE(stop_delivers_earlier_messages_and_frees_later_ones),
        TAP_CASE(send_racing_stop_is_delivered_or_freed),
        TAP_CASE(submitted_jobs_run_once_each),
        TAP_CASE(shutdown_while_busy_drains_and_frees_everything),
        {0}};
    return tap_run(cases, argc, argv);
}
