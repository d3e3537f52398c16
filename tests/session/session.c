/* The session runtime's lifecycle suite (lifecycle.h) on the local provider, or on a loopback
 * fake when EVOLVE_TEST_PROVIDER=e2b|daytona. */
#define LIFECYCLE_SUITE core_session
#define LIFECYCLE_FAKE  (-1)
#include "session/lifecycle.h"

/* The tests below use the local provider's host paths and pause semantics: they run on the
 * local provider (the default, and what CI runs); against a fake they are skipped. */
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

Test(LIFECYCLE_SUITE, interrupted_run_and_background_run_lifecycle)
{
    if (fake_kind() >= 0)
        cr_skip_test("local provider only (host paths, cgroup freezer)");

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

Test(LIFECYCLE_SUITE, pause_then_resume_keeps_the_process_alive)
{
    if (fake_kind() >= 0)
        cr_skip_test("local provider only (host paths, cgroup freezer)");

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
        /* Pause only once the loop is demonstrably running (its counter file exists). */
        char path[900], *c = NULL;

        snprintf(path, sizeof(path), "%s/sandboxes/%s/home/user/workspace/n", home,
                 evolve_get_session(ev));
        deadline = ts_now_ms() + 10000;
        while (!(c = ts_read_file(path, NULL)) || atoi(c) < 2) {
            free(c);
            c = NULL;
            cr_assert_lt(ts_now_ms(), deadline, "the background loop never started");
        }
        free(c);
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

Test(LIFECYCLE_SUITE, schema_validation_of_result_json)
{
    if (fake_kind() >= 0)
        cr_skip_test("local provider only (host paths, cgroup freezer)");

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

Test(LIFECYCLE_SUITE, bad_options_are_refused_with_the_reference_messages)
{
    if (fake_kind() >= 0)
        cr_skip_test("local provider only (host paths, cgroup freezer)");

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

Test(LIFECYCLE_SUITE, kill_and_free_while_paused_do_not_hang)
{
    if (fake_kind() >= 0)
        cr_skip_test("local provider only (host paths, cgroup freezer)");

    evolve_command_options_t co = EVOLVE_COMMAND_OPTIONS_INIT;
    evolve_result_t *res;
    char dir[900];
    struct stat st;

    co.background = true;
    cr_assert_eq(evolve_execute_command(&res, ev, "sleep 60", &co), 0);
    evolve_result_free(res);
    snprintf(dir, sizeof(dir), "%s/sandboxes/%s", home, evolve_get_session(ev));
    cr_assert_eq(evolve_pause(ev), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(evolve_kill(ev), 0, "%s", evolve_error_last()->message);
    cr_assert_neq(stat(dir, &st), 0, "%s removed", dir);
    /* And a paused session being freed (teardown) must not wait for a frozen process. */
    cr_assert_eq(evolve_execute_command(&res, ev, "sleep 60", &co), 0, "%s",
                 evolve_error_last()->message);
    evolve_result_free(res);
    cr_assert_eq(evolve_pause(ev), 0);
}
