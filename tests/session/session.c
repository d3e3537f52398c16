/* The session runtime on the local provider: lifecycle order, runs with the replay agent,
 * commands, the one-operation rule, interrupt, timeout, output-file filtering, confinement of
 * save_local_dir, kill. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "support/support.h"

static char home[512];
static evolve_runtime_t *rt;
static evolve_t *ev;
static evolve_subscription_t *sub;

static void setup(void)
{
    char logs[600];
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;

    ts_mkdtemp(home, sizeof(home), "session");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(logs, sizeof(logs), "%s/logs", home);
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
    ts_rmtree(home);
}

TestSuite(core_session, .init = setup, .fini = teardown, .timeout = 60);

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

Test(core_session, replay_run_streams_events_in_lifecycle_order)
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

Test(core_session, command_exit_code_output_and_one_operation_rule)
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

Test(core_session, timeout_gives_exit_minus_one_and_failed)
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

Test(core_session, output_files_only_from_this_turn_and_confined_save)
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

Test(core_session, save_local_dir_refuses_symlink_escape)
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

Test(core_session, kill_removes_the_sandbox)
{
    evolve_result_t *res;
    char dir[800];
    struct stat st;
    const char *id;

    cr_assert_eq(evolve_execute_command(&res, ev, "true", NULL), 0);
    evolve_result_free(res);
    id = evolve_get_session(ev);
    cr_assert_not_null(id);
    snprintf(dir, sizeof(dir), "%s/sandboxes/%s", home, id);
    cr_assert_eq(stat(dir, &st), 0, "%s exists while alive", dir);
    cr_assert_eq(evolve_kill(ev), 0, "%s", evolve_error_last()->message);
    cr_assert_neq(stat(dir, &st), 0, "%s removed by kill", dir);
    cr_assert_null(evolve_get_session(ev));
}

Test(core_session, interrupted_run_and_background_run_lifecycle)
{
    evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
    evolve_result_t *res;
    size_t content;
    uint64_t seq = 0;
    char *seen, *status, fifo[700];
    evolve_t *self = ev;

    /* The replay agent cats its prompt: a FIFO nobody writes keeps the run going. */
    cr_assert_eq(evolve_execute_command(&res, self, "mkfifo block.fifo", NULL), 0);
    evolve_result_free(res);
    snprintf(fifo, sizeof(fifo), "block.fifo");
    ro.prompt = fifo;
    ro.background = true;
    cr_assert_eq(evolve_run(&res, self, &ro), 0, "%s", evolve_error_last()->message);
    cr_assert_not_null(strstr(evolve_result_stdout(res), "Background process started with ID"));
    evolve_result_free(res);
    cr_assert_eq(evolve_status(&status, self), 0);
    cr_assert_not_null(strstr(status, "\"sandbox\":\"running\""), "%s", status);
    cr_assert_not_null(strstr(status, "\"hasRun\":true"), "%s", status);
    free(status);
    cr_assert_eq(evolve_interrupt(self), 0);
    seen = lifecycle_until("run_interrupted", &content, &seq);
    cr_assert_str_eq(seen, "sandbox_boot,sandbox_ready,command_start,command_complete,run_start,"
                           "run_interrupted");
    free(seen);
    cr_assert_eq(evolve_status(&status, self), 0);
    cr_assert_not_null(strstr(status, "\"agent\":\"interrupted\""), "%s", status);
    free(status);

    ro.prompt = "nothing-here.jsonl"; /* cat fails: exit 1 */
    cr_assert_eq(evolve_run(&res, self, &ro), 0);
    evolve_result_free(res);
    seen = lifecycle_until("run_background_failed", &content, &seq);
    cr_assert_str_eq(seen, "run_start,run_background_failed");
    free(seen);
}

Test(core_session, pause_then_resume_keeps_the_process_alive)
{
    evolve_command_options_t co = EVOLVE_COMMAND_OPTIONS_INIT;
    evolve_result_t *res;
    char *status;
    uint64_t deadline;

    co.background = true;
    cr_assert_eq(evolve_execute_command(&res, ev,
                                        "i=0; while :; do i=$((i+1)); echo $i > n; "
                                        "sleep 0.02; done",
                                        &co),
                 0);
    evolve_result_free(res);
    {
        /* Under load the loop may not have written its first value yet: a pause then would
         * freeze it before `n` exists and the check below would compare nothing. */
        char first[900];
        struct stat st;

        snprintf(first, sizeof(first), "%s/sandboxes/%s/home/user/workspace/n", home,
                 evolve_get_session(ev));
        deadline = ts_now_ms() + 10000;
        while (stat(first, &st) != 0 || st.st_size == 0) {
            cr_assert_lt(ts_now_ms(), deadline, "the counter loop never started");
            nanosleep(&(struct timespec){0, 5 * 1000000L}, NULL);
        }
    }
    cr_assert_eq(evolve_pause(ev), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_status(&status, ev), 0);
    cr_assert_not_null(strstr(status, "\"sandbox\":\"paused\""), "%s", status);
    free(status);
    {
        char path[900], *a, *b;
        uint64_t until;

        snprintf(path, sizeof(path), "%s/sandboxes/%s/home/user/workspace/n", home,
                 evolve_get_session(ev));
        /* Frozen: the counter does not move while paused (read twice, 300 ms apart). */
        a = ts_read_file(path, NULL);
        /* Asserting that nothing happens needs a window: 300 ms is 15 of the loop's ticks. */
        until = 300;
        nanosleep(&(struct timespec){0, (long)until * 1000000L}, NULL);
        b = ts_read_file(path, NULL);
        cr_assert(a && b && !strcmp(a, b), "counter moved while paused: %s -> %s", a, b);
        free(b);
        cr_assert_eq(evolve_resume(ev), 0, "%s", evolve_error_last()->message);
        deadline = ts_now_ms() + 10000;
        for (;;) {
            b = ts_read_file(path, NULL);
            if (b && strcmp(a, b)) {
                free(b);
                break;
            }
            free(b);
            cr_assert_lt(ts_now_ms(), deadline, "the process did not continue after resume");
        }
        free(a);
    }
    cr_assert_eq(evolve_interrupt(ev), 0);
}

Test(core_session, schema_validation_of_result_json)
{
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_t *sev;
    evolve_result_t *res;
    char *json;
    json_t *j;

    o.agent = "replay";
    o.schema_json = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
                    "\"required\":[\"n\"]}";
    cr_assert_eq(evolve_new(&sev, rt, &o), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(
        evolve_execute_command(&res, sev, "cat CLAUDE.md | grep -c 'STRUCTURED OUTPUT'", NULL), 0);
    cr_assert_str_eq(evolve_result_stdout(res), "1\n", "the schema section is in CLAUDE.md");
    evolve_result_free(res);
    cr_assert_eq(evolve_get_output_files(&json, sev, false), 0);
    j = json_loads(json, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "error")),
                     "Schema provided but agent did not create output/result.json");
    json_decref(j);
    free(json);
    cr_assert_eq(
        evolve_execute_command(&res, sev, "echo '{\"n\":\"x\"}' > output/result.json", NULL), 0);
    evolve_result_free(res);
    cr_assert_eq(evolve_get_output_files(&json, sev, false), 0);
    j = json_loads(json, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "error")),
                     "Schema validation failed: /n: expected integer, got string");
    cr_assert_str_eq(json_string_value(json_object_get(j, "rawData")), "{\"n\":\"x\"}\n");
    cr_assert(json_is_null(json_object_get(j, "data")));
    json_decref(j);
    free(json);
    cr_assert_eq(evolve_execute_command(&res, sev, "echo '{\"n\":7}' > output/result.json", NULL),
                 0);
    evolve_result_free(res);
    cr_assert_eq(evolve_get_output_files(&json, sev, false), 0);
    j = json_loads(json, 0, NULL);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(j, "data"), "n")), 7);
    cr_assert_null(json_object_get(j, "error"));
    json_decref(j);
    free(json);
    evolve_free(sev);
}

Test(core_session, bad_options_are_refused_with_the_reference_messages)
{
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_t *bad;

    o.agent = "nope";
    cr_assert_eq(evolve_new(&bad, rt, &o), EVOLVE_EINVAL);
    cr_assert_str_eq(evolve_error_last()->message, "Unknown agent type: nope");
    o.agent = "replay";
    o.schema_json = "{\"$ref\":\"#/$defs/missing\"}";
    cr_assert_eq(evolve_new(&bad, rt, &o), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "Invalid JSON Schema"));
    o.schema_json = NULL;
    o.provider = "modal";
    cr_assert_eq(evolve_new(&bad, rt, &o), EVOLVE_EUNSUPPORTED);
    cr_assert_str_eq(evolve_error_last()->message, "Modal is not supported yet");
}
