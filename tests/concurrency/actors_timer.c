/* Timers: delivered as messages in deadline order and never before their delay; a cancelled
 * timer never fires and its message is freed; shutdown frees pending timers. Waits are on the
 * messages themselves with deadlines; delays are randomised with a printed seed
 * (EVOLVE_TEST_SEED=<n> reruns one). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "actors/actors.h"
#include "evolve/common.h"
#include "support/support.h"
#include "support/tap.h"

#define DEADLINE_MS 20000
#define NTIMERS     40

static atomic_long msgs_alive;

struct tmsg {
    struct act_msg hdr;
    int index;
    uint64_t due_ms; /* earliest delivery, monotonic ms */
};

static void tmsg_free(struct act_msg *m)
{
    atomic_fetch_sub_explicit(&msgs_alive, 1, memory_order_relaxed);
    free(m);
}

static struct tmsg *tmsg_new(int index, uint64_t delay_ms)
{
    struct tmsg *m = malloc(sizeof(*m));

    if (!m)
        ts_die("out of memory");
    act_msg_init(&m->hdr, 7, tmsg_free);
    m->index = index;
    m->due_ms = ts_now_ms() + delay_ms;
    atomic_fetch_add_explicit(&msgs_alive, 1, memory_order_relaxed);
    return m;
}

struct log {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int order[NTIMERS * 2];
    uint64_t due[NTIMERS * 2]; /* absolute deadlines in delivery order */
    int n;
    int early; /* delivered before its delay */
};

static void log_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct log *l = state;
    struct tmsg *m = (struct tmsg *)msg;
    uint64_t now = ts_now_ms();

    (void)self;
    pthread_mutex_lock(&l->mu);
    if (now < m->due_ms)
        l->early++;
    if (l->n < NTIMERS * 2) {
        l->order[l->n] = m->index;
        l->due[l->n] = m->due_ms;
    }
    l->n++;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    act_msg_free(msg);
}

static int log_wait(struct log *l, int want)
{
    uint64_t end = ts_now_ms() + DEADLINE_MS;
    struct timespec ts;
    int n;

    pthread_mutex_lock(&l->mu);
    while (l->n < want && ts_now_ms() < end) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    }
    n = l->n;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void log_init(struct log *l)
{
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->n = 0;
    l->early = 0;
}

static unsigned seed;

/* Timers set in a random order of delays arrive sorted by their absolute deadline (set time plus
 * delay: setting 40 timers takes measurable time under TSan), none early. */
TAP_TEST(timers_fire_in_deadline_order)
{
    struct act_runtime *rt;
    struct act_actor *a;
    struct log l;
    int delay[NTIMERS], i, n;

    log_init(&l);
    srand(seed);
    for (i = 0; i < NTIMERS; i++)
        delay[i] = i * 5; /* distinct deadlines 5 ms apart */
    for (i = NTIMERS - 1; i > 0; i--) {
        int j = rand() % (i + 1), t = delay[i];

        delay[i] = delay[j];
        delay[j] = t;
    }
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&a, rt, log_behaviour, &l, NULL) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < NTIMERS; i++)
        TAP_CHECK(act_after(NULL, a, (uint64_t)delay[i], &tmsg_new(delay[i], delay[i])->hdr) == 0,
                  "%s", evolve_error_last()->message);
    n = log_wait(&l, NTIMERS);
    act_actor_unref(a);
    act_runtime_free(rt);
    TAP_CHECK(n == NTIMERS, "%d of %d timers fired before the deadline", n, NTIMERS);
    for (i = 1; i < NTIMERS; i++)
        TAP_CHECK(l.due[i - 1] <= l.due[i],
                  "timer %d ms (due %llu) fired after %d ms (due %llu) (position %d)",
                  l.order[i - 1], (unsigned long long)l.due[i - 1], l.order[i],
                  (unsigned long long)l.due[i], i);
    TAP_CHECK(l.early == 0, "%d timers fired before their delay", l.early);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
}

/* Every other timer is cancelled; once the last survivor (the latest deadline) has fired, every
 * cancelled deadline has passed too, so a cancelled timer that fired would be in the log. */
TAP_TEST(cancelled_timers_never_fire)
{
    struct act_runtime *rt;
    struct act_actor *a;
    struct log l;
    uint64_t id[NTIMERS];
    int i, n, rc;

    log_init(&l);
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&a, rt, log_behaviour, &l, NULL) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < NTIMERS; i++)
        TAP_CHECK(act_after(&id[i], a, 200 + (uint64_t)i * 3, &tmsg_new(i, 0)->hdr) == 0, "%s",
                  evolve_error_last()->message);
    for (i = 0; i < NTIMERS; i += 2) {
        rc = act_timer_cancel(rt, id[i]);
        TAP_CHECK(rc == 0, "cancel %d: %s", i, evolve_error_last()->message);
    }
    TAP_CHECK(atomic_load(&msgs_alive) == NTIMERS / 2, "cancelled messages not freed: %ld alive",
              atomic_load(&msgs_alive));
    TAP_CHECK(act_timer_cancel(rt, id[0]) == EVOLVE_ENOTFOUND, "second cancel succeeded");
    n = log_wait(&l, NTIMERS / 2);
    TAP_CHECK(n == NTIMERS / 2, "%d of %d survivors fired", n, NTIMERS / 2);
    TAP_CHECK(act_timer_cancel(rt, id[1]) == EVOLVE_ENOTFOUND, "cancel after firing succeeded");
    act_actor_stop(a);
    act_actor_unref(a);
    act_runtime_free(rt);
    TAP_CHECK(l.n == NTIMERS / 2, "%d timers fired, want %d", l.n, NTIMERS / 2);
    for (i = 0; i < l.n; i++)
        TAP_CHECK(l.order[i] % 2 == 1, "cancelled timer %d fired", l.order[i]);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
}

/* Shutdown with timers pending far in the future: their messages are freed, none delivered; a
 * timer that fires for a stopped actor has its message freed. */
TAP_TEST(shutdown_frees_pending_timers)
{
    struct act_runtime *rt;
    struct act_actor *a, *b;
    struct log l, lb;
    int i;

    log_init(&l);
    log_init(&lb);
    TAP_CHECK(act_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&a, rt, log_behaviour, &l, NULL) == 0, "%s",
              evolve_error_last()->message);
    TAP_CHECK(act_actor_new(&b, rt, log_behaviour, &lb, NULL) == 0, "%s",
              evolve_error_last()->message);
    for (i = 0; i < 100; i++)
        act_after(NULL, a, 3600000, &tmsg_new(i, 0)->hdr);
    act_after(NULL, b, 1, &tmsg_new(0, 0)->hdr);
    act_actor_stop(b); /* the 1 ms timer finds b stopped */
    act_actor_unref(b);
    act_runtime_shutdown(rt);
    TAP_CHECK(act_after(NULL, a, 1, &tmsg_new(0, 0)->hdr) == EVOLVE_ESHUTDOWN,
              "timer accepted after shutdown");
    act_actor_unref(a);
    act_runtime_free(rt);
    TAP_CHECK(l.n == 0, "%d timers fired", l.n);
    TAP_CHECK(atomic_load(&msgs_alive) == 0, "%ld messages leaked", atomic_load(&msgs_alive));
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {TAP_CASE(timers_fire_in_deadline_order),
                                            TAP_CASE(cancelled_timers_never_fire),
                                            TAP_CASE(shutdown_frees_pending_timers),
                                            {0}};
    const char *env = getenv("EVOLVE_TEST_SEED");

    seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)ts_now_ms();
    printf("# seed %u (EVOLVE_TEST_SEED=%u to rerun)\n", seed, seed);
    return tap_run(cases, argc, argv);
}
