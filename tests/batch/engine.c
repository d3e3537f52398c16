/* The batch engine through its public API on the local provider with fake tasks: 300 tasks get
 * exactly one result each with the right class, the concurrency cap holds (measured from the
 * tasks' own run_start/run_end events), only retryable classes are retried, nothing is left in
 * the sandbox root; a rerun skips finished work; shards partition the manifest and merge back;
 * cancel records running tasks as interrupted; options that are not available say so. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "fake.h"
#include "providers/local.h"
#include "support/support.h"

static char dir[512], home[700], marks[700], manifest[700];
static evolve_runtime_t *rt;

static void setup(void)
{
    ts_mkdtemp(dir, sizeof(dir), "batch");
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(marks, sizeof(marks), "%s/marks", dir);
    snprintf(manifest, sizeof(manifest), "%s/tasks.jsonl", dir);
    mkdir(marks, 0755);
    setenv("EVOLVE_HOME", home, 1);
    setenv("EVOLVE_REPLAY_MODE", "sh", 1);
    setenv("EVOLVE_ISOLATION", "none", 1); /* bulk tests; one test below runs under bwrap */
    fake_write_trace(dir);
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
}

static void teardown(void)
{
    evolve_runtime_free(rt);
    ts_rmtree(dir);
}

TestSuite(batch_engine, .init = setup, .fini = teardown, .timeout = 240);

struct seen {
    pthread_mutex_t mu;
    json_t *results; /* id -> number of on_result calls */
    json_t *open;    /* id -> true while its sandbox is alive (sandbox_ready .. end) */
    int running, max_running;
    atomic_long events;
};

/* The task's sandbox is gone: the engine kills it (sandbox_killed) before it admits another
 * task into the slot. @s->mu held */
static void closed(struct seen *s, const char *id)
{
    if (json_object_get(s->open, id)) {
        json_object_del(s->open, id);
        s->running--;
    }
}

static void on_result(const char *id, const char *json, void *payload)
{
    struct seen *s = payload;
    json_t *r = json_loads(json, 0, NULL);

    cr_assert_not_null(r, "result is JSON");
    cr_assert_str_eq(json_string_value(json_object_get(r, "id")), id);
    json_decref(r);
    pthread_mutex_lock(&s->mu);
    json_object_set_new(s->results, id,
                        json_integer(json_integer_value(json_object_get(s->results, id)) + 1));
    pthread_mutex_unlock(&s->mu);
}

static void on_event(const char *id, unsigned attempt, const evolve_event_t *e, void *payload)
{
    struct seen *s = payload;
    json_t *j;
    const char *r;

    (void)attempt;
    atomic_fetch_add(&s->events, 1);
    if (evolve_event_kind(e) != EVOLVE_EVENT_LIFECYCLE)
        return;
    j = json_loads(evolve_event_json(e, NULL), 0, NULL);
    r = json_string_value(json_object_get(j, "reason"));
    pthread_mutex_lock(&s->mu);
    if (r && !strcmp(r, "sandbox_ready")) {
        json_object_set_new(s->open, id, json_true());
        if (++s->running > s->max_running)
            s->max_running = s->running;
    } else if (r && !strcmp(r, "sandbox_killed")) {
        closed(s, id);
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(j);
}

static int running_now(struct seen *s)
{
    int n;

    pthread_mutex_lock(&s->mu);
    n = s->running;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static size_t count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    size_t n = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static evolve_batch_t *new_batch(const char *out, unsigned j, unsigned retries, struct seen *s)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    evolve_batch_t *b;

    o.outdir = out;
    o.concurrency = j;
    o.retries = retries;
    o.retry_base_ms = 20;
    o.on_result = s ? on_result : NULL;
    o.on_event = s ? on_event : NULL;
    o.payload = s;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0, "%s", evolve_error_last()->message);
    return b;
}

Test(batch_engine, three_hundred_tasks_one_result_each_with_the_right_class)
{
    struct seen s = {.results = json_object(), .open = json_object()};
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    char out[800], path[900];
    evolve_batch_t *b;
    json_t *results, *r, *summary;
    size_t i, added = 0, skipped = 0;
    const unsigned cap = 12;

    pthread_mutex_init(&s.mu, NULL);
    fake_write_manifest(manifest, 300, fake_mix, marks);
    snprintf(out, sizeof(out), "%s/out", dir);
    b = new_batch(out, cap, 2, &s);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, &skipped), 0,
                 "%s", evolve_error_last()->message);
    cr_assert_eq(added, 300);
    cr_assert_eq(evolve_batch_wait(b, 200000), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_batch_progress(b, &p), 0);
    evolve_batch_free(b);

    cr_assert_eq(json_object_size(s.results), 300, "every task reported (%zu)",
                 json_object_size(s.results));
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 300, "one line per task in results.jsonl");
    json_array_foreach(results, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "id"));
        size_t n = (size_t)strtoul(id + 1, NULL, 10);
        enum fake_kind k = fake_mix(n);
        const char *want = fake_expected_class(k);
        const char *got = json_string_value(json_object_get(r, "failureClass"));
        json_int_t attempts = json_integer_value(json_object_get(r, "attempts"));

        cr_assert_eq(json_integer_value(json_object_get(s.results, id)), 1, "%s reported once", id);
        if (want) {
            cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "failed", "%s", id);
            cr_assert_str_eq(got ? got : "(null)", want, "%s", id);
            cr_assert_eq(attempts, 1, "%s: %s is not retried", id, want);
        } else {
            cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "success", "%s: %s",
                             id, json_dumps(r, 0));
            cr_assert_eq(attempts, k == FAKE_LOST_ONCE ? 2 : 1,
                         "%s: a lost sandbox is retried once, nothing else", id);
        }
        if (k == FAKE_OK) {
            cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "data"), "answer")),
                         42);
            snprintf(path, sizeof(path), "%s/outputs/%s/result.json", out, id);
            cr_assert(access(path, R_OK) == 0, "%s saved", path);
            cr_assert_eq(
                json_integer_value(json_object_get(json_object_get(r, "tokens"), "prompt")), 6546,
                "usage from the trace");
            cr_assert(json_is_number(json_object_get(r, "costUsd")));
        }
        snprintf(path, sizeof(path), "%s/events/%s.jsonl", out, id);
        cr_assert(access(path, R_OK) == 0, "%s written", path);
    }
    cr_assert_leq(s.max_running, (int)cap, "sandboxes alive at once: %d (scheduler says %zu)",
                  s.max_running, p.max_running);
    cr_assert_leq(p.max_running, cap);
    cr_assert_geq(p.max_running, 2, "tasks did run concurrently");
    cr_assert_eq(p.retries, 30, "exactly the 30 lost sandboxes were retried (%zu)", p.retries);
    cr_assert_eq(p.succeeded, 210);
    cr_assert_eq(p.failed, 90);
    cr_assert_gt(atomic_load(&s.events), 300 * 4);
    snprintf(path, sizeof(path), "%s/summary.json", out);
    summary = json_load_file(path, 0, NULL);
    cr_assert_eq(json_integer_value(json_object_get(summary, "total")), 300);
    cr_assert_eq(json_integer_value(
                     json_object_get(json_object_get(summary, "byFailureClass"), "agent-timeout")),
                 30);
    json_decref(summary);
    snprintf(path, sizeof(path), "%s/report.html", out);
    cr_assert(access(path, R_OK) == 0);
    snprintf(path, sizeof(path), "%s/sandboxes", home);
    cr_assert_eq(count_dir(path), 0, "every sandbox was released");

    /* The same batch again: everything is already finished (failures too). */
    b = new_batch(out, cap, 2, NULL);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, &skipped), 0);
    cr_assert_eq(added, 0);
    cr_assert_eq(skipped, 300);
    cr_assert_eq(evolve_batch_wait(b, 10000), 0);
    evolve_batch_free(b);
    json_decref(results);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 300, "a rerun appends nothing");
    json_decref(results);
    json_decref(s.results);
    json_decref(s.open);
    pthread_mutex_destroy(&s.mu);
}

static enum fake_kind all_ok(size_t i)
{
    return i % 2 ? FAKE_OK : FAKE_OK_PLAIN;
}

Test(batch_engine, shards_partition_the_manifest_and_merge_back)
{
    char outs[3][800], merged[800];
    const char *dirs[3];
    json_t *ids = json_object(), *results, *r;
    size_t i, shard, total = 0;

    fake_write_manifest(manifest, 45, all_ok, marks);
    for (shard = 1; shard <= 3; shard++) {
        evolve_batch_t *b;
        size_t added = 0;

        snprintf(outs[shard - 1], sizeof(outs[0]), "%s/shard%zu", dir, shard);
        dirs[shard - 1] = outs[shard - 1];
        b = new_batch(outs[shard - 1], 8, 0, NULL);
        cr_assert_eq(
            evolve_batch_add_manifest(b, manifest, (unsigned)shard, 3, false, NULL, &added, NULL),
            0);
        cr_assert_gt(added, 0, "shard %zu has tasks", shard);
        total += added;
        cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
        evolve_batch_free(b);
        results = fake_read_results(outs[shard - 1]);
        cr_assert_eq(json_array_size(results), added);
        json_array_foreach(results, i, r)
        {
            const char *id = json_string_value(json_object_get(r, "id"));

            cr_assert_null(json_object_get(ids, id), "%s is in one shard only", id);
            json_object_set_new(ids, id, json_true());
        }
        json_decref(results);
    }
    cr_assert_eq(total, 45);
    cr_assert_eq(json_object_size(ids), 45, "the shards together are the whole manifest");
    snprintf(merged, sizeof(merged), "%s/merged", dir);
    cr_assert_eq(evolve_batch_merge(merged, dirs, 3), 0, "%s", evolve_error_last()->message);
    results = fake_read_results(merged);
    cr_assert_eq(json_array_size(results), 45);
    json_decref(results);
    json_decref(ids);
}

static enum fake_kind all_hang(size_t i)
{
    (void)i;
    return FAKE_HANG;
}

Test(batch_engine, cancel_interrupts_running_tasks_and_leaves_queued_ones_for_a_rerun)
{
    struct seen s = {.results = json_object(), .open = json_object()};
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    char out[800], line[4096], *l;
    evolve_batch_t *b;
    json_t *results, *r;
    uint64_t deadline = ts_now_ms() + 20000;
    size_t i;

    pthread_mutex_init(&s.mu, NULL);
    snprintf(out, sizeof(out), "%s/out", dir);
    b = new_batch(out, 3, 0, &s);
    for (i = 0; i < 6; i++) {
        char id[16];

        snprintf(id, sizeof(id), "h%zu", i);
        l = fake_task_line(id, all_hang(i), marks);
        snprintf(line, sizeof(line), "%s", l);
        free(l);
        cr_assert_eq(evolve_batch_add_task(b, line), 0, "%s", evolve_error_last()->message);
    }
    cr_assert_eq(evolve_batch_add_task(b, line), EVOLVE_EINVAL, "duplicate id refused");
    cr_assert_eq(evolve_batch_start(b), 0);
    while (running_now(&s) < 3 && ts_now_ms() < deadline)
        evolve_batch_wait(b, 20);
    cr_assert_eq(running_now(&s), 3, "three tasks running");
    cr_assert_eq(evolve_batch_cancel(b), 0);
    cr_assert_eq(evolve_batch_wait(b, 20000), 0, "%s", evolve_error_last()->message);
    evolve_batch_progress(b, &p);
    cr_assert_eq(p.interrupted, 3);
    cr_assert_eq(evolve_batch_add_task(b, "{\"id\":\"late\",\"prompt\":\"x\"}"), EVOLVE_ECANCELED);
    evolve_batch_free(b);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 3, "only the running tasks are recorded");
    json_array_foreach(results, i, r)
    {
        cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "interrupted");
        cr_assert_str_eq(json_string_value(json_object_get(r, "failureClass")), "interrupted");
    }
    json_decref(results);
    snprintf(line, sizeof(line), "%s/sandboxes", home);
    cr_assert_eq(count_dir(line), 0, "interrupted tasks' sandboxes are killed");
    json_decref(s.results);
    json_decref(s.open);
    pthread_mutex_destroy(&s.mu);
}

Test(batch_engine, bwrap_isolation_runs_tasks_too)
{
    char out[800];
    evolve_batch_t *b;
    json_t *results, *r;
    size_t i, added = 0;

    if (!prov_local_bwrap_works(NULL))
        cr_skip_test("bubblewrap does not work here");
    setenv("EVOLVE_ISOLATION", "bwrap", 1);
    fake_write_manifest(manifest, 6, all_ok, marks);
    snprintf(out, sizeof(out), "%s/out", dir);
    b = new_batch(out, 3, 0, NULL);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, NULL), 0);
    cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
    evolve_batch_free(b);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 6);
    json_array_foreach(results, i, r) cr_assert_str_eq(
        json_string_value(json_object_get(r, "status")), "success", "%s", json_dumps(r, 0));
    json_decref(results);
}

Test(batch_engine, checkpoint_records_each_successful_task_and_from_restores_it)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    char out[800], store[800], line[8192], *l;
    evolve_batch_t *b;
    json_t *results, *r;
    const char *ckpt;
    size_t i;

    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(store, sizeof(store), "%s/store", dir);
    o.outdir = out;
    o.concurrency = 3;
    o.checkpoint = true;
    o.store_root = store;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 3; i++) {
        char id[16];

        snprintf(id, sizeof(id), "c%zu", i);
        l = fake_task_line(id, i == 2 ? FAKE_CRASH : FAKE_OK, marks);
        cr_assert_eq(evolve_batch_add_task(b, l), 0, "%s", evolve_error_last()->message);
        free(l);
    }
    cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
    evolve_batch_free(b);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 3);
    json_array_foreach(results, i, r)
    {
        const json_t *cp = json_object_get(r, "checkpoint");
        bool ok = !strcmp(json_string_value(json_object_get(r, "status")), "success");

        if (ok)
            cr_assert_eq(strncmp(json_string_value(json_object_get(cp, "id")), "ckpt_", 5), 0, "%s",
                         json_dumps(r, 0));
        else
            cr_assert(json_is_null(cp), "a failed run is not checkpointed");
    }
    ckpt = NULL;
    json_array_foreach(results, i, r) if (!ckpt) ckpt =
        json_string_value(json_object_get(json_object_get(r, "checkpoint"), "id"));
    cr_assert_not_null(ckpt);

    /* A task that starts from that checkpoint runs in its workspace: agent.sh and trace.jsonl
     * are not uploaded, they come from the checkpoint. Files beside `from` are refused. */
    snprintf(out, sizeof(out), "%s/out2", dir);
    o.outdir = out;
    o.checkpoint = false;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0, "%s", evolve_error_last()->message);
    snprintf(line, sizeof(line),
             "{\"id\":\"bad\",\"agent\":\"replay\",\"prompt\":\"agent.sh\",\"from\":\"%s\","
             "\"files\":{\"x\":\"y\"}}",
             ckpt);
    cr_assert_eq(evolve_batch_add_task(b, line), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "from"), "%s",
                       evolve_error_last()->message);
    snprintf(line, sizeof(line),
             "{\"id\":\"from\",\"agent\":\"replay\",\"prompt\":\"agent.sh\",\"from\":\"%s\"}",
             ckpt);
    cr_assert_eq(evolve_batch_add_task(b, line), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
    evolve_batch_free(b);
    json_decref(results);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(results, 0), "status")),
                     "success", "%s", json_dumps(json_array_get(results, 0), 0));
    json_decref(results);
}

static enum fake_kind ok_or_crash(size_t i)
{
    return i % 2 ? FAKE_CRASH : FAKE_OK;
}

Test(batch_engine, rerun_failed_runs_only_the_failures_and_their_new_result_wins)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    char out[800];
    evolve_batch_t *b;
    json_t *results;
    size_t added = 0, skipped = 0;

    fake_write_manifest(manifest, 10, ok_or_crash, marks);
    snprintf(out, sizeof(out), "%s/out", dir);
    b = new_batch(out, 4, 3, NULL);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, NULL), 0);
    cr_assert_eq(evolve_batch_wait(b, 60000), 0);
    evolve_batch_free(b);
    /* The crashing tasks now succeed: the script is replaced in the manifest. */
    fake_write_manifest(manifest, 10, all_ok, marks);
    o.outdir = out;
    o.concurrency = 4;
    o.rerun_failed = true;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, &skipped), 0);
    cr_assert_eq(added, 5, "only the 5 failures run again");
    cr_assert_eq(skipped, 5);
    cr_assert_eq(evolve_batch_wait(b, 60000), 0);
    evolve_batch_free(b);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 15, "the new results are appended");
    json_decref(results);
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0);
    cr_assert_eq(evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, &added, &skipped), 0);
    cr_assert_eq(added, 0, "the last line per id wins: every task has succeeded now");
    evolve_batch_free(b);
}

Test(batch_engine, bad_options_are_refused)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    evolve_batch_t *b = NULL;

    o.outdir = NULL;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), EVOLVE_EINVAL);
    cr_assert_null(b);
    o.outdir = dir;
    o.version = 99;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), EVOLVE_EINVAL);
    cr_assert_null(b);
}

Test(batch_engine, reuse_sandboxes_runs_tasks_in_one_sandbox_with_a_clean_workspace)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    char out[800], line[2048], sandboxes[800];
    evolve_batch_t *b;
    json_t *results, *r;
    const char *first = NULL;
    size_t i;

    snprintf(out, sizeof(out), "%s/out", dir);
    o.outdir = out;
    o.concurrency = 1; /* one task thread: every task after the first reuses its sandbox */
    o.reuse_sandboxes = true;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 6; i++) {
        /* Each task leaves a file behind and fails (exit 9) if it sees another task's. */
        snprintf(line, sizeof(line),
                 "{\"id\":\"u%zu\",\"agent\":\"replay\",\"prompt\":\"agent.sh\",\"files\":"
                 "{\"agent.sh\":\"ls left-* >/dev/null 2>&1 && exit 9; touch left-%zu; exit %d\"}}",
                 i, i, i == 2 ? 4 : 0);
        cr_assert_eq(evolve_batch_add_task(b, line), 0, "%s", evolve_error_last()->message);
    }
    cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
    evolve_batch_free(b);
    results = fake_read_results(out);
    cr_assert_eq(json_array_size(results), 6);
    json_array_foreach(results, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "id"));
        const char *sb = json_string_value(json_object_get(r, "sandboxId"));

        if (!strcmp(id, "u2")) {
            cr_assert_str_eq(json_string_value(json_object_get(r, "failureClass")), "agent-crash");
        } else {
            cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "success",
                             "%s: no file of an earlier task is visible: %s", id, json_dumps(r, 0));
        }
        if (!first)
            first = sb;
        cr_assert_str_eq(sb, first, "%s ran in the same sandbox (an agent crash keeps it)", id);
    }
    snprintf(sandboxes, sizeof(sandboxes), "%s/sandboxes", home);
    cr_assert_eq(count_dir(sandboxes), 0, "the kept sandbox is killed when the work runs out");
    json_decref(results);
}
