/* runtime.c — the worker pool: per-worker run queues, stealing, parking, one-off jobs, shutdown.
 * Owns: the worker threads and their queues (each with its `queued` count), the `jobs` count,
 * the park mutex.
 * Does not own: actors and their mailboxes (actor.c), timers (timer.c).
 * Threads: act_runq_schedule and act_runtime_submit from any thread; worker_main on the workers;
 * act_runtime_new/shutdown/free from a thread that is not a worker.
 * Ordering: a task pushed happens-before it runs (exchange/release on push, acquire on pop). A
 * worker parks only after announcing itself in `sleepers` and re-checking every queue's `queued`,
 * and a pusher bumps its queue's `queued` before reading `sleepers` (all seq_cst): one of the two
 * always sees the other. The counts live on each queue's own cache line, next to the head the
 * pusher exchanges anyway, so there is no counter every thread fights over;
 * so no wake-up is lost.
 * Shutdown: once no actor is live and no job pending, workers are told to exit; a worker exits
 * only when it finds every `queued` at 0 while parking, so tasks still queued (the last turns of
 * stopped actors) run first. Nothing else is counted on the hot path. */
#include "actors/internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

/* The worker running on this thread, if any (for "push to my own queue" and the on_worker
 * assertions). */
static _Thread_local struct act_worker *tls_worker;

/* Round-robin cursor of a thread outside the pool (a thread-local, so pushes from different
 * threads share no counter). */
static _Thread_local unsigned tls_rr;

/* Polls of `queued` before a worker parks: a few microseconds, so a message that arrives right
 * after a queue ran dry does not pay for a futex wake. Kept short: the machine is shared. */
#define SPIN_POLLS 256

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void runq_init(struct act_runq *q)
{
    atomic_store_explicit(&q->stub.next, NULL, memory_order_relaxed);
    q->stub.run = NULL;
    atomic_store_explicit(&q->head, &q->stub, memory_order_relaxed);
    q->tail = &q->stub;
    atomic_store_explicit(&q->locked, false, memory_order_relaxed);
    atomic_store_explicit(&q->queued, 0, memory_order_relaxed);
}

static void runq_push(struct act_runq *q, struct act_task *t)
{
    struct act_task *prev;

    atomic_store_explicit(&t->next, NULL, memory_order_relaxed);
    /* acq_rel: release publishes t->next = NULL and the task to the next pusher, whose link store
     * must come after ours; acquire pairs with the previous pusher's exchange so its
     * prev->next = NULL is ordered before the link we store below. */
    prev = atomic_exchange_explicit(&q->head, t, memory_order_acq_rel);
    /* release: pairs with the acquire loads of ->next in runq_pop; the task is complete before a
     * consumer can reach it. */
    atomic_store_explicit(&prev->next, t, memory_order_release);
}

/* Vyukov's intrusive MPSC pop; the caller holds q->locked. NULL when empty or when a push is
 * between its exchange and its link (the pusher's `queued` increment keeps workers looking). */
static struct act_task *runq_pop(struct act_runq *q)
{
    struct act_task *tail = q->tail;
    /* acquire (all ->next loads): pair with the release link store in runq_push. */
    struct act_task *next = atomic_load_explicit(&tail->next, memory_order_acquire);

    if (tail == &q->stub) {
        if (!next)
            return NULL;
        q->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next) {
        q->tail = next;
        return tail;
    }
    /* acquire: pairs with the pushers' exchange; if head moved, a push is in progress. */
    if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
        return NULL;
    runq_push(q, &q->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        q->tail = next;
        return tail;
    }
    return NULL;
}

/* Pops under the try-lock and counts the task out of q->queued. *more is set when the queue
 * still had others (the caller then makes sure another worker looks). */
static struct act_task *runq_trypop(struct act_runq *q, bool *more)
{
    struct act_task *t;

    if (atomic_load_explicit(&q->locked, memory_order_relaxed))
        return NULL;
    /* acquire: pairs with the release unlock below, so this consumer sees q->tail as the last
     * consumer (owner or thief) left it. */
    if (atomic_exchange_explicit(&q->locked, true, memory_order_acquire))
        return NULL;
    t = runq_pop(q);
    atomic_store_explicit(&q->locked, false, memory_order_release);
    /* seq_cst: keeps the counts in one order with the pushers' increments (see park). */
    if (t)
        *more = atomic_fetch_sub_explicit(&q->queued, 1, memory_order_seq_cst) > 1;
    return t;
}

/* Own queue first, then steal from the others in order. */
static struct act_task *find_task(struct act_worker *w, bool *more)
{
    struct act_runtime *rt = w->rt;
    struct act_task *t = runq_trypop(&w->q, more);
    unsigned i;

    for (i = 1; !t && i < rt->nworkers; i++)
        t = runq_trypop(&rt->workers[(w->index + i) % rt->nworkers].q, more);
    return t;
}

/* Tasks pushed and not yet popped, over all queues (a snapshot). */
static long total_queued(struct act_runtime *rt, memory_order order)
{
    long n = 0;
    unsigned i;

    for (i = 0; i < rt->nworkers; i++)
        n += atomic_load_explicit(&rt->workers[i].q.queued, order);
    return n;
}

/* Called after a job ran (or a submit was refused): the last one out wakes a shutdown waiting
 * for quiet. */
static void job_done(struct act_runtime *rt)
{
    /* seq_cst: pairs with the seq_cst store of `closing` in shutdown; either we see closing and
     * signal, or shutdown's own check of `jobs` sees our decrement. */
    if (atomic_fetch_sub_explicit(&rt->jobs, 1, memory_order_seq_cst) == 1 &&
        atomic_load_explicit(&rt->closing, memory_order_seq_cst)) {
        pthread_mutex_lock(&rt->mu);
        pthread_cond_broadcast(&rt->quiet_cv);
        pthread_mutex_unlock(&rt->mu);
    }
}

/* Wakes one parked worker if some are parked and none is spinning. A spinning worker will
 * find the task by itself (and wakes another if it finds more than one, see worker_main); a
 * spinner that gives up re-checks `queued` in park() before sleeping, so skipping the wake here
 * loses nothing. This keeps futex wakes off the path of a busy runtime. */
static void maybe_wake(struct act_runtime *rt)
{
    /* seq_cst: the second half of the Dekker pair described in schedule_counted/park. */
    if (atomic_load_explicit(&rt->sleepers, memory_order_seq_cst) > 0 &&
        atomic_load_explicit(&rt->spinners, memory_order_relaxed) == 0) {
        pthread_mutex_lock(&rt->park_mu);
        pthread_cond_signal(&rt->park_cv);
        pthread_mutex_unlock(&rt->park_mu);
    }
}

void act_runq_schedule(struct act_runtime *rt, struct act_task *task)
{
    struct act_worker *w = tls_worker;
    unsigned i;

    if (w && w->rt == rt)
        i = w->index;
    else
        i = tls_rr++ % rt->nworkers;
    runq_push(&rt->workers[i].q, task);
    /* seq_cst: Dekker with park(): this increment is ordered before our load of `sleepers`,
     * and a parking worker's increment of `sleepers` before its loads of the counts. */
    atomic_fetch_add_explicit(&rt->workers[i].q.queued, 1, memory_order_seq_cst);
    maybe_wake(rt);
}

/* Parks until something is queued. Returns true when the worker should exit. */
static bool park(struct act_runtime *rt)
{
    bool leave = false;

    pthread_mutex_lock(&rt->park_mu);
    atomic_fetch_add_explicit(&rt->sleepers, 1, memory_order_seq_cst);
    for (;;) {
        if (total_queued(rt, memory_order_seq_cst) > 0)
            break;
        /* acquire: pairs with the release store in shutdown (made under park_mu anyway). */
        if (atomic_load_explicit(&rt->exiting, memory_order_acquire)) {
            leave = true;
            break;
        }
        pthread_cond_wait(&rt->park_cv, &rt->park_mu);
    }
    atomic_fetch_sub_explicit(&rt->sleepers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&rt->park_mu);
    return leave;
}

static void *worker_main(void *arg)
{
    struct act_worker *w = arg;
    struct act_runtime *rt = w->rt;
    struct act_task *t;
    bool more = false;
    int i;

    tls_worker = w;
    for (;;) {
        t = find_task(w, &more);
        if (t) {
            /* More queued than this one: make sure someone else looks (see maybe_wake). */
            if (more)
                maybe_wake(rt);
            t->run(t); /* may free t */
            continue;
        }
        atomic_fetch_add_explicit(&rt->spinners, 1, memory_order_relaxed);
        for (i = 0; i < SPIN_POLLS; i++) {
            if (total_queued(rt, memory_order_relaxed) > 0)
                break;
            cpu_relax();
        }
        atomic_fetch_sub_explicit(&rt->spinners, 1, memory_order_relaxed);
        if (i < SPIN_POLLS)
            continue;
        if (park(rt))
            break;
    }
    tls_worker = NULL;
    return NULL;
}

unsigned act_runtime_workers(const struct act_runtime *rt)
{
    return rt->nworkers;
}

bool act_runtime_on_worker(const struct act_runtime *rt)
{
    return tls_worker && tls_worker->rt == rt;
}

static void stop_workers(struct act_runtime *rt)
{
    unsigned i;

    pthread_mutex_lock(&rt->park_mu);
    /* release: pairs with the acquire load in park(). */
    atomic_store_explicit(&rt->exiting, true, memory_order_release);
    pthread_cond_broadcast(&rt->park_cv);
    pthread_mutex_unlock(&rt->park_mu);
    for (i = 0; i < rt->started; i++)
        pthread_join(rt->workers[i].thread, NULL);
    rt->started = 0;
}

int act_runtime_new(struct act_runtime **out, const struct act_runtime_config *cfg)
{
    struct act_runtime *rt;
    long ncpu;
    unsigned n, i;
    size_t size;
    int rc;

    *out = NULL;
    n = cfg ? cfg->worker_threads : 0;
    if (n == 0) {
        ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        n = ncpu > 0 ? (unsigned)ncpu : 1;
    }
    if (n > 1024)
        return core_error_set(EVOLVE_EINVAL, "act_runtime_config.worker_threads: %u is above 1024",
                              n);
    rt = calloc(1, sizeof(*rt));
    if (!rt)
        return core_error_oom();
    size = sizeof(struct act_worker) * n; /* a multiple of 64: act_runq is 64-aligned */
    rt->workers = aligned_alloc(64, size);
    if (!rt->workers) {
        free(rt);
        return core_error_oom();
    }
    memset(rt->workers, 0, size);
    rt->nworkers = n;
    pthread_mutex_init(&rt->park_mu, NULL);
    pthread_cond_init(&rt->park_cv, NULL);
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->quiet_cv, NULL);
    for (i = 0; i < n; i++) {
        rt->workers[i].rt = rt;
        rt->workers[i].index = i;
        runq_init(&rt->workers[i].q);
    }
    rc = act_timers_new(&rt->timers, rt);
    if (rc < 0)
        goto fail;
    for (i = 0; i < n; i++) {
        rc = pthread_create(&rt->workers[i].thread, NULL, worker_main, &rt->workers[i]);
        if (rc != 0) {
            rc = core_error_set(EVOLVE_ERROR, "worker thread %u of %u: %s", i + 1, n, strerror(rc));
            goto fail;
        }
        rt->started++;
    }
    *out = rt;
    return 0;
fail:
    act_runtime_free(rt);
    return rc;
}

void act_runtime_shutdown(struct act_runtime *rt)
{
    assert(!act_runtime_on_worker(rt));
    pthread_mutex_lock(&rt->mu);
    if (rt->shut_down) {
        pthread_mutex_unlock(&rt->mu);
        return;
    }
    rt->shut_down = true;
    /* seq_cst: pairs with job_done() and act_runtime_submit(); set under mu so that
     * act_actor_new (which registers under mu) either sees it or is stopped below. */
    atomic_store_explicit(&rt->closing, true, memory_order_seq_cst);
    pthread_mutex_unlock(&rt->mu);

    if (rt->timers)
        act_timers_stop(rt->timers);
    act_registry_stop_all(rt);
    pthread_mutex_lock(&rt->mu);
    while (rt->nlive > 0 || atomic_load_explicit(&rt->jobs, memory_order_seq_cst) > 0)
        pthread_cond_wait(&rt->quiet_cv, &rt->mu);
    pthread_mutex_unlock(&rt->mu);
    stop_workers(rt);
}

void act_runtime_free(struct act_runtime *rt)
{
    if (!rt)
        return;
    if (rt->started == rt->nworkers)
        act_runtime_shutdown(rt);
    else
        stop_workers(rt); /* half-built: nothing can have been queued */
    act_timers_free(rt->timers);
    pthread_mutex_destroy(&rt->park_mu);
    pthread_cond_destroy(&rt->park_cv);
    pthread_mutex_destroy(&rt->mu);
    pthread_cond_destroy(&rt->quiet_cv);
    free(rt->workers);
    free(rt);
}

struct job {
    struct act_task task; /* first */
    struct act_runtime *rt;
    void (*fn)(void *arg);
    void *arg;
};

static void job_run(struct act_task *task)
{
    struct job *j = (struct job *)task;
    void (*fn)(void *) = j->fn;
    void *arg = j->arg;
    struct act_runtime *rt = j->rt;

    free(j);
    fn(arg);
    job_done(rt);
}

int act_runtime_submit(struct act_runtime *rt, void (*fn)(void *arg), void *arg)
{
    struct job *j;

    /* seq_cst: Dekker with shutdown, which stores `closing` then reads `jobs`: either it
     * waits for this job or we see `closing` and refuse. */
    atomic_fetch_add_explicit(&rt->jobs, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&rt->closing, memory_order_seq_cst)) {
        job_done(rt);
        return core_error_set(EVOLVE_ESHUTDOWN, "job not queued: the runtime is shutting down");
    }
    j = malloc(sizeof(*j));
    if (!j) {
        job_done(rt);
        return core_error_oom();
    }
    j->task.run = job_run;
    j->rt = rt;
    j->fn = fn;
    j->arg = arg;
    act_runq_schedule(rt, &j->task);
    return 0;
}
