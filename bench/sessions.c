/* bench/sessions.c — N = 50, 200, 500 concurrent sessions on the local provider, each running the
 * replay agent over a coherent 200-line claude trace (tests/data/traces/claude-session-200.jsonl),
 * through the public API only. Per N:
 *   boot_s               creating the N sandboxes (each gets the trace uploaded), once
 *   idle_kb_per_session  evolve's RSS growth per booted, idle session
 *   wall_s / cpu_s       one round: all N runs started (background) until the last completed;
 *                        cpu_s is this process's user+system time (agents and daemons excluded)
 *   events_per_s         events delivered to the N subscribers per second of the round
 *   peak_rss_mb          this process's peak RSS over the N phase (VmHWM, reset per N)
 *   latency_p50_ms/p99   line-to-subscriber: the replay reads a FIFO that this program writes
 *                        (one line per session every 100 ms, 10 lines: 5,000 lines/s at N = 500,
 *                        an agent-like pace the machine can carry); latency is from the
 *                        write() of a line to the subscriber callback receiving that stdout line
 * Each figure is over ROUNDS rounds (median/min/max). The reference TypeScript SDK's numbers for
 * N = 500 (issue 4: ~45 s wall, 35 CPU-s, 1.2 GB, ~1,900 events/s) go in "reference".
 * Prints one JSON object per figure on stdout, human text on stderr. EVOLVE_BENCH_N="50 200"
 * and EVOLVE_BENCH_ROUNDS override the defaults; EVOLVE_BENCH_CAPACITY sets the subscriber queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evolve/evolve.h"

#define TRACE       EVOLVE_SOURCE_DIR "/tests/data/traces/claude-session-200.jsonl"
#define THREADS     8
#define LAT_LINES   10
#define LAT_TICK_MS 100
#define MAX_ROUNDS  16

struct sess {
    evolve_t *ev;
    evolve_subscription_t *sub;
    char fifo[1024];
    _Atomic uint64_t t_write[LAT_LINES]; /* ns of each latency line's write() */
    size_t stdout_seen;                  /* this round; callback only */
    size_t lat_count;
};

static struct sess *S;
static size_t N;
static evolve_runtime_t *rt;
static char *trace;
static size_t trace_len;
static const char *lines[LAT_LINES];
static size_t line_len[LAT_LINES];
static char home[512];
static atomic_size_t events, done_runs, start_fail;
static double *lat_ms; /* N * LAT_LINES samples of one latency round */
static atomic_size_t lat_n;
static atomic_bool lat_round;
static uint32_t capacity; /* subscriber queue; 0: the library's default (EVOLVE_BENCH_CAPACITY) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* VmRSS or VmHWM of this process in kB. */
static long status_kb(const char *key)
{
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':')
            v = strtol(line + kl + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static void reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY);

    if (fd >= 0) {
        if (write(fd, "5", 1) < 0)
            fprintf(stderr, "bench_sessions: cannot reset the peak RSS: %s\n", strerror(errno));
        close(fd);
    }
}

static void on_event(const evolve_event_t *e, void *payload)
{
    struct sess *s = payload;
    evolve_event_kind_t k = evolve_event_kind(e);

    atomic_fetch_add_explicit(&events, 1, memory_order_relaxed);
    if (k == EVOLVE_EVENT_STDOUT && lat_round) {
        size_t i = s->stdout_seen++;

        if (i < LAT_LINES) {
            /* acquire: pairs with the writer's release store made before its write() */
            uint64_t w = atomic_load_explicit(&s->t_write[i], memory_order_acquire);
            size_t slot = atomic_fetch_add_explicit(&lat_n, 1, memory_order_relaxed);

            if (w && slot < N * LAT_LINES)
                lat_ms[slot] = (double)(now_ns() - w) / 1e6;
        }
    } else if (k == EVOLVE_EVENT_LIFECYCLE) {
        const char *js = evolve_event_json(e, NULL);

        if (strstr(js, "\"run_background_complete\"") || strstr(js, "\"run_background_failed\"")) {
            pthread_mutex_lock(&mu);
            atomic_fetch_add_explicit(&done_runs, 1, memory_order_relaxed);
            pthread_cond_signal(&cv);
            pthread_mutex_unlock(&mu);
        }
    }
}

struct job {
    size_t t;
    int what; /* 0 boot, 1 start runs, 2 free */
};

static void *worker(void *arg)
{
    struct job *j = arg;
    size_t i;

    for (i = j->t; i < N; i += THREADS) {
        struct sess *s = &S[i];

        if (j->what == 0) {
            evolve_options_t o = EVOLVE_OPTIONS_INIT;
            evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;

            o.agent = "replay";
            if (evolve_new(&s->ev, rt, &o) < 0)
                goto fail;
            so.callback = on_event;
            so.payload = s;
            so.capacity = capacity;
            so.kinds = (1u << EVOLVE_EVENT_CONTENT) | (1u << EVOLVE_EVENT_STDOUT) |
                       (1u << EVOLVE_EVENT_LIFECYCLE);
            if (evolve_subscribe(&s->sub, s->ev, &so) < 0 ||
                evolve_upload_file(s->ev, "trace.jsonl", trace, trace_len) < 0)
                goto fail;
            snprintf(s->fifo, sizeof(s->fifo), "%s/sandboxes/%s/home/user/workspace/lat.fifo", home,
                     evolve_get_session(s->ev));
            if (mkfifo(s->fifo, 0644) < 0) {
                fprintf(stderr, "bench_sessions: mkfifo %s: %s\n", s->fifo, strerror(errno));
                exit(1);
            }
        } else if (j->what == 1) {
            evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
            evolve_result_t *r = NULL;

            s->stdout_seen = 0;
            ro.prompt = lat_round ? "lat.fifo" : "trace.jsonl";
            ro.background = true;
            ro.resume = EVOLVE_RESUME_NO;
            if (evolve_run(&r, s->ev, &ro) < 0) {
                fprintf(stderr, "bench_sessions: run: %s\n", evolve_error_last()->message);
                atomic_fetch_add_explicit(&start_fail, 1, memory_order_relaxed);
            }
            evolve_result_free(r);
        } else {
            evolve_subscription_free(s->sub);
            evolve_free(s->ev);
        }
    }
    return NULL;
fail:
    fprintf(stderr, "bench_sessions: session %zu: %s\n", i, evolve_error_last()->message);
    exit(1);
}

static void all(int what)
{
    pthread_t th[THREADS];
    struct job jobs[THREADS];
    size_t t;

    for (t = 0; t < THREADS; t++) {
        jobs[t] = (struct job){t, what};
        pthread_create(&th[t], NULL, worker, &jobs[t]);
    }
    for (t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

/* Waits until `want` runs completed (60 s deadline). */
static int wait_runs(size_t want)
{
    struct timespec dl;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    pthread_mutex_lock(&mu);
    while (atomic_load_explicit(&done_runs, memory_order_relaxed) < want && rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
    pthread_mutex_unlock(&mu);
    return atomic_load_explicit(&done_runs, memory_order_relaxed) >= want ? 0 : -1;
}

/* The latency round's writer: opens every FIFO (each replay's cat opens its end), writes line k
 * to every session each tick (spread evenly over the tick), then closes them all (EOF ends the
 * runs). */
static void *lat_writer(void *arg)
{
    int *fds = calloc(N, sizeof(int));
    size_t i, k;

    (void)arg;
    for (i = 0; i < N; i++) {
        fds[i] = open(S[i].fifo, O_WRONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            fprintf(stderr, "bench_sessions: open %s: %s\n", S[i].fifo, strerror(errno));
            exit(1);
        }
    }
    for (k = 0; k < LAT_LINES; k++) {
        uint64_t tick = now_ns();

        for (i = 0; i < N; i++) {
            /* Spread the sessions over the tick: a steady stream, as independent agents give,
             * rather than N lines in one burst. */
            uint64_t at = tick + (uint64_t)LAT_TICK_MS * 1000000u * i / N;

            while (now_ns() < at) {
                struct timespec ts = {0, 50000};

                nanosleep(&ts, NULL);
            }
            /* release: pairs with the subscriber's acquire load of the same slot */
            atomic_store_explicit(&S[i].t_write[k], now_ns(), memory_order_release);
            if (write(fds[i], lines[k], line_len[k]) != (ssize_t)line_len[k]) {
                fprintf(stderr, "bench_sessions: write %s: %s\n", S[i].fifo, strerror(errno));
                exit(1);
            }
        }
        while (now_ns() - tick < (uint64_t)LAT_TICK_MS * 1000000u) {
            struct timespec ts = {0, 1000000};

            nanosleep(&ts, NULL);
        }
    }
    for (i = 0; i < N; i++)
        close(fds[i]);
    free(fds);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void emit(const char *figure, const char *unit, double *v, int runs, uint64_t sum,
                 double reference)
{
    char hex[17];
    json_t *o;

    qsort(v, (size_t)runs, sizeof(*v), cmp_double);
    snprintf(hex, sizeof(hex), "%016" PRIx64, sum);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:I, s:i, s:s}", "bench", "sessions",
                  "figure", figure, "unit", unit, "median", v[runs / 2], "min", v[0], "max",
                  v[runs - 1], "runs", runs, "sessions", (json_int_t)N, "trace_lines", 200,
                  "checksum", hex);
    if (!o)
        exit(1);
    if (reference > 0)
        json_object_set_new(o, "reference", json_real(reference));
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

static void bench_n(size_t n, int rounds)
{
    double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], evs[MAX_ROUNDS], p50[MAX_ROUNDS], p99[MAX_ROUNDS];
    double boot[1], idle[1], peak[1];
    uint64_t sum = 1469598103934665603ull, t0;
    long rss0;
    int r;

    N = n;
    S = calloc(N, sizeof(*S));
    lat_ms = calloc(N * LAT_LINES, sizeof(double));
    reset_peak();
    rss0 = status_kb("VmRSS");
    t0 = now_ns();
    all(0);
    boot[0] = (double)(now_ns() - t0) / 1e9;
    idle[0] = (double)(status_kb("VmRSS") - rss0) / (double)N;
    fprintf(stderr, "N=%zu: booted in %.2f s, idle %.1f kB/session\n", N, boot[0], idle[0]);
    for (r = 0; r < rounds; r++) {
        size_t ev0 = atomic_load(&events);
        double c0 = cpu_s();

        lat_round = false;
        atomic_store(&done_runs, 0);
        t0 = now_ns();
        all(1);
        if (wait_runs(N - atomic_load(&start_fail)) < 0) {
            fprintf(stderr, "bench_sessions: N=%zu: runs did not finish in 60 s (%zu/%zu)\n", N,
                    atomic_load(&done_runs), N);
            exit(1);
        }
        wall[r] = (double)(now_ns() - t0) / 1e9;
        cpu[r] = cpu_s() - c0;
        evs[r] = (double)(atomic_load(&events) - ev0) / wall[r];
        sum = (sum ^ (atomic_load(&events) - ev0)) * 1099511628211ull;
        fprintf(stderr, "N=%zu round %d: %.2f s wall, %.2f CPU-s, %.0f events/s\n", N, r, wall[r],
                cpu[r], evs[r]);
    }
    for (r = 0; r < rounds; r++) {
        pthread_t w;
        size_t cnt;

        lat_round = true;
        atomic_store(&lat_n, 0);
        atomic_store(&done_runs, 0);
        for (size_t i = 0; i < N; i++)
            for (size_t k = 0; k < LAT_LINES; k++)
                atomic_store_explicit(&S[i].t_write[k], 0, memory_order_relaxed);
        all(1);
        pthread_create(&w, NULL, lat_writer, NULL);
        pthread_join(w, NULL);
        if (wait_runs(N) < 0) {
            fprintf(stderr, "bench_sessions: N=%zu: latency runs did not finish\n", N);
            exit(1);
        }
        cnt = atomic_load(&lat_n);
        if (cnt > N * LAT_LINES)
            cnt = N * LAT_LINES;
        qsort(lat_ms, cnt, sizeof(double), cmp_double);
        p50[r] = cnt ? lat_ms[cnt / 2] : -1;
        p99[r] = cnt ? lat_ms[(size_t)((double)cnt * 0.99)] : -1;
        fprintf(stderr, "N=%zu latency round %d: %zu samples, p50 %.2f ms, p99 %.2f ms\n", N, r,
                cnt, p50[r], p99[r]);
    }
    peak[0] = (double)status_kb("VmHWM") / 1024.0;
    emit("boot_s", "s", boot, 1, sum, 0);
    emit("idle_kb_per_session", "kB", idle, 1, sum, 0);
    emit("wall_s", "s", wall, rounds, sum, N == 500 ? 45 : 0);
    emit("cpu_s", "s", cpu, rounds, sum, N == 500 ? 35 : 0);
    emit("events_per_s", "events/s", evs, rounds, sum, N == 500 ? 1900 : 0);
    emit("peak_rss_mb", "MB", peak, 1, sum, N == 500 ? 1200 : 0);
    emit("latency_p50_ms", "ms", p50, rounds, sum, 0);
    emit("latency_p99_ms", "ms", p99, rounds, sum, 0);
    t0 = now_ns();
    all(2);
    fprintf(stderr, "N=%zu: freed in %.2f s\n", N, (double)(now_ns() - t0) / 1e9);
    free(S);
    free(lat_ms);
}

static int load_trace(void)
{
    FILE *f = fopen(TRACE, "rb");
    size_t k = 0;
    char *p;

    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    trace_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    trace = malloc(trace_len + 1);
    if (!trace || fread(trace, 1, trace_len, f) != trace_len) {
        fclose(f);
        return -1;
    }
    fclose(f);
    trace[trace_len] = '\0';
    for (p = trace; k < LAT_LINES && *p; k++) {
        char *nl = strchr(p, '\n');

        lines[k] = p;
        line_len[k] = nl ? (size_t)(nl - p + 1) : strlen(p);
        p += line_len[k];
    }
    return k == LAT_LINES ? 0 : -1;
}

int main(void)
{
    const char *ns = getenv("EVOLVE_BENCH_N"), *rs = getenv("EVOLVE_BENCH_ROUNDS");
    char logs[600], list[256], *tok, *save = NULL;
    int rounds = rs ? (int)strtol(rs, NULL, 10) : 5;

    if (getenv("EVOLVE_BENCH_CAPACITY"))
        capacity = (uint32_t)strtoul(getenv("EVOLVE_BENCH_CAPACITY"), NULL, 10);
    if (rounds < 1 || rounds > MAX_ROUNDS)
        rounds = 5;
    if (load_trace() < 0) {
        fprintf(stderr, "bench_sessions: cannot read %s\n", TRACE);
        return 1;
    }
    snprintf(home, sizeof(home), "%s/evolve-bench-sessions-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(home))
        return 1;
    setenv("EVOLVE_HOME", home, 1);
    snprintf(logs, sizeof(logs), "%s/logs", home);
    setenv("EVOLVE_SESSION_LOG_DIR", logs, 1);
    if (evolve_runtime_new(&rt, NULL) < 0) {
        fprintf(stderr, "bench_sessions: %s\n", evolve_error_last()->message);
        return 1;
    }
    snprintf(list, sizeof(list), "%s", ns ? ns : "50 200 500");
    for (tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save))
        bench_n((size_t)strtoul(tok, NULL, 10), rounds);
    evolve_runtime_free(rt);
    {
        char cmd[700];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_sessions: could not remove %s\n", home);
    }
    free(trace);
    return 0;
}
