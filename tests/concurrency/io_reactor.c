/* The reactor core: posts from many threads each run once, in per-thread order, on the reactor
 * thread; timers fire in deadline order and cancelled ones never; free runs everything already
 * posted and refuses posts made while it stops. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "evolve/common.h"
#include "io/reactor.h"
#include "support/latch.h"
#include "support/tap.h"

#define POSTERS 8
#define POSTS   20000

struct post_test {
    struct io_reactor *r;
    struct ts_latch done;
    long next[POSTERS]; /* reactor thread only */
    int out_of_order, off_thread;
};

struct post_arg {
    struct post_test *t;
    int thread;
    long seq;
};

static void on_post(struct io_reactor *r, void *arg)
{
    struct post_arg *a = arg;
    struct post_test *t = a->t;

    if (!io_reactor_on_thread(r))
        t->off_thread++;
    if (a->seq != t->next[a->thread])
        t->out_of_order++;
    t->next[a->thread] = a->seq + 1;
    free(a);
    ts_latch_add(&t->done, 1);
}

struct poster {
    struct post_test *t;
    int thread, failed;
};

static void *poster_main(void *arg)
{
    struct poster *p = arg;
    long i;

    for (i = 0; i < POSTS; i++) {
        struct post_arg *a = malloc(sizeof(*a));

        a->t = p->t;
        a->thread = p->thread;
        a->seq = i;
        if (io_reactor_post(p->t->r, on_post, a) < 0) {
            free(a);
            p->failed++;
        }
    }
    return NULL;
}

TAP_TEST(posts_from_many_threads_run_once_in_per_thread_order)
{
    struct post_test t = {0};
    struct poster ps[POSTERS];
    pthread_t th[POSTERS];
    int i, failed = 0;

    ts_latch_init(&t.done);
    TAP_CHECK(io_reactor_new(&t.r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(!io_reactor_on_thread(t.r), "test thread is not the reactor");
    for (i = 0; i < POSTERS; i++) {
        ps[i] = (struct poster){&t, i, 0};
        pthread_create(&th[i], NULL, poster_main, &ps[i]);
    }
    for (i = 0; i < POSTERS; i++) {
        pthread_join(th[i], NULL);
        failed += ps[i].failed;
    }
    TAP_CHECK(failed == 0, "%d posts failed", failed);
    TAP_CHECK(ts_latch_wait(&t.done, (unsigned long)POSTERS * POSTS, 30000), "ran %lu of %d",
              ts_latch_get(&t.done), POSTERS * POSTS);
    io_reactor_free(t.r);
    TAP_CHECK(ts_latch_get(&t.done) == (unsigned long)POSTERS * POSTS, "a post ran twice");
    TAP_CHECK(t.out_of_order == 0, "%d posts out of per-thread order", t.out_of_order);
    TAP_CHECK(t.off_thread == 0, "%d posts ran off the reactor thread", t.off_thread);
    for (i = 0; i < POSTERS; i++)
        TAP_CHECK(t.next[i] == POSTS, "thread %d: last seq %ld", i, t.next[i]);
    ts_latch_dispose(&t.done);
}

/* ---- timers ---------------------------------------------------------------------------------- */

struct timer_test {
    struct ts_latch done;
    int order[8], n;
    uint64_t start_ms, fired_ms[8];
};

struct timer_arg {
    struct timer_test *t;
    int id;
};

static struct timer_arg targs[6];

static void on_timer(struct io_reactor *r, void *arg)
{
    struct timer_arg *a = arg;

    (void)r;
    a->t->fired_ms[a->id] = io_now_ms();
    a->t->order[a->t->n++] = a->id;
    if (a->id == 4)
        ts_latch_add(&a->t->done, 1);
}

static void arm_timers(struct io_reactor *r, void *arg)
{
    struct timer_test *t = arg;
    static const uint64_t ms[6] = {40, 10, 25, 10, 60, 0}; /* id 2 is cancelled */
    struct io_timer *cancel = NULL;
    int i;

    t->start_ms = io_now_ms();
    for (i = 0; i < 6; i++) {
        struct io_timer *tm;

        targs[i] = (struct timer_arg){t, i};
        tm = io_reactor_timer(r, ms[i], on_timer, &targs[i]);
        if (i == 2)
            cancel = tm;
    }
    io_reactor_timer_cancel(r, cancel);
}

TAP_TEST(timers_fire_in_deadline_order_and_cancelled_never)
{
    struct io_reactor *r;
    struct timer_test t = {0};
    static const int want[5] = {5, 1, 3, 0, 4};
    static const uint64_t at_least[6] = {40, 10, 0, 10, 60, 0};
    int i;

    ts_latch_init(&t.done);
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_reactor_post(r, arm_timers, &t) == 0, "post");
    TAP_CHECK(ts_latch_wait(&t.done, 1, 10000), "the 60 ms timer never fired");
    io_reactor_free(r);
    TAP_CHECK(t.n == 5, "%d timers fired, want 5 (cancelled one must not)", t.n);
    for (i = 0; i < 5; i++) {
        TAP_CHECK(t.order[i] == want[i], "position %d: timer %d, want %d", i, t.order[i], want[i]);
        TAP_CHECK(t.fired_ms[want[i]] - t.start_ms >= at_least[want[i]], "timer %d early", want[i]);
    }
    ts_latch_dispose(&t.done);
}

/* ---- stop ------------------------------------------------------------------------------------ */

struct stop_test {
    atomic_int outer, inner_ran, inner_refused;
};

static void inner_fn(struct io_reactor *r, void *arg)
{
    struct stop_test *t = arg;

    (void)r;
    atomic_fetch_add_explicit(&t->inner_ran, 1, memory_order_relaxed);
}

static void outer_fn(struct io_reactor *r, void *arg)
{
    struct stop_test *t = arg;

    atomic_fetch_add_explicit(&t->outer, 1, memory_order_relaxed);
    if (io_reactor_post(r, inner_fn, t) < 0)
        atomic_fetch_add_explicit(&t->inner_refused, 1, memory_order_relaxed);
}

TAP_TEST(free_runs_every_accepted_post_and_refuses_posts_while_stopping)
{
    struct io_reactor *r;
    struct stop_test t;
    int i, outer, ran, refused;

    atomic_init(&t.outer, 0);
    atomic_init(&t.inner_ran, 0);
    atomic_init(&t.inner_refused, 0);
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 5000; i++)
        TAP_CHECK(io_reactor_post(r, outer_fn, &t) == 0, "post %d", i);
    io_reactor_free(r); /* joins: everything below is final */
    outer = atomic_load_explicit(&t.outer, memory_order_relaxed);
    ran = atomic_load_explicit(&t.inner_ran, memory_order_relaxed);
    refused = atomic_load_explicit(&t.inner_refused, memory_order_relaxed);
    TAP_CHECK(outer == 5000, "outer ran %d times", outer);
    TAP_CHECK(ran + refused == 5000, "inner: %d ran + %d refused != 5000", ran, refused);
    printf("# inner posts: %d ran before stop, %d refused during stop\n", ran, refused);
}

/* ---- wake-up coalescing ---------------------------------------------------------------------- */

static void count_fn(struct io_reactor *r, void *arg)
{
    (void)r;
    ts_latch_add(arg, 1);
}

static void burst_fn(struct io_reactor *r, void *arg)
{
    int i;

    for (i = 0; i < 1000; i++)
        io_reactor_post(r, count_fn, arg);
}

TAP_TEST(posts_made_while_a_wakeup_is_pending_do_not_write_the_eventfd)
{
    struct io_reactor *r;
    struct ts_latch ran;
    uint64_t wakeups;

    ts_latch_init(&ran);
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    /* One wake-up for our post; the reactor cannot drain while burst_fn runs, so its 1000 posts
     * cost exactly one more. */
    TAP_CHECK(io_reactor_post(r, burst_fn, &ran) == 0, "post");
    TAP_CHECK(ts_latch_wait(&ran, 1000, 10000), "ran %lu of 1000", ts_latch_get(&ran));
    wakeups = io_reactor_wakeups(r);
    io_reactor_free(r);
    TAP_CHECK(wakeups == 2, "%llu eventfd writes for 1001 posts, want 2",
              (unsigned long long)wakeups);
    ts_latch_dispose(&ran);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(posts_from_many_threads_run_once_in_per_thread_order),
        TAP_CASE(timers_fire_in_deadline_order_and_cancelled_never),
        TAP_CASE(free_runs_every_accepted_post_and_refuses_posts_while_stopping),
        TAP_CASE(posts_made_while_a_wakeup_is_pending_do_not_write_the_eventfd),
        {0}};
    return tap_run(cases, argc, argv);
}
