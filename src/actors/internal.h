/* actors/internal.h — what the files of src/actors share and nobody else may use: the run-queue
 * task, the runtime struct, and the hooks between runtime.c, actor.c and timer.c. */
#ifndef EVOLVE_ACTORS_INTERNAL_H
#define EVOLVE_ACTORS_INTERNAL_H

#include "actors/actors.h"

#include <pthread.h>

/* Something a worker runs: an actor's turn or a job. Intrusive: embedded in its owner. */
struct act_task {
    _Atomic(struct act_task *) next; /* run-queue link */
    void (*run)(struct act_task *task);
};

/* One worker's run queue: an intrusive MPSC queue (push is one exchange) whose consumer side is
 * guarded by a try-lock so that idle workers can steal from it. */
struct act_runq {
    _Atomic(struct act_task *) head; /* last pushed; producers exchange it */
    struct act_task *tail;           /* next to pop; only the lock holder touches it */
    struct act_task stub;            /* keeps the list non-empty */
    atomic_bool locked;              /* consumer try-lock */
    atomic_long queued;              /* pushed and not yet popped: the parking check */
} __attribute__((aligned(64)));

struct act_worker {
    struct act_runtime *rt;
    unsigned index;
    pthread_t thread;
    struct act_runq q;
};

struct act_timers; /* timer.c */

struct act_runtime {
    unsigned nworkers;
    struct act_worker *workers;
    unsigned started; /* workers whose thread runs (for cleanup of a half-built runtime) */

    atomic_long jobs;    /* jobs submitted and not yet finished: the shutdown check */
    atomic_int sleepers; /* workers parked or about to park */
    atomic_int spinners; /* workers polling the queues before parking (advisory) */
    atomic_bool closing; /* shutdown began: no new actors, jobs or timers */
    atomic_bool exiting; /* workers leave once their queues are empty */
    pthread_mutex_t park_mu;
    pthread_cond_t park_cv;

    /* Registry of live (not yet stopped-and-drained) actors, for shutdown. */
    pthread_mutex_t mu;
    pthread_cond_t quiet_cv; /* shutdown waits here for nlive == 0 && jobs == 0 */
    struct act_actor *live;  /* doubly linked through act_actor.live_prev/next */
    long nlive;
    bool shut_down;

    struct act_timers *timers;
};

/* Queues a task: on the calling worker's own queue when called from a worker of `rt`, else
 * round-robin. Wakes a parked worker when one is parked. The caller guarantees the runtime is
 * still running (it holds a task that is running, or a live actor's reference).
 * @thread any */
void act_runq_schedule(struct act_runtime *rt, struct act_task *task);

/* Stops every live actor (shutdown); actor.c owns the registry links. @thread any */
void act_registry_stop_all(struct act_runtime *rt);

/* Timer thread of a runtime (timer.c). stop cancels every pending timer and joins the thread.
 * @thread any */
int act_timers_new(struct act_timers **out, struct act_runtime *rt);
void act_timers_stop(struct act_timers *t);
void act_timers_free(struct act_timers *t);

#endif
