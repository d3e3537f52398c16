/* lifecycle.h — the session runtime's lifecycle suite, run against one provider per including
 * file: tests/session/session.c (local), session_e2b.c and session_daytona.c (the loopback
 * fakes of tests/fakes). Lifecycle order, runs with the replay agent, commands, the
 * one-operation rule, interrupt, timeout, output-file filtering, confinement of save_local_dir,
 * kill. The includer defines LIFECYCLE_SUITE (the Criterion suite name) and LIFECYCLE_FAKE
 * (-1 for local, else an enum ts_fake_kind); EVOLVE_TEST_PROVIDER=e2b|daytona overrides a local
 * build of the suite to run against that fake. */
#ifndef EVOLVE_TEST_SESSION_LIFECYCLE_H
#define EVOLVE_TEST_SESSION_LIFECYCLE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "fakes/fakes.h"
#include "support/support.h"

static char home[512];
static evolve_runtime_t *rt;
static evolve_t *ev;
static evolve_subscription_t *sub;
static struct ts_fake *fake;

/* Which fake, if any: the includer's choice, or EVOLVE_TEST_PROVIDER for the local build. */
static int fake_kind(void)
{
    const char *p = getenv("EVOLVE_TEST_PROVIDER");

    if (LIFECYCLE_FAKE >= 0)
        return LIFECYCLE_FAKE;
    if (p && !strcmp(p, "e2b"))
        return TS_FAKE_E2B;
    if (p && !strcmp(p, "daytona"))
        return TS_FAKE_DAYTONA;
    return -1;
}

/* The host directory holding sandbox `id`'s files. */
static void sandbox_dir(const char *id, char *out, size_t size)
{
    if (fake) {
        cr_assert_eq(ts_fake_home(fake, id, out, size), 0, "the fake knows %s", id);
        return;
    }
    snprintf(out, size, "%s/sandboxes/%s", home, id);
}

static void setup(void)
{
    char logs[600];
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
    int kind = fake_kind();

    ts_mkdtemp(home, sizeof(home), "session");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(logs, sizeof(logs), "%s/logs", home);
    if (kind >= 0) {
        fake = ts_fake_start((enum ts_fake_kind)kind, NULL);
        ts_fake_setenv(fake);
        o.provider = kind == TS_FAKE_E2B ? "e2b" : "daytona";
    }
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0, "%s", evolve_error_last()->message);
    o.agent = "replay";
    o.session_log_dir = logs;
    cr_assert_eq(evolve_new(&ev, rt, &o), 0, "%s", evolve_error_last()->message);
    so.capacity = 1 << 16;
    cr_assert_eq(evolve_subscribe(&sub, ev, &so), 0, "%s", evolve_error_last()->message);
}

static void teardown(void)
{
    evolve_subscription_free(sub);
    evolve_free(ev);
    evolve_runtime_free(rt);
    if (fake) {
        struct ts_fake_stats st;

        ts_fake_stats(fake, &st);
        /* Nothing leaks: the session killed its sandbox, no command runs, no connection stays. */
        cr_assert_eq(st.sandboxes, 0, "%u sandboxes left alive", st.sandboxes);
        cr_assert(ts_fake_quiesce(fake, 5000), "commands or connections left open");
        ts_fake_stop(fake);
        fake = NULL;
    }
    ts_rmtree(home);
}

TestSuite(LIFECYCLE_SUITE, .init = setup, .fini = teardown, .timeout = 60);

/* Drains events until the lifecycle `reason` arrives; returns the comma-joined lifecycle reasons
 * seen (caller frees) and counts content events. */
static char *lifecycle_until(const char *reason, size_t *content, uint64_t *last_seq)
{
    char *seen = calloc(1, 4096);
    uint64_t deadline = ts_now_ms() + 20000;

    *content = 0;
    while (ts_now_ms() < deadline) {
        evolve_event_t *e;
        json_t *j;
        const char *r;

        if (evolve_subscription_poll(sub, 200, &e) < 0)
            continue;
        cr_assert_gt(evolve_event_seq(e), *last_seq, "sequence numbers increase");
        *last_seq = evolve_event_seq(e);
        if (evolve_event_kind(e) == EVOLVE_EVENT_CONTENT)
            (*content)++;
        if (evolve_event_kind(e) != EVOLVE_EVENT_LIFECYCLE) {
            evolve_event_unref(e);
            continue;
        }
        j = json_loads(evolve_event_json(e, NULL), 0, NULL);
        r = json_string_value(json_object_get(j, "reason"));
        if (*seen)
            strcat(seen, ",");
        strcat(seen, r);
        evolve_event_unref(e);
        if (!strcmp(r, reason)) {
            json_decref(j);
            return seen;
        }
        json_decref(j);
    }
    cr_assert_fail("no %s lifecycle event within 20 s (saw %s)", reason, seen);
    return seen;
}

Test(LIFECYCLE_SUITE, replay_run_streams_events_in_lifecycle_order)
{
    char trace_path[1024];
    size_t len, content;
    uint64_t seq = 0;
    char *trace, *seen;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res;

    snprintf(trace_path, sizeof(trace_path), "%s/bench-traces/claude-session-200.jsonl",
             "/work/shared");
    trace = ts_read_file(EVOLVE_TEST_DATA "/traces/claude-tool.stdout.jsonl", &len);
    if (!trace)
        trace = ts_read_file(trace_path, &len);
    cr_assert_not_null(trace);
    cr_assert_eq(evolve_upload_file(ev, "trace.jsonl", trace, len), 0, "%s",
                 evolve_error_last()->message);
    free(trace);
    ro.prompt = "trace.jsonl";
    cr_assert_eq(evolve_run(&res, ev, &ro), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_result_exit_code(res), 0, "stderr: %s", evolve_result_stderr(res));
    cr_assert_not_null(evolve_result_run_id(res));
    cr_assert_gt(strlen(evolve_result_stdout(res)), 100);
    evolve_result_free(res);
    seen = lifecycle_until("run_complete", &content, &seq);
    cr_assert_str_eq(seen, "sandbox_boot,sandbox_ready,run_start,run_complete");
    cr_assert_gt(content, 3, "content events arrive (%zu)", content);
    free(seen);
}

Test(LIFECYCLE_SUITE, command_exit_code_output_and_one_operation_rule)
{
    evolve_command_options_t co = EVOLVE_COMMAND_OPTIONS_INIT;
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res;
    size_t content;
    uint64_t seq = 0;
    char *seen;

    cr_assert_eq(evolve_execute_command(&res, ev, "echo hi; echo err >&2; exit 3", NULL), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(evolve_result_exit_code(res), 3);
    cr_assert_str_eq(evolve_result_stdout(res), "hi\n");
    cr_assert_str_eq(evolve_result_stderr(res), "err\n");
    evolve_result_free(res);
    seen = lifecycle_until("command_failed", &content, &seq);
    cr_assert_str_eq(seen, "sandbox_boot,sandbox_ready,command_start,command_failed");
    free(seen);

    co.background = true;
    cr_assert_eq(evolve_execute_command(&res, ev, "sleep 30", &co), 0);
    cr_assert_not_null(strstr(evolve_result_stdout(res), "Background process started with ID"));
    evolve_result_free(res);
    ro.prompt = "x";
    cr_assert_eq(evolve_run(&res, ev, &ro), EVOLVE_EBUSY);
    cr_assert_str_eq(evolve_error_last()->message,
                     "Agent is already running. Call interrupt(), wait for the active/background "
                     "run to finish, or create a new Evolve instance.");
    cr_assert_null(res);
    cr_assert_eq(evolve_interrupt(ev), 0, "%s", evolve_error_last()->message);
    seen = lifecycle_until("command_interrupted", &content, &seq);
    cr_assert_str_eq(seen, "command_start,command_interrupted");
    free(seen);
}

Test(LIFECYCLE_SUITE, timeout_gives_exit_minus_one_and_failed)
{
    evolve_command_options_t co = EVOLVE_COMMAND_OPTIONS_INIT;
    evolve_result_t *res;
    size_t content;
    uint64_t seq = 0;
    char *seen;

    co.timeout_ms = 300;
    cr_assert_eq(evolve_execute_command(&res, ev, "sleep 20", &co), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(evolve_result_exit_code(res), -1);
    evolve_result_free(res);
    seen = lifecycle_until("command_failed", &content, &seq);
    free(seen);
}

Test(LIFECYCLE_SUITE, output_files_only_from_this_turn_and_confined_save)
{
    evolve_result_t *res;
    char *json, out[700], *body;
    json_t *j;

    cr_assert_eq(evolve_execute_command(&res, ev,
                                        "mkdir -p output/sub && echo old > output/old.txt && "
                                        "touch -d '1 hour ago' output/old.txt && "
                                        "echo new > output/new.txt && echo deep > output/sub/d.txt",
                                        NULL),
                 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_result_exit_code(res), 0, "%s", evolve_result_stderr(res));
    evolve_result_free(res);
    cr_assert_eq(evolve_get_output_files(&json, ev, false), 0, "%s", evolve_error_last()->message);
    j = json_loads(json, 0, NULL);
    free(json);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "files"), "new.txt")),
                     "new\n");
    cr_assert_null(json_object_get(json_object_get(j, "files"), "old.txt"), "old turn excluded");
    cr_assert_null(json_object_get(json_object_get(j, "files"), "sub/d.txt"), "not recursive");
    json_decref(j);
    cr_assert_eq(evolve_get_output_files(&json, ev, true), 0);
    j = json_loads(json, 0, NULL);
    free(json);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "files"), "sub/d.txt")),
                     "deep\n");
    json_decref(j);
    snprintf(out, sizeof(out), "%s/saved", home);
    cr_assert_eq(evolve_save_local_dir(ev, out, true), 0, "%s", evolve_error_last()->message);
    snprintf(out, sizeof(out), "%s/saved/sub/d.txt", home);
    body = ts_read_file(out, NULL);
    cr_assert_str_eq(body, "deep\n");
    free(body);
}

Test(LIFECYCLE_SUITE, save_local_dir_refuses_symlink_escape)
{
    evolve_result_t *res;
    char out[700], victim[700];
    struct stat st;

    cr_assert_eq(
        evolve_execute_command(&res, ev, "mkdir -p output/link && echo x > output/link/f", NULL),
        0);
    evolve_result_free(res);
    snprintf(out, sizeof(out), "%s/saved2", home);
    mkdir(out, 0755);
    snprintf(victim, sizeof(victim), "%s/victim", home);
    mkdir(victim, 0755);
    snprintf(out, sizeof(out), "%s/saved2/link", home);
    cr_assert_eq(symlink(victim, out), 0);
    snprintf(out, sizeof(out), "%s/saved2", home);
    cr_assert_eq(evolve_save_local_dir(ev, out, true), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "link"), "%s",
                       evolve_error_last()->message);
    snprintf(victim, sizeof(victim), "%s/victim/f", home);
    cr_assert_neq(stat(victim, &st), 0, "nothing written through the symlink");
}

Test(LIFECYCLE_SUITE, kill_removes_the_sandbox)
{
    evolve_result_t *res;
    char dir[800];
    struct stat st;
    const char *id;

    cr_assert_eq(evolve_execute_command(&res, ev, "true", NULL), 0);
    evolve_result_free(res);
    id = evolve_get_session(ev);
    cr_assert_not_null(id);
    sandbox_dir(id, dir, sizeof(dir));
    cr_assert_eq(stat(dir, &st), 0, "%s exists while alive", dir);
    cr_assert_eq(evolve_kill(ev), 0, "%s", evolve_error_last()->message);
    cr_assert_neq(stat(dir, &st), 0, "%s removed by kill", dir);
    cr_assert_null(evolve_get_session(ev));
}

#endif
