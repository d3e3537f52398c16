/* api.c — the public batch API (include/evolve/batch.h): options, adding tasks (one line or a
 * whole manifest, with shards and rerun skipping), start, progress, wait (then summary.json and
 * report.html), cancel, free, and merge. The scheduler and the attempts are engine.c and
 * attempt.c.
 * Threads: any thread that is not a runtime worker. */
#include "batch/engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/runtime_public.h"
#include "batch/report.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/runtime.h"
#include "providers/local.h"

#define LOCAL_CREATE_RATE  200.0
#define REMOTE_CREATE_RATE 20.0

static int mkdir_p(const char *path)
{
    char buf[4096];
    size_t i, n = strlen(path);

    if (n == 0 || n >= sizeof(buf))
        return core_error_set(EVOLVE_EINVAL, "batch: bad output directory \"%s\"", path);
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return core_error_set(EVOLVE_EIO, "%s: %s", buf, strerror(errno));
        buf[i] = path[i];
    }
    return 0;
}

static void sched_gone(void *state)
{
    struct evolve_batch *b = state;

    pthread_mutex_lock(&b->lock);
    b->sched_gone = true;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static int copy_opts(struct evolve_batch *b, const evolve_batch_options_t *o)
{
    size_t n = 0, i;

#define DUP(field, src)                                                                            \
    if ((src) && !(b->field = strdup(src)))                                                        \
        return core_error_oom();
    DUP(outdir, o->outdir);
    DUP(provider, o->provider);
    DUP(agent, o->agent);
    DUP(model, o->model);
    DUP(system_prompt, o->system_prompt);
    DUP(schema_path, o->schema_path);
    DUP(store_root, o->store_root);
#undef DUP
    while (o->env && o->env[n])
        n++;
    if (n) {
        if (!(b->env = calloc(n + 1, sizeof(char *))))
            return core_error_oom();
        for (i = 0; i < n; i++)
            if (!(b->env[i] = strdup(o->env[i])))
                return core_error_oom();
    }
    return 0;
}

static void batch_dispose(struct evolve_batch *b)
{
    size_t i;

    for (i = 0; i < b->nitems; i++) {
        bat_task_dispose(&b->items[i]->task);
        pthread_mutex_destroy(&b->items[i]->ev_lock);
        free(b->items[i]);
    }
    free(b->items);
    for (i = 0; b->env && b->env[i]; i++)
        free(b->env[i]);
    free(b->env);
    free(b->outdir);
    free(b->provider);
    free(b->agent);
    free(b->model);
    free(b->system_prompt);
    free(b->schema_path);
    free(b->store_root);
    free(b->threads);
    free(b->work);
    free(b->pending);
    json_decref(b->done);
    json_decref(b->ids);
    bat_journal_free(b->journal);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->pool_lock);
    pthread_cond_destroy(&b->pool_cond);
    free(b);
}

/* On the local provider, removes sandboxes whose owner process died (an earlier batch killed
 * with -9): their directories and whatever processes are left. */
static void reap_orphans(struct evolve_batch *b)
{
    struct prov *p;
    size_t n = 0;

    if (b->provider && strcmp(b->provider, "local"))
        return;
    if (core_runtime_provider(&p, b->rt, "local") < 0 ||
        prov_local_reap_orphans(prov_local_from(p), &n) < 0) {
        core_log_warn("batch: reaping orphaned sandboxes: %s", evolve_error_last()->message);
        return;
    }
    if (n)
        core_log_info("batch: reaped %zu orphaned sandbox%s", n, n == 1 ? "" : "es");
}

int evolve_batch_new(evolve_batch_t **out, evolve_runtime_t *rt, const evolve_batch_options_t *o)
{
    struct evolve_batch *b;
    char dir[4096];
    const char *const subdirs[] = {"events", "outputs", "sessions"};
    size_t i, bad = 0;
    int rc, torn = 0;
    double rate;

    *out = NULL;
    if (!rt || !o || o->version == 0 || o->version > EVOLVE_BATCH_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_new: bad options (version %u)",
                              o ? o->version : 0);
    if (!o->outdir || !*o->outdir)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_new: an output directory is required");
    if (o->create_rate < 0 || o->create_rate != o->create_rate)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_new: create_rate must be > 0");
    if (!(b = calloc(1, sizeof(*b))))
        return core_error_oom();
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    pthread_mutex_init(&b->pool_lock, NULL);
    pthread_cond_init(&b->pool_cond, NULL);
    b->rt = rt;
    b->concurrency = o->concurrency ? o->concurrency : 4;
    b->retries = o->retries;
    b->retry_agent_failures = o->retry_agent_failures;
    b->checkpoint = o->checkpoint;
    b->reuse = o->reuse_sandboxes;
    b->rerun_failed = o->rerun_failed;
    b->retry_base_ms = o->retry_base_ms ? o->retry_base_ms : 1000;
    b->timeout_ms = o->timeout_ms;
    b->on_result = o->on_result;
    b->on_event = o->on_event;
    b->payload = o->payload;
    b->rng = (uint64_t)core_wall_ms() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)b;
    if (!b->rng)
        b->rng = 1;
    if ((rc = copy_opts(b, o)) < 0 || !(b->threads = calloc(b->concurrency, sizeof(*b->threads))) ||
        !(b->ids = json_object())) {
        rc = rc < 0 ? rc : core_error_oom();
        goto fail;
    }
    if ((rc = mkdir_p(b->outdir)) < 0)
        goto fail;
    for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", b->outdir, subdirs[i]);
        if ((rc = mkdir_p(dir)) < 0)
            goto fail;
    }
    if ((rc = bat_journal_open(&b->journal, b->outdir, &b->done, &torn, &bad)) < 0)
        goto fail;
    if (torn)
        core_log_warn("batch: %s/results.jsonl: cut a torn last line (its task reruns)", b->outdir);
    if (bad)
        core_log_warn("batch: %s/results.jsonl: skipped %zu unreadable line%s", b->outdir, bad,
                      bad == 1 ? "" : "s");
    rate = o->create_rate > 0                                ? o->create_rate
           : (!b->provider || !strcmp(b->provider, "local")) ? LOCAL_CREATE_RATE
                                                             : REMOTE_CREATE_RATE;
    bat_bucket_init(&b->bucket, rate, rate < 32 ? (rate < 1 ? 1 : rate) : 32, b->rng,
                    (int64_t)core_mono_ms());
    reap_orphans(b);
    if ((rc = act_actor_new(&b->sched, act_runtime_of(rt), bat_sched_behaviour, b, sched_gone)) < 0)
        goto fail;
    *out = b;
    return 0;
fail:
    batch_dispose(b);
    return rc;
}

/* What the engine cannot run even though the manifest format allows it; NULL when fine. */
static const char *task_problem(const struct bat_task *t)
{
    if (t->from && (t->files_count || t->context_count))
        /* The run restores the checkpoint into a fresh sandbox; uploads before it would boot a
         * sandbox the restore refuses to overwrite. */
        return "\"files\"/\"context\" cannot be combined with \"from\" (the checkpoint "
               "provides the workspace)";
    return NULL;
}

static bool id_names_a_file(const char *id)
{
    return strlen(id) <= 200 && !strchr(id, '/') && strcmp(id, ".") && strcmp(id, "..");
}

/* Takes ownership of *t (zeroed on return). Returns 0 added, 1 skipped, or an error. */
static int add_item(struct evolve_batch *b, struct bat_task *t)
{
    struct bat_item *it;
    const json_t *prev;
    const char *st;
    bool kick;
    int rc = 0;

    if (!id_names_a_file(t->id)) {
        rc = core_error_set(EVOLVE_EINVAL,
                            "task \"%s\": an id must be a file name (no '/', not . or .., at most "
                            "200 bytes)",
                            t->id);
        bat_task_dispose(t);
        return rc;
    }
    if (task_problem(t)) {
        rc = core_error_set(EVOLVE_EINVAL, "task \"%s\": %s", t->id, task_problem(t));
        bat_task_dispose(t);
        return rc;
    }
    pthread_mutex_lock(&b->lock);
    if (b->canceled) {
        rc = core_error_set(EVOLVE_ECANCELED, "batch canceled: task %s not added", t->id);
    } else if (json_object_get(b->ids, t->id)) {
        rc = core_error_set(EVOLVE_EINVAL, "duplicate task id \"%s\"", t->id);
    } else if (json_object_set_new(b->ids, t->id, json_true()) < 0) {
        rc = core_error_oom();
    } else if ((prev = json_object_get(b->done, t->id)) &&
               (st = json_string_value(json_object_get(prev, "status"))) &&
               (!strcmp(st, "success") || (!strcmp(st, "failed") && !b->rerun_failed))) {
        b->skipped++;
        rc = 1;
    } else if (b->nitems == b->items_cap &&
               !(b->items = reallocarray(b->items, b->items_cap = b->items_cap * 2 + 64,
                                         sizeof(*b->items)))) {
        rc = core_error_oom();
    } else if (!(it = calloc(1, sizeof(*it)))) {
        rc = core_error_oom();
    } else {
        it->task = *t;
        memset(t, 0, sizeof(*t));
        it->max_attempts = it->task.attempts ? it->task.attempts : 1;
        pthread_mutex_init(&it->ev_lock, NULL);
        b->items[b->nitems++] = it;
        bat_enqueue(b, it);
    }
    kick = rc == 0 && b->started;
    pthread_mutex_unlock(&b->lock);
    bat_task_dispose(t);
    if (kick)
        bat_kick(b);
    return rc;
}

static void defaults(const struct evolve_batch *b, struct bat_defaults *d)
{
    memset(d, 0, sizeof(*d));
    d->agent = b->agent;
    d->model = b->model;
    d->system_prompt = b->system_prompt;
    d->schema_path = b->schema_path;
    d->timeout_ms = b->timeout_ms;
    d->attempts = 1 + b->retries;
}

int evolve_batch_add_task(evolve_batch_t *b, const char *task_json)
{
    struct bat_defaults d;
    struct bat_task t;
    int rc;

    if (!b || !task_json)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_add_task: NULL argument");
    defaults(b, &d);
    if ((rc = bat_task_parse(&t, task_json, NULL, &d)) < 0)
        return rc;
    return add_item(b, &t);
}

/* The manifest's problems plus the engine's own (task_problem, file-name ids) as
 * "path:line: reason" lines; the engine's are added to m->problems. Returns the joined text
 * (NULL when none or on OOM). */
static char *collect_problems(struct bat_manifest *m, unsigned shard_index, unsigned shard_count)
{
    size_t i, len = 0;
    char *s, *p;

    for (i = 0; i < m->count; i++) {
        const struct bat_task *t = &m->tasks[i];
        const char *why = task_problem(t);
        char **n, line[1024];

        if (shard_count && !bat_task_in_shard(t, shard_index, shard_count))
            continue;
        if (!why && !id_names_a_file(t->id))
            why = "an id must be a file name (no '/', not . or .., at most 200 bytes)";
        if (!why)
            continue;
        snprintf(line, sizeof(line), "%s:%zu: %s", m->path, t->line, why);
        n = realloc(m->problems, (m->problems_count + 2) * sizeof(*n));
        if (!n)
            return NULL;
        m->problems = n;
        if (!(m->problems[m->problems_count] = strdup(line)))
            return NULL;
        m->problems[++m->problems_count] = NULL;
    }
    if (!m->problems_count)
        return NULL;
    for (i = 0; i < m->problems_count; i++)
        len += strlen(m->problems[i]) + 1;
    if (!(s = malloc(len + 1)))
        return NULL;
    for (p = s, i = 0; i < m->problems_count; i++)
        p += snprintf(p, len + 1 - (size_t)(p - s), "%s\n", m->problems[i]);
    return s;
}

int evolve_batch_add_manifest(evolve_batch_t *b, const char *path, unsigned int shard_index,
                              unsigned int shard_count, bool skip_invalid, char **problems_out,
                              size_t *added_out, size_t *skipped_out)
{
    struct bat_defaults d;
    struct bat_manifest *m = NULL;
    size_t i, added = 0, skipped = 0;
    char *problems;
    int rc, first_err = 0;

    if (problems_out)
        *problems_out = NULL;
    if (!b || !path || shard_index > shard_count || (shard_count && !shard_index))
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_add_manifest: bad arguments");
    defaults(b, &d);
    rc = bat_manifest_load(&m, path, &d);
    if (!m)
        return rc;
    problems = collect_problems(m, shard_index, shard_count);
    if (rc == 0 && m->problems_count)
        rc = core_error_set(EVOLVE_EINVAL, "%s (and %zu more invalid line%s)", m->problems[0],
                            m->problems_count - 1, m->problems_count == 2 ? "" : "s");
    if (problems_out)
        *problems_out = problems;
    else
        free(problems);
    if (rc < 0 && (rc != EVOLVE_EINVAL || !skip_invalid)) {
        bat_manifest_free(m);
        return rc;
    }
    for (i = 0; i < m->count; i++) {
        int r;

        if (shard_count && !bat_task_in_shard(&m->tasks[i], shard_index, shard_count))
            continue;
        if (task_problem(&m->tasks[i]) || !id_names_a_file(m->tasks[i].id))
            continue; /* listed in the problems, skipped with --skip-invalid */
        r = add_item(b, &m->tasks[i]);
        if (r == 0)
            added++;
        else if (r == 1)
            skipped++;
        else if (!first_err)
            first_err = r;
    }
    bat_manifest_free(m);
    if (added_out)
        *added_out = added;
    if (skipped_out)
        *skipped_out = skipped;
    return first_err;
}

int evolve_batch_start(evolve_batch_t *b)
{
    pthread_mutex_lock(&b->lock);
    if (b->canceled) {
        pthread_mutex_unlock(&b->lock);
        return core_error_set(EVOLVE_ECANCELED, "batch canceled");
    }
    b->started = true;
    pthread_mutex_unlock(&b->lock);
    bat_kick(b);
    return 0;
}

int evolve_batch_progress(evolve_batch_t *b, evolve_batch_progress_t *p)
{
    size_t i;
    uint64_t now = core_mono_ms(), oldest = UINT64_MAX;

    if (!b || !p || p->version == 0 || p->version > EVOLVE_BATCH_PROGRESS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_progress: bad arguments");
    pthread_mutex_lock(&b->lock);
    p->total = b->nitems + b->skipped;
    p->skipped = b->skipped;
    p->succeeded = b->succeeded;
    p->failed = b->failed;
    p->interrupted = b->interrupted;
    p->running = b->running;
    p->queued = b->queued + b->waiting_retry;
    p->retries = b->retried;
    p->max_running = b->max_running;
    p->tokens_prompt = b->tokens_prompt;
    p->tokens_completion = b->tokens_completion;
    p->cost_usd = b->cost_usd;
    p->unpriced = b->unpriced;
    p->slowest_id[0] = '\0';
    p->slowest_ms = 0;
    for (i = 0; i < b->nitems; i++) {
        const struct bat_item *it = b->items[i];

        if (it->running && it->attempt_mono_ms < oldest) {
            oldest = it->attempt_mono_ms;
            snprintf(p->slowest_id, sizeof(p->slowest_id), "%s", it->task.id);
            p->slowest_ms = now - oldest;
        }
    }
    pthread_mutex_unlock(&b->lock);
    p->events = atomic_load_explicit(&b->events, memory_order_relaxed);
    return 0;
}

static bool complete(const struct evolve_batch *b)
{
    return b->running == 0 && (b->canceled || (b->queued == 0 && b->waiting_retry == 0));
}

static int write_report(struct evolve_batch *b)
{
    json_t *results = json_array(), *summary, *v;
    const char *k;
    char path[4096], title[4200];
    int rc;

    if (!results)
        return core_error_oom();
    pthread_mutex_lock(&b->lock);
    json_object_foreach(b->done, k, v) json_array_append(results, v);
    pthread_mutex_unlock(&b->lock);
    summary = bat_summary_build(results);
    if (!summary) {
        json_decref(results);
        return core_error_oom();
    }
    snprintf(path, sizeof(path), "%s/summary.json", b->outdir);
    rc = bat_write_json_atomic(path, summary);
    snprintf(path, sizeof(path), "%s/report.html", b->outdir);
    snprintf(title, sizeof(title), "evolve batch: %s", b->outdir);
    if (rc == 0)
        rc = bat_report_write_html(path, results, summary, title);
    json_decref(summary);
    json_decref(results);
    return rc;
}

int evolve_batch_wait(evolve_batch_t *b, uint64_t timeout_ms)
{
    uint64_t deadline = timeout_ms ? core_mono_ms() + timeout_ms : UINT64_MAX;
    bool start;
    int rc;

    if (!b)
        return core_error_set(EVOLVE_EINVAL, "evolve_batch_wait: NULL batch");
    pthread_mutex_lock(&b->lock);
    start = !b->started && !b->canceled;
    pthread_mutex_unlock(&b->lock);
    if (start)
        evolve_batch_start(b);
    pthread_mutex_lock(&b->lock);
    while (!complete(b)) {
        struct timespec ts;
        uint64_t now = core_mono_ms(), step = 200;

        if (now >= deadline) {
            pthread_mutex_unlock(&b->lock);
            return core_error_set(EVOLVE_ETIMEDOUT, "batch: still running after %llu ms",
                                  (unsigned long long)timeout_ms);
        }
        if (deadline - now < step)
            step = deadline - now;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(step / 1000);
        ts.tv_nsec += (long)(step % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->cond, &b->lock, &ts);
    }
    rc = b->journal_rc;
    pthread_mutex_unlock(&b->lock);
    if (rc < 0)
        return core_error_set(rc, "batch: results.jsonl could not be written (see the log)");
    return write_report(b);
}

int evolve_batch_cancel(evolve_batch_t *b)
{
    if (!b)
        return 0;
    pthread_mutex_lock(&b->lock);
    if (b->canceled) {
        pthread_mutex_unlock(&b->lock);
        return 0;
    }
    b->canceled = true;
    /* release: pairs with the acquire load in attempt.c's canceled() */
    atomic_store_explicit(&b->cancel_flag, true, memory_order_release);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return bat_cancel_running(b);
}

void evolve_batch_free(evolve_batch_t *b)
{
    bool done;

    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    done = complete(b) && b->started;
    pthread_mutex_unlock(&b->lock);
    if (!done)
        evolve_batch_cancel(b);
    pthread_mutex_lock(&b->lock);
    while (b->running)
        pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    bat_cancellers_join(b);
    act_actor_stop(b->sched);
    pthread_mutex_lock(&b->lock);
    while (!b->sched_gone)
        pthread_cond_wait(&b->cond, &b->lock);
    pthread_mutex_unlock(&b->lock);
    act_actor_unref(b->sched);
    bat_pool_stop(b);
    batch_dispose(b);
}
