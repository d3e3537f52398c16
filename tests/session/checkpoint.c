/* Checkpoints through the session: auto-checkpoint after a successful foreground run, explicit
 * checkpoints with lineage, restore with `from` (also "latest") into a fresh sandbox, and the
 * reference's error strings. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "support/support.h"

static char home[512], store[600];
static evolve_runtime_t *rt;

static void setup(void)
{
    ts_mkdtemp(home, sizeof(home), "sessckpt");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(store, sizeof(store), "%s/store", home);
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
}

static void teardown(void)
{
    evolve_runtime_free(rt);
    ts_rmtree(home);
}

TestSuite(core_session_checkpoint, .init = setup, .fini = teardown, .timeout = 60);

static evolve_t *session(const char *agent, bool storage)
{
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    char logs[700];
    evolve_t *ev;

    snprintf(logs, sizeof(logs), "%s/logs", home);
    o.agent = agent;
    o.storage = storage;
    o.store_root = store;
    o.session_log_dir = logs;
    cr_assert_eq(evolve_new(&ev, rt, &o), 0, "%s", evolve_error_last()->message);
    return ev;
}

static const char trace[] =
    "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":[{\"type\":\"text\","
    "\"text\":\"done\"}]},\"session_id\":\"s1\"}\n";

static json_t *run(evolve_t *ev, const char *from, int expect_rc)
{
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res;
    json_t *j;
    int rc;

    ro.prompt = "trace.jsonl";
    ro.from = from;
    ro.checkpoint_comment = "after run";
    rc = evolve_run(&res, ev, &ro);
    cr_assert_eq(rc, expect_rc, "rc %d: %s", rc, evolve_error_last()->message);
    if (rc < 0)
        return NULL;
    cr_assert_eq(evolve_result_exit_code(res), 0, "%s", evolve_result_stderr(res));
    j = json_loads(evolve_result_json(res), 0, NULL);
    evolve_result_free(res);
    return j;
}

Test(core_session_checkpoint, auto_checkpoint_lineage_and_restore_latest)
{
    evolve_t *ev = session("replay", true), *ev2;
    evolve_result_t *res;
    json_t *r1, *r2, *cp;
    char *explicit_json, *out;
    const char *id1;

    cr_assert_eq(evolve_upload_file(ev, "trace.jsonl", trace, strlen(trace)), 0);
    cr_assert_eq(evolve_upload_file(ev, "notes/keep.txt", "kept", 4), 0);
    r1 = run(ev, NULL, 0);
    cp = json_object_get(r1, "checkpoint");
    cr_assert_not_null(cp, "a successful foreground run is checkpointed");
    id1 = json_string_value(json_object_get(cp, "id"));
    cr_assert_eq(strncmp(id1, "ckpt_", 5), 0, "%s", id1);
    cr_assert_str_eq(json_string_value(json_object_get(cp, "agentType")), "replay");
    cr_assert_str_eq(json_string_value(json_object_get(cp, "comment")), "after run");
    cr_assert(json_is_null(json_object_get(cp, "parentId")) || !json_object_get(cp, "parentId"));
    cr_assert_eq(evolve_checkpoint(&explicit_json, ev, "by hand"), 0, "%s",
                 evolve_error_last()->message);
    cp = json_loads(explicit_json, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(cp, "parentId")), id1);
    json_decref(cp);
    free(explicit_json);
    r2 = run(ev, NULL, 0);
    json_decref(r2);
    cr_assert_eq(evolve_kill(ev), 0);

    /* A fresh session restores the newest checkpoint into a new sandbox. */
    ev2 = session("replay", true);
    json_decref(run(ev2, "latest", 0));
    cr_assert_eq(evolve_execute_command(&res, ev2, "cat notes/keep.txt", NULL), 0);
    cr_assert_str_eq(evolve_result_stdout(res), "kept");
    evolve_result_free(res);
    cr_assert_eq(evolve_checkpoint(&out, ev2, NULL), 0);
    cp = json_loads(out, 0, NULL);
    cr_assert_not_null(json_string_value(json_object_get(cp, "parentId")),
                       "the restored checkpoint is the parent of the next");
    json_decref(cp);
    free(out);
    json_decref(r1);
    evolve_free(ev2);
    evolve_free(ev);
}

Test(core_session_checkpoint, storage_errors_match_the_reference)
{
    evolve_t *plain = session("replay", false), *stored = session("replay", true), *other;
    char *out;

    run(plain, "latest", EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message,
                     "Storage not configured. Call .withStorage() before using from: \"latest\".");
    run(plain, "ckpt_x", EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message,
                     "Storage not configured. Call .withStorage() before using 'from'.");
    cr_assert_eq(evolve_checkpoint(&out, plain, NULL), EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message, "Storage not configured. Call .withStorage().");
    run(stored, "latest", EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message, "No checkpoints found for from: \"latest\".");
    cr_assert_eq(evolve_checkpoint(&out, stored, NULL), EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message, "No active sandbox. Call run() first.");

    /* A claude checkpoint cannot be restored into a replay session. */
    other = session("claude", true);
    cr_assert_eq(evolve_execute_command(&(evolve_result_t *){NULL}, other, "true", NULL), 0);
    cr_assert_eq(evolve_checkpoint(&out, other, NULL), 0, "%s", evolve_error_last()->message);
    free(out);
    run(stored, "latest", EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message, "Cannot restore checkpoint: agent type mismatch "
                                                   "(checkpoint: claude, current: replay)");
    evolve_free(other);
    evolve_free(stored);
    evolve_free(plain);
}
