/* `evolve batch` as users run it (the built CLI, $EVOLVE_CLI): kill -9 at a random moment then
 * the same command again finishes with every task recorded exactly once and nothing left behind
 * (sandbox directories, processes); SIGTERM interrupts and records running tasks; bad manifest
 * lines are reported with file:line and stop the batch unless --skip-invalid; unavailable flags
 * say so; merge. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"
#include "support/support.h"

static char dir[512], home[700], marks[700], manifest[700], out[700], errlog[700];

static void setup(void)
{
    ts_mkdtemp(dir, sizeof(dir), "batchcli");
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(marks, sizeof(marks), "%s/marks", dir);
    snprintf(manifest, sizeof(manifest), "%s/tasks.jsonl", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(errlog, sizeof(errlog), "%s/stderr.txt", dir);
    mkdir(marks, 0755);
    setenv("EVOLVE_HOME", home, 1);
    setenv("EVOLVE_REPLAY_MODE", "sh", 1);
    setenv("EVOLVE_ISOLATION", "none", 1);
    fake_write_trace(dir);
}

static void teardown(void)
{
    ts_rmtree(dir);
}

TestSuite(batch_cli, .init = setup, .fini = teardown, .timeout = 240);

static const char *cli(void)
{
    const char *p = getenv("EVOLVE_CLI");

    return p ? p : "./evolve";
}

/* Starts `evolve batch ARGS...` with stderr to errlog and stdout to /dev/null. */
static pid_t start(const char *const *args)
{
    const char *argv[32];
    size_t i, n = 0;
    pid_t pid;

    argv[n++] = cli();
    argv[n++] = "batch";
    for (i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int e = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644), o = open("/dev/null", O_WRONLY);

        dup2(e, 2);
        dup2(o, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int finish(pid_t pid)
{
    int st;

    cr_assert_eq(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

static int run(const char *const *args)
{
    return finish(start(args));
}

static size_t lines_in(const char *path)
{
    char *t = ts_read_file(path, NULL), *p;
    size_t n = 0;

    for (p = t; p && *p; p++)
        n += *p == '\n';
    free(t);
    return n;
}

static size_t count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    size_t n = 0;

    if (!d)
        return 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Processes whose working directory is inside this test's directory (sandbox processes). */
static size_t processes_inside(void)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    size_t n = 0;

    while (d && (de = readdir(d))) {
        char link[300], target[1024];
        ssize_t len;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(link, sizeof(link), "/proc/%s/cwd", de->d_name);
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (!strncmp(target, dir, strlen(dir)))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void wait_until(bool (*cond)(void *), void *arg, uint64_t ms, const char *what)
{
    uint64_t deadline = ts_now_ms() + ms;

    while (!cond(arg)) {
        struct timespec ts = {0, 10 * 1000000L};

        cr_assert_lt(ts_now_ms(), deadline, "timed out waiting for %s", what);
        nanosleep(&ts, NULL); /* polling a file another process writes: no event to wait on */
    }
}

struct lines_goal {
    const char *path;
    size_t n;
    pid_t pid;
};

static bool lines_reached(void *arg)
{
    struct lines_goal *g = arg;

    return lines_in(g->path) >= g->n || waitpid(g->pid, NULL, WNOHANG) == g->pid;
}

static enum fake_kind slow_mix(size_t i)
{
    return i % 7 == 3 ? FAKE_CRASH : FAKE_SLOW_OK;
}

Test(batch_cli, kill_9_then_rerun_records_every_task_exactly_once)
{
    const char *args[] = {manifest, "-o", out, "-j", "16", "--agent", "replay", "--quiet", NULL};
    char results[800], sandboxes[800];
    struct lines_goal g;
    json_t *r, *v, *ids = json_object();
    size_t i, crashed = 0;
    pid_t pid;

    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    fake_write_manifest(manifest, 300, slow_mix, marks);
    snprintf(results, sizeof(results), "%s/results.jsonl", out);
    snprintf(sandboxes, sizeof(sandboxes), "%s/sandboxes", home);
    g.path = results;
    g.n = 1 + (size_t)(rand() % 200); /* a random moment: after 1..200 results */
    g.pid = pid = start(args);
    wait_until(lines_reached, &g, 120000, "results");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_log_info("killed after %zu results", lines_in(results));
    cr_assert_lt(lines_in(results), 300, "killed before the end");

    cr_assert_eq(run(args), 3, "rerun finishes (some tasks crash on purpose): %s",
                 ts_read_file(errlog, NULL));
    r = fake_read_results(out);
    cr_assert_eq(json_array_size(r), 300, "300 results after kill -9 and rerun (%zu)",
                 json_array_size(r));
    json_array_foreach(r, i, v)
    {
        const char *id = json_string_value(json_object_get(v, "id"));

        cr_assert_null(json_object_get(ids, id), "%s recorded twice", id);
        json_object_set_new(ids, id, json_true());
        crashed += !strcmp(json_string_value(json_object_get(v, "status")), "failed");
    }
    cr_assert_eq(crashed, 43, "exactly the crashing tasks failed");
    if (count_dir(sandboxes)) {
        char cmd[2000];

        snprintf(cmd, sizeof(cmd), "ls -laR %s >&2; cat %s/*/sandbox.meta >&2", sandboxes,
                 sandboxes);
        if (fork() == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(1);
        }
        wait(NULL);
    }
    cr_assert_eq(count_dir(sandboxes), 0, "no orphan sandbox directories");
    cr_assert_eq(processes_inside(), 0, "no orphan sandbox processes");
    json_decref(ids);
    json_decref(r);
}

static bool some_running(void *arg)
{
    char p[800];

    (void)arg;
    snprintf(p, sizeof(p), "%s/sandboxes", home);
    return count_dir(p) >= 2;
}

static enum fake_kind hang(size_t i)
{
    (void)i;
    return FAKE_HANG;
}

Test(batch_cli, sigterm_interrupts_records_and_cleans_up)
{
    const char *args[] = {manifest,  "-o",     out,         "-j",    "2",
                          "--agent", "replay", "--timeout", "60000", NULL};
    char sandboxes[800];
    json_t *r, *v;
    size_t i;
    pid_t pid;
    char *err;

    fake_write_manifest(manifest, 5, hang, marks);
    snprintf(sandboxes, sizeof(sandboxes), "%s/sandboxes", home);
    pid = start(args);
    wait_until(some_running, NULL, 60000, "two sandboxes");
    kill(pid, SIGTERM);
    cr_assert_eq(finish(pid), 130);
    err = ts_read_file(errlog, NULL);
    cr_assert_not_null(strstr(err, "stopping"), "%s", err);
    free(err);
    r = fake_read_results(out);
    cr_assert_eq(json_array_size(r), 2, "the two running tasks are recorded");
    json_array_foreach(r, i, v)
        cr_assert_str_eq(json_string_value(json_object_get(v, "status")), "interrupted");
    json_decref(r);
    cr_assert_eq(count_dir(sandboxes), 0, "their sandboxes were killed");
    cr_assert_eq(processes_inside(), 0, "and their processes");
}

Test(batch_cli, bad_manifest_lines_are_reported_and_stop_the_batch)
{
    const char *args[] = {manifest, "-o", out, "--agent", "replay", "--quiet", NULL};
    const char *skip[] = {manifest,         "-o", out, "--agent", "replay", "--quiet",
                          "--skip-invalid", NULL};
    char *ok = fake_task_line("good", FAKE_OK_PLAIN, marks), text[8192], results[800], *err;

    snprintf(text, sizeof(text),
             "%s\n{\"id\": \"x\", \"prompt\": \n{\"prompt\": \"no id\"}\n%s\n"
             "{\"id\": \"y\", \"prompt\": \"p\", \"agent\": \"nope\"}\n",
             ok, ok);
    free(ok);
    ts_write_file(manifest, text, strlen(text));
    snprintf(results, sizeof(results), "%s/results.jsonl", out);
    cr_assert_eq(run(args), 1);
    err = ts_read_file(errlog, NULL);
    cr_assert_not_null(strstr(err, "tasks.jsonl:2:"), "%s", err);
    cr_assert_not_null(strstr(err, "tasks.jsonl:3:"), "%s", err);
    cr_assert_not_null(strstr(err, "tasks.jsonl:4:"), "%s", err);
    cr_assert_not_null(strstr(err, "duplicate"), "%s", err);
    cr_assert_not_null(strstr(err, "tasks.jsonl:5:"), "%s", err);
    cr_assert_not_null(strstr(err, "--skip-invalid"), "%s", err);
    free(err);
    cr_assert_eq(lines_in(results), 0, "nothing ran");
    cr_assert_eq(run(skip), 0, "the valid task runs with --skip-invalid");
    cr_assert_eq(lines_in(results), 1);
}

Test(batch_cli, unavailable_flags_and_merge)
{
    const char *shard1[] = {manifest,  "-o",  out,       "--agent", "replay",
                            "--shard", "1/2", "--quiet", NULL};
    char out2[800], merged[800], results[900], results2[900];
    int rc1, rc2;
    const char *shard2[] = {manifest,  "-o",  out2,      "--agent", "replay",
                            "--shard", "2/2", "--quiet", NULL};
    const char *merge[] = {"merge", "-o", merged, out, out2, NULL};
    const char *badshard[] = {manifest, "-o", out, "--shard", "3/2", NULL};

    fake_write_manifest(manifest, 10, slow_mix, marks);
    cr_assert_eq(run(badshard), 1);
    snprintf(out2, sizeof(out2), "%s/out2", dir);
    snprintf(merged, sizeof(merged), "%s/merged", dir);
    rc1 = run(shard1); /* 0, or 3 when the shard holds a task that crashes on purpose */
    rc2 = run(shard2);
    cr_assert((rc1 == 0 || rc1 == 3) && (rc2 == 0 || rc2 == 3), "%d %d", rc1, rc2);
    cr_assert(rc1 == 3 || rc2 == 3, "t003 crashes in one of them");
    snprintf(results, sizeof(results), "%s/results.jsonl", out);
    snprintf(results2, sizeof(results2), "%s/results.jsonl", out2);
    cr_assert_eq(lines_in(results) + lines_in(results2), 10, "the shards cover the manifest");
    cr_assert_eq(run(merge), 0);
    snprintf(results, sizeof(results), "%s/results.jsonl", merged);
    cr_assert_eq(lines_in(results), 10);
    snprintf(results, sizeof(results), "%s/report.html", merged);
    cr_assert(access(results, R_OK) == 0);
}
