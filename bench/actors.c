/* bench/actors.c — the actor runtime against a pthread mutex+condvar queue, same run, same work.
 * Figures (one JSON line each on stdout, STYLE R21; human text on stderr):
 * - one_actor_msgs_per_s: 2 producer threads -> 1 actor; baseline 2 producers -> queue -> 1
 *   consumer thread.
 * - many_actors_msgs_per_s: 2 producers -> 64 actors round-robin; baseline 2 producers -> queue
 *   -> N consumer threads (N = the runtime's workers, one per core).
 * - *_msgs_per_cpu_s: the same two runs per CPU-second used by the whole process (all threads,
 *   spinning included); steadier than wall time on a shared machine, where other tenants decide
 *   how much CPU we get.
 * - latency_p50_us, latency_p99_us: one sender, one message in flight, time from the send to the
 *   handler; baseline: through the queue to a consumer waiting on the condvar.
 * Messages are preallocated and intrusive in both (no malloc in the measured loop); the handler
 * is the same function. Each figure is the median of RUNS runs; `ratio` is always the speed-up
 * of the actor runtime (>1 = better): ours/baseline for rates, baseline/ours for latencies. The
 * machine is shared, so the load average at the start is printed too. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/actors.h"

#define RUNS         9
#define PRODUCERS    2
#define PER_PRODUCER 1000000
#define MANY         64
#define LAT_MSGS     20000

static uint64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU-seconds the last run_actors/run_baseline consumed (all threads of the process). */
static double last_cpu_s;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void die(const char *what)
{
    fprintf(stderr, "bench_actors: %s\n", what);
    exit(1);
}

/* ---- the shared work ------------------------------------------------------------------ */

struct bmsg {
    struct act_msg hdr; /* first; unused by the baseline except `next` as its link */
    struct bmsg *qnext; /* baseline queue link */
    uint32_t sink;
    uint64_t value;
    uint64_t sent_ns;
};

/* Per-target state, updated the cheapest way that is correct in each model: an actor owns its
 * sink and a single consumer thread owns all of them (plain adds); consumer threads sharing one
 * queue share the targets too (atomic adds). That difference is the point of actors. */
struct sink {
    uint64_t count, sum;        /* owner-only */
    atomic_ullong acount, asum; /* shared consumers */
    uint64_t target;            /* messages this sink gets in a run */
} __attribute__((aligned(64)));

/* Completion: the handler that brings its sink to its target counts one more finished sink;
 * the last one signals. */
struct done {
    atomic_int finished;
    int nsinks;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int flag;
};

static struct sink sinks[MANY];
static struct done done;

static void done_reset(int nsinks)
{
    atomic_store(&done.finished, 0);
    done.nsinks = nsinks;
    done.flag = 0;
}

static void done_wait(void)
{
    pthread_mutex_lock(&done.mu);
    while (!done.flag)
        pthread_cond_wait(&done.cv, &done.mu);
    pthread_mutex_unlock(&done.mu);
}

static void handle(struct bmsg *m, bool shared)
{
    struct sink *s = &sinks[m->sink];
    uint64_t n;

    if (shared) {
        atomic_fetch_add_explicit(&s->asum, m->value, memory_order_relaxed);
        n = atomic_fetch_add_explicit(&s->acount, 1, memory_order_relaxed) + 1;
    } else {
        s->sum += m->value;
        n = ++s->count;
    }
    /* acq_rel: the sink's updates happen-before the last finisher's signal, and so before the
     * measuring thread reads the sums. */
    if (n == s->target &&
        atomic_fetch_add_explicit(&done.finished, 1, memory_order_acq_rel) + 1 == done.nsinks) {
        pthread_mutex_lock(&done.mu);
        done.flag = 1;
        pthread_cond_signal(&done.cv);
        pthread_mutex_unlock(&done.mu);
    }
}

static uint64_t sinks_sum(void)
{
    uint64_t sum = 0;
    int i;

    for (i = 0; i < MANY; i++) {
        sum += sinks[i].sum + atomic_load(&sinks[i].asum);
        sinks[i].sum = sinks[i].count = 0;
        atomic_store(&sinks[i].asum, 0);
        atomic_store(&sinks[i].acount, 0);
    }
    return sum;
}
/* ---- the baseline: a mutex+condvar queue with consumer threads ------------------------ */

struct bqueue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct bmsg *head, *tail;
    int waiting;
    int stop;
    bool shared; /* several consumers */
};

static void bq_push(struct bqueue *q, struct bmsg *m)
{
    m->qnext = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->qnext = m;
    else
        q->head = m;
    q->tail = m;
    if (q->waiting)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static struct bmsg *bq_pop(struct bqueue *q)
{
    struct bmsg *m;

    pthread_mutex_lock(&q->mu);
    while (!q->head && !q->stop) {
        q->waiting++;
        pthread_cond_wait(&q->cv, &q->mu);
        q->waiting--;
    }
    m = q->head;
    if (m) {
        q->head = m->qnext;
        if (!q->head)
            q->tail = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    return m;
}

/* ---- producers -------------------------------------------------------------------------- */

struct producer {
    pthread_t th;
    struct bmsg *msgs;
    size_t n;
    int nsinks;
    struct act_actor **actors; /* NULL: baseline */
    struct bqueue *q;
};

static void *producer_main(void *p)
{
    struct producer *pr = p;
    size_t i;

    for (i = 0; i < pr->n; i++) {
        struct bmsg *m = &pr->msgs[i];

        if (pr->actors) {
            act_msg_init(&m->hdr, 1, NULL);
            act_send(pr->actors[m->sink], &m->hdr);
        } else {
            bq_push(pr->q, m);
        }
    }
    return NULL;
}

static void fill_msgs(struct producer *prods, int nsinks)
{
    int p;
    size_t i;

    for (p = 0; p < MANY; p++)
        sinks[p].target = 0;
    done_reset(nsinks);
    for (p = 0; p < PRODUCERS; p++)
        for (i = 0; i < prods[p].n; i++) {
            struct bmsg *m = &prods[p].msgs[i];

            m->sink = (uint32_t)((i + (size_t)p) % (size_t)nsinks);
            m->value = (uint64_t)p * 1000003u + i;
            sinks[m->sink].target++;
        }
}

static void behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    (void)self;
    (void)state;
    handle((struct bmsg *)msg, false); /* preallocated: nothing to free */
}

/* Runs PRODUCERS x PER_PRODUCER messages into nsinks actors; returns msgs/s. */
static double run_actors(struct act_runtime *rt, struct producer *prods, int nsinks, uint64_t *sum)
{
    struct act_actor *actors[MANY];
    uint64_t t0, t1, c0;
    int i;

    for (i = 0; i < nsinks; i++)
        if (act_actor_new(&actors[i], rt, behaviour, NULL, NULL) != 0)
            die("act_actor_new");
    fill_msgs(prods, nsinks);
    c0 = cpu_ns();
    t0 = now_ns();
    for (i = 0; i < PRODUCERS; i++) {
        prods[i].actors = actors;
        if (pthread_create(&prods[i].th, NULL, producer_main, &prods[i]))
            die("pthread_create");
    }
    for (i = 0; i < PRODUCERS; i++)
        pthread_join(prods[i].th, NULL);
    done_wait();
    t1 = now_ns();
    last_cpu_s = (double)(cpu_ns() - c0) / 1e9;
    for (i = 0; i < nsinks; i++) {
        act_actor_stop(actors[i]);
        act_actor_unref(actors[i]);
    }
    *sum = sinks_sum();
    return (double)PRODUCERS * PER_PRODUCER / ((double)(t1 - t0) / 1e9);
}

static void *consumer_main(void *p)
{
    struct bqueue *q = p;
    struct bmsg *m;

    while ((m = bq_pop(q)))
        handle(m, q->shared);
    return NULL;
}

static double run_baseline(struct producer *prods, int nsinks, int nconsumers, uint64_t *sum)
{
    struct bqueue q = {.head = NULL};
    pthread_t cons[64];
    uint64_t t0, t1, c0;
    int i;

    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    q.shared = nconsumers > 1;
    for (i = 0; i < nconsumers; i++)
        if (pthread_create(&cons[i], NULL, consumer_main, &q))
            die("pthread_create");
    fill_msgs(prods, nsinks);
    c0 = cpu_ns();
    t0 = now_ns();
    for (i = 0; i < PRODUCERS; i++) {
        prods[i].actors = NULL;
        prods[i].q = &q;
        if (pthread_create(&prods[i].th, NULL, producer_main, &prods[i]))
            die("pthread_create");
    }
    for (i = 0; i < PRODUCERS; i++)
        pthread_join(prods[i].th, NULL);
    done_wait();
    t1 = now_ns();
    last_cpu_s = (double)(cpu_ns() - c0) / 1e9;
    pthread_mutex_lock(&q.mu);
    q.stop = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    for (i = 0; i < nconsumers; i++)
        pthread_join(cons[i], NULL);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    *sum = sinks_sum();
    return (double)PRODUCERS * PER_PRODUCER / ((double)(t1 - t0) / 1e9);
}

/* ---- latency ---------------------------------------------------------------------------- */

static uint64_t lat_ns[LAT_MSGS];
static atomic_uint lat_handled;

static void lat_handle(struct bmsg *m)
{
    lat_ns[m->value] = now_ns() - m->sent_ns;
    /* release: pairs with the sender's acquire spin; lat_ns is written first. */
    atomic_store_explicit(&lat_handled, (unsigned)m->value + 1, memory_order_release);
}

static void lat_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    (void)self;
    (void)state;
    lat_handle((struct bmsg *)msg);
}

static void *lat_consumer(void *p)
{
    struct bqueue *q = p;
    struct bmsg *m;

    while ((m = bq_pop(q)))
        lat_handle(m);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* One message in flight at a time; fills p50/p99 in microseconds. */
static void run_latency(struct act_runtime *rt, double *p50, double *p99, uint64_t *sum)
{
    static struct bmsg m;
    struct act_actor *a = NULL;
    struct bqueue q = {.head = NULL};
    pthread_t cons;
    unsigned i;

    atomic_store(&lat_handled, 0);
    if (rt) {
        if (act_actor_new(&a, rt, lat_behaviour, NULL, NULL) != 0)
            die("act_actor_new");
    } else {
        pthread_mutex_init(&q.mu, NULL);
        pthread_cond_init(&q.cv, NULL);
        if (pthread_create(&cons, NULL, lat_consumer, &q))
            die("pthread_create");
    }
    for (i = 0; i < LAT_MSGS; i++) {
        m.value = i;
        m.sent_ns = now_ns();
        if (a) {
            act_msg_init(&m.hdr, 1, NULL);
            act_send(a, &m.hdr);
        } else {
            bq_push(&q, &m);
        }
        /* acquire: pairs with lat_handle's release. */
        while (atomic_load_explicit(&lat_handled, memory_order_acquire) != i + 1)
            cpu_relax();
    }
    if (a) {
        act_actor_stop(a);
        act_actor_unref(a);
    } else {
        pthread_mutex_lock(&q.mu);
        q.stop = 1;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        pthread_join(cons, NULL);
        pthread_mutex_destroy(&q.mu);
        pthread_cond_destroy(&q.cv);
    }
    *sum = 0;
    for (i = 0; i < LAT_MSGS; i++)
        *sum += i;
    qsort(lat_ns, LAT_MSGS, sizeof(lat_ns[0]), cmp_u64);
    *p50 = (double)lat_ns[LAT_MSGS / 2] / 1000.0;
    *p99 = (double)lat_ns[LAT_MSGS * 99 / 100] / 1000.0;
}

/* ---- reporting -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void emit(const char *figure, const char *unit, double *ours, double *base, bool higher,
                 uint64_t work, const char *work_name, uint64_t checksum, unsigned workers,
                 double load)
{
    char sum[17];
    json_t *o;
    double ratio;

    qsort(ours, RUNS, sizeof(double), cmp_double);
    qsort(base, RUNS, sizeof(double), cmp_double);
    ratio = higher ? ours[RUNS / 2] / base[RUNS / 2] : base[RUNS / 2] / ours[RUNS / 2];
    snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)checksum);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:I, s:s, s:f, s:f, s:i, s:f, s:i}", "bench",
                  "actors", "figure", figure, "unit", unit, "median", ours[RUNS / 2], "min",
                  ours[0], "max", ours[RUNS - 1], "runs", RUNS, work_name, (json_int_t)work,
                  "checksum", sum, "baseline_median", base[RUNS / 2], "ratio", ratio, "workers",
                  (int)workers, "loadavg_1m", load, "producers", PRODUCERS);
    if (!o)
        die("out of memory");
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
    fprintf(stderr, "%-24s median %.3g %s (min %.3g, max %.3g)  baseline %.3g  speed-up %.2fx\n",
            figure, ours[RUNS / 2], unit, ours[0], ours[RUNS - 1], base[RUNS / 2], ratio);
}

int main(void)
{
    struct producer prods[PRODUCERS];
    struct act_runtime *rt;
    double one[RUNS], one_b[RUNS], many[RUNS], many_b[RUNS];
    double one_c[RUNS], one_bc[RUNS], many_c[RUNS], many_bc[RUNS]; /* msgs per CPU-second */
    const double total = (double)PRODUCERS * PER_PRODUCER;
    double p50[RUNS], p50_b[RUNS], p99[RUNS], p99_b[RUNS];
    uint64_t sum, sum_b, want = 0;
    double load[3] = {0, 0, 0};
    unsigned workers;
    int r, p;
    size_t i;

    pthread_mutex_init(&done.mu, NULL);
    pthread_cond_init(&done.cv, NULL);
    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    for (p = 0; p < PRODUCERS; p++) {
        prods[p].n = PER_PRODUCER;
        prods[p].msgs = calloc(PER_PRODUCER, sizeof(struct bmsg));
        if (!prods[p].msgs)
            die("out of memory");
        for (i = 0; i < PER_PRODUCER; i++)
            want += (uint64_t)p * 1000003u + i;
    }
    {
        /* EVOLVE_BENCH_WORKERS=n overrides the worker count (default: one per core). */
        const char *env = getenv("EVOLVE_BENCH_WORKERS");
        struct act_runtime_config cfg = {.worker_threads =
                                             env ? (unsigned)strtoul(env, NULL, 10) : 0};

        if (act_runtime_new(&rt, &cfg) != 0)
            die("act_runtime_new");
    }
    workers = act_runtime_workers(rt);
    fprintf(stderr, "bench_actors: %u workers, %d producers x %d messages, %d runs, load %.2f\n",
            workers, PRODUCERS, PER_PRODUCER, RUNS, load[0]);
    for (r = 0; r < RUNS; r++) {
        one[r] = run_actors(rt, prods, 1, &sum);
        one_c[r] = total / last_cpu_s;
        one_b[r] = run_baseline(prods, 1, 1, &sum_b);
        one_bc[r] = total / last_cpu_s;
        if (sum != want || sum_b != want)
            die("one actor: a message was lost or duplicated");
        many[r] = run_actors(rt, prods, MANY, &sum);
        many_c[r] = total / last_cpu_s;
        many_b[r] = run_baseline(prods, MANY, (int)workers, &sum_b);
        many_bc[r] = total / last_cpu_s;
        if (sum != want || sum_b != want)
            die("many actors: a message was lost or duplicated");
        run_latency(rt, &p50[r], &p99[r], &sum);
        run_latency(NULL, &p50_b[r], &p99_b[r], &sum_b);
    }
    emit("one_actor_msgs_per_s", "msgs/s", one, one_b, true, (uint64_t)PRODUCERS * PER_PRODUCER,
         "messages", want, workers, load[0]);
    emit("many_actors_msgs_per_s", "msgs/s", many, many_b, true, (uint64_t)PRODUCERS * PER_PRODUCER,
         "messages", want, workers, load[0]);
    emit("one_actor_msgs_per_cpu_s", "msgs/cpu-s", one_c, one_bc, true,
         (uint64_t)PRODUCERS * PER_PRODUCER, "messages", want, workers, load[0]);
    emit("many_actors_msgs_per_cpu_s", "msgs/cpu-s", many_c, many_bc, true,
         (uint64_t)PRODUCERS * PER_PRODUCER, "messages", want, workers, load[0]);
    emit("latency_p50_us", "us", p50, p50_b, false, LAT_MSGS, "messages", sum, workers, load[0]);
    emit("latency_p99_us", "us", p99, p99_b, false, LAT_MSGS, "messages", sum, workers, load[0]);
    act_runtime_free(rt);
    for (p = 0; p < PRODUCERS; p++)
        free(prods[p].msgs);
    return 0;
}
