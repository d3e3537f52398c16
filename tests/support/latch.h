/* latch.h — a counter other threads bump and a test waits on with a deadline (no sleeps).
 * Everything a thread wrote before ts_latch_add is visible to a waiter that saw the count. */
#ifndef EVOLVE_TEST_LATCH_H
#define EVOLVE_TEST_LATCH_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct ts_latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned long count;
};

static inline void ts_latch_init(struct ts_latch *l)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    l->count = 0;
}

static inline void ts_latch_dispose(struct ts_latch *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

static inline void ts_latch_add(struct ts_latch *l, unsigned long n)
{
    pthread_mutex_lock(&l->mu);
    l->count += n;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static inline unsigned long ts_latch_get(struct ts_latch *l)
{
    unsigned long n;

    pthread_mutex_lock(&l->mu);
    n = l->count;
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* Waits until the count reaches target or timeout_ms passes; true when reached. */
static inline bool ts_latch_wait(struct ts_latch *l, unsigned long target, unsigned timeout_ms)
{
    struct timespec until;
    bool ok;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (l->count < target)
        if (pthread_cond_timedwait(&l->cv, &l->mu, &until) == ETIMEDOUT)
            break;
    ok = l->count >= target;
    pthread_mutex_unlock(&l->mu);
    return ok;
}

#endif
