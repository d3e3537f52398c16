/* Child processes on the reactor: exit codes and signals of many children, output order with
 * on_exit last, stdin, backpressure through pause/resume, no fd leaks, spawn errors, shutdown. */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "evolve/common.h"
#include "io/proc.h"
#include "support/latch.h"
#include "support/support.h"
#include "support/tap.h"

static struct ts_latch exited;

struct prec {
    char *out;
    size_t out_len, out_cap;
    char err[256];
    size_t err_len;
    int exits, after_exit, error, code;
    uint64_t stdout_bytes;
};

static void append(char **buf, size_t *len, size_t *cap, const char *d, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, d, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* The first stdout line of the process of the signal test, for the test thread to poll. */
static pthread_mutex_t line_mu = PTHREAD_MUTEX_INITIALIZER;
static char rec_out[64];

static bool has_line(struct prec *p)
{
    bool yes;

    (void)p;
    pthread_mutex_lock(&line_mu);
    yes = strchr(rec_out, '\n') != NULL;
    pthread_mutex_unlock(&line_mu);
    return yes;
}

static void on_out(const char *d, size_t n, void *payload)
{
    struct prec *p = payload;

    p->after_exit += p->exits;
    append(&p->out, &p->out_len, &p->out_cap, d, n);
    pthread_mutex_lock(&line_mu);
    snprintf(rec_out, sizeof(rec_out), "%.*s", (int)(p->out_len < 63 ? p->out_len : 63), p->out);
    pthread_mutex_unlock(&line_mu);
}

static void on_err(const char *d, size_t n, void *payload)
{
    struct prec *p = payload;

    p->after_exit += p->exits;
    if (p->err_len + n < sizeof(p->err)) {
        memcpy(p->err + p->err_len, d, n);
        p->err_len += n;
    }
}

static void on_exit_cb(const struct io_proc_exit *ex, void *payload)
{
    struct prec *p = payload;

    p->exits++;
    p->error = ex->error;
    p->code = ex->exit_code;
    p->stdout_bytes = ex->stdout_bytes;
    ts_latch_add(&exited, 1);
}

static const struct io_proc_callbacks pcbs = {on_out, on_err, on_exit_cb};

static int spawn_sh(struct io_proc **out, struct io_reactor *r, const char *script,
                    struct prec *rec)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct io_proc_spec spec = {.argv = argv};

    return io_proc_spawn(out, r, &spec, &pcbs, rec);
}

TAP_TEST(two_hundred_children_report_every_exit_code_and_signal)
{
    struct io_reactor *r;
    struct prec *recs = calloc(200, sizeof(*recs));
    unsigned long base = ts_latch_get(&exited);
    char script[64];
    int i;

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 200; i++) {
        if (i % 10 == 9)
            snprintf(script, sizeof(script), "kill -%d $$", i % 20 == 9 ? SIGTERM : SIGKILL);
        else
            snprintf(script, sizeof(script), "echo %d; exit %d", i, i);
        TAP_CHECK(spawn_sh(NULL, r, script, &recs[i]) == 0, "spawn %d: %s", i,
                  evolve_error_last()->message);
    }
    TAP_CHECK(ts_latch_wait(&exited, base + 200, 60000), "%lu of 200 exited",
              ts_latch_get(&exited) - base);
    io_reactor_free(r);
    for (i = 0; i < 200; i++) {
        int want = i % 10 != 9 ? i : i % 20 == 9 ? -SIGTERM : -SIGKILL;

        TAP_CHECK(recs[i].code == want && recs[i].exits == 1 && recs[i].error == 0,
                  "child %d: exit %d (want %d), %d reports", i, recs[i].code, want, recs[i].exits);
        if (want >= 0) {
            char line[16];

            snprintf(line, sizeof(line), "%d\n", i);
            TAP_CHECK(recs[i].out && !strcmp(recs[i].out, line), "child %d said %s", i,
                      recs[i].out ? recs[i].out : "nothing");
        }
        free(recs[i].out);
    }
    free(recs);
}

TAP_TEST(all_output_arrives_in_order_before_exit)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    char *want = NULL;
    size_t want_len = 0, want_cap = 0;
    char line[16];
    int i, n;

    for (i = 1; i <= 50000; i++) {
        n = snprintf(line, sizeof(line), "%d\n", i);
        append(&want, &want_len, &want_cap, line, (size_t)n);
    }
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(spawn_sh(NULL, r, "seq 1 50000; echo oops >&2; exit 3", &rec) == 0, "spawn");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 30000), "no exit");
    io_reactor_free(r);
    TAP_CHECK(rec.code == 3, "exit %d", rec.code);
    TAP_CHECK(rec.after_exit == 0, "%d chunks after on_exit", rec.after_exit);
    TAP_CHECK(rec.out_len == want_len && !memcmp(rec.out, want, want_len),
              "stdout differs (%zu of %zu bytes)", rec.out_len, want_len);
    TAP_CHECK(rec.stdout_bytes == want_len, "exit reports %llu bytes",
              (unsigned long long)rec.stdout_bytes);
    TAP_CHECK(rec.err_len == 5 && !memcmp(rec.err, "oops\n", 5), "stderr %.*s", (int)rec.err_len,
              rec.err);
    free(rec.out);
    free(want);
}

TAP_TEST(stdin_writes_arrive_in_order_and_close_ends_input)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    const char *argv[] = {"cat", NULL};
    struct io_proc_spec spec = {.argv = argv, .stdin_pipe = true};
    struct io_proc *p;
    size_t big = 300000, i;
    char *blob = malloc(big);

    for (i = 0; i < big; i++)
        blob[i] = (char)('a' + i % 26);
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_spawn(&p, r, &spec, &pcbs, &rec) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_write_stdin(p, "first ", 6) == 0, "write");
    TAP_CHECK(io_proc_write_stdin(p, blob, big) == 0, "write"); /* more than a pipe holds */
    TAP_CHECK(io_proc_write_stdin(p, " last", 5) == 0, "write");
    TAP_CHECK(io_proc_close_stdin(p) == 0, "close");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 30000), "cat never saw EOF");
    io_proc_release(p);
    io_reactor_free(r);
    TAP_CHECK(rec.code == 0, "exit %d", rec.code);
    TAP_CHECK(rec.out_len == big + 11 && !memcmp(rec.out, "first ", 6) &&
                  !memcmp(rec.out + 6, blob, big) && !memcmp(rec.out + 6 + big, " last", 5),
              "echoed %zu bytes", rec.out_len);
    free(blob);
    free(rec.out);
}

/* The kernel's view of a process: its state letter from /proc/<pid>/stat. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512], *close_paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return '?';
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
}

TAP_TEST(paused_output_blocks_the_child_and_resume_delivers_everything)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    const char *argv[] = {"head", "-c", "1048576", "/dev/zero", NULL};
    struct io_proc_spec spec = {.argv = argv};
    struct io_proc *p;
    uint64_t deadline;
    char st = '?';
    int sleeping_seen = 0;

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_spawn(&p, r, &spec, &pcbs, &rec) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_pause_output(p) == 0, "pause"); /* applied right after the attach */
    /* The child must end up blocked in write on the full pipe: sleeping, not exited. */
    deadline = ts_now_ms() + 10000;
    while (ts_now_ms() < deadline && sleeping_seen < 50) {
        st = proc_state(io_proc_pid(p));
        sleeping_seen = st == 'S' ? sleeping_seen + 1 : 0;
    }
    TAP_CHECK(sleeping_seen >= 50, "child state %c: not blocked", st);
    TAP_CHECK(ts_latch_get(&exited) == base, "exit reported while output was paused");
    TAP_CHECK(io_proc_resume_output(p) == 0, "resume");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 30000), "no exit after resume");
    io_proc_release(p);
    io_reactor_free(r);
    TAP_CHECK(rec.code == 0 && rec.out_len == 1048576, "exit %d after %zu bytes", rec.code,
              rec.out_len);
    free(rec.out);
}

TAP_TEST(no_descriptor_leaks_into_children)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    int leaky = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */

    TAP_CHECK(leaky >= 3, "open");
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    /* ls opens the directory as fd 3 itself, so 0 1 2 3 is a clean child. */
    TAP_CHECK(spawn_sh(NULL, r, "exec ls /proc/self/fd", &rec) == 0, "spawn");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 30000), "no exit");
    io_reactor_free(r);
    close(leaky);
    TAP_CHECK(rec.out && !strcmp(rec.out, "0\n1\n2\n3\n"), "child fds: %s",
              rec.out ? rec.out : "(none)");
    free(rec.out);
}

TAP_TEST(signal_reaches_the_group_and_missing_program_fails_synchronously)
{
    struct io_reactor *r;
    struct prec rec = {0}, never = {0};
    unsigned long base = ts_latch_get(&exited);
    const char *missing[] = {"/nonexistent/evolve-no-such-program", NULL};
    struct io_proc_spec spec = {.argv = missing};
    struct io_proc *p;
    uint64_t deadline;
    pid_t sleeper;
    char st = 'S';

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_spawn(NULL, r, &spec, &pcbs, &never) == EVOLVE_ENOTFOUND, "%s",
              evolve_error_last()->message);
    TAP_CHECK(strstr(evolve_error_last()->message, "evolve-no-such-program"), "%s",
              evolve_error_last()->message);
    /* A shell waiting on a background sleep: TERM to the group must end both. */
    pthread_mutex_lock(&line_mu);
    rec_out[0] = '\0'; /* forget earlier tests' output */
    pthread_mutex_unlock(&line_mu);
    TAP_CHECK(spawn_sh(&p, r, "sleep 30 & echo $!; wait", &rec) == 0, "spawn");
    deadline = ts_now_ms() + 10000;
    while (ts_now_ms() < deadline && !has_line(&rec)) /* wait for the sleep's pid */
        ;
    TAP_CHECK(has_line(&rec), "no pid printed");
    pthread_mutex_lock(&line_mu);
    sleeper = (pid_t)strtol(rec_out, NULL, 10);
    pthread_mutex_unlock(&line_mu);
    TAP_CHECK(sleeper > 1 && proc_state(sleeper) != '?', "sleep pid %d not running", (int)sleeper);
    TAP_CHECK(io_proc_signal(p, SIGTERM) == 0, "signal");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 10000), "TERM did not end the shell");
    io_proc_release(p);
    io_reactor_free(r);
    TAP_CHECK(rec.code == -SIGTERM, "exit %d", rec.code);
    deadline = ts_now_ms() + 10000;
    while (ts_now_ms() < deadline && (st = proc_state(sleeper)) == 'S')
        ;
    TAP_CHECK(st != 'S', "the background sleep %d survived the group signal", (int)sleeper);
    TAP_CHECK(never.exits == 0, "callback after a failed spawn");
    free(rec.out);
}

TAP_TEST(cwd_and_environment_are_exactly_the_specs)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    char dir[256], real[4096], want[4400];
    const char *argv[] = {"/bin/sh", "-c", "pwd; echo \"$EVOLVE_TEST\"; echo \"${HOME-unset}\"",
                          NULL};
    const char *envp[] = {"EVOLVE_TEST=forty two", "PATH=/usr/bin:/bin", NULL};
    struct io_proc_spec spec = {.argv = argv, .envp = envp};

    ts_mkdtemp(dir, sizeof(dir), "io-proc");
    TAP_CHECK(realpath(dir, real) != NULL, "realpath");
    spec.cwd = real;
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_spawn(NULL, r, &spec, &pcbs, &rec) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 10000), "no exit");
    io_reactor_free(r);
    ts_rmtree(dir);
    snprintf(want, sizeof(want), "%s\nforty two\nunset\n", real);
    TAP_CHECK(rec.code == 0 && rec.out && !strcmp(rec.out, want), "exit %d, output %s", rec.code,
              rec.out ? rec.out : "(none)");
    free(rec.out);
}

static uint64_t cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000u;
}

TAP_TEST(closed_ends_of_idle_or_paused_pipes_do_not_spin_the_reactor)
{
    struct io_reactor *r;
    struct prec rec = {0};
    unsigned long base = ts_latch_get(&exited);
    /* The child closes stdin (we hold its write end, nothing queued) and, with our reading
     * paused, stdout and stderr; then it lives for 600 ms. A reactor that kept those fds in epoll
     * would see EPOLLERR/EPOLLHUP on every wait and burn a core meanwhile. */
    const char *argv[] = {"/bin/sh", "-c", "exec 0<&- 1>&- 2>&-; sleep 0.6", NULL};
    struct io_proc_spec spec = {.argv = argv, .stdin_pipe = true};
    struct io_proc *p;
    uint64_t cpu0, wall0, cpu, wall;

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_spawn(&p, r, &spec, &pcbs, &rec) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_proc_pause_output(p) == 0, "pause");
    cpu0 = cpu_ms();
    wall0 = ts_now_ms();
    while (ts_now_ms() - wall0 < 400 && ts_latch_get(&exited) == base)
        ts_latch_wait(&exited, base + 1, 50); /* waits on the condition, bounded */
    cpu = cpu_ms() - cpu0;
    printf("# idle: %llu ms CPU in %llu ms\n", (unsigned long long)cpu,
           (unsigned long long)(ts_now_ms() - wall0));
    wall = ts_now_ms() - wall0;
    TAP_CHECK(io_proc_resume_output(p) == 0, "resume");
    TAP_CHECK(ts_latch_wait(&exited, base + 1, 10000), "no exit");
    io_proc_release(p);
    io_reactor_free(r);
    TAP_CHECK(rec.code == 0, "exit %d", rec.code);
    TAP_CHECK(cpu * 4 < wall, "%llu ms of CPU in %llu ms while idle", (unsigned long long)cpu,
              (unsigned long long)wall);
}

TAP_TEST(reactor_free_kills_running_children_and_reports_eshutdown)
{
    struct io_reactor *r;
    struct prec rec = {0};

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(spawn_sh(NULL, r, "echo started; exec sleep 30", &rec) == 0, "spawn");
    io_reactor_free(r);
    TAP_CHECK(rec.exits == 1 && rec.error == EVOLVE_ESHUTDOWN && rec.code == -SIGKILL,
              "%d exits, error %d, code %d", rec.exits, rec.error, rec.code);
    free(rec.out);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(two_hundred_children_report_every_exit_code_and_signal),
        TAP_CASE(all_output_arrives_in_order_before_exit),
        TAP_CASE(stdin_writes_arrive_in_order_and_close_ends_input),
        TAP_CASE(paused_output_blocks_the_child_and_resume_delivers_everything),
        TAP_CASE(no_descriptor_leaks_into_children),
        TAP_CASE(signal_reaches_the_group_and_missing_program_fails_synchronously),
        TAP_CASE(cwd_and_environment_are_exactly_the_specs),
        TAP_CASE(closed_ends_of_idle_or_paused_pipes_do_not_spin_the_reactor),
        TAP_CASE(reactor_free_kills_running_children_and_reports_eshutdown),
        {0}};
    int rc;

    ts_latch_init(&exited);
    rc = tap_run(cases, argc, argv);
    ts_latch_dispose(&exited);
    return rc;
}
