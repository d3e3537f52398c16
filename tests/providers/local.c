/* The local sandbox provider: layout, exec over plain fds, stdin, env/cwd, exit codes, signals,
 * pause/resume, kill, orphan reaping, reconnecting, file confinement, and the async vtable.
 * Behaviour tests run twice: with isolation "auto" (bubblewrap here; if bubblewrap ever stops
 * working the test asserts the fallback it got instead) and with isolation "none". */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "providers/local.h"
#include "support/proc_io.h"
#include "support/support.h"

static char home[512];
static struct prov_local *pl;

static void setup(void)
{
    ts_mkdtemp(home, sizeof(home), "local");
}

static void teardown(void)
{
    prov_local_close(pl);
    pl = NULL;
    ts_rmtree(home);
}

TestSuite(prov_local, .init = setup, .fini = teardown, .timeout = 60);

#define OK(expr) cr_assert_eq((expr), 0, "%s: %s", #expr, evolve_error_last()->message)

/* Opens the provider and checks that the mode obtained is the one this machine allows. */
static void open_pl(enum prov_isolation iso, const char *freezer)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
    const char *want;

    o.home = home;
    o.isolation = iso;
    o.freezer_root = freezer;
    OK(prov_local_open(&pl, &o));
    want = iso == PROV_ISO_NONE ? "none" : prov_local_bwrap_works(NULL) ? "bwrap" : "none";
    cr_assert_str_eq(prov_local_mode(pl), want);
    cr_log_info("local provider mode: %s", prov_local_mode(pl));
}

static struct prov_local_box *create_box(void)
{
    struct prov_local_box *b = NULL;

    OK(prov_local_create(&b, pl, NULL));
    return b;
}

/* Runs argv to completion with `in` on stdin. */
static void run(struct prov_local_box *b, const char *const *argv, const char *const *envp,
                const char *cwd, const char *in, struct ts_run *r)
{
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_proc *proc = NULL;

    spec.argv = argv;
    spec.envp = envp;
    spec.cwd = cwd;
    OK(prov_local_exec(&proc, b, &spec));
    cr_assert_eq(ts_proc_collect(proc, in, r, 20000), 0, "command %s did not finish", argv[0]);
    prov_proc_free(proc);
}

#define BOTH_MODES(name)                                                                           \
    static void name##_body(enum prov_isolation iso);                                              \
    Test(prov_local, name##_auto)                                                                  \
    {                                                                                              \
        name##_body(PROV_ISO_AUTO);                                                                \
    }                                                                                              \
    Test(prov_local, name##_none)                                                                  \
    {                                                                                              \
        name##_body(PROV_ISO_NONE);                                                                \
    }                                                                                              \
    static void name##_body(enum prov_isolation iso)

/* A sleep argument unique to this test process, so parallel tests never count each other's. */
static const char *needle(int base)
{
    static char buf[4][32];
    static int next;
    char *b = buf[next++ % 4];

    snprintf(b, 32, "%d.%ld", base, (long)getpid());
    return b;
}

static bool is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

BOTH_MODES(create_makes_the_workspace_layout)
{
    static const char *const sub[] = {"context", "scripts", "temp", "output"};
    struct prov_local_box *b;
    char path[1024];
    size_t i;

    open_pl(iso, NULL);
    b = create_box();
    cr_assert_eq(strncmp(prov_local_box_id(b), "local-", 6), 0);
    cr_assert_eq(strlen(prov_local_box_id(b)), 6 + 16);
    cr_assert_str_eq(prov_local_box_mode(b), prov_local_mode(pl));
    for (i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/workspace/%s", prov_local_box_home(b), sub[i]);
        cr_assert(is_dir(path), "%s missing", path);
    }
    snprintf(path, sizeof(path), "%s/sandboxes/%s/sandbox.meta", home, prov_local_box_id(b));
    cr_assert_eq(access(path, R_OK), 0, "%s missing", path);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

BOTH_MODES(exec_streams_stdout_stderr_and_exit_code)
{
    const char *const echo[] = {"echo", "hello", "world", NULL};
    const char *const both[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    struct prov_local_box *b;
    struct ts_run r;

    open_pl(iso, NULL);
    b = create_box();
    run(b, echo, NULL, NULL, NULL, &r);
    cr_assert_str_eq(r.out, "hello world\n");
    cr_assert_eq(r.exit.code, 0);
    cr_assert_eq(r.exit.signo, 0);
    ts_run_dispose(&r);
    run(b, both, NULL, NULL, NULL, &r);
    cr_assert_str_eq(r.out, "out\n");
    cr_assert_str_eq(r.err, "err\n");
    cr_assert_eq(r.exit.code, 3);
    ts_run_dispose(&r);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

BOTH_MODES(stdin_round_trips)
{
    const char *const cat[] = {"cat", NULL};
    struct prov_local_box *b;
    struct ts_run r;
    char *big = malloc(300001);
    size_t i;

    open_pl(iso, NULL);
    b = create_box();
    run(b, cat, NULL, NULL, "one\ntwo\n", &r);
    cr_assert_str_eq(r.out, "one\ntwo\n");
    ts_run_dispose(&r);
    /* larger than a pipe buffer both ways */
    for (i = 0; i < 300000; i++)
        big[i] = (char)('a' + i % 26);
    big[300000] = '\0';
    run(b, cat, NULL, NULL, big, &r);
    cr_assert_eq(r.out_len, 300000);
    cr_assert_eq(memcmp(r.out, big, 300000), 0);
    ts_run_dispose(&r);
    free(big);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

BOTH_MODES(env_cwd_and_home_are_set)
{
    const char *const sh[] = {"sh", "-c",
                              "printf '%s|%s|%s|%s' \"$FOO\" \"$BASE\" \"$PWD\" \"$HOME\"", NULL};
    const char *const env[] = {"FOO=bar baz", NULL};
    const char *const base[] = {"BASE=from-create", "FOO=overridden", NULL};
    struct prov_create_spec cs = PROV_CREATE_SPEC_INIT;
    struct prov_local_box *b = NULL;
    struct ts_run r;
    char want[2048];
    bool bwrap;

    open_pl(iso, NULL);
    bwrap = !strcmp(prov_local_mode(pl), "bwrap");
    cs.envp = base;
    OK(prov_local_create(&b, pl, &cs));
    run(b, sh, env, "/home/user/workspace/scripts", NULL, &r);
    if (bwrap)
        snprintf(want, sizeof(want), "bar baz|from-create|/home/user/workspace/scripts|/home/user");
    else
        snprintf(want, sizeof(want), "bar baz|from-create|%s/workspace/scripts|%s",
                 prov_local_box_home(b), prov_local_box_home(b));
    cr_assert_str_eq(r.out, want);
    ts_run_dispose(&r);
    /* default cwd is the workspace */
    run(b, (const char *const[]){"pwd", NULL}, NULL, NULL, NULL, &r);
    if (bwrap)
        cr_assert_str_eq(r.out, "/home/user/workspace\n");
    else {
        snprintf(want, sizeof(want), "%s/workspace\n", prov_local_box_home(b));
        cr_assert_str_eq(r.out, want);
    }
    ts_run_dispose(&r);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

BOTH_MODES(missing_program_and_bad_cwd_fail_with_their_names)
{
    const char *const nope[] = {"no-such-program-xyz", NULL};
    const char *const pwd[] = {"pwd", NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct ts_run r;

    open_pl(iso, NULL);
    b = create_box();
    spec.argv = nope;
    cr_assert_eq(prov_local_exec(&proc, b, &spec), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "no-such-program-xyz"), "%s",
                       evolve_error_last()->message);
    cr_assert_null(proc);
    spec.argv = pwd;
    spec.cwd = "/home/user/workspace/not-there";
    cr_assert_eq(prov_local_exec(&proc, b, &spec), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "working directory"), "%s",
                       evolve_error_last()->message);
    cr_assert_not_null(strstr(evolve_error_last()->message, "workspace/not-there"));
    /* the sandbox still works afterwards */
    run(b, pwd, NULL, "/home/user/workspace/output", NULL, &r);
    cr_assert_not_null(strstr(r.out, "/workspace/output"));
    ts_run_dispose(&r);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

BOTH_MODES(sigint_interrupts_with_130)
{
    const char *const sleeper[] = {"sleep", needle(601), NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct pollfd p;
    struct ts_run r;

    open_pl(iso, NULL);
    b = create_box();
    spec.argv = sleeper;
    OK(prov_local_exec(&proc, b, &spec));
    p = (struct pollfd){.fd = proc->status_fd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 0), 0, "sleep ended on its own");
    OK(prov_local_signal(b, proc->id, SIGINT));
    cr_assert_eq(ts_proc_collect(proc, NULL, &r, 10000), 0);
    cr_assert_eq(r.exit.code, 130);
    cr_assert_eq(r.exit.signo, SIGINT);
    ts_run_dispose(&r);
    /* signalling a command that has ended names it */
    cr_assert_eq(prov_local_signal(b, proc->id, SIGTERM), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "is not running"));
    prov_proc_free(proc);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

Test(prov_local, background_exec_reads_dev_null_and_still_streams)
{
    const char *const sh[] = {"sh", "-c", "cat; echo done", NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct ts_run r;

    open_pl(PROV_ISO_AUTO, NULL);
    b = create_box();
    spec.argv = sh;
    spec.flags = PROV_EXEC_BACKGROUND;
    OK(prov_local_exec(&proc, b, &spec));
    cr_assert_eq(proc->stdin_fd, -1);
    cr_assert_eq(ts_proc_collect(proc, NULL, &r, 10000), 0);
    cr_assert_str_eq(r.out, "done\n");
    cr_assert_eq(r.exit.code, 0);
    ts_run_dispose(&r);
    prov_proc_free(proc);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

/* The counter the pause test's command writes (atomically: temp + mv). -1 if not there yet. */
static long read_count(struct prov_local_box *b)
{
    char path[1024];
    char *text;
    long v = -1;

    snprintf(path, sizeof(path), "%s/workspace/temp/count", prov_local_box_home(b));
    text = ts_read_file(path, NULL);
    if (text && *text)
        v = strtol(text, NULL, 10);
    free(text);
    return v;
}

/* Waits until the counter passes `above`; returns it, or -1 at the deadline. */
static long wait_count_above(struct prov_local_box *b, long above, int timeout_ms)
{
    uint64_t deadline = ts_now_ms() + (uint64_t)timeout_ms;

    while (ts_now_ms() < deadline) {
        struct timespec step = {0, 2000000};
        long v = read_count(b);

        if (v > above)
            return v;
        nanosleep(&step, NULL); /* polling a file the command writes */
    }
    return -1;
}

/* Largest counter value seen while watching for `window_ms` (a measurement window, not a wait
 * for an event: "stays still" has no event). */
static long max_count_during(struct prov_local_box *b, int window_ms)
{
    uint64_t end = ts_now_ms() + (uint64_t)window_ms;
    long max = -1;

    while (ts_now_ms() < end) {
        struct timespec step = {0, 5000000};
        long v = read_count(b);

        if (v > max)
            max = v;
        nanosleep(&step, NULL);
    }
    return max;
}

static void pause_resume_case(enum prov_isolation iso, const char *freezer, const char *want_mode)
{
    const char *const counter[] = {
        "sh", "-c",
        "i=0; while :; do i=$((i+1)); echo $i > temp/count.tmp; mv temp/count.tmp temp/count; "
        "done",
        NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct pollfd p;
    struct ts_run r;
    long v1, v2, v3;

    open_pl(iso, freezer);
    b = create_box();
    cr_assert_str_eq(prov_local_box_pause_mode(b), want_mode);
    spec.argv = counter;
    OK(prov_local_exec(&proc, b, &spec));
    cr_assert_gt(wait_count_above(b, 3, 10000), 3, "the counter never started");
    OK(prov_local_pause(b));
    cr_assert_str_eq(prov_local_box_pause_mode(b), want_mode);
    /* SIGSTOP is delivered asynchronously: allow the step in flight, then it must stand still */
    v1 = max_count_during(b, 100);
    v2 = max_count_during(b, 400);
    cr_assert_leq(v2, v1 + 1, "counter moved from %ld to %ld while paused", v1, v2);
    v3 = max_count_during(b, 300);
    cr_assert_eq(v3, v2, "counter moved from %ld to %ld while paused", v2, v3);
    /* a paused sandbox refuses new commands instead of hanging them */
    {
        struct prov_proc *other = NULL;
        const char *const t[] = {"true", NULL};
        struct prov_exec_spec s2 = PROV_EXEC_SPEC_INIT;

        s2.argv = t;
        cr_assert_eq(prov_local_exec(&other, b, &s2), EVOLVE_EBUSY);
        cr_assert_not_null(strstr(evolve_error_last()->message, "paused"));
    }
    p = (struct pollfd){.fd = proc->status_fd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 0), 0, "the paused command ended");
    OK(prov_local_resume(b));
    cr_assert_gt(wait_count_above(b, v3, 10000), v3, "the counter did not continue after resume");
    cr_assert_eq(poll(&p, 1, 0), 0, "the resumed command ended");
    OK(prov_local_signal(b, proc->id, SIGKILL));
    cr_assert_eq(ts_proc_collect(proc, NULL, &r, 10000), 0);
    cr_assert_eq(r.exit.code, 137);
    ts_run_dispose(&r);
    prov_proc_free(proc);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

/* Killing a paused sandbox must not leave frozen or stopped processes behind. */
static void kill_paused_case(const char *freezer)
{
    const char *arg = needle(605);
    const char *const sleeper[] = {"sleep", arg, NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct prov_exit ex;

    open_pl(PROV_ISO_AUTO, freezer);
    b = create_box();
    spec.argv = sleeper;
    OK(prov_local_exec(&proc, b, &spec));
    cr_assert_eq(ts_wait_procs_with_arg(arg, 1, 10000), 1);
    OK(prov_local_pause(b));
    OK(prov_local_kill(b));
    cr_assert_eq(ts_wait_procs_with_arg(arg, 0, 2000), 0, "a paused command survived kill");
    cr_assert_eq(prov_exit_read(proc->status_fd, &ex), 0);
    cr_assert_eq(ex.signo, SIGKILL);
    prov_proc_free(proc);
    prov_local_box_free(b);
}

Test(prov_local, kill_of_a_paused_sandbox_with_cgroup)
{
    kill_paused_case(NULL);
}

Test(prov_local, kill_of_a_paused_sandbox_with_signals)
{
    kill_paused_case("");
}

Test(prov_local, bad_isolation_setting_is_named)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;

    o.home = home;
    setenv("EVOLVE_ISOLATION", "chroot", 1);
    cr_assert_eq(prov_local_open(&pl, &o), EVOLVE_EINVAL);
    unsetenv("EVOLVE_ISOLATION");
    cr_assert_not_null(strstr(evolve_error_last()->message, "EVOLVE_ISOLATION=chroot"));
    cr_assert_null(pl);
}

static void make_cgroup(char *out, size_t size, const char *suffix, bool with_cmds, bool old)
{
    char cmds[1100];
    struct timespec t[2];

    snprintf(out, size, "/sys/fs/cgroup/freezer/evolve/local-%08lx%s", (long)getpid(), suffix);
    cr_assert_eq(mkdir(out, 0755), 0, "mkdir %s: %s", out, strerror(errno));
    snprintf(cmds, sizeof(cmds), "%s/cmds", out);
    if (with_cmds)
        cr_assert_eq(mkdir(cmds, 0755), 0);
    if (old) {
        clock_gettime(CLOCK_REALTIME, &t[0]);
        t[0].tv_sec -= 300;
        t[1] = t[0];
        cr_assert_eq(utimensat(AT_FDCWD, with_cmds ? cmds : out, t, 0), 0);
    }
}

Test(prov_local, reap_sweeps_cgroups_without_a_daemon_only)
{
    char gone[1024], young[1024], other[1024], cmds[1100], live_cmds[1100];
    struct prov_local_box *live;
    struct timespec t[2];

    if (access("/sys/fs/cgroup/freezer", W_OK) < 0) {
        cr_log_warn("no writable freezer hierarchy: nothing to sweep");
        return;
    }
    open_pl(PROV_ISO_AUTO, NULL);
    live = create_box();
    make_cgroup(gone, sizeof(gone), "00", true, true);
    make_cgroup(young, sizeof(young), "01", true, false);
    make_cgroup(other, sizeof(other), "02", false, true);
    /* the live sandbox's cgroup looks old too: its daemon inside must keep it */
    snprintf(live_cmds, sizeof(live_cmds), "/sys/fs/cgroup/freezer/evolve/%s/cmds",
             prov_local_box_id(live));
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= 300;
    t[1] = t[0];
    cr_assert_eq(utimensat(AT_FDCWD, live_cmds, t, 0), 0, "%s", live_cmds);
    OK(prov_local_reap_orphans(pl, NULL));
    cr_assert_neq(access(gone, F_OK), 0, "%s was not swept", gone);
    cr_assert_eq(access(young, F_OK), 0, "%s is being set up and was swept", young);
    cr_assert_eq(access(other, F_OK), 0, "%s (another layout) was swept", other);
    cr_assert_eq(access(live_cmds, F_OK), 0, "the live sandbox lost its cgroup");
    OK(prov_local_pause(live));
    cr_assert_str_eq(prov_local_box_pause_mode(live), "cgroup");
    OK(prov_local_resume(live));
    snprintf(cmds, sizeof(cmds), "%s/cmds", young);
    rmdir(cmds);
    rmdir(young);
    rmdir(other);
    OK(prov_local_kill(live));
    prov_local_box_free(live);
}

Test(prov_local, pause_resume_with_freezer_cgroup)
{
    struct stat st;

    if (stat("/sys/fs/cgroup/freezer", &st) < 0 || access("/sys/fs/cgroup/freezer", W_OK) < 0) {
        open_pl(PROV_ISO_AUTO, NULL);
        cr_log_warn("no writable cgroup v1 freezer here: testing the signal fallback");
        teardown();
        setup();
        pause_resume_case(PROV_ISO_AUTO, NULL, "signals");
        return;
    }
    pause_resume_case(PROV_ISO_AUTO, NULL, "cgroup");
}

Test(prov_local, pause_resume_with_signals_bwrap)
{
    pause_resume_case(PROV_ISO_AUTO, "", "signals");
}

Test(prov_local, pause_resume_with_signals_none)
{
    pause_resume_case(PROV_ISO_NONE, "", "signals");
}

static void kill_case(enum prov_isolation iso, const char *freezer);

BOTH_MODES(kill_leaves_no_process_and_no_directory)
{
    kill_case(iso, NULL);
}

/* Without a cgroup: the pid namespace (bwrap) or the subreaper daemon (none) finds the escapee. */
BOTH_MODES(kill_without_a_cgroup_leaves_no_process)
{
    kill_case(iso, "");
}

static void kill_case(enum prov_isolation iso, const char *freezer)
{
    const char *arg = needle(602);
    char script[256];
    const char *const sleeper[] = {"sh", "-c", script, NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b;
    struct prov_proc *proc = NULL;
    struct prov_exit ex;
    char dir[1024];
    long daemon;

    /* one sleep in the command's group, one that escaped it with setsid */
    snprintf(script, sizeof(script), "setsid sleep %s & sleep %s; wait", arg, arg);
    open_pl(iso, freezer);
    b = create_box();
    snprintf(dir, sizeof(dir), "%s/sandboxes/%s", home, prov_local_box_id(b));
    daemon = prov_local_box_daemon_pid(b);
    spec.argv = sleeper;
    OK(prov_local_exec(&proc, b, &spec));
    cr_assert_eq(ts_wait_procs_with_arg(arg, 2, 10000), 2, "the sleeps did not start");
    OK(prov_local_kill(b));
    cr_assert_eq(ts_wait_procs_with_arg(arg, 0, 2000), 0, "a command survived kill");
    cr_assert_neq(access(dir, F_OK), 0, "%s survived kill", dir);
    cr_assert(kill((pid_t)daemon, 0) < 0 && errno == ESRCH, "daemon %ld survived", daemon);
    /* the status pipe reports the killed command */
    cr_assert_eq(prov_exit_read(proc->status_fd, &ex), 0);
    cr_assert_eq(ex.code, 137);
    prov_proc_free(proc);
    /* after kill, the box refuses work */
    {
        struct prov_proc *p2 = NULL;

        cr_assert_eq(prov_local_exec(&p2, b, &spec), EVOLVE_ESHUTDOWN);
    }
    prov_local_box_free(b);
}

static void orphans_case(enum prov_isolation iso, const char *freezer);

BOTH_MODES(orphans_of_a_crashed_owner_are_reaped)
{
    orphans_case(iso, NULL);
}

/* Without a freezer cgroup the reaper has only the daemon's pid; the commands must still go. */
BOTH_MODES(orphans_are_reaped_without_a_cgroup)
{
    orphans_case(iso, "");
}

static void orphans_case(enum prov_isolation iso, const char *freezer)
{
    int pfd[2];
    pid_t child;
    char id[64] = {0}, dir[1024];
    size_t reaped = 0;
    ssize_t n;
    int status;
    const char *arg = needle(603);

    open_pl(iso, freezer);
    cr_assert_eq(pipe(pfd), 0);
    child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        /* the "crashing owner": creates a sandbox, starts a command, exits without cleanup */
        struct prov_local_box *b = NULL;
        struct prov_proc *proc = NULL;
        const char *const sleeper[] = {"sleep", arg, NULL};
        struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;

        spec.argv = sleeper;
        if (prov_local_create(&b, pl, NULL) < 0 || prov_local_exec(&proc, b, &spec) < 0)
            _exit(1);
        if (ts_wait_procs_with_arg(arg, 1, 10000) != 1)
            _exit(2);
        if (write(pfd[1], prov_local_box_id(b), strlen(prov_local_box_id(b))) < 0)
            _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    n = read(pfd[0], id, sizeof(id) - 1);
    close(pfd[0]);
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "owner child failed: %d", status);
    cr_assert_gt(n, 0);
    snprintf(dir, sizeof(dir), "%s/sandboxes/%s", home, id);
    cr_assert_eq(access(dir, F_OK), 0, "the crashed owner's sandbox should still be there");
    {
        struct prov_list *l = NULL;

        OK(prov_local_list(&l, pl));
        cr_assert_eq(l->count, 1);
        cr_assert_str_eq(l->items[0].id, id);
        cr_assert_str_eq(l->items[0].state, "orphaned");
        prov_list_free(l);
    }
    OK(prov_local_reap_orphans(pl, &reaped));
    cr_assert_eq(reaped, 1);
    cr_assert_neq(access(dir, F_OK), 0, "%s survived reaping", dir);
    cr_assert_eq(ts_wait_procs_with_arg(arg, 0, 10000), 0, "the orphan's command survived");
    /* a live owner's sandbox is not touched */
    {
        struct prov_local_box *mine = create_box();

        OK(prov_local_reap_orphans(pl, &reaped));
        cr_assert_eq(reaped, 0);
        OK(prov_local_kill(mine));
        prov_local_box_free(mine);
    }
}

BOTH_MODES(a_dead_daemon_is_reported_and_the_sandbox_can_be_reconnected)
{
    const char *const echo[] = {"echo", "back", NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_local_box *b, *again = NULL;
    struct prov_proc *proc = NULL;
    struct ts_run r;
    char id[64];

    open_pl(iso, NULL);
    b = create_box();
    snprintf(id, sizeof(id), "%s", prov_local_box_id(b));
    cr_assert_eq(kill((pid_t)prov_local_box_daemon_pid(b), SIGKILL), 0);
    spec.argv = echo;
    {
        /* under bwrap the daemon dies a moment after bwrap (parent-death signal): until then a
         * command may still start */
        uint64_t deadline = ts_now_ms() + 5000;
        int rc;

        while ((rc = prov_local_exec(&proc, b, &spec)) == 0 && ts_now_ms() < deadline) {
            struct timespec step = {0, 2000000};

            prov_proc_free(proc);
            proc = NULL;
            nanosleep(&step, NULL);
        }
        cr_assert_eq(rc, EVOLVE_EIO, "exec after the daemon's death: %d", rc);
    }
    cr_assert_not_null(strstr(evolve_error_last()->message, "is gone"), "%s",
                       evolve_error_last()->message);
    cr_assert_not_null(strstr(evolve_error_last()->message, id));
    prov_local_box_free(b);
    OK(prov_local_connect(&again, pl, id, NULL));
    run(again, echo, NULL, NULL, NULL, &r);
    cr_assert_str_eq(r.out, "back\n");
    ts_run_dispose(&r);
    OK(prov_local_kill(again));
    prov_local_box_free(again);
}

BOTH_MODES(connect_reattaches_to_a_detached_sandbox)
{
    const char *const cat[] = {"cat", "workspace/output/note.txt", NULL};
    struct prov_local_box *b, *again = NULL, *twice = NULL;
    struct prov_list *l = NULL;
    struct ts_run r;
    char id[64];

    open_pl(iso, NULL);
    b = create_box();
    snprintf(id, sizeof(id), "%s", prov_local_box_id(b));
    OK(prov_local_write_file(b, "workspace/output/note.txt", "kept\n", 5));
    /* while it is open, another connect is refused */
    cr_assert_eq(prov_local_connect(&twice, pl, id, NULL), EVOLVE_EBUSY);
    prov_local_box_free(b); /* detach */
    OK(prov_local_list(&l, pl));
    cr_assert_eq(l->count, 1);
    cr_assert_str_eq(l->items[0].state, "detached");
    prov_list_free(l);
    OK(prov_local_connect(&again, pl, id, NULL));
    cr_assert_str_eq(prov_local_box_id(again), id);
    run(again, cat, NULL, "/home/user", NULL, &r);
    cr_assert_str_eq(r.out, "kept\n");
    ts_run_dispose(&r);
    OK(prov_local_kill(again));
    prov_local_box_free(again);
    cr_assert_eq(prov_local_connect(&twice, pl, id, NULL), EVOLVE_ENOTFOUND);
    cr_assert_eq(prov_local_connect(&twice, pl, "../etc", NULL), EVOLVE_EINVAL);
}

static void confinement_case(bool walk)
{
    struct prov_local_box *b;
    struct prov_buf *buf = NULL;
    struct prov_dir *dir = NULL;
    char outside[512], link[1024], path[1024];

    prov_local_fs_force_walk(walk);
    open_pl(PROV_ISO_AUTO, NULL);
    b = create_box();
    ts_mkdtemp(outside, sizeof(outside), "outside");
    snprintf(path, sizeof(path), "%s/secret", outside);
    ts_write_file(path, "s3cret", 6);
    /* round trip, with parents created */
    OK(prov_local_write_file(b, "workspace/output/a/b/c.txt", "abc", 3));
    OK(prov_local_read_file(&buf, b, "/home/user/workspace/output/a/b/c.txt"));
    cr_assert_eq(buf->len, 3);
    cr_assert_str_eq((char *)buf->data, "abc");
    prov_buf_free(buf);
    buf = NULL;
    OK(prov_local_write_file(b, "workspace/output/z.txt", "", 0));
    OK(prov_local_list_dir(&dir, b, "workspace/output"));
    cr_assert_eq(dir->count, 2);
    cr_assert_str_eq(dir->items[0].name, "a");
    cr_assert_eq(dir->items[0].type, PROV_DT_DIR);
    cr_assert_str_eq(dir->items[1].name, "z.txt");
    cr_assert_eq(dir->items[1].size, 0);
    prov_dir_free(dir);
    dir = NULL;
    /* `..` and absolute escapes */
    cr_assert_eq(prov_local_write_file(b, "../escape.txt", "x", 1), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "../escape.txt"));
    cr_assert_eq(prov_local_write_file(b, "workspace/../../x", "x", 1), EVOLVE_EUNSAFE);
    cr_assert_eq(prov_local_read_file(&buf, b, "/etc/passwd"), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/etc/passwd"));
    cr_assert_eq(prov_local_read_file(&buf, b, "/home/username/x"), EVOLVE_EUNSAFE);
    cr_assert_eq(prov_local_list_dir(&dir, b, ".."), EVOLVE_EUNSAFE);
    /* symlink escapes: a directory link and a file link pointing outside */
    snprintf(link, sizeof(link), "%s/workspace/out-dir", prov_local_box_home(b));
    cr_assert_eq(symlink(outside, link), 0);
    snprintf(link, sizeof(link), "%s/workspace/out-file", prov_local_box_home(b));
    snprintf(path, sizeof(path), "%s/secret", outside);
    cr_assert_eq(symlink(path, link), 0);
    cr_assert_eq(prov_local_write_file(b, "workspace/out-dir/planted", "x", 1), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "workspace/out-dir/planted"), "%s",
                       evolve_error_last()->message);
    snprintf(path, sizeof(path), "%s/planted", outside);
    cr_assert_neq(access(path, F_OK), 0, "a file was written outside the sandbox");
    cr_assert_eq(prov_local_read_file(&buf, b, "workspace/out-dir/secret"), EVOLVE_EUNSAFE);
    cr_assert_eq(prov_local_read_file(&buf, b, "workspace/out-file"), EVOLVE_EUNSAFE);
    cr_assert_eq(prov_local_list_dir(&dir, b, "workspace/out-dir"), EVOLVE_EUNSAFE);
    cr_assert_null(buf);
    /* writing onto the file link replaces the link, never the target */
    OK(prov_local_write_file(b, "workspace/out-file", "mine", 4));
    snprintf(path, sizeof(path), "%s/secret", outside);
    {
        char *secret = ts_read_file(path, NULL);

        cr_assert_str_eq(secret, "s3cret");
        free(secret);
    }
    cr_assert_eq(prov_local_read_file(&buf, b, "workspace/missing"), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "workspace/missing"));
    ts_rmtree(outside);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
    prov_local_fs_force_walk(false);
}

Test(prov_local, files_are_confined_with_openat2)
{
    confinement_case(false);
}

Test(prov_local, files_are_confined_with_the_component_walk)
{
    confinement_case(true);
}

Test(prov_local, get_host_is_loopback)
{
    struct prov_local_box *b;
    char *url = NULL;

    open_pl(PROV_ISO_AUTO, NULL);
    b = create_box();
    OK(prov_local_get_host(&url, b, 8080));
    cr_assert_str_eq(url, "http://127.0.0.1:8080");
    free(url);
    cr_assert_eq(prov_local_get_host(&url, b, 0), EVOLVE_EINVAL);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

Test(prov_local, no_network_cuts_all_but_loopback)
{
    const char *const ifs[] = {"cat", "/proc/net/dev", NULL};
    struct prov_create_spec cs = PROV_CREATE_SPEC_INIT;
    struct prov_local_box *b = NULL;
    struct ts_run r;
    int lines = 0;
    char *p;

    open_pl(PROV_ISO_AUTO, NULL);
    cs.no_network = true;
    if (strcmp(prov_local_mode(pl), "bwrap")) {
        cr_assert_eq(prov_local_create(&b, pl, &cs), EVOLVE_EUNSUPPORTED);
        return;
    }
    OK(prov_local_create(&b, pl, &cs));
    run(b, ifs, NULL, NULL, NULL, &r);
    for (p = r.out; (p = strchr(p, ':')) != NULL; p++)
        lines++;
    cr_assert_eq(lines, 1, "interfaces besides lo: %s", r.out);
    cr_assert_not_null(strstr(r.out, "lo:"));
    ts_run_dispose(&r);
    OK(prov_local_kill(b));
    prov_local_box_free(b);
}

Test(prov_local, forced_none_refuses_no_network)
{
    struct prov_create_spec cs = PROV_CREATE_SPEC_INIT;
    struct prov_local_box *b = NULL;

    open_pl(PROV_ISO_NONE, NULL);
    cs.no_network = true;
    cr_assert_eq(prov_local_create(&b, pl, &cs), EVOLVE_EUNSUPPORTED);
    cr_assert_not_null(strstr(evolve_error_last()->message, "bubblewrap"));
}

/* ---- the async vtable ----------------------------------------------------------------------- */

/* A trivial defer hook: queue jobs, run them when the test drains. */
struct queue {
    void (*fn[16])(void *);
    void *arg[16];
    int n;
};

static void q_defer(void *ctx, void (*fn)(void *), void *arg)
{
    struct queue *q = ctx;

    cr_assert_lt(q->n, 16);
    q->fn[q->n] = fn;
    q->arg[q->n] = arg;
    q->n++;
}

static void q_drain(struct queue *q)
{
    while (q->n > 0) {
        int i, n = q->n;
        void (*fn[16])(void *);
        void *arg[16];

        memcpy(fn, q->fn, sizeof(fn));
        memcpy(arg, q->arg, sizeof(arg));
        q->n = 0;
        for (i = 0; i < n; i++)
            fn[i](arg[i]);
    }
}

struct outcome {
    int calls;
    int code;
    char message[512];
    void *result;
};

static void record(void *payload, const struct prov_status *st, void *result)
{
    struct outcome *o = payload;

    o->calls++;
    o->code = st->code;
    snprintf(o->message, sizeof(o->message), "%s", st->message);
    o->result = result;
}

Test(prov_local, vtable_ops_complete_later_exactly_once)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
    struct queue q = {.n = 0};
    struct prov_env env = {q_defer, &q};
    struct prov *p = NULL;
    struct prov_box *box;
    struct outcome out = {0};
    const char *const echo[] = {"echo", "via", "vtable", NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_proc *proc;
    struct ts_run r;

    o.home = home;
    OK(prov_local_new(&p, &o, &env));
    cr_assert_str_eq(p->ops->name, "local");
    cr_assert(prov_can_pause(p));
    cr_assert(prov_can_interrupt(p));
    OK(p->ops->create(p, NULL, record, &out));
    cr_assert_eq(out.calls, 0, "done ran inside the op");
    q_drain(&q);
    cr_assert_eq(out.calls, 1);
    cr_assert_eq(out.code, 0, "%s", out.message);
    box = out.result;
    cr_assert_not_null(prov_local_box_from(box));
    spec.argv = echo;
    memset(&out, 0, sizeof(out));
    OK(p->ops->exec(box, &spec, record, &out));
    cr_assert_eq(out.calls, 0);
    q_drain(&q);
    cr_assert_eq(out.calls, 1);
    proc = out.result;
    cr_assert_eq(ts_proc_collect(proc, NULL, &r, 10000), 0);
    cr_assert_str_eq(r.out, "via vtable\n");
    ts_run_dispose(&r);
    prov_proc_free(proc);
    /* a failing op reports through done, with the message and a NULL result */
    memset(&out, 0, sizeof(out));
    OK(p->ops->read_file(box, "../x", record, &out));
    q_drain(&q);
    cr_assert_eq(out.calls, 1);
    cr_assert_eq(out.code, EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(out.message, "../x"));
    cr_assert_null(out.result);
    /* bad arguments: negative return, done never runs */
    memset(&out, 0, sizeof(out));
    cr_assert_eq(p->ops->exec(box, NULL, record, &out), EVOLVE_EINVAL);
    q_drain(&q);
    cr_assert_eq(out.calls, 0);
    memset(&out, 0, sizeof(out));
    OK(p->ops->get_host(box, 3000, record, &out));
    q_drain(&q);
    cr_assert_str_eq((char *)out.result, "http://127.0.0.1:3000");
    free(out.result);
    memset(&out, 0, sizeof(out));
    OK(p->ops->kill(box, record, &out));
    q_drain(&q);
    cr_assert_eq(out.code, 0, "%s", out.message);
    p->ops->box_free(box);
    p->ops->free(p);
}

Test(prov_local, prov_init_rejects_a_bad_vtable)
{
    struct prov_ops bad = {.version = PROV_OPS_VERSION + 1, .name = "fake"};
    struct prov p;

    cr_assert_eq(prov_init(&p, &bad, NULL), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "fake"));
    bad.version = PROV_OPS_VERSION;
    cr_assert_eq(prov_init(&p, &bad, NULL), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "free"));
}
