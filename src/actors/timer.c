/* timer.c — act_after/act_timer_cancel: one timer thread per runtime with a binary min-heap
 * ordered by (deadline, id), sleeping on a CLOCK_MONOTONIC condition variable.
 * Owns: pending timers, their messages and their actor references until they fire (the message
 * goes to act_send) or are cancelled (the message is freed).
 * Does not own: the actors; the reactor's timerfd (src/io) is a different thing.
 * Threads: act_after/act_timer_cancel from any thread; timer_main on the timer thread; all heap
 * access under t->mu.
 * Ordering: timers fire in (deadline, id) order; cancel returning 0 means the message was freed
 * and never sent (the heap entry leaves under the same mutex the firing thread takes). */
#include "actors/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"

struct timer {
    uint64_t deadline_ns;
    uint64_t id;
    struct act_actor *actor; /* referenced */
    struct act_msg *msg;
};

struct act_timers {
    struct act_runtime *rt;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    pthread_t thread;
    bool started;
    bool stopped;
    struct timer *heap;
    size_t n, cap;
    uint64_t next_id;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool before(const struct timer *a, const struct timer *b)
{
    return a->deadline_ns < b->deadline_ns || (a->deadline_ns == b->deadline_ns && a->id < b->id);
}

static void swap(struct timer *h, size_t i, size_t j)
{
    struct timer tmp = h[i];

    h[i] = h[j];
    h[j] = tmp;
}

static void sift_up(struct timer *h, size_t i)
{
    while (i > 0 && before(&h[i], &h[(i - 1) / 2])) {
        swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void sift_down(struct timer *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < n && before(&h[l], &h[m]))
            m = l;
        if (r < n && before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        swap(h, i, m);
        i = m;
    }
}

/* Removes entry i (under mu) and returns it. */
static struct timer heap_remove(struct act_timers *t, size_t i)
{
    struct timer out = t->heap[i];

    t->n--;
    if (i != t->n) {
        t->heap[i] = t->heap[t->n];
        sift_down(t->heap, t->n, i);
        sift_up(t->heap, i);
    }
    return out;
}

static void *timer_main(void *arg)
{
    struct act_timers *t = arg;
    struct timer due;
    struct timespec ts;
    uint64_t now;

    pthread_mutex_lock(&t->mu);
    while (!t->stopped) {
        if (t->n == 0) {
            pthread_cond_wait(&t->cv, &t->mu);
            continue;
        }
        now = now_ns();
        if (t->heap[0].deadline_ns > now) {
            ts.tv_sec = (time_t)(t->heap[0].deadline_ns / 1000000000u);
            ts.tv_nsec = (long)(t->heap[0].deadline_ns % 1000000000u);
            pthread_cond_timedwait(&t->cv, &t->mu, &ts);
            continue;
        }
        due = heap_remove(t, 0);
        /* Sent outside the lock, but in heap order: only this thread fires timers. */
        pthread_mutex_unlock(&t->mu);
        act_send(due.actor, due.msg); /* frees the message if the actor stopped */
        act_actor_unref(due.actor);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int act_timers_new(struct act_timers **out, struct act_runtime *rt)
{
    struct act_timers *t = calloc(1, sizeof(*t));
    pthread_condattr_t attr;
    int rc;

    *out = NULL;
    if (!t)
        return core_error_oom();
    t->rt = rt;
    t->next_id = 1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &attr);
    pthread_condattr_destroy(&attr);
    rc = pthread_create(&t->thread, NULL, timer_main, t);
    if (rc != 0) {
        act_timers_free(t);
        return core_error_set(EVOLVE_ERROR, "timer thread: %s", strerror(rc));
    }
    t->started = true;
    *out = t;
    return 0;
}

void act_timers_stop(struct act_timers *t)
{
    struct timer due;

    pthread_mutex_lock(&t->mu);
    if (t->stopped) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    t->stopped = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (t->started)
        pthread_join(t->thread, NULL);
    t->started = false;
    /* The thread is gone: cancel what is left. */
    while (t->n > 0) {
        due = heap_remove(t, t->n - 1);
        act_msg_free(due.msg);
        act_actor_unref(due.actor);
    }
}

void act_timers_free(struct act_timers *t)
{
    if (!t)
        return;
    act_timers_stop(t);
    free(t->heap);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

int act_after(uint64_t *id_out, struct act_actor *a, uint64_t delay_ms, struct act_msg *msg)
{
    struct act_timers *t = act_actor_runtime(a)->timers;
    struct timer *grown;
    struct timer e;
    uint64_t now = now_ns();
    size_t cap;

    if (id_out)
        *id_out = 0;
    if (delay_ms > UINT64_MAX / 2000000u) /* ~292 years: keeps the sum below overflow */
        delay_ms = UINT64_MAX / 2000000u;
    pthread_mutex_lock(&t->mu);
    if (t->stopped) {
        pthread_mutex_unlock(&t->mu);
        act_msg_free(msg);
        return core_error_set(EVOLVE_ESHUTDOWN, "timer not set: the runtime is shutting down");
    }
    if (t->n == t->cap) {
        cap = t->cap ? t->cap * 2 : 16;
        grown = realloc(t->heap, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&t->mu);
            act_msg_free(msg);
            return core_error_oom();
        }
        t->heap = grown;
        t->cap = cap;
    }
    e.deadline_ns = now + delay_ms * 1000000u;
    e.id = t->next_id++;
    e.actor = a;
    e.msg = msg;
    act_actor_ref(a);
    t->heap[t->n] = e;
    sift_up(t->heap, t->n);
    t->n++;
    if (t->heap[0].id == e.id) /* new earliest deadline: the thread must re-arm */
        pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (id_out)
        *id_out = e.id;
    return 0;
}

int act_timer_cancel(struct act_runtime *rt, uint64_t id)
{
    struct act_timers *t = rt->timers;
    struct timer gone;
    size_t i;

    pthread_mutex_lock(&t->mu);
    for (i = 0; i < t->n; i++) {
        if (t->heap[i].id == id)
            break;
    }
    if (i == t->n) {
        pthread_mutex_unlock(&t->mu);
        return core_error_set(EVOLVE_ENOTFOUND,
                              "timer %llu: not pending (fired, cancelled or unknown)",
                              (unsigned long long)id);
    }
    gone = heap_remove(t, i);
    pthread_mutex_unlock(&t->mu);
    act_msg_free(gone.msg);
    act_actor_unref(gone.actor);
    return 0;
}
