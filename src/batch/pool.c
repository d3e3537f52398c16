/* pool.c — the batch's task threads (at most `concurrency`, started on demand, each running one
 * attempt at a time from a FIFO the scheduler fills) and the cancellers that interrupt running
 * attempts on evolve_batch_cancel.
 * Threads: bat_pool_push from the scheduler actor; bat_pool_stop / bat_cancel_running /
 * bat_cancellers_join from the API caller; the thread bodies on their own threads. */
#include "batch/engine_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"

#define TASK_STACK_SIZE (1u << 20)
#define CANCELLERS_MAX  16
#define KEEP_IDLE_MS    200 /* a kept sandbox waits this long for the next task */

/* ---- task threads ------------------------------------------------------------------------- */

static void *task_thread(void *arg)
{
    struct evolve_batch *b = arg;
    struct bat_keep keep = {NULL, NULL};

    pthread_mutex_lock(&b->pool_lock);
    for (;;) {
        struct bat_item *it;
        unsigned attempt;

        while (!b->work_count && !b->pool_stop) {
            if (keep.ev) {
                /* The next task is admitted only once this one released its slot, so give it a
                 * moment; with no work after that, do not keep an idle sandbox alive. */
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += KEEP_IDLE_MS * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                b->idle_threads++;
                pthread_cond_timedwait(&b->pool_cond, &b->pool_lock, &ts);
                b->idle_threads--;
                if (b->work_count || b->pool_stop)
                    continue;
                pthread_mutex_unlock(&b->pool_lock);
                bat_keep_drop(&keep);
                pthread_mutex_lock(&b->pool_lock);
                continue;
            }
            b->idle_threads++;
            pthread_cond_wait(&b->pool_cond, &b->pool_lock);
            b->idle_threads--;
        }
        if (!b->work_count)
            break;
        it = b->work[b->work_head];
        b->work_head = (b->work_head + 1) % b->work_cap;
        b->work_count--;
        attempt = it->attempt;
        pthread_mutex_unlock(&b->pool_lock);
        bat_run_attempt(b, it, attempt, b->reuse ? &keep : NULL);
        pthread_mutex_lock(&b->pool_lock);
    }
    pthread_mutex_unlock(&b->pool_lock);
    bat_keep_drop(&keep);
    return NULL;
}

int bat_pool_push(struct evolve_batch *b, struct bat_item *it)
{
    int rc = 0;

    pthread_mutex_lock(&b->pool_lock);
    if (b->work_count == b->work_cap) {
        size_t ncap = b->work_cap ? b->work_cap * 2 : 64, i;
        struct bat_item **n = malloc(ncap * sizeof(*n));

        if (!n) {
            pthread_mutex_unlock(&b->pool_lock);
            return core_error_oom();
        }
        for (i = 0; i < b->work_count; i++)
            n[i] = b->work[(b->work_head + i) % b->work_cap];
        free(b->work);
        b->work = n;
        b->work_head = 0;
        b->work_cap = ncap;
    }
    b->work[(b->work_head + b->work_count) % b->work_cap] = it;
    b->work_count++;
    if (b->idle_threads < b->work_count && b->nthreads < b->concurrency) {
        pthread_attr_t attr;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, TASK_STACK_SIZE);
        if (pthread_create(&b->threads[b->nthreads], &attr, task_thread, b) == 0)
            b->nthreads++;
        else if (b->nthreads == 0)
            rc = core_error_set(EVOLVE_ERROR, "batch: cannot start a task thread");
        pthread_attr_destroy(&attr);
    }
    pthread_cond_signal(&b->pool_cond);
    pthread_mutex_unlock(&b->pool_lock);
    return rc;
}

void bat_pool_stop(struct evolve_batch *b)
{
    size_t i;

    pthread_mutex_lock(&b->pool_lock);
    b->pool_stop = true;
    pthread_cond_broadcast(&b->pool_cond);
    pthread_mutex_unlock(&b->pool_lock);
    for (i = 0; i < b->nthreads; i++)
        pthread_join(b->threads[i], NULL);
    b->nthreads = 0;
}

/* ---- cancellers ----------------------------------------------------------------------------- */

struct cancel_job {
    struct evolve_batch *b;
    struct bat_item **items;
    size_t count;
    atomic_size_t next;
    atomic_int users;
};

static void cancel_job_put(struct cancel_job *j)
{
    /* acq_rel: the last user frees what the others wrote */
    if (atomic_fetch_sub_explicit(&j->users, 1, memory_order_acq_rel) == 1) {
        free(j->items);
        free(j);
    }
}

/* Interrupts one attempt; false when it must be tried again (its run has not started yet, so
 * the interrupt could land before it and be lost). */
static bool interrupt_item(struct bat_item *it)
{
    bool done = true;

    pthread_mutex_lock(&it->ev_lock);
    if (it->ev && !it->interrupt_sent) {
        /* acquire: pairs with the release store of the event callback */
        bool started = atomic_load_explicit(&it->run_started, memory_order_acquire);

        evolve_interrupt(it->ev);
        it->interrupt_sent = started;
        done = started;
    }
    pthread_mutex_unlock(&it->ev_lock);
    return done;
}

static void *canceller(void *arg)
{
    struct cancel_job *j = arg;
    size_t i;

    while ((i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->count) {
        struct bat_item *it = j->items[i];
        uint64_t deadline = core_mono_ms() + 30000;

        while (!interrupt_item(it) && core_mono_ms() < deadline) {
            struct timespec ts = {0, 50 * 1000000L}; /* its run is about to start: poll */

            nanosleep(&ts, NULL);
        }
    }
    cancel_job_put(j);
    return NULL;
}

int bat_cancel_running(struct evolve_batch *b)
{
    struct cancel_job *j = calloc(1, sizeof(*j));
    size_t i, n = 0, k;

    if (!j)
        return core_error_oom();
    pthread_mutex_lock(&b->lock);
    j->items = calloc(b->nitems + 1, sizeof(*j->items));
    for (i = 0; j->items && i < b->nitems; i++)
        if (b->items[i]->running)
            j->items[n++] = b->items[i];
    pthread_mutex_unlock(&b->lock);
    if (!j->items) {
        free(j);
        return core_error_oom();
    }
    j->b = b;
    j->count = n;
    k = n < CANCELLERS_MAX ? n : CANCELLERS_MAX;
    atomic_init(&j->users, (int)k + 1);
    b->cancellers = calloc(k ? k : 1, sizeof(*b->cancellers));
    for (i = 0; b->cancellers && i < k; i++) {
        if (pthread_create(&b->cancellers[b->ncancellers], NULL, canceller, j) != 0)
            cancel_job_put(j);
        else
            b->ncancellers++;
    }
    for (; i < k; i++)
        cancel_job_put(j);
    cancel_job_put(j);
    return 0;
}

void bat_cancellers_join(struct evolve_batch *b)
{
    size_t i;

    for (i = 0; i < b->ncancellers; i++)
        pthread_join(b->cancellers[i], NULL);
    free(b->cancellers);
    b->cancellers = NULL;
    b->ncancellers = 0;
}
