/* `evolve mock-llm` as a process: --port 0 prints "listening on http://127.0.0.1:PORT" first,
 * then the environment for each CLI; it serves until SIGTERM and then exits 0; bad flags and
 * non-loopback hosts are refused. Uses the built CLI ($EVOLVE_CLI, set by CTest). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_cli, .timeout = 60);

static const char *cli_path(void)
{
    const char *p = getenv("EVOLVE_CLI");

    return p && *p ? p : EVOLVE_BINARY_DIR "/evolve";
}

/* Starts the CLI with stdout on a pipe; returns the pid, the read end in *fd. */
static pid_t spawn(char *const argv[], int *fd)
{
    int p[2];
    pid_t pid;

    cr_assert_eq(pipe(p), 0);
    pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

/* waitpid with a deadline; returns the wait status or dies. */
static int wait_for(pid_t pid, uint64_t ms)
{
    uint64_t deadline = ts_now_ms() + ms;
    int st;

    while (ts_now_ms() < deadline) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return st;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    cr_assert_fail("process %d did not exit in %llu ms", (int)pid, (unsigned long long)ms);
    return -1;
}

Test(mockllm_cli, port_zero_prints_listening_line_serves_and_stops_on_sigterm)
{
    char *argv[] = {(char *)cli_path(), "mock-llm", "--scenario", "hello", "--port", "0", NULL};
    char line[256];
    unsigned port = 0;
    FILE *out;
    struct ts_http r;
    int fd, st, saw_env = 0;
    pid_t pid = spawn(argv, &fd);

    out = fdopen(fd, "r");
    cr_assert_not_null(fgets(line, sizeof(line), out), "the CLI printed nothing");
    cr_assert_eq(sscanf(line, "listening on http://127.0.0.1:%u", &port), 1, "first line: %s",
                 line);
    cr_assert_gt(port, 0);
    ts_http_post(&r, (uint16_t)port, "/v1/messages",
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "Hello from evolve mock-llm."));
    ts_http_free(&r);
    kill(pid, SIGTERM);
    st = wait_for(pid, 10000);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    while (fgets(line, sizeof(line), out))
        if (strstr(line, "ANTHROPIC_BASE_URL=http://127.0.0.1:") ||
            strstr(line, "GOOGLE_GEMINI_BASE_URL=") || strstr(line, "OPENAI_BASE_URL="))
            saw_env++;
    cr_assert_eq(saw_env, 3, "the env block names the three base URLs");
    fclose(out);
}

Test(mockllm_cli, refuses_bad_input)
{
    char *bad_host[] = {(char *)cli_path(), "mock-llm", "--scenario", "hello", "--host",
                        "0.0.0.0",          "--port",   "0",          NULL};
    char *bad_port[] = {(char *)cli_path(), "mock-llm", "--scenario", "hello",
                        "--port",           "99999",    NULL};
    char *bad_scn[] = {(char *)cli_path(), "mock-llm", "--scenario", "nope-nope",
                       "--port",           "0",        NULL};
    char *none[] = {(char *)cli_path(), "mock-llm", NULL};
    char *const *cases[] = {bad_host, bad_port, bad_scn, none};
    size_t i;

    for (i = 0; i < 4; i++) {
        int fd, st;
        pid_t pid = spawn((char **)cases[i], &fd);

        st = wait_for(pid, 10000);
        close(fd);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "case %zu must fail", i);
    }
}
