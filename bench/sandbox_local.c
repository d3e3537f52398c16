/* sandbox_local — the local provider's costs (DESIGN.md §6):
 *   cycle_rate: sandbox create + exec(echo) + wait + kill cycles per second, bwrap vs none.
 *   exec_latency_p50/p99: exec(echo) to exit record inside ONE sandbox (the daemon forks),
 *     bwrap vs none, against two baselines: one posix_spawn per command with no sandbox, and one
 *     bubblewrap per command (what the daemon design avoids).
 * One JSON object per figure per line on stdout (STYLE R21); human text on stderr.
 * Work: CYCLES cycles and EXECS execs per run, RUNS runs; a run's checksum is an FNV-1a hash of
 * every command's output and exit code. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "providers/local.h"

#define RUNS        5
#define CYCLES      20
#define EXECS       200
#define BWRAP_EXECS 50 /* one bubblewrap per command is slow: fewer per run */

extern char **environ;

static uint64_t checksum = 1469598103934665603ull;
static double loadavg; /* 1-minute load at start: this machine is shared, numbers move with it */

static void hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        checksum ^= b[i];
        checksum *= 1099511628211ull;
    }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "sandbox_local: %s: %s\n", what, evolve_error_last()->message);
    exit(1);
}

/* Reads stdout to EOF and the exit record; hashes both. */
static void finish(struct prov_proc *proc)
{
    char buf[256];
    struct prov_exit ex;
    ssize_t n;

    while ((n = read(proc->stdout_fd, buf, sizeof(buf))) > 0)
        hash(buf, (size_t)n);
    if (prov_exit_read(proc->status_fd, &ex) < 0)
        die("exit");
    hash(&ex.code, sizeof(ex.code));
    prov_proc_free(proc);
}

static void exec_echo(struct prov_local_box *b)
{
    const char *const argv[] = {"echo", "ok", NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_proc *proc = NULL;

    spec.argv = argv;
    spec.flags = PROV_EXEC_NO_STDIN;
    if (prov_local_exec(&proc, b, &spec) < 0)
        die("exec");
    finish(proc);
}

static struct prov_local *open_mode(const char *home, enum prov_isolation iso)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
    struct prov_local *pl = NULL;

    o.home = home;
    o.isolation = iso;
    if (prov_local_open(&pl, &o) < 0)
        die("open");
    return pl;
}

static double cycle_rate(struct prov_local *pl)
{
    double t0 = now_s();
    int i;

    for (i = 0; i < CYCLES; i++) {
        struct prov_local_box *b = NULL;

        if (prov_local_create(&b, pl, NULL) < 0)
            die("create");
        exec_echo(b);
        if (prov_local_kill(b) < 0)
            die("kill");
        prov_local_box_free(b);
    }
    return CYCLES / (now_s() - t0);
}

/* Fills lat[] (ms) for n execs in one sandbox. */
static void exec_latency(struct prov_local *pl, double *lat, int n)
{
    struct prov_local_box *b = NULL;
    int i;

    if (prov_local_create(&b, pl, NULL) < 0)
        die("create");
    exec_echo(b); /* warm */
    for (i = 0; i < n; i++) {
        double t0 = now_s();

        exec_echo(b);
        lat[i] = (now_s() - t0) * 1e3;
    }
    if (prov_local_kill(b) < 0)
        die("kill");
    prov_local_box_free(b);
}

/* Baselines: posix_spawn of argv with stdout on a pipe, read to EOF, waitpid. */
static void spawn_latency(char *const *argv, double *lat, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        double t0 = now_s();
        posix_spawn_file_actions_t fa;
        int p[2], status;
        pid_t pid;
        char buf[256];
        ssize_t r;
        int32_t code;

        if (pipe2(p, O_CLOEXEC) < 0)
            exit(1);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
            fprintf(stderr, "sandbox_local: spawn %s failed\n", argv[0]);
            exit(1);
        }
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        while ((r = read(p[0], buf, sizeof(buf))) > 0)
            hash(buf, (size_t)r);
        close(p[0]);
        waitpid(pid, &status, 0);
        code = WEXITSTATUS(status);
        hash(&code, sizeof(code));
        lat[i] = (now_s() - t0) * 1e3;
    }
}

static double pct(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
}

static void emit(const char *figure, const char *unit, const char *mode, double *runs, int n_work,
                 const char *work_key, const double *baseline, const char *baseline_name)
{
    char sum[17];
    json_t *o;

    qsort(runs, RUNS, sizeof(runs[0]), cmp_double);
    snprintf(sum, sizeof(sum), "%016" PRIx64, checksum);
    o = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:s}", "bench", "sandbox_local",
                  "figure", figure, "unit", unit, "mode", mode, "median", runs[RUNS / 2], "min",
                  runs[0], "max", runs[RUNS - 1], "runs", RUNS, work_key, n_work, "checksum", sum);
    if (!o)
        exit(1);
    json_object_set_new(o, "loadavg_1m", json_real(loadavg));
    if (baseline) {
        json_object_set_new(o, "baseline", json_string(baseline_name));
        json_object_set_new(o, "baseline_median", json_real(*baseline));
        json_object_set_new(o, "ratio", json_real(runs[RUNS / 2] / *baseline));
    }
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

int main(void)
{
    char home[] = "/tmp/evolve-bench-local-XXXXXX";
    struct prov_local *modes[2];
    const char *names[2];
    static double lat[EXECS];
    double p50[3][RUNS], p99[3][RUNS], rate[2][RUNS], bw50[RUNS], bw99[RUNS];
    double base50, base99;
    const char *bwrap = NULL;
    int m, r, nmodes = 0;
    char *echo_argv[] = {"echo", "ok", NULL};

    {
        FILE *f = fopen("/proc/loadavg", "r");

        if (f) {
            if (fscanf(f, "%lf", &loadavg) != 1)
                loadavg = -1;
            fclose(f);
        }
    }
    if (!mkdtemp(home)) {
        perror("mkdtemp");
        return 1;
    }
    if (prov_local_bwrap_works(&bwrap)) {
        modes[nmodes] = open_mode(home, PROV_ISO_BWRAP);
        names[nmodes++] = "bwrap";
    } else {
        fprintf(stderr, "sandbox_local: bubblewrap does not work here; measuring mode none only\n");
    }
    modes[nmodes] = open_mode(home, PROV_ISO_NONE);
    names[nmodes++] = "none";
    for (r = 0; r < RUNS; r++) {
        for (m = 0; m < nmodes; m++) {
            rate[m][r] = cycle_rate(modes[m]);
            exec_latency(modes[m], lat, EXECS);
            p50[m][r] = pct(lat, EXECS, 0.50);
            p99[m][r] = pct(lat, EXECS, 0.99);
        }
        spawn_latency(echo_argv, lat, EXECS);
        p50[2][r] = pct(lat, EXECS, 0.50);
        p99[2][r] = pct(lat, EXECS, 0.99);
        if (bwrap) {
            char *bw_argv[] = {(char *)bwrap,
                               "--ro-bind",
                               "/",
                               "/",
                               "--dev",
                               "/dev",
                               "--proc",
                               "/proc",
                               "--unshare-pid",
                               "--die-with-parent",
                               "echo",
                               "ok",
                               NULL};

            spawn_latency(bw_argv, lat, BWRAP_EXECS);
            bw50[r] = pct(lat, BWRAP_EXECS, 0.50);
            bw99[r] = pct(lat, BWRAP_EXECS, 0.99);
        }
        fprintf(stderr,
                "run %d: %s %.1f cycles/s p50 %.3f ms; %s %.1f cycles/s p50 %.3f ms; "
                "spawn p50 %.3f ms\n",
                r + 1, names[0], rate[0][r], p50[0][r], names[nmodes - 1], rate[nmodes - 1][r],
                p50[nmodes - 1][r], p50[2][r]);
    }
    qsort(p50[2], RUNS, sizeof(double), cmp_double);
    qsort(p99[2], RUNS, sizeof(double), cmp_double);
    base50 = p50[2][RUNS / 2];
    base99 = p99[2][RUNS / 2];
    for (m = 0; m < nmodes; m++) {
        emit("cycle_rate", "cycles/s", names[m], rate[m], CYCLES, "cycles", NULL, NULL);
        emit("exec_latency_p50", "ms", names[m], p50[m], EXECS, "execs", &base50,
             "posix_spawn per command");
        emit("exec_latency_p99", "ms", names[m], p99[m], EXECS, "execs", &base99,
             "posix_spawn per command");
    }
    emit("exec_latency_p50", "ms", "spawn_per_command", p50[2], EXECS, "execs", NULL, NULL);
    emit("exec_latency_p99", "ms", "spawn_per_command", p99[2], EXECS, "execs", NULL, NULL);
    if (bwrap) {
        emit("exec_latency_p50", "ms", "bwrap_per_command", bw50, BWRAP_EXECS, "execs", &base50,
             "posix_spawn per command");
        emit("exec_latency_p99", "ms", "bwrap_per_command", bw99, BWRAP_EXECS, "execs", &base99,
             "posix_spawn per command");
    }
    for (m = 0; m < nmodes; m++)
        prov_local_close(modes[m]);
    rmdir(home); /* sandboxes/ is empty: every sandbox was killed */
    {
        char sb[sizeof(home) + 16];

        snprintf(sb, sizeof(sb), "%s/sandboxes", home);
        rmdir(sb);
        rmdir(home);
    }
    return 0;
}
