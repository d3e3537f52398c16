/* `evolve run` and `evolve exec`, driven as a user would: the built CLI ($EVOLVE_CLI, set by
 * ctest) in a child process with its own EVOLVE_HOME, on the local provider. Runs use the replay
 * agent over a recorded claude trace uploaded with --context; commands are plain shell. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/support.h"

extern char **environ;

static char home[512];
static char ctx[600];

struct out {
    char *data;
    size_t len, cap;
};

struct child {
    pid_t pid;
    int out_fd, err_fd;
    struct out out, err;
    int status;
    bool exited;
};

static void setup(void)
{
    char logs[600];

    ts_mkdtemp(home, sizeof(home), "cli-run");
    setenv("EVOLVE_HOME", home, 1);
    snprintf(logs, sizeof(logs), "%s/logs", home);
    setenv("EVOLVE_SESSION_LOG_DIR", logs, 1);
    setenv("NO_COLOR", "1", 1);
    snprintf(ctx, sizeof(ctx), "%s/ctx", home);
}

static void teardown(void)
{
    ts_rmtree(home);
}

TestSuite(cli_run, .init = setup, .fini = teardown, .timeout = 90);

static const char *cli(void)
{
    const char *p = getenv("EVOLVE_CLI");

    cr_assert(p && *p, "EVOLVE_CLI is not set (run through ctest)");
    return p;
}

static void start(struct child *c, const char *const *args)
{
    const char *argv[32];
    int o[2], e[2];
    posix_spawn_file_actions_t fa;
    size_t n = 0;

    memset(c, 0, sizeof(*c));
    argv[n++] = cli();
    while (*args && n < 31)
        argv[n++] = *args++;
    argv[n] = NULL;
    cr_assert_eq(pipe(o), 0);
    cr_assert_eq(pipe(e), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, o[1], 1);
    posix_spawn_file_actions_adddup2(&fa, e[1], 2);
    posix_spawn_file_actions_addclose(&fa, o[0]);
    posix_spawn_file_actions_addclose(&fa, e[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    cr_assert_eq(posix_spawn(&c->pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(o[1]);
    close(e[1]);
    c->out_fd = o[0];
    c->err_fd = e[0];
}

static void append(struct out *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        cr_assert_not_null(b->data);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Reads output until both pipes close (or until `until` shows up on stdout, when given), with a
 * deadline. Returns true when the condition was met. */
static bool pump(struct child *c, const char *until, uint64_t timeout_ms)
{
    uint64_t deadline = ts_now_ms() + timeout_ms;

    while (c->out_fd >= 0 || c->err_fd >= 0) {
        struct pollfd p[2] = {{.fd = c->out_fd, .events = POLLIN},
                              {.fd = c->err_fd, .events = POLLIN}};
        uint64_t now = ts_now_ms();
        char buf[65536];
        int i;

        if (until && c->out.data && strstr(c->out.data, until))
            return true;
        if (now >= deadline)
            return false;
        if (poll(p, 2, (int)(deadline - now)) < 0 && errno != EINTR)
            return false;
        for (i = 0; i < 2; i++) {
            int *fd = i ? &c->err_fd : &c->out_fd;
            ssize_t n;

            if (*fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            n = read(*fd, buf, sizeof(buf));
            if (n > 0) {
                append(i ? &c->err : &c->out, buf, (size_t)n);
            } else {
                close(*fd);
                *fd = -1;
            }
        }
    }
    return until ? (c->out.data && strstr(c->out.data, until)) : true;
}

/* Waits for the child's exit with a deadline; returns its exit code (128 + n on signal n). */
static int finish(struct child *c, uint64_t timeout_ms)
{
    uint64_t deadline = ts_now_ms() + timeout_ms;
    int st;

    cr_assert(pump(c, NULL, timeout_ms), "evolve did not finish within %llu ms; stderr: %s",
              (unsigned long long)timeout_ms, c->err.data ? c->err.data : "");
    for (;;) {
        pid_t r = waitpid(c->pid, &st, WNOHANG);

        if (r == c->pid)
            break;
        if (ts_now_ms() >= deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            cr_assert_fail("evolve closed its output but did not exit");
        }
        poll(NULL, 0, 10); /* the pipes are closed: the exit is imminent */
    }
    if (!c->out.data)
        append(&c->out, "", 0);
    if (!c->err.data)
        append(&c->err, "", 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_cli(struct child *c, const char *const *args)
{
    start(c, args);
    return finish(c, 60000);
}

static void child_free(struct child *c)
{
    free(c->out.data);
    free(c->err.data);
}

/* Puts a trace into the context directory uploaded with --context. */
static void put_trace(const char *name, const char *data, size_t len)
{
    char path[700];

    snprintf(path, sizeof(path), "%s/%s", ctx, name);
    ts_write_file(path, data, len);
}

static void put_tool_trace(void)
{
    char p[1024];
    size_t len;
    char *t = ts_read_file(ts_data_path(p, sizeof(p), "traces/claude-tool.stdout.jsonl"), &len);

    cr_assert_not_null(t);
    put_trace("trace.jsonl", t, len);
    free(t);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

/* ---- exec ------------------------------------------------------------------------------------ */

Test(cli_run, exec_streams_output_and_exits_with_the_command_code)
{
    struct child c;
    int rc = run_cli(&c, (const char *[]){"exec", "echo hi; echo oops >&2; exit 3", NULL});

    cr_assert_eq(rc, 3, "stderr: %s", c.err.data);
    cr_assert_str_eq(c.out.data, "hi\n");
    cr_assert_not_null(strstr(c.err.data, "oops\n"), "%s", c.err.data);
    cr_assert_not_null(strstr(c.err.data, "exited with code 3"), "%s", c.err.data);
    child_free(&c);
}

Test(cli_run, exec_json_prints_the_result_object)
{
    struct child c;
    json_t *j;
    int rc = run_cli(&c, (const char *[]){"exec", "--json", "printf x; pwd", NULL});

    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    j = json_loads(c.out.data, 0, NULL);
    cr_assert_not_null(j, "stdout is one JSON object: %s", c.out.data);
    cr_assert_eq(json_integer_value(json_object_get(j, "exitCode")), 0);
    cr_assert_str_eq(json_string_value(json_object_get(j, "stdout")), "x/home/user/workspace\n");
    cr_assert_not_null(json_string_value(json_object_get(j, "sandboxId")));
    json_decref(j);
    child_free(&c);
}

Test(cli_run, exec_timeout_exits_1_naming_the_timeout)
{
    struct child c;
    uint64_t t0 = ts_now_ms();
    int rc = run_cli(&c, (const char *[]){"exec", "--timeout", "300", "sleep 30", NULL});

    cr_assert_eq(rc, 1, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.err.data, "timed out after 300 ms"), "%s", c.err.data);
    cr_assert_lt(ts_now_ms() - t0, 20000, "the command was stopped, not waited out");
    child_free(&c);
}

Test(cli_run, ctrl_c_interrupts_the_command_and_exits_130)
{
    struct child c;
    char dir[700];
    int rc;

    start(&c, (const char *[]){"exec", "echo started; sleep 30", NULL});
    cr_assert(pump(&c, "started\n", 30000), "the command did not start; stderr: %s",
              c.err.data ? c.err.data : "");
    kill(c.pid, SIGINT);
    rc = finish(&c, 20000);
    cr_assert_eq(rc, 130, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.err.data, "interrupting"), "%s", c.err.data);
    /* The sandbox is gone: evolve killed it on the way out. */
    snprintf(dir, sizeof(dir), "%s/sandboxes", home);
    cr_assert_eq(count_entries(dir), 0, "no sandbox directory is left in %s", dir);
    child_free(&c);
}

/* ---- run ------------------------------------------------------------------------------------- */

Test(cli_run, run_json_streams_output_events_one_per_line)
{
    struct child c;
    json_t *j, *call = NULL, *update = NULL;
    size_t usage = 0, text = 0, lines = 0;
    char *line, *save = NULL;
    int rc;

    put_tool_trace();
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--json", "--context", ctx,
                                      "context/trace.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    for (line = strtok_r(c.out.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *type;

        j = json_loads(line, 0, NULL);
        cr_assert_not_null(j, "line %zu is not JSON: %s", lines + 1, line);
        type = json_string_value(json_object_get(json_object_get(j, "update"), "sessionUpdate"));
        cr_assert_not_null(type, "line %zu is not an OutputEvent: %s", lines + 1, line);
        if (!strcmp(type, "tool_call") && !call)
            call = json_incref(json_object_get(j, "update"));
        else if (!strcmp(type, "tool_call_update") && !update)
            update = json_incref(json_object_get(j, "update"));
        usage += !strcmp(type, "usage");
        text += !strcmp(type, "agent_message_chunk");
        lines++;
        json_decref(j);
    }
    cr_assert_not_null(call);
    cr_assert_not_null(update);
    cr_assert_str_eq(json_string_value(json_object_get(call, "toolName")), "Bash");
    cr_assert_str_eq(json_string_value(json_object_get(call, "toolCallId")),
                     json_string_value(json_object_get(update, "toolCallId")));
    cr_assert_str_eq(json_string_value(json_object_get(update, "status")), "completed");
    cr_assert_gt(usage, 0);
    cr_assert_gt(text, 0);
    /* The summary goes to stderr, keeping stdout pure JSONL. */
    cr_assert_not_null(strstr(c.err.data, "cost: $0.034655 (agent)"), "%s", c.err.data);
    cr_assert_not_null(strstr(c.err.data, "output files (0)"), "%s", c.err.data);
    json_decref(call);
    json_decref(update);
    child_free(&c);
}

Test(cli_run, run_text_shows_messages_tool_calls_usage_and_cost)
{
    struct child c;
    int rc;

    put_tool_trace();
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--context", ctx,
                                      "context/trace.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.out.data, "I'll run the command.\n"), "%s", c.out.data);
    cr_assert_not_null(strstr(c.out.data, "-> Bash: `echo hi > output/hello.txt` [pending]"), "%s",
                       c.out.data);
    cr_assert_not_null(strstr(c.out.data, "   completed"), "%s", c.out.data);
    cr_assert_not_null(strstr(c.out.data, "usage (run): prompt 6546 completion 77"), "%s",
                       c.out.data);
    cr_assert_not_null(strstr(c.out.data, "cost: $0.034655 (agent), tokens: prompt 6546"), "%s",
                       c.out.data);
    cr_assert_null(strstr(c.out.data, "\033["), "no colour when stdout is not a terminal");
    child_free(&c);
}

Test(cli_run, run_without_usage_says_unpriced)
{
    static const char trace[] =
        "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"no usage here\"}]},\"session_id\":\"s1\"}\n";
    struct child c;
    int rc;

    put_trace("t.jsonl", trace, sizeof(trace) - 1);
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--context", ctx,
                                      "context/t.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.out.data, "no usage here"), "%s", c.out.data);
    cr_assert_not_null(strstr(c.out.data, "cost: unpriced"), "%s", c.out.data);
    child_free(&c);
}

Test(cli_run, run_exit_code_is_the_agents)
{
    struct child c;
    int rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "no-such-trace.jsonl", NULL});

    /* replay is `cat -- PROMPT`: cat fails with 1 */
    cr_assert_eq(rc, 1, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.err.data, "replay exited with code 1"), "%s", c.err.data);
    child_free(&c);
}

Test(cli_run, keep_leaves_the_sandbox_for_exec_session)
{
    struct child c, e;
    char id[128] = "", *p;
    int rc;

    put_tool_trace();
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--keep", "--context", ctx,
                                      "context/trace.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    p = strstr(c.err.data, "sandbox kept: ");
    cr_assert_not_null(p, "%s", c.err.data);
    cr_assert_eq(sscanf(p, "sandbox kept: %127s", id), 1);
    rc =
        run_cli(&e, (const char *[]){"exec", "--session", id, "wc -l < context/trace.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", e.err.data);
    cr_assert_str_eq(e.out.data, "6\n");
    child_free(&c);
    child_free(&e);
}

/* ---- failures -------------------------------------------------------------------------------- */

Test(cli_run, failures_exit_1_naming_the_input)
{
    struct child c;
    char bad[700];
    int rc;

    rc = run_cli(&c, (const char *[]){"run", "--agent", "nosuch", "hello", NULL});
    cr_assert_eq(rc, 1);
    cr_assert_not_null(strstr(c.err.data, "Unknown agent type: nosuch"), "%s", c.err.data);
    child_free(&c);

    rc = run_cli(&c, (const char *[]){"run", "--schema", "/nonexistent/schema.json", "x", NULL});
    cr_assert_eq(rc, 1);
    cr_assert_not_null(strstr(c.err.data, "--schema /nonexistent/schema.json"), "%s", c.err.data);
    child_free(&c);

    snprintf(bad, sizeof(bad), "%s/bad.json", home);
    ts_write_file(bad, "{\"type\": ", 9);
    rc = run_cli(&c, (const char *[]){"run", "--schema", bad, "x", NULL});
    cr_assert_eq(rc, 1);
    cr_assert_not_null(strstr(c.err.data, "Invalid JSON Schema"), "%s", c.err.data);
    child_free(&c);

    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--context", "/nonexistent/ctx",
                                      "x", NULL});
    cr_assert_eq(rc, 1);
    cr_assert_not_null(strstr(c.err.data, "--context /nonexistent/ctx"), "%s", c.err.data);
    child_free(&c);

    rc = run_cli(&c, (const char *[]){"run", "--timeout", "soon", "x", NULL});
    cr_assert_eq(rc, 2);
    cr_assert_not_null(strstr(c.err.data, "--timeout soon"), "%s", c.err.data);
    child_free(&c);

    rc = run_cli(&c, (const char *[]){"exec", "--agent", "claude", "true", NULL});
    cr_assert_eq(rc, 2, "run-only flags are refused by exec");
    child_free(&c);
}

/* ---- sandbox binds (EVOLVE_SANDBOX_BINDS) ------------------------------------------------------
 */

Test(cli_run, sandbox_binds_make_host_tools_reachable_read_only)
{
    static const char tool[] = "#!/bin/sh\necho tool-ran\n";
    char dir[700], path[800], cmd[2048];
    struct child c;
    int rc;

    snprintf(dir, sizeof(dir), "%s/tools", home);
    snprintf(path, sizeof(path), "%s/hello-tool", dir);
    ts_write_file(path, tool, sizeof(tool) - 1);
    cr_assert_eq(chmod(path, 0755), 0);
    snprintf(cmd, sizeof(cmd), "%s; if touch %s/new 2>/dev/null; then echo writable; fi", path,
             dir);
    setenv("EVOLVE_SANDBOX_BINDS", dir, 1);
    rc = run_cli(&c, (const char *[]){"exec", cmd, NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    cr_assert_str_eq(c.out.data, "tool-ran\n");
    child_free(&c);

    /* Without the bind the tool is not there (only under bubblewrap: isolation none sees all). */
    unsetenv("EVOLVE_SANDBOX_BINDS");
    rc = run_cli(&c, (const char *[]){"exec", "--json", "pwd", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    if (strstr(c.out.data, "\"/home/user/workspace\\n\"")) {
        child_free(&c);
        rc = run_cli(&c, (const char *[]){"exec", path, NULL});
        cr_assert_eq(rc, 127, "stderr: %s", c.err.data);
    }
    child_free(&c);

    setenv("EVOLVE_SANDBOX_BINDS", "/nonexistent/tools", 1);
    rc = run_cli(&c, (const char *[]){"exec", "true", NULL});
    cr_assert_eq(rc, 1);
    cr_assert_not_null(strstr(c.err.data, "sandbox bind /nonexistent/tools"), "%s", c.err.data);
    child_free(&c);
    unsetenv("EVOLVE_SANDBOX_BINDS");
}

Test(cli_run, run_text_shows_errors_plans_and_thinking)
{
    char p[1024];
    size_t len;
    char *t;
    struct child c;
    int rc;

    t = ts_read_file(ts_data_path(p, sizeof(p), "traces/claude-error.stdout.jsonl"), &len);
    cr_assert_not_null(t);
    put_trace("e.jsonl", t, len);
    free(t);
    t = ts_read_file(ts_data_path(p, sizeof(p), "traces/claude-session-200.jsonl"), &len);
    cr_assert_not_null(t);
    put_trace("s.jsonl", t, len);
    free(t);
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--context", ctx,
                                      "context/e.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.out.data, "error (fatal): API Error: 500 scripted error"), "%s",
                       c.out.data);
    child_free(&c);
    rc = run_cli(&c, (const char *[]){"run", "--agent", "replay", "--context", ctx,
                                      "context/s.jsonl", NULL});
    cr_assert_eq(rc, 0, "stderr: %s", c.err.data);
    cr_assert_not_null(strstr(c.out.data, "plan:\n  [x] "), "%s", c.out.data);
    cr_assert_not_null(strstr(c.out.data, "  [>] "), "%s", c.out.data);
    cr_assert_not_null(strstr(c.out.data, "thinking: "), "%s", c.out.data);
    child_free(&c);
}
