/* Checkpoints of remote sandboxes: the E2B and Daytona fakes' sandboxes are checkpointed by
 * staging their files through this host into the same store (dedup, hash, lineage), and a
 * checkpoint restores into a fresh remote sandbox. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "fakes/fakes.h"
#include "support/support.h"

static char home[512], store[600];
static evolve_runtime_t *rt;
static struct ts_fake *fake;

static void start(enum ts_fake_kind kind)
{
    ts_mkdtemp(home, sizeof(home), "ckpt-remote");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(store, sizeof(store), "%s/store", home);
    fake = ts_fake_start(kind, NULL);
    ts_fake_setenv(fake);
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
}

static void stop(void)
{
    evolve_runtime_free(rt);
    ts_fake_stop(fake);
    ts_rmtree(home);
}

static evolve_t *session(const char *provider)
{
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    char logs[700];
    evolve_t *ev;

    snprintf(logs, sizeof(logs), "%s/logs", home);
    o.agent = "replay";
    o.provider = provider;
    o.storage = true;
    o.store_root = store;
    o.session_log_dir = logs;
    cr_assert_eq(evolve_new(&ev, rt, &o), 0, "%s", evolve_error_last()->message);
    return ev;
}

static const char trace[] = "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":["
                            "{\"type\":\"text\",\"text\":\"done\"}]},\"session_id\":\"s1\"}\n";

static void round_trip(const char *provider)
{
    evolve_t *ev = session(provider), *ev2;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res;
    json_t *j, *cp;

    cr_assert_eq(evolve_upload_file(ev, "trace.jsonl", trace, strlen(trace)), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(evolve_upload_file(ev, "notes/keep.txt", "kept remotely", 13), 0);
    ro.prompt = "trace.jsonl";
    cr_assert_eq(evolve_run(&res, ev, &ro), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_result_exit_code(res), 0, "%s", evolve_result_stderr(res));
    j = json_loads(evolve_result_json(res), 0, NULL);
    cp = json_object_get(j, "checkpoint");
    cr_assert_not_null(cp, "the %s sandbox was checkpointed: %s", provider,
                       evolve_result_json(res));
    cr_assert_str_eq(json_string_value(json_object_get(cp, "agentType")), "replay");
    cr_assert_gt(json_integer_value(json_object_get(cp, "sizeBytes")), 0);
    json_decref(j);
    evolve_result_free(res);
    evolve_free(ev);

    ev2 = session(provider);
    ro.from = "latest";
    cr_assert_eq(evolve_run(&res, ev2, &ro), 0, "%s", evolve_error_last()->message);
    evolve_result_free(res);
    cr_assert_eq(evolve_execute_command(&res, ev2, "cat notes/keep.txt", NULL), 0);
    cr_assert_str_eq(evolve_result_stdout(res), "kept remotely", "restored into the new sandbox");
    evolve_result_free(res);
    evolve_free(ev2);
}

Test(core_checkpoint_remote, e2b_checkpoint_and_restore, .timeout = 90)
{
    start(TS_FAKE_E2B);
    round_trip("e2b");
    stop();
}

Test(core_checkpoint_remote, daytona_checkpoint_and_restore, .timeout = 90)
{
    start(TS_FAKE_DAYTONA);
    round_trip("daytona");
    stop();
}
