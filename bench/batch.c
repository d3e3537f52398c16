/* bench/batch.c — the batch engine end to end on the local provider: 500 tasks, each a fresh
 * sandbox running the replay agent over a recorded 200-line Claude session
 * (tests/data/traces/claude-session-200.jsonl), at -j 500 and -j 100.
 * Figures per concurrency (one JSON object per line on stdout; each run in a forked child so
 * CPU and peak RSS are that run's):
 *   wall_s        wall time of the batch (evolve_batch_start .. evolve_batch_wait)
 *   cpu_s         user+system CPU seconds of the evolve process (sandbox daemons not included)
 *   peak_rss_mb   peak resident set of the evolve process
 *   events_per_s  events written to events/<id>.jsonl per second of wall time
 *   p99_line_to_journal_ms  99th percentile, over tasks, of the time from the task's final
 *                 event (its last line parsed, run_complete published) to its result fsync'd in
 *                 results.jsonl and reported
 * Sandbox isolation: $EVOLVE_BENCH_ISOLATION (default none: the engine, not bubblewrap, is
 * measured); create rate 2000/s (the local default 200/s would dominate -j 500). Runs:
 * $EVOLVE_BENCH_RUNS (default 5). EVOLVE_BENCH_REUSE=1 runs with --reuse-sandboxes (figures
 * get a "_reuse" suffix). Human text on stderr. */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evolve/evolve.h"

#define TASKS    500
#define MAX_RUNS 20

struct run_figures {
    double wall_s, cpu_s, rss_mb, events_per_s, p99_ms;
    unsigned long ok;
};

static uint64_t last_event_ns[TASKS];
static double latency_ms[TASKS];
static atomic_uint n_latency;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_event(const char *id, unsigned attempt, const evolve_event_t *e, void *payload)
{
    (void)attempt;
    (void)e;
    (void)payload;
    last_event_ns[strtoul(id + 1, NULL, 10) % TASKS] = now_ns();
}

static void on_result(const char *id, const char *json, void *payload)
{
    unsigned i = atomic_fetch_add_explicit(&n_latency, 1, memory_order_relaxed);

    (void)json;
    (void)payload;
    if (i < TASKS)
        latency_ms[i] = (double)(now_ns() - last_event_ns[strtoul(id + 1, NULL, 10) % TASKS]) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void rmtree(const char *path)
{
    pid_t pid = fork();

    if (pid == 0) {
        execlp("rm", "rm", "-rf", "--", path, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* One run, in a child process; figures go back through `fd`. */
static int child_run(int fd, const char *root, unsigned j, const char *trace)
{
    evolve_runtime_t *rt;
    evolve_batch_t *b;
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    struct run_figures f = {0};
    struct rusage ru;
    char home[1200], out[1200], line[2048];
    uint64_t t0;
    unsigned i;

    snprintf(home, sizeof(home), "%s/home", root);
    snprintf(out, sizeof(out), "%s/out", root);
    setenv("EVOLVE_HOME", home, 1);
    if (evolve_runtime_new(&rt, NULL) < 0)
        return 1;
    o.outdir = out;
    o.concurrency = j;
    o.create_rate = 2000;
    o.reuse_sandboxes = getenv("EVOLVE_BENCH_REUSE") != NULL;
    o.agent = "replay";
    o.on_event = on_event;
    o.on_result = on_result;
    if (evolve_batch_new(&b, rt, &o) < 0) {
        fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
        return 1;
    }
    for (i = 0; i < TASKS; i++) {
        snprintf(line, sizeof(line),
                 "{\"id\":\"t%03u\",\"prompt\":\"trace.jsonl\",\"files\":{\"trace.jsonl\":"
                 "{\"file\":\"%s\"}}}",
                 i, trace);
        if (evolve_batch_add_task(b, line) < 0) {
            fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
            return 1;
        }
    }
    t0 = now_ns();
    evolve_batch_start(b);
    if (evolve_batch_wait(b, 0) < 0) {
        fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
        return 1;
    }
    f.wall_s = (double)(now_ns() - t0) / 1e9;
    evolve_batch_progress(b, &p);
    evolve_batch_free(b);
    evolve_runtime_free(rt);
    getrusage(RUSAGE_SELF, &ru);
    f.cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
              (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    f.rss_mb = (double)ru.ru_maxrss / 1024.0;
    f.events_per_s = (double)p.events / f.wall_s;
    f.ok = p.succeeded;
    i = atomic_load(&n_latency);
    if (i > TASKS)
        i = TASKS;
    qsort(latency_ms, i, sizeof(double), cmp_double);
    f.p99_ms = i ? latency_ms[(i * 99) / 100 < i ? (i * 99) / 100 : i - 1] : 0;
    if (write(fd, &f, sizeof(f)) != (ssize_t)sizeof(f))
        return 1;
    return 0;
}

static void stats(double *v, int n, double *med, double *min, double *max)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    *med = v[n / 2];
    *min = v[0];
    *max = v[n - 1];
}

static void figure(const char *name, const char *unit, unsigned j, double *v, int runs,
                   unsigned long checksum)
{
    double med, min, max;

    stats(v, runs, &med, &min, &max);
    printf("{\"bench\":\"batch\",\"figure\":\"%s_j%u%s\",\"unit\":\"%s\",\"median\":%.3f,"
           "\"min\":%.3f,\"max\":%.3f,\"runs\":%d,\"work\":%d,\"work_unit\":\"tasks\","
           "\"checksum\":%lu}\n",
           name, j, getenv("EVOLVE_BENCH_REUSE") ? "_reuse" : "", unit, med, min, max, runs, TASKS,
           checksum);
    fflush(stdout);
}

int main(void)
{
    static const unsigned conc[] = {500, 100};
    const char *iso = getenv("EVOLVE_BENCH_ISOLATION");
    const char *runs_env = getenv("EVOLVE_BENCH_RUNS");
    int runs = runs_env ? (int)strtol(runs_env, NULL, 10) : 5;
    char trace[1024], root[1024];
    size_t c;

    if (runs < 1 || runs > MAX_RUNS)
        runs = 5;
    snprintf(trace, sizeof(trace), "%s/tests/data/traces/claude-session-200.jsonl",
             EVOLVE_SOURCE_DIR);
    setenv("EVOLVE_ISOLATION", iso ? iso : "none", 1);
    for (c = 0; c < sizeof(conc) / sizeof(conc[0]); c++) {
        double wall[MAX_RUNS], cpu[MAX_RUNS], rss[MAX_RUNS], eps[MAX_RUNS], p99[MAX_RUNS];
        unsigned long ok = 0;
        int r;

        for (r = 0; r < runs; r++) {
            struct run_figures f;
            int fds[2], st;
            pid_t pid;

            snprintf(root, sizeof(root), "%s/bench-batch-%d", EVOLVE_BINARY_DIR, (int)getpid());
            rmtree(root);
            mkdir(root, 0755);
            if (pipe(fds) < 0)
                return 1;
            pid = fork();
            if (pid == 0) {
                close(fds[0]);
                _exit(child_run(fds[1], root, conc[c], trace));
            }
            close(fds[1]);
            if (read(fds[0], &f, sizeof(f)) != (ssize_t)sizeof(f)) {
                fprintf(stderr, "bench: run failed\n");
                return 1;
            }
            close(fds[0]);
            waitpid(pid, &st, 0);
            rmtree(root);
            wall[r] = f.wall_s;
            cpu[r] = f.cpu_s;
            rss[r] = f.rss_mb;
            eps[r] = f.events_per_s;
            p99[r] = f.p99_ms;
            ok += f.ok;
            fprintf(stderr,
                    "batch -j %u run %d: %.2f s wall, %.2f s CPU, %.1f MB peak RSS, %.0f "
                    "events/s, p99 line-to-journal %.1f ms, %lu/%d ok\n",
                    conc[c], r + 1, f.wall_s, f.cpu_s, f.rss_mb, f.events_per_s, f.p99_ms, f.ok,
                    TASKS);
        }
        figure("wall_s", "s", conc[c], wall, runs, ok);
        figure("cpu_s", "s", conc[c], cpu, runs, ok);
        figure("peak_rss_mb", "MB", conc[c], rss, runs, ok);
        figure("events_per_s", "events/s", conc[c], eps, runs, ok);
        figure("p99_line_to_journal_ms", "ms", conc[c], p99, runs, ok);
    }
    return 0;
}
