/* bench/real_agents.c — where one machine's limit is with real agent CLIs: N = 1, 10, 25
 * concurrent real claude (and codex) sessions in local sandboxes, one evolve process (this one,
 * through the public API), against `evolve mock-llm` (a separate process, tool scenario).
 * Per agent and N: wall time of each run (median/min/max over the N runs), the whole round's
 * wall, this process's CPU seconds and peak RSS, and the peak total RSS of the agent processes
 * (every descendant of this process, sampled every 100 ms). One round per N: a round of 25 real
 * CLIs costs tens of CPU-seconds on 2 cores, so "runs" counts the sessions of the round.
 * Needs the agents of scripts/install-agents.sh (./.agents or $EVOLVE_AGENTS_DIR); prints a
 * SKIPPED line and exits 0 without them. EVOLVE_BENCH_N="1 10" and EVOLVE_BENCH_AGENTS="claude"
 * override the defaults. Prints one JSON object per figure on stdout, human text on stderr. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
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

#define MAX_N         64
#define RUN_TIMEOUT_S 300

extern char **environ;

struct sess {
    evolve_t *ev;
    evolve_subscription_t *sub;
    uint64_t t_start, t_end;
    int failed;
};

static struct sess S[MAX_N];
static size_t N;
static evolve_runtime_t *rt;
static const char *agent;
static char base[256];
static atomic_size_t done_runs, events;
static atomic_long agents_peak_kb;
static atomic_bool sampling;
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

static long status_kb(const char *pid, const char *key)
{
    char path[64], line[256];
    long v = -1;
    size_t kl = strlen(key);
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%s/status", pid);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ':')
            v = strtol(line + kl + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static pid_t ppid_of(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    int pp = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
        sscanf(p + 2, "%*c %d", &pp);
    fclose(f);
    return pp;
}

/* Total RSS (kB) of this process's descendants (sandbox daemons, bwrap, the agent CLIs). */
static long descendants_kb(void)
{
    pid_t self = getpid();
    DIR *d = opendir("/proc");
    struct dirent *de;
    long total = 0;

    while (d && (de = readdir(d))) {
        pid_t pid = (pid_t)strtol(de->d_name, NULL, 10), p;
        int hops = 0;

        if (pid <= 0 || pid == self)
            continue;
        for (p = ppid_of(pid); p > 1 && p != self && hops < 32; p = ppid_of(p))
            hops++;
        if (p == self) {
            long kb = status_kb(de->d_name, "VmRSS");

            total += kb > 0 ? kb : 0;
        }
    }
    if (d)
        closedir(d);
    return total;
}

static void *sampler(void *arg)
{
    (void)arg;
    while (atomic_load_explicit(&sampling, memory_order_relaxed)) {
        long kb = descendants_kb();
        struct timespec ts = {0, 100000000};

        if (kb > atomic_load_explicit(&agents_peak_kb, memory_order_relaxed))
            atomic_store_explicit(&agents_peak_kb, kb, memory_order_relaxed);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void on_event(const evolve_event_t *e, void *payload)
{
    struct sess *s = payload;
    const char *js;

    atomic_fetch_add_explicit(&events, 1, memory_order_relaxed);
    if (evolve_event_kind(e) != EVOLVE_EVENT_LIFECYCLE)
        return;
    js = evolve_event_json(e, NULL);
    if (strstr(js, "\"run_background_complete\"") || strstr(js, "\"run_background_failed\"")) {
        s->t_end = now_ns();
        s->failed = strstr(js, "_failed\"") != NULL;
        pthread_mutex_lock(&mu);
        atomic_fetch_add_explicit(&done_runs, 1, memory_order_relaxed);
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void emit(const char *figure, const char *unit, double *v, size_t runs)
{
    json_t *o;

    qsort(v, runs, sizeof(*v), cmp_double);
    o = json_pack("{s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:I, s:s}", "bench", "real_agents",
                  "figure", figure, "agent", agent, "unit", unit, "median", v[runs / 2], "min",
                  v[0], "max", v[runs - 1], "runs", (int)runs, "sessions", (json_int_t)N,
                  "checksum", "-");
    if (!o)
        exit(1);
    json_object_set_new(o, "checksum", json_sprintf("%016zx", atomic_load(&events)));
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

static int round_n(size_t n)
{
    static double per_run[MAX_N];
    double wall, cpu0, cpu, rss, agents_mb;
    struct timespec dl;
    pthread_t smp;
    uint64_t t0;
    size_t i, ok = 0;
    int rc = 0;
    char url[300];

    N = n;
    snprintf(url, sizeof(url), "%s%s", base, !strcmp(agent, "claude") ? "" : "/v1");
    atomic_store(&done_runs, 0);
    atomic_store(&agents_peak_kb, 0);
    atomic_store(&sampling, true);
    pthread_create(&smp, NULL, sampler, NULL);
    {
        int fd = open("/proc/self/clear_refs", O_WRONLY);

        if (fd >= 0) {
            if (write(fd, "5", 1) < 0)
                fprintf(stderr, "bench_real_agents: peak RSS not reset\n");
            close(fd);
        }
    }
    cpu0 = cpu_s();
    t0 = now_ns();
    for (i = 0; i < N; i++) {
        evolve_options_t o = EVOLVE_OPTIONS_INIT;
        evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
        evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;
        evolve_result_t *r = NULL;
        struct sess *s = &S[i];

        memset(s, 0, sizeof(*s));
        o.agent = agent;
        o.base_url = url;
        o.api_key = "sk-mock";
        so.callback = on_event;
        so.payload = s;
        ro.prompt = "Run the shell command: echo hi > output/hello.txt";
        ro.background = true;
        s->t_start = now_ns();
        if (evolve_new(&s->ev, rt, &o) < 0 || evolve_subscribe(&s->sub, s->ev, &so) < 0 ||
            evolve_run(&r, s->ev, &ro) < 0) {
            fprintf(stderr, "bench_real_agents: %s #%zu: %s\n", agent, i,
                    evolve_error_last()->message);
            return -1;
        }
        evolve_result_free(r);
    }
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += RUN_TIMEOUT_S;
    pthread_mutex_lock(&mu);
    while (atomic_load(&done_runs) < N && rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
    pthread_mutex_unlock(&mu);
    wall = (double)(now_ns() - t0) / 1e9;
    cpu = cpu_s() - cpu0;
    rss = (double)status_kb("self", "VmHWM") / 1024.0;
    atomic_store(&sampling, false);
    pthread_join(smp, NULL);
    agents_mb = (double)atomic_load(&agents_peak_kb) / 1024.0;
    for (i = 0; i < N; i++) {
        per_run[i] = S[i].t_end ? (double)(S[i].t_end - S[i].t_start) / 1e9 : -1;
        ok += S[i].t_end && !S[i].failed;
    }
    fprintf(stderr,
            "%s N=%zu: %zu/%zu ok, round %.1f s wall, evolve %.2f CPU-s %.0f MB peak RSS, "
            "agents %.0f MB peak RSS total\n",
            agent, N, ok, N, wall, cpu, rss, agents_mb);
    emit("run_wall_s", "s", per_run, N);
    emit("round_wall_s", "s", &wall, 1);
    emit("evolve_cpu_s", "s", &cpu, 1);
    emit("evolve_peak_rss_mb", "MB", &rss, 1);
    emit("agents_peak_rss_mb", "MB", &agents_mb, 1);
    {
        double okd = (double)ok;

        emit("runs_ok", "runs", &okd, 1);
    }
    for (i = 0; i < N; i++) {
        evolve_subscription_free(S[i].sub);
        evolve_free(S[i].ev);
    }
    return ok == N ? 0 : -1;
}

/* Starts `evolve mock-llm --scenario tool --port 0` and reads its base URL. */
static pid_t start_mock(const char *evolve)
{
    const char *argv[] = {evolve, "mock-llm", "--scenario", "tool", "--port", "0", "--quiet", NULL};
    posix_spawn_file_actions_t fa;
    int p[2];
    pid_t pid;
    FILE *f;

    if (pipe(p) < 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    if (posix_spawn(&pid, evolve, &fa, NULL, (char *const *)argv, environ) != 0)
        return -1;
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    f = fdopen(p[0], "r");
    if (!f || !fgets(base, sizeof(base), f) || strncmp(base, "listening on ", 13)) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    fclose(f);
    memmove(base, base + 13, strlen(base + 13) + 1);
    base[strcspn(base, "\n")] = '\0';
    return pid;
}

int main(void)
{
    const char *ns = getenv("EVOLVE_BENCH_N"), *as = getenv("EVOLVE_BENCH_AGENTS");
    const char *adir = getenv("EVOLVE_AGENTS_DIR");
    char agents_dir[1024], bin[1100], path[8192], home[512], logs[600], list[256], alist[128];
    char *tok, *save = NULL, *atok, *asave = NULL;
    pid_t mock;
    int status = 0;

    snprintf(agents_dir, sizeof(agents_dir), "%s", adir ? adir : EVOLVE_SOURCE_DIR "/.agents");
    snprintf(bin, sizeof(bin), "%s/bin/claude", agents_dir);
    if (access(bin, X_OK) != 0) {
        printf("SKIPPED: no agent CLIs in %s (run scripts/install-agents.sh)\n", agents_dir);
        return 0;
    }
    snprintf(bin, sizeof(bin), "%s/bin", agents_dir);
    snprintf(path, sizeof(path), "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    setenv("EVOLVE_SANDBOX_BINDS", agents_dir, 1);
    snprintf(home, sizeof(home), "%s/evolve-bench-real-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(home))
        return 1;
    setenv("EVOLVE_HOME", home, 1);
    snprintf(logs, sizeof(logs), "%s/logs", home);
    setenv("EVOLVE_SESSION_LOG_DIR", logs, 1);
    mock = start_mock(EVOLVE_BINARY_DIR "/evolve");
    if (mock < 0) {
        fprintf(stderr, "bench_real_agents: evolve mock-llm did not start\n");
        return 1;
    }
    fprintf(stderr, "mock at %s\n", base);
    if (evolve_runtime_new(&rt, NULL) < 0)
        return 1;
    snprintf(alist, sizeof(alist), "%s", as ? as : "claude codex");
    for (atok = strtok_r(alist, " ,", &asave); atok; atok = strtok_r(NULL, " ,", &asave)) {
        agent = atok;
        snprintf(list, sizeof(list), "%s", ns ? ns : "1 10 25");
        save = NULL;
        for (tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
            size_t n = strtoul(tok, NULL, 10);

            if (n == 0 || n > MAX_N)
                continue;
            if (round_n(n) < 0)
                status = 1;
        }
    }
    evolve_runtime_free(rt);
    kill(mock, SIGTERM);
    waitpid(mock, NULL, 0);
    {
        char cmd[700];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_real_agents: could not remove %s\n", home);
    }
    return status;
}
