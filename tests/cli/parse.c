/* `evolve parse`: the built CLI (EVOLVE_CLI, set by ctest) on recorded traces, from a file and
 * from stdin, with and without --summary, and its failures. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/support.h"

TestSuite(cli_parse, .timeout = 60);

/* Runs the CLI with argv, stdin from `in` (or /dev/null), stdout/stderr into files under dir.
 * Returns the exit status. */
static int run_cli(const char *dir, const char *in, char *const argv[], char **out, char **err)
{
    char op[1024], ep[1024];
    const char *cli = getenv("EVOLVE_CLI");
    pid_t pid;
    int status;

    cr_assert_not_null(cli, "EVOLVE_CLI is set by ctest");
    snprintf(op, sizeof(op), "%s/out", dir);
    snprintf(ep, sizeof(ep), "%s/err", dir);
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int i = open(in ? in : "/dev/null", O_RDONLY);
        int o = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (i < 0 || o < 0 || e < 0)
            _exit(127);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        execv(cli, argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    *out = ts_read_file(op, NULL);
    *err = ts_read_file(ep, NULL);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static size_t count_json_lines(const char *text, const char *must_contain)
{
    size_t n = 0;
    const char *p = text, *nl;

    while ((nl = strchr(p, '\n'))) {
        json_error_t e;
        json_t *v = json_loadb(p, (size_t)(nl - p), 0, &e);

        cr_assert_not_null(v, "line %zu is not JSON: %s", n + 1, e.text);
        cr_assert(json_is_object(json_object_get(v, "update")), "line %zu has an update", n + 1);
        json_decref(v);
        if (!must_contain || memmem(p, (size_t)(nl - p), must_contain, strlen(must_contain)))
            n++;
        p = nl + 1;
    }
    cr_assert_eq(*p, '\0', "output ends with LF");
    return n;
}

Test(cli_parse, prints_one_event_per_line_from_a_file)
{
    char dir[512], trace[1024], *out, *err;
    char *argv[] = {"evolve", "parse", "--agent", "claude", trace, NULL};

    ts_mkdtemp(dir, sizeof(dir), "cli-parse");
    ts_data_path(trace, sizeof(trace), "traces/claude-tool.stdout.jsonl");
    cr_assert_eq(run_cli(dir, NULL, argv, &out, &err), 0, "stderr: %s", err);
    cr_assert_eq(count_json_lines(out, NULL), 8);
    cr_assert_eq(count_json_lines(out, "\"sessionUpdate\":\"tool_call\""), 1);
    cr_assert_eq(count_json_lines(out, "\"sessionUpdate\":\"unknown\""), 0);
    free(out);
    free(err);
    ts_rmtree(dir);
}

Test(cli_parse, reads_stdin_keeps_a_last_line_without_lf_and_summarises)
{
    char dir[512], trace[1024], in[1024], *data, *out, *err;
    char *argv[] = {"evolve", "parse", "--agent", "claude", "-", "--summary", NULL};
    size_t len;
    json_t *sum, *calls, *run;

    ts_mkdtemp(dir, sizeof(dir), "cli-parse");
    data =
        ts_read_file(ts_data_path(trace, sizeof(trace), "traces/claude-tool.stdout.jsonl"), &len);
    cr_assert_not_null(data);
    cr_assert_eq(data[len - 1], '\n');
    snprintf(in, sizeof(in), "%s/in.jsonl", dir);
    ts_write_file(in, data, len - 1); /* drop the final LF */
    cr_assert_eq(run_cli(dir, in, argv, &out, &err), 0, "stderr: %s", err);
    sum = json_loads(out, 0, NULL);
    cr_assert_not_null(sum, "summary is JSON: %s", out);
    cr_assert_eq(json_integer_value(json_object_get(sum, "lines")), 6);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(sum, "updates"), "usage")), 4,
                 "the result line (without LF) was parsed");
    calls = json_object_get(json_object_get(sum, "usage"), "call");
    run = json_object_get(json_object_get(sum, "usage"), "run");
    /* two messages (the first repeated on two lines): the last per messageId, summed */
    cr_assert_eq(json_integer_value(json_object_get(calls, "promptTokens")), 3219 + 3327);
    cr_assert_eq(json_integer_value(json_object_get(calls, "updates")), 2);
    cr_assert_eq(json_integer_value(json_object_get(run, "promptTokens")), 6546);
    cr_assert_float_eq(json_number_value(json_object_get(run, "costUsd")), 0.034655, 1e-9);
    json_decref(sum);
    free(data);
    free(out);
    free(err);
    ts_rmtree(dir);
}

Test(cli_parse, unknown_lines_still_exit_zero)
{
    char dir[512], in[1024], *out, *err;
    char *argv[] = {"evolve", "parse", "--agent", "codex", in, NULL};
    static const char text[] = "Reading prompt from stdin...\n{\"type\":\"turn.started\"}\n\n";

    ts_mkdtemp(dir, sizeof(dir), "cli-parse");
    snprintf(in, sizeof(in), "%s/in.jsonl", dir);
    ts_write_file(in, text, sizeof(text) - 1);
    cr_assert_eq(run_cli(dir, NULL, argv, &out, &err), 0, "stderr: %s", err);
    cr_assert_eq(count_json_lines(out, "\"sessionUpdate\":\"unknown\""), 1);
    cr_assert(strstr(out, "Reading prompt from stdin..."), "the raw line is kept");
    free(out);
    free(err);
    ts_rmtree(dir);
}

Test(cli_parse, io_errors_name_the_file_and_fail)
{
    char dir[512], *out, *err;
    char *argv[] = {"evolve", "parse", "--agent", "gemini", "/nonexistent/trace.jsonl", NULL};
    char *argv2[] = {"evolve", "parse", "--agent", "nope", "-", NULL};
    char *argv3[] = {"evolve", "parse", "x.jsonl", NULL};

    ts_mkdtemp(dir, sizeof(dir), "cli-parse");
    cr_assert_eq(run_cli(dir, NULL, argv, &out, &err), 1);
    cr_assert(strstr(err, "/nonexistent/trace.jsonl"), "stderr names the file: %s", err);
    free(out);
    free(err);
    cr_assert_eq(run_cli(dir, NULL, argv2, &out, &err), 2);
    cr_assert(strstr(err, "unknown agent"), "%s", err);
    free(out);
    free(err);
    cr_assert_eq(run_cli(dir, NULL, argv3, &out, &err), 2, "--agent is required");
    free(out);
    free(err);
    ts_rmtree(dir);
}

Test(cli_parse, every_recorded_trace_parses_without_unknown)
{
    static const char *const traces[] = {
        "claude-hello", "claude-tool",  "claude-error", "codex-hello",  "codex-tool",
        "codex-error",  "gemini-hello", "gemini-tool",  "gemini-error", NULL};
    const char *const *t;
    char dir[512];

    ts_mkdtemp(dir, sizeof(dir), "cli-parse");
    for (t = traces; *t; t++) {
        char trace[1024], rel[256], agent[16], *out, *err;
        char *argv[] = {"evolve", "parse", "--agent", agent, trace, NULL};

        snprintf(rel, sizeof(rel), "traces/%s.stdout.jsonl", *t);
        snprintf(agent, sizeof(agent), "%.*s", (int)strcspn(*t, "-"), *t);
        ts_data_path(trace, sizeof(trace), rel);
        cr_assert_eq(run_cli(dir, NULL, argv, &out, &err), 0, "%s: %s", *t, err);
        cr_assert_gt(count_json_lines(out, NULL), 0, "%s: events", *t);
        cr_assert_eq(count_json_lines(out, "\"sessionUpdate\":\"unknown\""), 0, "%s", *t);
        free(out);
        free(err);
    }
    ts_rmtree(dir);
}
