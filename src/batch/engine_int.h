/* batch/engine_int.h — what engine.c (the public batch API and the scheduler actor) shares with
 * attempt.c (the task threads that run one attempt each, and the cancellers). */
#ifndef EVOLVE_BATCH_ENGINE_INT_H
#define EVOLVE_BATCH_ENGINE_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actors/actors.h"
#include "batch/admission.h"
#include "batch/failure.h"
#include "batch/journal.h"
#include "batch/manifest.h"
#include "evolve/batch.h"

/* One task of this batch. Items live until evolve_batch_free (pointers stay valid). */
struct bat_item {
    struct bat_task task;
    unsigned attempt;      /* attempts started (scheduler) */
    unsigned max_attempts; /* task.attempts */
    bool queued, running;  /* b->lock */
    bool finished;
    uint64_t attempt_mono_ms; /* start of the running attempt (b->lock), for "slowest" */
    int64_t first_start_wall_ms;
    struct bat_item *next; /* ready queue (b->lock) */
    /* The running attempt's session, for cancel: set and cleared by the task thread under
     * ev_lock; a canceller interrupts it under ev_lock. */
    pthread_mutex_t ev_lock;
    evolve_t *ev;
    atomic_bool run_started; /* the session said run_start (set by the event callback) */
    bool interrupt_sent;     /* ev_lock */
};

/* An attempt's verdict, sent by the task thread to the scheduler; the task thread waits for the
 * scheduler's answer (journaled or retry) before it releases the sandbox. */
struct bat_verdict {
    struct bat_item *item;
    json_t *result;         /* the result record (stolen by the scheduler) */
    enum bat_failure klass; /* BAT_FAILURE_NONE on success */
    bool create_throttled;  /* the provider said "rate limited" on create */
    bool created;           /* a sandbox was created */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool answered;
};

struct evolve_batch {
    evolve_runtime_t *rt;
    char *outdir, *provider, *agent, *model, *system_prompt, *schema_path, *store_root;
    char **env;
    uint64_t timeout_ms, retry_base_ms;
    unsigned concurrency, retries;
    bool retry_agent_failures, rerun_failed, checkpoint, reuse;
    evolve_batch_result_cb on_result;
    evolve_batch_event_cb on_event;
    void *payload;

    struct bat_journal *journal; /* appended by the scheduler actor only */
    struct act_actor *sched;

    pthread_mutex_t lock; /* everything below */
    pthread_cond_t cond;  /* progress changed (waiters) */
    json_t *done;         /* id -> last recorded result */
    json_t *ids;          /* ids added to this batch */
    struct bat_item **items;
    size_t nitems, items_cap;
    struct bat_item *ready_head, *ready_tail;
    size_t queued, waiting_retry, running, max_running, retried;
    size_t skipped, succeeded, failed, interrupted, unpriced;
    uint64_t tokens_prompt, tokens_completion;
    double cost_usd;
    bool started, canceled, kick_pending, sched_gone;
    int journal_rc;               /* first journal error */
    struct bat_verdict **pending; /* verdicts waiting for the next group commit */
    size_t npending, pending_cap;
    bool flush_queued;
    struct bat_bucket bucket;
    uint64_t rng;
    atomic_uint_fast64_t events;
    atomic_bool cancel_flag; /* mirrors canceled for task threads (release/acquire pair) */

    /* task thread pool (pool.c) */
    pthread_mutex_t pool_lock;
    pthread_cond_t pool_cond;
    struct bat_item **work; /* ring of items to attempt */
    size_t work_head, work_count, work_cap;
    pthread_t *threads;
    size_t nthreads, idle_threads;
    bool pool_stop;
    /* cancellers (pool.c) */
    pthread_t *cancellers;
    size_t ncancellers;
};

/* A task thread's kept session (--reuse-sandboxes): its sandbox stays alive between tasks whose
 * session options (`sig`) match. */
struct bat_keep {
    evolve_t *ev;
    char *sig;
};

/* attempt.c: runs attempt number `attempt` of `it` to its end (verdict given, slot released).
 * With reuse, `keep` supplies and receives the thread's session. @thread task threads */
void bat_run_attempt(struct evolve_batch *b, struct bat_item *it, unsigned attempt,
                     struct bat_keep *keep);
/* attempt.c: kills and frees a kept session. @thread task threads */
void bat_keep_drop(struct bat_keep *k);

/* pool.c: hands `it` (its attempt number already counted) to a task thread, starting one if
 * none is idle and fewer than `concurrency` exist. Returns 0 or EVOLVE_ENOMEM/EVOLVE_ERROR.
 * @thread the scheduler actor */
int bat_pool_push(struct evolve_batch *b, struct bat_item *it);
/* pool.c: stops and joins the task threads (after every attempt ended). @thread the freeing thread
 */
void bat_pool_stop(struct evolve_batch *b);
/* pool.c: starts the threads that interrupt every running attempt. @thread evolve_batch_cancel */
int bat_cancel_running(struct evolve_batch *b);
void bat_cancellers_join(struct evolve_batch *b);

/* engine.c: the scheduler's behaviour (state: the batch). */
void bat_sched_behaviour(struct act_actor *self, void *state, struct act_msg *msg);
/* engine.c: appends to the ready queue. @thread any, b->lock held */
void bat_enqueue(struct evolve_batch *b, struct bat_item *it);
/* engine.c: asks the scheduler to admit what it can. @thread any, b->lock NOT held */
void bat_kick(struct evolve_batch *b);
/* engine.c: the task thread's verdict; blocks until the scheduler journaled it or scheduled a
 * retry. @thread task threads */
void bat_engine_verdict(struct evolve_batch *b, struct bat_verdict *v);
/* engine.c: the attempt's sandbox is released; the slot is free. @thread task threads */
void bat_engine_released(struct evolve_batch *b, struct bat_item *it);

#endif
