/* attempt.c — one attempt of one batch task, run on a task thread: a fresh session, the task's
 * context and files uploaded, the run (resume:false), the outputs saved and validated, usage and
 * cost read, the outcome classified into a result record, the verdict handed to the scheduler,
 * and only then the sandbox released. The threads that run attempts are pool.c's.
 * Threads: task threads (never a runtime worker: session calls block); the event callback runs
 * on runtime workers. */
#include "batch/engine_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"

#define ERR_TEXT_MAX 2048

/* What the event callback of one attempt shares with its task thread. */
struct attempt_ctx {
    struct evolve_batch *b;
    struct bat_item *it;
    unsigned attempt;
    FILE *events;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool run_ended;       /* a run_complete/run_failed/run_interrupted lifecycle event */
    bool run_interrupted; /* ... and it was run_interrupted */
    bool killed;          /* sandbox_killed (after evolve_kill) */
    char err[ERR_TEXT_MAX];
    size_t err_len;
};

static void err_append(struct attempt_ctx *c, const char *s, size_t n)
{
    if (c->err_len + 2 >= sizeof(c->err))
        return;
    if (n > sizeof(c->err) - c->err_len - 2)
        n = sizeof(c->err) - c->err_len - 2;
    memcpy(c->err + c->err_len, s, n);
    c->err_len += n;
    c->err[c->err_len++] = '\n';
    c->err[c->err_len] = '\0';
}

static void on_event(const evolve_event_t *e, void *payload)
{
    struct attempt_ctx *c = payload;
    size_t len;
    const char *js = evolve_event_json(e, &len);
    evolve_event_kind_t kind = evolve_event_kind(e);

    /* The user's callback first: once run_ended is set below, the task thread may release the
     * sandbox, and the user must have seen the run end by then. */
    if (c->b->on_event)
        c->b->on_event(c->it->task.id, c->attempt, e, c->b->payload);
    if (c->events && js) {
        fwrite(js, 1, len, c->events);
        fputc('\n', c->events);
        atomic_fetch_add_explicit(&c->b->events, 1, memory_order_relaxed);
    }
    if (kind == EVOLVE_EVENT_CONTENT && evolve_event_update_type(e) == EVOLVE_UPDATE_ERROR) {
        pthread_mutex_lock(&c->lock);
        err_append(c, js, len);
        pthread_mutex_unlock(&c->lock);
    } else if (kind == EVOLVE_EVENT_LIFECYCLE && js) {
        json_t *j = json_loadb(js, len, 0, NULL);
        const char *r = json_string_value(json_object_get(j, "reason"));

        if (r && !strcmp(r, "run_start")) {
            /* release: pairs with the canceller's acquire load */
            atomic_store_explicit(&c->it->run_started, true, memory_order_release);
        } else if (r && (!strcmp(r, "run_complete") || !strcmp(r, "run_failed") ||
                         !strcmp(r, "run_interrupted"))) {
            pthread_mutex_lock(&c->lock);
            c->run_ended = true;
            c->run_interrupted = !strcmp(r, "run_interrupted");
            pthread_cond_broadcast(&c->cond);
            pthread_mutex_unlock(&c->lock);
        } else if (r && !strcmp(r, "sandbox_killed")) {
            pthread_mutex_lock(&c->lock);
            c->killed = true;
            pthread_cond_broadcast(&c->cond);
            pthread_mutex_unlock(&c->lock);
        }
        json_decref(j);
    }
}

/* Waits (bounded) until the event callback set *flag. */
static void wait_for(struct attempt_ctx *c, const bool *flag, uint64_t ms)
{
    uint64_t deadline = core_mono_ms() + ms;
    struct timespec ts;

    pthread_mutex_lock(&c->lock);
    while (!*flag && core_mono_ms() < deadline) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
    pthread_mutex_unlock(&c->lock);
}

static int read_local(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long n;

    if (!f)
        return core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
        fclose(f);
        return core_error_set(EVOLVE_EIO, "%s: cannot size", path);
    }
    *data = malloc((size_t)n + 1);
    if (!*data) {
        fclose(f);
        return core_error_oom();
    }
    *len = fread(*data, 1, (size_t)n, f);
    fclose(f);
    return 0;
}

static int upload_one(evolve_t *ev, bool context, const char *dest, const char *data, size_t len)
{
    return context ? evolve_upload_context(ev, dest, data, len)
                   : evolve_upload_file(ev, dest, data, len);
}

/* Uploads every regular file under `dir` to dest/<relative path>. */
static int upload_dir(evolve_t *ev, bool context, const char *dir, const char *dest, int depth)
{
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (depth > 32)
        return core_error_set(EVOLVE_EINVAL, "%s: directories nested too deep", dir);
    if (!(d = opendir(dir)))
        return core_error_set(EVOLVE_EIO, "%s: %s", dir, strerror(errno));
    while (rc == 0 && (de = readdir(d))) {
        char src[4096], dst[4096];
        struct stat st;

        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(src, sizeof(src), "%s/%s", dir, de->d_name);
        snprintf(dst, sizeof(dst), "%s%s%s", dest, *dest ? "/" : "", de->d_name);
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = upload_dir(ev, context, src, dst, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            char *data;
            size_t len;

            if ((rc = read_local(src, &data, &len)) == 0) {
                rc = upload_one(ev, context, dst, data, len);
                free(data);
            }
        }
    }
    closedir(d);
    return rc;
}

static int upload_sources(evolve_t *ev, bool context, const struct bat_source *s, size_t n)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++) {
        if (s[i].kind == BAT_SOURCE_INLINE) {
            rc = upload_one(ev, context, s[i].dest, s[i].text, s[i].text_len);
        } else if (s[i].kind == BAT_SOURCE_FILE) {
            char *data;
            size_t len;

            if ((rc = read_local(s[i].local_path, &data, &len)) == 0) {
                rc = upload_one(ev, context, s[i].dest, data, len);
                free(data);
            }
        } else {
            rc = upload_dir(ev, context, s[i].local_path, s[i].dest, 0);
        }
    }
    return rc;
}

/* The attempt's outputs: file list, validated data, schema verdict; saves them locally. */
static void collect_outputs(struct evolve_batch *b, struct bat_item *it, evolve_t *ev,
                            json_t *result, bool *schema_invalid, char *why, size_t why_size)
{
    char *js = NULL, dir[4096];
    json_t *o, *files, *names = json_array();
    const char *k;
    json_t *v;

    if (evolve_get_output_files(&js, ev, true) < 0 || !(o = json_loads(js, 0, NULL))) {
        free(js);
        json_object_set_new(result, "outputs", names);
        json_object_set_new(result, "data", json_null());
        *schema_invalid = it->task.schema != NULL;
        snprintf(why, why_size, "output files unreadable: %s", evolve_error_last()->message);
        return;
    }
    free(js);
    files = json_object_get(o, "files");
    json_object_foreach(files, k, v) json_array_append_new(names, json_string(k));
    json_object_set_new(result, "outputs", names);
    json_object_set(result, "data",
                    json_object_get(o, "data") ? json_object_get(o, "data") : json_null());
    if (it->task.schema) {
        const char *e = json_string_value(json_object_get(o, "error"));

        if (e || json_is_null(json_object_get(o, "data")) || !json_object_get(o, "data")) {
            *schema_invalid = true;
            snprintf(why, why_size, "result.json: %s", e ? e : "missing");
        }
    }
    json_decref(o);
    if (json_array_size(names)) {
        snprintf(dir, sizeof(dir), "%s/outputs/%s", b->outdir, it->task.id);
        if (evolve_save_local_dir(ev, dir, true) < 0)
            core_log_warn("batch: task %s: saving outputs: %s", it->task.id,
                          evolve_error_last()->message);
    }
}

static void add_cost(json_t *result, evolve_t *ev)
{
    char *js = NULL;
    json_t *c = NULL, *t;

    if (evolve_run_cost(&js, ev, NULL, -1) == 0)
        c = json_loads(js, 0, NULL);
    free(js);
    t = json_object_get(c, "tokens");
    json_object_set_new(result, "tokens",
                        json_pack("{s:I, s:I, s:I}", "prompt",
                                  json_integer_value(json_object_get(t, "prompt")), "completion",
                                  json_integer_value(json_object_get(t, "completion")), "cached",
                                  json_integer_value(json_object_get(c, "cachedTokens"))));
    json_object_set(result, "costUsd",
                    json_is_number(json_object_get(c, "cost")) ? json_object_get(c, "cost")
                                                               : json_null());
    /* The task may leave the model to the agent: report the one the run actually used. */
    if (json_is_null(json_object_get(result, "model")) &&
        json_is_string(json_object_get(c, "model")))
        json_object_set(result, "model", json_object_get(c, "model"));
    json_decref(c);
}

static json_t *tags_json(const struct bat_task *t)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; t->tags && t->tags[i]; i++)
        json_array_append_new(a, json_string(t->tags[i]));
    return a;
}

static json_t *result_new(const struct bat_item *it, unsigned attempt)
{
    const struct bat_task *t = &it->task;

    return json_pack("{s:s, s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "id", t->id, "attempts",
                     (json_int_t)attempt, "agent", t->agent, "model",
                     t->model ? json_string(t->model) : json_null(), "tags", tags_json(t),
                     "outputs", json_array(), "data", json_null(), "sandboxId", json_null(),
                     "checkpoint", json_null());
}

/* Fills status/failureClass/error/timing of `result` and returns the class. */
static enum bat_failure finish_result(json_t *result, const struct bat_run_outcome *o,
                                      const char *error, int64_t started, int64_t finished)
{
    enum bat_failure f = bat_failure_classify(o);
    char a[CORE_ISO8601_SIZE], z[CORE_ISO8601_SIZE];
    const char *status = f == BAT_FAILURE_NONE          ? "success"
                         : f == BAT_FAILURE_INTERRUPTED ? "interrupted"
                                                        : "failed";

    json_object_set_new(result, "status", json_string(status));
    json_object_set_new(result, "failureClass",
                        f == BAT_FAILURE_NONE ? json_null() : json_string(bat_failure_name(f)));
    json_object_set_new(result, "error",
                        f == BAT_FAILURE_NONE || !error || !*error ? json_null()
                                                                   : json_string(error));
    json_object_set_new(result, "exitCode", json_integer(o->exit_code));
    json_object_set_new(result, "durationMs", json_integer(finished - started));
    json_object_set_new(result, "startedAt", json_string(core_iso8601(a, started)));
    json_object_set_new(result, "finishedAt", json_string(core_iso8601(z, finished)));
    if (!json_object_get(result, "tokens"))
        json_object_set_new(
            result, "tokens",
            json_pack("{s:i, s:i, s:i}", "prompt", 0, "completion", 0, "cached", 0));
    if (!json_object_get(result, "costUsd"))
        json_object_set_new(result, "costUsd", json_null());
    return f;
}

static bool canceled(struct evolve_batch *b)
{
    /* acquire: pairs with the release store in evolve_batch_cancel */
    return atomic_load_explicit(&b->cancel_flag, memory_order_acquire);
}

/* Sets it->ev under ev_lock unless the batch was canceled. */
static bool publish_session(struct bat_item *it, evolve_t *ev, struct evolve_batch *b)
{
    bool ok;

    pthread_mutex_lock(&it->ev_lock);
    ok = !canceled(b);
    if (ok) {
        it->ev = ev;
        it->interrupt_sent = false;
        atomic_store_explicit(&it->run_started, false, memory_order_relaxed);
    }
    pthread_mutex_unlock(&it->ev_lock);
    return ok;
}

/* The first trimmed line of stderr's tail that says something, for `error`. */
static void tail_text(char *out, size_t size, const char *text)
{
    size_t n = text ? strlen(text) : 0;

    if (n > size - 1)
        text += n - (size - 1);
    snprintf(out, size, "%s", text ? text : "");
    n = strlen(out);
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
}

void bat_keep_drop(struct bat_keep *k)
{
    evolve_free(k->ev); /* kills the sandbox */
    free(k->sig);
    k->ev = NULL;
    k->sig = NULL;
}

/* The session options a reused sandbox must match (frozen at evolve_new). */
static char *session_sig(const struct bat_task *t, const char *schema, bool storage)
{
    size_t n = strlen(t->agent) + (t->model ? strlen(t->model) : 0) +
               (t->system_prompt ? strlen(t->system_prompt) : 0) + (schema ? strlen(schema) : 0) +
               (t->provider ? strlen(t->provider) : 0) + 10;
    char *s = malloc(n);

    if (s)
        snprintf(s, n, "%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%s", t->agent, t->model ? t->model : "",
                 t->system_prompt ? t->system_prompt : "", schema ? schema : "", storage,
                 t->provider ? t->provider : "");
    return s;
}

/* Empties a reused sandbox's workspace: the next task starts from its own files only. */
static int reset_workspace(evolve_t *ev, char *why, size_t why_size)
{
    evolve_result_t *r = NULL;
    int rc = evolve_execute_command(
        &r, ev, "find . -mindepth 1 -delete && mkdir -p context scripts temp output", NULL);

    if (rc == 0 && evolve_result_exit_code(r) != 0)
        rc = EVOLVE_EIO;
    if (rc < 0)
        snprintf(why, why_size, "workspace reset of a reused sandbox failed: %.400s",
                 r ? evolve_result_stderr(r) : evolve_error_last()->message);
    evolve_result_free(r);
    return rc;
}

void bat_run_attempt(struct evolve_batch *b, struct bat_item *it, unsigned attempt,
                     struct bat_keep *keep)
{
    const struct bat_task *t = &it->task;
    struct attempt_ctx c = {.b = b, .it = it, .attempt = attempt};
    struct bat_run_outcome o = {.exit_code = -1};
    struct bat_verdict v = {.item = it};
    evolve_options_t eo = EVOLVE_OPTIONS_INIT;
    evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_subscription_t *sub = NULL;
    evolve_result_t *res = NULL;
    evolve_t *ev = NULL;
    char path[4096], logs[4096], why[1024] = "", swhy[512] = "", *schema = NULL;
    json_t *result = result_new(it, attempt);
    int64_t started = core_wall_ms();
    bool schema_invalid = false, reused = false, keep_it;
    char *sig = NULL;
    uint64_t run_ms = 0;
    int rc;

    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.cond, NULL);
    pthread_mutex_init(&v.lock, NULL);
    pthread_cond_init(&v.cond, NULL);
    snprintf(path, sizeof(path), "%s/events/%s.jsonl", b->outdir, t->id);
    c.events = fopen(path, attempt == 1 ? "w" : "a");
    if (c.events)
        fprintf(c.events, "{\"batch\":{\"id\":\"%s\",\"attempt\":%u}}\n", t->id, attempt);
    snprintf(logs, sizeof(logs), "%s/sessions", b->outdir);
    if (t->schema)
        schema = json_dumps(t->schema, JSON_COMPACT);
    eo.agent = t->agent;
    eo.model = t->model;
    eo.provider = t->provider ? t->provider : b->provider;
    eo.system_prompt = t->system_prompt;
    eo.schema_json = schema;
    eo.env = (const char *const *)b->env;
    eo.session_log_dir = logs;
    /* --checkpoint: the session checkpoints a successful run into the shared store (content
     * identical across tasks is stored once); a task's `from` needs the store too. */
    eo.storage = b->checkpoint || t->from;
    eo.store_root = b->store_root;
    if (!result || !c.events) {
        o.internal_error = true;
        snprintf(why, sizeof(why), "%.700s: %s", c.events ? "result" : path,
                 c.events ? "out of memory" : strerror(errno));
        goto verdict;
    }
    if (keep) {
        sig = session_sig(t, schema, eo.storage);
        if (keep->ev && sig && keep->sig && !strcmp(sig, keep->sig)) {
            ev = keep->ev; /* --reuse-sandboxes: same options, sandbox still up */
            keep->ev = NULL;
            reused = true;
        }
        bat_keep_drop(keep);
    }
    if (!ev && evolve_new(&ev, b->rt, &eo) < 0) {
        o.internal_error = true;
        snprintf(why, sizeof(why), "%s", evolve_error_last()->message);
        goto verdict;
    }
    so.callback = on_event;
    so.payload = &c;
    so.capacity = 4096;
    so.kinds =
        (1u << EVOLVE_EVENT_CONTENT) | (1u << EVOLVE_EVENT_LIFECYCLE) | (1u << EVOLVE_EVENT_GAP);
    if (evolve_subscribe(&sub, ev, &so) < 0) {
        o.internal_error = true;
        snprintf(why, sizeof(why), "%s", evolve_error_last()->message);
        goto verdict;
    }
    if (!publish_session(it, ev, b)) {
        o.interrupted = true;
        snprintf(why, sizeof(why), "batch canceled before the run started");
        goto verdict;
    }
    if (reused && reset_workspace(ev, why, sizeof(why)) < 0) {
        o.sandbox_lost = true; /* retryable: the retry gets a fresh sandbox */
        v.created = true;
        goto verdict;
    }
    rc = upload_sources(ev, true, t->context, t->context_count);
    if (rc == 0)
        rc = upload_sources(ev, false, t->files, t->files_count);
    if (rc == 0 && !canceled(b)) {
        ro.prompt = t->prompt;
        ro.timeout_ms = t->timeout_ms;
        ro.resume = EVOLVE_RESUME_NO;
        ro.from = t->from;
        run_ms = core_mono_ms();
        rc = evolve_run(&res, ev, &ro);
        run_ms = core_mono_ms() - run_ms;
    }
    if (evolve_get_session(ev)) {
        v.created = true;
        json_object_set_new(result, "sandboxId", json_string(evolve_get_session(ev)));
    }
    if (rc < 0 || (!res && canceled(b))) {
        snprintf(why, sizeof(why), "%s", rc < 0 ? evolve_error_last()->message : "canceled");
        if (canceled(b))
            o.interrupted = true;
        else if (!v.created)
            o.create_failed = true;
        else if (rc == EVOLVE_EIO || rc == EVOLVE_ESHUTDOWN)
            o.sandbox_lost = true;
        else
            o.internal_error = true;
        o.error_text = why;
        v.create_throttled = o.create_failed && bat_failure_classify(&o) == BAT_FAILURE_CAPACITY;
        goto verdict;
    }
    /* The run's last events reach the subscriber after evolve_run returned: wait for the run's
     * final lifecycle event so events/<id>.jsonl is complete. */
    wait_for(&c, &c.run_ended, 10000);
    o.exit_code = evolve_result_exit_code(res);
    o.interrupted = c.run_interrupted || (canceled(b) && o.exit_code != 0);
    /* Exit -1 without an interrupt is a timeout or a lost sandbox (the result does not say
     * which): a run that ended before its timeout lost its sandbox. */
    o.timed_out = o.exit_code == -1 && !o.interrupted && run_ms + 50 >= t->timeout_ms;
    o.sandbox_lost = o.exit_code == -1 && !o.interrupted && !o.timed_out;
    if (o.sandbox_lost)
        snprintf(swhy, sizeof(swhy),
                 "sandbox lost after %llu ms (its daemon or status stream "
                 "ended without an exit)",
                 (unsigned long long)run_ms);
    tail_text(why, sizeof(why) / 2, evolve_result_stderr(res));
    pthread_mutex_lock(&c.lock);
    if (c.err_len && strlen(why) + c.err_len + 2 < sizeof(why)) {
        size_t n = strlen(why);

        snprintf(why + n, sizeof(why) - n, "%s%s", n ? "\n" : "", c.err);
    }
    pthread_mutex_unlock(&c.lock);
    o.error_text = why;
    if (o.sandbox_lost)
        snprintf(why, sizeof(why), "%s", swhy);
    if (o.timed_out)
        snprintf(why, sizeof(why), "timed out after %llu ms", (unsigned long long)t->timeout_ms);
    if (!o.timed_out && !o.interrupted && !o.sandbox_lost && o.exit_code != 0 && !*why)
        snprintf(why, sizeof(why), "the agent exited with code %d", o.exit_code);
    swhy[0] = '\0';
    collect_outputs(b, it, ev, result, &schema_invalid, swhy, sizeof(swhy));
    o.schema_invalid = schema_invalid;
    if (evolve_result_checkpoint_json(res)) {
        json_t *cp = json_loads(evolve_result_checkpoint_json(res), 0, NULL);

        json_object_set_new(result, "checkpoint", cp ? cp : json_null());
    }
    if (schema_invalid && o.exit_code == 0)
        snprintf(why, sizeof(why), "%s", swhy);
    add_cost(result, ev);
verdict:
    if (result) {
        v.klass = finish_result(result, &o, why, started, core_wall_ms());
        v.result = result;
    } else {
        v.klass = BAT_FAILURE_INTERNAL;
    }
    bat_engine_verdict(b, &v); /* journaled (or a retry scheduled) before the sandbox goes */
    /* Reuse a sandbox only after outcomes that leave it healthy and idle. */
    keep_it = keep && ev && v.created && !canceled(b) &&
              (v.klass == BAT_FAILURE_NONE || v.klass == BAT_FAILURE_AGENT_CRASH ||
               v.klass == BAT_FAILURE_SCHEMA_INVALID);
    if (!keep_it && ev && sub && v.created && evolve_kill(ev) == 0)
        wait_for(&c, &c.killed, 5000); /* so events/<id>.jsonl ends with sandbox_killed */
    evolve_result_free(res);
    evolve_subscription_free(sub);
    if (c.events)
        fclose(c.events);
    pthread_mutex_lock(&it->ev_lock);
    it->ev = NULL;
    pthread_mutex_unlock(&it->ev_lock);
    if (keep_it) {
        keep->ev = ev;
        keep->sig = sig;
        sig = NULL;
    } else {
        evolve_free(ev);
    }
    free(sig);
    free(schema);
    pthread_mutex_destroy(&c.lock);
    pthread_cond_destroy(&c.cond);
    pthread_mutex_destroy(&v.lock);
    pthread_cond_destroy(&v.cond);
    bat_engine_released(b, it);
}
