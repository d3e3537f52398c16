/* The batch engine's threads together (also run under TSan): the scheduler actor, task threads,
 * event callbacks on workers, group commit, retries with timers, and a cancel racing admissions.
 * Every task is reported once, the cap holds, and the journal agrees with the callbacks. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch/fake.h"
#include "evolve/evolve.h"
#include "support/support.h"
#include "support/tap.h"

#ifdef EVOLVE_TSAN
#define TASKS 40
#else
#define TASKS 120
#endif

static char dir[512], marks[700], manifest[700];

struct seen {
    pthread_mutex_t mu;
    int reported[TASKS];
    atomic_long events;
};

static void on_result(const char *id, const char *json, void *payload)
{
    struct seen *s = payload;
    unsigned long n = strtoul(id + 1, NULL, 10);

    (void)json;
    pthread_mutex_lock(&s->mu);
    if (n < TASKS)
        s->reported[n]++;
    pthread_mutex_unlock(&s->mu);
}

static void on_event(const char *id, unsigned attempt, const evolve_event_t *e, void *payload)
{
    struct seen *s = payload;

    (void)id;
    (void)attempt;
    (void)evolve_event_json(e, NULL);
    atomic_fetch_add(&s->events, 1);
}

static enum fake_kind mix(size_t i)
{
    static const enum fake_kind k[5] = {FAKE_OK, FAKE_OK_PLAIN, FAKE_CRASH, FAKE_LOST_ONCE,
                                        FAKE_SCHEMA_BAD};
    return k[i % 5];
}

static evolve_batch_t *start(evolve_runtime_t *rt, const char *out, struct seen *s, bool reuse)
{
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    evolve_batch_t *b = NULL;

    o.reuse_sandboxes = reuse;
    o.outdir = out;
    o.concurrency = 6;
    o.retries = 1;
    o.retry_base_ms = 10;
    o.on_result = on_result;
    o.on_event = on_event;
    o.payload = s;
    if (evolve_batch_new(&b, rt, &o) < 0 ||
        evolve_batch_add_manifest(b, manifest, 0, 0, false, NULL, NULL, NULL) < 0 ||
        evolve_batch_start(b) < 0)
        ts_die("batch: %s", evolve_error_last()->message);
    return b;
}

static void every_task_once(int *tap_failed_, bool reuse)
{
    struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    evolve_runtime_t *rt;
    evolve_batch_t *b;
    char out[800];
    json_t *r;
    int i;

    TAP_CHECK(evolve_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    ts_rmtree(marks); /* every FAKE_LOST_ONCE task loses its sandbox once again */
    mkdir(marks, 0755);
    snprintf(out, sizeof(out), "%s/out1%s", dir, reuse ? "-reuse" : "");
    b = start(rt, out, &s, reuse);
    TAP_CHECK(evolve_batch_wait(b, 180000) == 0, "%s", evolve_error_last()->message);
    evolve_batch_progress(b, &p);
    evolve_batch_free(b);
    evolve_runtime_free(rt);
    for (i = 0; i < TASKS; i++)
        TAP_CHECK(s.reported[i] == 1, "task %d reported %d times", i, s.reported[i]);
    TAP_CHECK(p.max_running <= 6, "cap: %zu", p.max_running);
    TAP_CHECK(p.retries == TASKS / 5, "retries %zu", p.retries);
    r = fake_read_results(out);
    TAP_CHECK(json_array_size(r) == TASKS, "%zu lines", json_array_size(r));
    json_decref(r);
    TAP_CHECK(atomic_load(&s.events) > TASKS, "events flowed");
}

TAP_TEST(every_task_once_under_concurrency)
{
    every_task_once(tap_failed_, false);
}

TAP_TEST(every_task_once_reusing_sandboxes)
{
    every_task_once(tap_failed_, true);
}

TAP_TEST(cancel_while_admitting)
{
    struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    evolve_runtime_t *rt;
    evolve_batch_t *b;
    char out[800];
    json_t *r;
    size_t recorded = 0;
    int i;

    TAP_CHECK(evolve_runtime_new(&rt, NULL) == 0, "%s", evolve_error_last()->message);
    snprintf(out, sizeof(out), "%s/out2", dir);
    b = start(rt, out, &s, false);
    while (evolve_batch_progress(b, &p) == 0 && p.succeeded + p.failed < 5)
        evolve_batch_wait(b, 10);
    TAP_CHECK(evolve_batch_cancel(b) == 0, "cancel");
    TAP_CHECK(evolve_batch_wait(b, 60000) == 0, "%s", evolve_error_last()->message);
    evolve_batch_progress(b, &p);
    evolve_batch_free(b);
    evolve_runtime_free(rt);
    for (i = 0; i < TASKS; i++) {
        TAP_CHECK(s.reported[i] <= 1, "task %d reported %d times", i, s.reported[i]);
        recorded += (size_t)s.reported[i];
    }
    r = fake_read_results(out);
    TAP_CHECK(json_array_size(r) == recorded, "journal %zu vs callbacks %zu", json_array_size(r),
              recorded);
    TAP_CHECK(recorded == p.succeeded + p.failed + p.interrupted, "progress agrees");
    TAP_CHECK(recorded < TASKS, "the cancel stopped admission (%zu)", recorded);
    json_decref(r);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {TAP_CASE(every_task_once_under_concurrency),
                                            TAP_CASE(every_task_once_reusing_sandboxes),
                                            TAP_CASE(cancel_while_admitting),
                                            {NULL, NULL}};
    char home[700];
    int rc;

    ts_mkdtemp(dir, sizeof(dir), "batchconc");
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(marks, sizeof(marks), "%s/marks", dir);
    snprintf(manifest, sizeof(manifest), "%s/tasks.jsonl", dir);
    mkdir(marks, 0755);
    setenv("EVOLVE_HOME", home, 1);
    setenv("EVOLVE_REPLAY_MODE", "sh", 1);
    setenv("EVOLVE_ISOLATION", "none", 1);
    fake_write_trace(dir);
    fake_write_manifest(manifest, TASKS, mix, marks);
    rc = tap_run(cases, argc, argv);
    ts_rmtree(dir);
    return rc;
}
