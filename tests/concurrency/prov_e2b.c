/* The e2b provider against the E2B loopback fake (tests/fakes): lifecycle, exec with split
 * streams and exit codes, stdin, signals, files and confinement, list by label, pause/resume,
 * and each injected fault surviving as the failure classes promise (batch/failure.h); nothing
 * leaks. Plain main() + TAP so it also runs under TSan (the reactor thread, MHD threads). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "fakes/fakes.h"
#include "io/reactor.h"
#include "providers/cloud.h"
#include "providers/e2b.h"
#include "support/support.h"
#include "support/tap.h"

#define T 15000

static struct ts_fake *fake;
static struct io_reactor *r;
static struct prov *p;
static struct ts_wait w;

static void up(const struct ts_fake_opts *o, unsigned keepalive_s)
{
    struct prov_e2b_opts eo = PROV_E2B_OPTS_INIT;

    fake = ts_fake_start(TS_FAKE_E2B, o);
    ts_fake_setenv(fake);
    setenv("EVOLVE_BATCH_ID", "batch-7", 1);
    if (io_reactor_new(&r) < 0)
        ts_die("reactor: %s", evolve_error_last()->message);
    eo.keepalive_s = keepalive_s;
    if (prov_e2b_new(&p, &eo, r) < 0)
        ts_die("e2b: %s", evolve_error_last()->message);
    ts_wait_init(&w);
}

/* Tears down and checks that nothing leaked: no sandbox alive, no command, no connection. */
static int down(void)
{
    struct ts_fake_stats st;
    int ok;

    p->ops->free(p);
    io_reactor_free(r);
    ts_fake_stats(fake, &st);
    ok = st.sandboxes == 0 && ts_fake_quiesce(fake, 5000);
    if (!ok)
        fprintf(stderr, "# leak: %u sandboxes, %u processes, %u connections\n", st.sandboxes,
                st.processes, st.open_connections);
    ts_fake_stop(fake);
    return ok;
}

static struct prov_box *create(void)
{
    struct prov_create_spec spec = PROV_CREATE_SPEC_INIT;
    const char *env[] = {"GREETING=hello", NULL};
    struct prov_box *box = NULL;

    spec.envp = env;
    if (p->ops->create(p, &spec, ts_wait_done, &w) < 0 || ts_wait_for(&w, T, (void **)&box) < 0)
        ts_die("create: %s / %s", evolve_error_last()->message, w.st.message);
    return box;
}

static void kill_box(struct prov_box *box)
{
    if (p->ops->kill(box, ts_wait_done, &w) < 0 || ts_wait_for(&w, T, NULL) < 0)
        ts_die("kill: %s", w.st.message);
    p->ops->box_free(box);
}

/* Runs `sh -c script`; returns the exit record, stdout and stderr (malloc'd). */
static int run(struct prov_box *box, const char *script, const char *input, struct prov_exit *ex,
               char **out, char **err)
{
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    const char *argv[] = {"sh", "-c", script, NULL};
    struct prov_proc *proc = NULL;
    int rc;

    spec.argv = argv;
    spec.flags = input ? 0 : PROV_EXEC_NO_STDIN;
    if (p->ops->exec(box, &spec, ts_wait_done, &w) < 0)
        return evolve_error_last()->code;
    rc = ts_wait_for(&w, T, (void **)&proc);
    if (rc < 0)
        return rc;
    if (input) {
        if (write(proc->stdin_fd, input, strlen(input)) < 0)
            ts_die("stdin write");
        close(proc->stdin_fd);
        proc->stdin_fd = -1;
    }
    *out = ts_read_fd(proc->stdout_fd, NULL);
    *err = ts_read_fd(proc->stderr_fd, NULL);
    rc = prov_exit_read(proc->status_fd, ex);
    prov_proc_free(proc);
    return rc;
}

TAP_TEST(exec_streams_split_output_env_and_exit_code)
{
    struct prov_box *box;
    struct prov_exit ex;
    char *out, *err;

    up(NULL, 0);
    box = create();
    TAP_CHECK(run(box, "echo $GREETING; pwd; echo oops >&2; exit 3", NULL, &ex, &out, &err) == 0,
              "%s", evolve_error_last()->message);
    TAP_CHECK(ex.code == 3 && ex.signo == 0, "exit %d/%d", ex.code, ex.signo);
    TAP_CHECK(!strncmp(out, "hello\n", 6) && strstr(out, "/home/user/workspace\n"), "out %s", out);
    TAP_CHECK(!strcmp(err, "oops\n"), "err %s", err);
    free(out);
    free(err);
    TAP_CHECK(run(box, "head -c 300000 /dev/zero | tr '\\0' x; exit 0", NULL, &ex, &out, &err) == 0,
              "big");
    TAP_CHECK(strlen(out) == 300000 && ex.code == 0, "got %zu bytes", strlen(out));
    free(out);
    free(err);
    TAP_CHECK(run(box, "cat | tr a-z A-Z", "abc\n", &ex, &out, &err) == 0, "stdin");
    TAP_CHECK(!strcmp(out, "ABC\n"), "stdin echo %s", out);
    free(out);
    free(err);
    kill_box(box);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(signal_term_ends_a_command_and_int_maps_to_term)
{
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    const char *argv[] = {"sleep", "30", NULL};
    struct prov_proc *proc = NULL;
    struct prov_exit ex;
    struct prov_box *box;
    char *junk;

    up(NULL, 0);
    box = create();
    spec.argv = argv;
    spec.flags = PROV_EXEC_BACKGROUND;
    TAP_CHECK(p->ops->exec(box, &spec, ts_wait_done, &w) == 0, "exec");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&proc) == 0, "%s", w.st.message);
    TAP_CHECK(proc->stdin_fd == -1 && proc->pid > 0, "background has no stdin");
    TAP_CHECK(p->ops->signal(box, proc->id, SIGUSR1, ts_wait_done, &w) == EVOLVE_EUNSUPPORTED,
              "USR1 is refused");
    TAP_CHECK(p->ops->signal(box, proc->id, SIGINT, ts_wait_done, &w) == 0, "INT");
    TAP_CHECK(ts_wait_for(&w, T, NULL) == 0, "%s", w.st.message);
    junk = ts_read_fd(proc->stdout_fd, NULL);
    free(junk);
    TAP_CHECK(prov_exit_read(proc->status_fd, &ex) == 0, "exit record");
    TAP_CHECK(ex.signo == SIGTERM && ex.code == 128 + SIGTERM, "%d/%d", ex.code, ex.signo);
    prov_proc_free(proc);
    TAP_CHECK(p->ops->signal(box, 999999, SIGKILL, ts_wait_done, &w) == 0, "start");
    TAP_CHECK(ts_wait_for(&w, T, NULL) == EVOLVE_ENOTFOUND, "unknown pid: %s", w.st.message);
    kill_box(box);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(files_round_trip_list_and_confinement)
{
    struct prov_box *box;
    struct prov_buf *buf = NULL;
    struct prov_dir *dir = NULL;
    char data[70000];
    size_t i;
    bool ctx = false;

    up(NULL, 0);
    box = create();
    for (i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    TAP_CHECK(p->ops->write_file(box, "workspace/a/b.bin", data, sizeof(data), ts_wait_done, &w) ==
                  0,
              "write");
    TAP_CHECK(ts_wait_for(&w, T, NULL) == 0, "%s", w.st.message);
    TAP_CHECK(p->ops->read_file(box, "/home/user/workspace/a/b.bin", ts_wait_done, &w) == 0, "r");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&buf) == 0, "%s", w.st.message);
    TAP_CHECK(buf->len == sizeof(data) && !memcmp(buf->data, data, sizeof(data)), "bytes");
    prov_buf_free(buf);
    TAP_CHECK(p->ops->read_file(box, "nope.txt", ts_wait_done, &w) == 0, "r2");
    TAP_CHECK(ts_wait_for(&w, T, NULL) == EVOLVE_ENOTFOUND, "missing: %s", w.st.message);
    TAP_CHECK(strstr(w.st.message, "/home/user/nope.txt"), "names the path: %s", w.st.message);
    TAP_CHECK(p->ops->read_file(box, "../etc/passwd", ts_wait_done, &w) == EVOLVE_EUNSAFE,
              "escape refused");
    TAP_CHECK(p->ops->write_file(box, "/etc/x", "x", 1, ts_wait_done, &w) == EVOLVE_EUNSAFE,
              "absolute escape refused");
    TAP_CHECK(p->ops->list_dir(box, "workspace", ts_wait_done, &w) == 0, "ls");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&dir) == 0, "%s", w.st.message);
    for (i = 0; i < dir->count; i++)
        if (!strcmp(dir->items[i].name, "context") && dir->items[i].type == PROV_DT_DIR)
            ctx = true;
    TAP_CHECK(ctx && dir->count == 5, "workspace laid out (%zu entries)", dir->count);
    TAP_CHECK(!strcmp(dir->items[0].name, "a") && dir->items[0].mtime_ms > 0, "sorted, mtime");
    prov_dir_free(dir);
    kill_box(box);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(list_by_label_pause_resume_host_and_reap)
{
    struct prov_box *a, *b;
    struct prov_list *l = NULL;
    char *url = NULL;

    up(NULL, 0);
    a = create();
    b = create();
    TAP_CHECK(p->ops->list(p, ts_wait_done, &w) == 0, "list");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&l) == 0, "%s", w.st.message);
    TAP_CHECK(l->count == 2 && l->items[0].created_ms > 0, "two labelled sandboxes (%zu)",
              l->count);
    prov_list_free(l);
    TAP_CHECK(p->ops->pause(a, ts_wait_done, &w) == 0 && ts_wait_for(&w, T, NULL) == 0, "pause");
    TAP_CHECK(p->ops->pause(a, ts_wait_done, &w) == 0 && ts_wait_for(&w, T, NULL) == EVOLVE_EBUSY,
              "second pause conflicts: %s", w.st.message);
    TAP_CHECK(p->ops->resume(a, ts_wait_done, &w) == 0 && ts_wait_for(&w, T, NULL) == 0, "res");
    TAP_CHECK(p->ops->get_host(a, 8080, ts_wait_done, &w) == 0, "host");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&url) == 0, "host");
    TAP_CHECK(!strncmp(url, "https://8080-", 13) && strstr(url, ".e2b.test"), "url %s", url);
    free(url);
    /* A restarted batch re-adopts by id, and reaps what it does not want. */
    TAP_CHECK(p->ops->connect(p, b->id, NULL, ts_wait_done, &w) == 0, "connect");
    {
        struct prov_box *again = NULL;

        TAP_CHECK(ts_wait_for(&w, T, (void **)&again) == 0, "%s", w.st.message);
        TAP_CHECK(!strcmp(again->id, b->id), "same id");
        p->ops->box_free(again);
    }
    TAP_CHECK(prov_e2b_kill_id(p, b->id, ts_wait_done, &w) == 0 && ts_wait_for(&w, T, NULL) == 0,
              "reap by id");
    p->ops->box_free(b);
    {
        size_t *n = NULL;

        TAP_CHECK(prov_cloud_reap(p, 3600 * 1000, ts_wait_done, &w) == 0, "reap");
        TAP_CHECK(ts_wait_for(&w, T, (void **)&n) == 0 && *n == 0, "young sandboxes stay");
        free(n);
        TAP_CHECK(prov_cloud_reap(p, 0, ts_wait_done, &w) == 0, "reap");
        TAP_CHECK(ts_wait_for(&w, T, (void **)&n) == 0 && *n == 1, "the orphan goes: %s",
                  w.st.message);
        free(n);
    }
    p->ops->box_free(a);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(create_faults_map_to_capacity_and_create_rejected)
{
    struct prov_create_spec spec = PROV_CREATE_SPEC_INIT;
    struct ts_fake_opts o = {.create_delay_ms = 300};
    struct prov_box *box = NULL;
    int status;
    int64_t ra;
    uint64_t t0;

    up(&o, 0);
    /* One 429 with Retry-After: 1 is retried by io/http after a second, then succeeds. */
    ts_fake_fault(fake, TS_FAULT_429_CREATE, 1);
    t0 = ts_now_ms();
    box = create();
    TAP_CHECK(ts_now_ms() - t0 >= 1000 + 300, "Retry-After honoured, slow create waited (%llu)",
              (unsigned long long)(ts_now_ms() - t0));
    kill_box(box);
    /* 429 every time: the create fails as capacity, with the Retry-After for admission. */
    ts_fake_fault(fake, TS_FAULT_429_CREATE, 10);
    TAP_CHECK(p->ops->create(p, &spec, ts_wait_done, &w) == 0, "create");
    TAP_CHECK(ts_wait_for(&w, 30000, NULL) < 0, "fails");
    TAP_CHECK(prov_cloud_failure(&w.st, true, &status, &ra) == BAT_FAILURE_CAPACITY &&
                  status == 429 && ra == 1000,
              "class/status/retry-after: %s", w.st.message);
    ts_fake_fault(fake, TS_FAULT_429_CREATE, 0);
    /* 503 with a capacity error_code: capacity, not retried by io/http (not idempotent). */
    ts_fake_fault(fake, TS_FAULT_503_CREATE, 1);
    TAP_CHECK(p->ops->create(p, &spec, ts_wait_done, &w) == 0, "create");
    TAP_CHECK(ts_wait_for(&w, T, NULL) == EVOLVE_EIO, "503: %s", w.st.message);
    TAP_CHECK(prov_cloud_failure(&w.st, true, &status, NULL) == BAT_FAILURE_CAPACITY &&
                  strstr(w.st.message, "sandbox_capacity_unavailable"),
              "%s", w.st.message);
    ts_fake_fault(fake, TS_FAULT_500, 1);
    TAP_CHECK(p->ops->create(p, &spec, ts_wait_done, &w) == 0, "create");
    TAP_CHECK(ts_wait_for(&w, T, NULL) < 0, "500");
    TAP_CHECK(prov_cloud_failure(&w.st, true, &status, NULL) == BAT_FAILURE_CREATE_REJECTED &&
                  status == 500,
              "%s", w.st.message);
    TAP_CHECK(bat_failure_is_retryable(BAT_FAILURE_CREATE_REJECTED, false), "retryable");
    TAP_CHECK(down(), "leak");
}

TAP_TEST(stream_reset_and_stall_are_survived_by_reattaching)
{
    struct prov_box *box;
    struct prov_exit ex;
    char *out, *err;

    up(NULL, 1); /* keepalive every second: a stall is noticed after 3 s */
    box = create();
    ts_fake_fault(fake, TS_FAULT_RESET, 1);
    TAP_CHECK(run(box, "echo one; sleep 1; echo two; exit 4", NULL, &ex, &out, &err) == 0,
              "reset: %s", evolve_error_last()->message);
    TAP_CHECK(ex.code == 4, "exit after reattach: %d", ex.code);
    TAP_CHECK(!strncmp(out, "one\n", 4), "first output kept: %s", out);
    free(out);
    free(err);
    ts_fake_fault(fake, TS_FAULT_STALL, 1);
    TAP_CHECK(run(box, "sleep 1; exit 5", NULL, &ex, &out, &err) == 0, "stall");
    TAP_CHECK(ex.code == 5, "exit after stall: %d", ex.code);
    free(out);
    free(err);
    kill_box(box);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(vanished_sandbox_ends_commands_and_classifies_as_lost)
{
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    const char *argv[] = {"sh", "-c", "echo started; sleep 30", NULL};
    struct prov_proc *proc = NULL;
    struct prov_box *box;
    struct prov_exit ex;
    char line[16];
    ssize_t n;

    up(NULL, 0);
    box = create();
    spec.argv = argv;
    spec.flags = PROV_EXEC_NO_STDIN;
    TAP_CHECK(p->ops->exec(box, &spec, ts_wait_done, &w) == 0, "exec");
    TAP_CHECK(ts_wait_for(&w, T, (void **)&proc) == 0, "%s", w.st.message);
    n = read(proc->stdout_fd, line, sizeof(line));
    TAP_CHECK(n > 0, "output before the loss");
    TAP_CHECK(ts_fake_vanish(fake, box->id) == 0, "vanish");
    TAP_CHECK(prov_exit_read(proc->status_fd, &ex) == EVOLVE_EIO, "no exit record: lost");
    prov_proc_free(proc);
    TAP_CHECK(p->ops->list_dir(box, "workspace", ts_wait_done, &w) == 0, "ls");
    TAP_CHECK(ts_wait_for(&w, T, NULL) < 0, "later ops fail");
    TAP_CHECK(prov_cloud_failure(&w.st, false, NULL, NULL) == BAT_FAILURE_SANDBOX_LOST, "%s",
              w.st.message);
    TAP_CHECK(p->ops->kill(box, ts_wait_done, &w) == 0 && ts_wait_for(&w, T, NULL) == 0,
              "killing a lost sandbox is done");
    p->ops->box_free(box);
    TAP_CHECK(down(), "leak");
}

TAP_TEST(config_errors_and_auto_resolution_words)
{
    struct prov_e2b_opts eo = PROV_E2B_OPTS_INIT;
    struct prov *q = NULL;
    struct io_reactor *rr;
    char out[64];

    TAP_CHECK(io_reactor_new(&rr) == 0, "reactor");
    unsetenv("E2B_API_KEY");
    TAP_CHECK(prov_e2b_new(&q, &eo, rr) == EVOLVE_EINVAL, "no key");
    TAP_CHECK(strstr(evolve_error_last()->message, "E2B_API_KEY"), "names the variable");
    io_reactor_free(rr);
    TAP_CHECK(cloud_sandbox_path(out, sizeof(out), "a/./b//c") == 0 &&
                  !strcmp(out, "/home/user/a/b/c"),
              "%s", out);
    TAP_CHECK(cloud_sandbox_path(out, sizeof(out), "/home/username") == EVOLVE_EUNSAFE, "prefix");
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(exec_streams_split_output_env_and_exit_code),
        TAP_CASE(signal_term_ends_a_command_and_int_maps_to_term),
        TAP_CASE(files_round_trip_list_and_confinement),
        TAP_CASE(list_by_label_pause_resume_host_and_reap),
        TAP_CASE(create_faults_map_to_capacity_and_create_rejected),
        TAP_CASE(stream_reset_and_stall_are_survived_by_reattaching),
        TAP_CASE(vanished_sandbox_ends_commands_and_classifies_as_lost),
        TAP_CASE(config_errors_and_auto_resolution_words),
        {NULL, NULL}};

    signal(SIGPIPE, SIG_IGN);
    return tap_run(cases, argc, argv);
}
