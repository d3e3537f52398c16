/* engine.c — the batch engine behind include/evolve/batch.h: options, the task list, the
 * scheduler actor (admission under the concurrency cap and the sandbox-creation bucket, retries
 * with exponential backoff and full jitter, the journal), progress, wait/cancel/free, and the
 * summary and report written when the batch completes. One attempt's work is attempt.c.
 * Threads: the API from any non-worker thread; the scheduler behaviour on a runtime worker (one
 * message at a time); bat_engine_verdict/released from task threads. Lock order: b->lock, then
 * b->pool_lock. */
#include "batch/engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "actors/runtime_public.h"
#include "batch/report.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/runtime.h"
#include "io/http.h"
#include "providers/local.h"

enum { MSG_KICK = 1, MSG_TICK, MSG_VERDICT, MSG_FLUSH, MSG_RETRY };

struct sched_msg {
    struct act_msg hdr;
    struct bat_verdict *verdict; /* MSG_VERDICT */
    struct bat_item *item;       /* MSG_RETRY */
};

static uint64_t next_rand(struct evolve_batch *b)
{
    /* xorshift64*: jitter only, not security */
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 2685821657736338717ull;
}

static int send_msg(struct evolve_batch *b, uint32_t type, uint64_t delay_ms, struct bat_verdict *v,
                    struct bat_item *it)
{
    struct sched_msg *m = calloc(1, sizeof(*m));

    if (!m)
        return core_error_oom();
    act_msg_init(&m->hdr, type, (act_msg_free_fn)free);
    m->verdict = v;
    m->item = it;
    if (delay_ms)
        return act_after(NULL, b->sched, delay_ms, &m->hdr);
    return act_send(b->sched, &m->hdr);
}

/* Admits ready tasks while the cap and the bucket allow. @thread scheduler, b->lock held */
static void admit(struct evolve_batch *b)
{
    while (b->started && !b->canceled && b->ready_head && b->running < b->concurrency) {
        struct bat_item *it;
        int64_t wait_ms = bat_bucket_take(&b->bucket, (int64_t)core_mono_ms());

        if (wait_ms > 0) {
            if (!b->kick_pending && send_msg(b, MSG_TICK, (uint64_t)wait_ms, NULL, NULL) == 0)
                b->kick_pending = true;
            return;
        }
        it = b->ready_head;
        b->ready_head = it->next;
        if (!b->ready_head)
            b->ready_tail = NULL;
        it->next = NULL;
        it->queued = false;
        b->queued--;
        it->attempt++;
        if (it->attempt > 1)
            b->retried++;
        else
            it->first_start_wall_ms = core_wall_ms();
        it->running = true;
        it->attempt_mono_ms = core_mono_ms();
        if (++b->running > b->max_running)
            b->max_running = b->running;
        if (bat_pool_push(b, it) < 0) {
            /* No thread to run it: put it back and try again on the next kick. */
            core_log_warn("batch: %s", evolve_error_last()->message);
            it->running = false;
            b->running--;
            it->attempt--;
            it->queued = true;
            it->next = b->ready_head;
            b->ready_head = it;
            if (!b->ready_tail)
                b->ready_tail = it;
            b->queued++;
            return;
        }
    }
}

void bat_enqueue(struct evolve_batch *b, struct bat_item *it)
{
    it->queued = true;
    it->next = NULL;
    if (b->ready_tail)
        b->ready_tail->next = it;
    else
        b->ready_head = it;
    b->ready_tail = it;
    b->queued++;
}

static void account(struct evolve_batch *b, const json_t *r, enum bat_failure f)
{
    const json_t *t = json_object_get(r, "tokens"), *c = json_object_get(r, "costUsd");

    if (f == BAT_FAILURE_NONE)
        b->succeeded++;
    else if (f == BAT_FAILURE_INTERRUPTED)
        b->interrupted++;
    else
        b->failed++;
    b->tokens_prompt += (uint64_t)json_integer_value(json_object_get(t, "prompt"));
    b->tokens_completion += (uint64_t)json_integer_value(json_object_get(t, "completion"));
    if (json_is_number(c))
        b->cost_usd += json_number_value(c);
    else
        b->unpriced++;
}

static void answer(struct bat_verdict *v)
{
    pthread_mutex_lock(&v->lock);
    v->answered = true;
    pthread_cond_signal(&v->cond);
    pthread_mutex_unlock(&v->lock);
}

/* Retry or record. Records are not written here: they wait in b->pending for the FLUSH message
 * this queues behind every verdict already in the mailbox, so one write + fdatasync covers them
 * all (group commit). */
static void on_verdict(struct evolve_batch *b, struct bat_verdict *v)
{
    struct bat_item *it = v->item;
    bool retry, flush = false;

    pthread_mutex_lock(&b->lock);
    if (v->create_throttled)
        bat_bucket_throttled(&b->bucket, 0, (int64_t)core_mono_ms());
    else if (v->created)
        bat_bucket_succeeded(&b->bucket);
    retry = v->klass != BAT_FAILURE_NONE && v->result &&
            bat_failure_is_retryable(v->klass, b->retry_agent_failures) &&
            it->attempt < it->max_attempts && !b->canceled;
    if (retry) {
        struct io_retry_policy p = {.base_ms = (uint32_t)b->retry_base_ms, .cap_ms = 60000};
        uint64_t delay = io_retry_delay_ms(&p, it->attempt, -1, next_rand(b));

        b->waiting_retry++;
        if (send_msg(b, MSG_RETRY, delay ? delay : 1, NULL, it) < 0)
            b->waiting_retry--;
    } else if (v->result) {
        if (b->npending == b->pending_cap) {
            size_t ncap = b->pending_cap ? b->pending_cap * 2 : 64;
            struct bat_verdict **n = realloc(b->pending, ncap * sizeof(*n));

            if (n) {
                b->pending = n;
                b->pending_cap = ncap;
            }
        }
        if (b->npending < b->pending_cap) {
            b->pending[b->npending++] = v;
            flush = !b->flush_queued;
            b->flush_queued = true;
            v = NULL;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (flush && send_msg(b, MSG_FLUSH, 0, NULL, NULL) < 0)
        core_log_warn("batch: scheduler gone: %s", evolve_error_last()->message);
    if (v) {
        if (v->result && !retry) /* no room to queue it: write it alone */
            bat_journal_append(b->journal, v->result);
        json_decref(v->result);
        v->result = NULL;
        answer(v);
    }
}

static void on_flush(struct evolve_batch *b)
{
    struct bat_verdict **group;
    json_t **lines;
    size_t n, i;
    int rc;

    pthread_mutex_lock(&b->lock);
    group = b->pending;
    n = b->npending;
    b->pending = NULL;
    b->npending = b->pending_cap = 0;
    b->flush_queued = false;
    pthread_mutex_unlock(&b->lock);
    if (!n) {
        free(group);
        return;
    }
    lines = malloc(n * sizeof(*lines));
    for (i = 0; lines && i < n; i++)
        lines[i] = group[i]->result;
    /* The journal has one writer (this actor): written outside the lock. */
    rc = lines ? bat_journal_append_many(b->journal, lines, n) : core_error_oom();
    if (rc < 0)
        core_log_warn("batch: %s", evolve_error_last()->message);
    free(lines);
    pthread_mutex_lock(&b->lock);
    if (rc < 0 && !b->journal_rc)
        b->journal_rc = rc;
    for (i = 0; i < n; i++) {
        json_object_set(b->done, group[i]->item->task.id, group[i]->result);
        account(b, group[i]->result, group[i]->klass);
        group[i]->item->finished = true;
    }
    pthread_mutex_unlock(&b->lock);
    for (i = 0; i < n; i++) {
        struct bat_verdict *v = group[i];
        struct bat_item *it = v->item;
        char *line = b->on_result ? json_dumps(v->result, JSON_COMPACT) : NULL;

        json_decref(v->result);
        v->result = NULL;
        answer(v); /* from here the task thread may release the sandbox */
        if (line) {
            b->on_result(it->task.id, line, b->payload);
            free(line);
        }
    }
    free(group);
}

void bat_sched_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct evolve_batch *b = state;
    struct sched_msg *m = (struct sched_msg *)msg;

    (void)self;
    switch (msg->type) {
    case MSG_VERDICT:
        on_verdict(b, m->verdict);
        break;
    case MSG_FLUSH:
        on_flush(b);
        break;
    case MSG_RETRY:
        pthread_mutex_lock(&b->lock);
        b->waiting_retry--;
        if (!b->canceled)
            bat_enqueue(b, m->item);
        pthread_mutex_unlock(&b->lock);
        break;
    case MSG_TICK:
        pthread_mutex_lock(&b->lock);
        b->kick_pending = false;
        pthread_mutex_unlock(&b->lock);
        break;
    default:
        break;
    }
    pthread_mutex_lock(&b->lock);
    admit(b);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    act_msg_free(msg);
}

void bat_engine_verdict(struct evolve_batch *b, struct bat_verdict *v)
{
    if (send_msg(b, MSG_VERDICT, 0, v, NULL) < 0) {
        /* No scheduler (runtime shutting down): record it here; nothing else appends now. */
        if (v->result)
            bat_journal_append(b->journal, v->result);
        json_decref(v->result);
        v->result = NULL;
        return;
    }
    pthread_mutex_lock(&v->lock);
    while (!v->answered)
        pthread_cond_wait(&v->cond, &v->lock);
    pthread_mutex_unlock(&v->lock);
}

void bat_kick(struct evolve_batch *b)
{
    if (send_msg(b, MSG_KICK, 0, NULL, NULL) < 0)
        core_log_warn("batch: scheduler gone: %s", evolve_error_last()->message);
}

void bat_engine_released(struct evolve_batch *b, struct bat_item *it)
{
    pthread_mutex_lock(&b->lock);
    it->running = false;
    b->running--;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    bat_kick(b);
}
