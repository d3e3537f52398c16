/* bench/providers.c — sandbox create + exec(`true`) + kill cycles through the e2b and daytona
 * providers against their loopback fakes (tests/fakes) with 50 ms of latency added to every
 * call, at concurrency 1, 50 and 500. Per figure: completion time of N cycles (median of 5 runs)
 * against the ideal latency x calls / concurrency, TCP connections the fake accepted, evolve's
 * CPU time and peak RSS. The fake runs in a forked child so that evolve's CPU and RSS are its own.
 * Sizes are scaled down from 1,000 cycles where a run would take minutes (said on stderr and in
 * the "cycles" field). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "fakes/fakes.h"
#include "io/http.h"
#include "io/reactor.h"
#include "providers/daytona.h"
#include "providers/e2b.h"

#define RUNS       5
#define LATENCY_MS 50

/* ---- the fake in a child process ------------------------------------------------------------ */

struct child {
    pid_t pid;
    int ctl, rep; /* to the child, from the child */
    char api[64], data[64];
};

static void child_main(enum ts_fake_kind kind, int ctl, int rep)
{
    struct ts_fake_opts o = {.latency_ms = LATENCY_MS, .started_after = 1};
    struct ts_fake *f = ts_fake_start(kind, &o);
    struct ts_fake_stats st;
    char c;

    if (write(rep, ts_fake_api_url(f), 64) != 64 || write(rep, ts_fake_data_url(f), 64) != 64)
        _exit(1);
    while (read(ctl, &c, 1) == 1 && c == 's') {
        ts_fake_stats(f, &st);
        if (write(rep, &st, sizeof(st)) != (ssize_t)sizeof(st))
            break;
    }
    ts_fake_stop(f);
    _exit(0);
}

static void child_start(struct child *c, enum ts_fake_kind kind)
{
    int a[2], b[2];
    char api[64] = {0}, data[64] = {0};

    if (pipe(a) < 0 || pipe(b) < 0)
        exit(1);
    c->pid = fork();
    if (c->pid == 0) {
        close(a[1]);
        close(b[0]);
        child_main(kind, a[0], b[1]);
    }
    close(a[0]);
    close(b[1]);
    c->ctl = a[1];
    c->rep = b[0];
    if (read(c->rep, api, 64) != 64 || read(c->rep, data, 64) != 64)
        exit(1);
    memcpy(c->api, api, 64);
    memcpy(c->data, data, 64);
}

static void child_stats(struct child *c, struct ts_fake_stats *st)
{
    if (write(c->ctl, "s", 1) != 1 || read(c->rep, st, sizeof(*st)) != (ssize_t)sizeof(*st))
        exit(1);
}

static void child_stop(struct child *c)
{
    int status;

    if (write(c->ctl, "q", 1) < 0)
        (void)0;
    close(c->ctl);
    close(c->rep);
    waitpid(c->pid, &status, 0);
}

/* ---- the cycles ---------------------------------------------------------------------------- */

enum stage { S_CREATED, S_STARTED, S_KILLED };

struct ev {
    struct ev *next;
    int cycle;
    enum stage stage;
    int code;
    void *result;
};

struct slot {
    int cycle;
    enum stage stage;
    struct bench *b;
    struct prov_box *box;
    struct prov_proc *proc;
};

struct bench {
    struct prov *p;
    pthread_mutex_t mu;
    struct ev *head, **tail;
    int efd, ep;
    struct slot *slots;
    int failures;
    uint64_t checksum;
};

static void done_cb(void *payload, const struct prov_status *st, void *result)
{
    struct slot *s = payload;
    struct bench *b = s->b;
    struct ev *e = calloc(1, sizeof(*e));
    uint64_t one = 1;

    if (!e)
        abort();
    e->cycle = (int)(s - b->slots);
    e->stage = s->stage;
    e->code = st->code;
    e->result = result;
    if (st->code < 0)
        fprintf(stderr, "# %s\n", st->message);
    pthread_mutex_lock(&b->mu);
    *b->tail = e;
    b->tail = &e->next;
    pthread_mutex_unlock(&b->mu);
    if (write(b->efd, &one, 8) != 8)
        abort();
}

static void start_create(struct bench *b, struct slot *s)
{
    struct prov_create_spec spec = PROV_CREATE_SPEC_INIT;

    s->stage = S_CREATED;
    if (b->p->ops->create(b->p, &spec, done_cb, s) < 0) {
        fprintf(stderr, "create: %s\n", evolve_error_last()->message);
        exit(1);
    }
}

/* Runs n cycles at concurrency c; returns the wall time in ms. */
static double run_cycles(struct bench *b, int n, int c)
{
    static const char *const argv[] = {"true", NULL};
    struct timespec t0, t1;
    int started = 0, finished = 0, i;

    b->slots = calloc((size_t)c, sizeof(*b->slots));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < c && started < n; i++, started++) {
        b->slots[i].b = b;
        start_create(b, &b->slots[i]);
    }
    while (finished < n) {
        struct epoll_event evs[64];
        int k, m = epoll_wait(b->ep, evs, 64, 1000);

        for (k = 0; k < m; k++) {
            if (evs[k].data.u64 == UINT64_MAX) {
                uint64_t cnt;
                struct ev *e;

                if (read(b->efd, &cnt, 8) != 8)
                    continue;
                pthread_mutex_lock(&b->mu);
                e = b->head;
                b->head = NULL;
                b->tail = &b->head;
                pthread_mutex_unlock(&b->mu);
                while (e) {
                    struct ev *next = e->next;
                    struct slot *s = &b->slots[e->cycle];

                    if (e->code < 0) {
                        b->failures++;
                        if (s->box)
                            b->p->ops->box_free(s->box);
                        s->box = NULL;
                        finished++;
                        if (started < n) {
                            started++;
                            start_create(b, s);
                        }
                    } else if (e->stage == S_CREATED) {
                        struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;

                        s->box = e->result;
                        s->stage = S_STARTED;
                        spec.argv = argv;
                        spec.flags = PROV_EXEC_NO_STDIN;
                        if (b->p->ops->exec(s->box, &spec, done_cb, s) < 0)
                            exit(1);
                    } else if (e->stage == S_STARTED) {
                        struct epoll_event ee = {.events = EPOLLIN, .data.u64 = (uint64_t)e->cycle};

                        s->proc = e->result;
                        epoll_ctl(b->ep, EPOLL_CTL_ADD, s->proc->status_fd, &ee);
                    } else {
                        b->p->ops->box_free(s->box);
                        s->box = NULL;
                        finished++;
                        if (started < n) {
                            started++;
                            start_create(b, s);
                        }
                    }
                    free(e);
                    e = next;
                }
            } else {
                struct slot *s = &b->slots[evs[k].data.u64];
                struct prov_exit ex = {0};

                epoll_ctl(b->ep, EPOLL_CTL_DEL, s->proc->status_fd, NULL);
                if (prov_exit_read(s->proc->status_fd, &ex) < 0)
                    b->failures++;
                b->checksum = b->checksum * 31 + (uint64_t)(ex.code + 1);
                prov_proc_free(s->proc);
                s->proc = NULL;
                s->stage = S_KILLED;
                if (b->p->ops->kill(s->box, done_cb, s) < 0)
                    exit(1);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(b->slots);
    b->slots = NULL;
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double cpu_ms(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void figure(const char *provider, enum ts_fake_kind kind, int n, int c)
{
    struct child ch;
    struct io_reactor *r;
    struct bench b = {0};
    struct ts_fake_stats s0, s1;
    struct epoll_event ee = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    double t[RUNS], cpu0, cpu, ideal, calls, serial;
    struct rusage ru;
    char sum[32], fig[64];
    json_t *o;
    int i;

    child_start(&ch, kind);
    if (kind == TS_FAKE_E2B) {
        setenv("E2B_API_KEY", "e2b_test", 1);
        setenv("E2B_API_URL", ch.api, 1);
        setenv("E2B_SANDBOX_URL", ch.data, 1);
        setenv("E2B_DOMAIN", "e2b.test", 1);
    } else {
        char url[96];

        snprintf(url, sizeof(url), "%s/api", ch.api);
        setenv("DAYTONA_API_KEY", "dtn_test", 1);
        setenv("DAYTONA_API_URL", url, 1);
    }
    if (io_reactor_new(&r) < 0)
        exit(1);
    /* The bench measures the providers, not an admission cap: let every cycle in. */
    io_http_limit(r, NULL, 0);
    if ((kind == TS_FAKE_E2B ? prov_e2b_new(&b.p, NULL, r) : prov_daytona_new(&b.p, NULL, r)) < 0) {
        fprintf(stderr, "%s: %s\n", provider, evolve_error_last()->message);
        exit(1);
    }
    pthread_mutex_init(&b.mu, NULL);
    b.tail = &b.head;
    b.efd = eventfd(0, EFD_CLOEXEC);
    b.ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_ctl(b.ep, EPOLL_CTL_ADD, b.efd, &ee);
    child_stats(&ch, &s0);
    cpu0 = cpu_ms();
    for (i = 0; i < RUNS; i++)
        t[i] = run_cycles(&b, n, c);
    cpu = cpu_ms() - cpu0;
    child_stats(&ch, &s1);
    getrusage(RUSAGE_SELF, &ru);
    b.p->ops->free(b.p);
    io_reactor_free(r);
    child_stop(&ch);
    close(b.efd);
    close(b.ep);
    pthread_mutex_destroy(&b.mu);
    qsort(t, RUNS, sizeof(t[0]), cmp_double);
    calls = (double)(s1.requests - s0.requests) / RUNS;
    ideal = LATENCY_MS * calls / c;
    /* The critical path of one cycle: e2b create, MakeDir x4 (parallel), Start, kill = 4 calls;
     * daytona create, 1 state poll, layout execute, session, exec, then one poll period (200 ms)
     * before status + logs, delete = 8 calls + 200 ms (the session delete runs in parallel). */
    serial = (kind == TS_FAKE_E2B ? 4.0 * LATENCY_MS : 8.0 * LATENCY_MS + 200.0) * (double)n /
             (double)(c < n ? c : n);
    snprintf(sum, sizeof(sum), "%016" PRIx64, b.checksum);
    snprintf(fig, sizeof(fig), "%s_c%d", provider, c);
    fprintf(stderr,
            "%s: %d cycles at concurrency %d: median %.0f ms (ideal %.0f ms, x%.2f; critical-path "
            "ideal %.0f ms), %.1f calls "
            "and %.1f new connections per cycle, evolve CPU %.0f ms/run, max RSS %ld MiB, %d "
            "failures\n",
            provider, n, c, t[RUNS / 2], ideal, t[RUNS / 2] / ideal, serial, calls / n,
            (double)(s1.connections - s0.connections) / RUNS / n, cpu / RUNS, ru.ru_maxrss / 1024,
            b.failures);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:f, s:f, s:f, s:f, s:f, "
                  "s:i, s:i, s:i, s:f}",
                  "bench", "providers", "figure", fig, "unit", "ms", "median", t[RUNS / 2], "min",
                  t[0], "max", t[RUNS - 1], "runs", RUNS, "cycles", n, "concurrency", c, "checksum",
                  sum, "ideal_ms", ideal, "ratio_to_ideal", t[RUNS / 2] / ideal, "calls_per_cycle",
                  calls / n, "connections_per_run",
                  (double)(s1.connections - s0.connections) / RUNS, "cpu_ms_per_run", cpu / RUNS,
                  "max_rss_kib", (int)ru.ru_maxrss, "latency_ms", LATENCY_MS, "failures",
                  b.failures, "ideal_serial_ms", serial);
    if (!o)
        exit(1);
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

/* Output latency: a command sleeps 300 ms, prints a line and sleeps on; the time from the exec's
 * start to the line's arrival on the stdout pipe, minus the 300 ms, is what the transport adds
 * (E2B: the stream; Daytona: the poll period plus two calls). */
static void latency_figure(const char *provider, enum ts_fake_kind kind)
{
    static const char *const argv[] = {"sh", "-c", "sleep 0.3; echo x; sleep 0.2", NULL};
    struct prov_create_spec cs = PROV_CREATE_SPEC_INIT;
    struct prov_exec_spec es = PROV_EXEC_SPEC_INIT;
    struct io_reactor *r;
    struct prov *p = NULL;
    struct prov_box *box = NULL;
    struct ts_wait w;
    struct child ch;
    double lat[RUNS];
    char fig[64], sum[32];
    uint64_t checksum = 0;
    json_t *o;
    int i;

    child_start(&ch, kind);
    if (kind == TS_FAKE_E2B) {
        setenv("E2B_API_URL", ch.api, 1);
        setenv("E2B_SANDBOX_URL", ch.data, 1);
    } else {
        char url[96];

        snprintf(url, sizeof(url), "%s/api", ch.api);
        setenv("DAYTONA_API_URL", url, 1);
    }
    if (io_reactor_new(&r) < 0 ||
        (kind == TS_FAKE_E2B ? prov_e2b_new(&p, NULL, r) : prov_daytona_new(&p, NULL, r)) < 0)
        exit(1);
    ts_wait_init(&w);
    if (p->ops->create(p, &cs, ts_wait_done, &w) < 0 || ts_wait_for(&w, 30000, (void **)&box) < 0)
        exit(1);
    es.argv = argv;
    es.flags = PROV_EXEC_NO_STDIN;
    for (i = 0; i < RUNS; i++) {
        struct prov_proc *proc = NULL;
        struct timespec t0, t1;
        struct prov_exit ex;
        char c;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (p->ops->exec(box, &es, ts_wait_done, &w) < 0 ||
            ts_wait_for(&w, 30000, (void **)&proc) < 0)
            exit(1);
        if (read(proc->stdout_fd, &c, 1) != 1)
            exit(1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        lat[i] =
            (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6 - 300.0;
        checksum = checksum * 31 + (uint64_t)c;
        if (prov_exit_read(proc->status_fd, &ex) < 0)
            exit(1);
        prov_proc_free(proc);
    }
    if (p->ops->kill(box, ts_wait_done, &w) < 0 || ts_wait_for(&w, 30000, NULL) < 0)
        exit(1);
    p->ops->box_free(box);
    p->ops->free(p);
    io_reactor_free(r);
    child_stop(&ch);
    qsort(lat, RUNS, sizeof(lat[0]), cmp_double);
    snprintf(fig, sizeof(fig), "%s_output_latency", provider);
    snprintf(sum, sizeof(sum), "%016" PRIx64, checksum);
    fprintf(stderr,
            "%s: output latency (exec start to first line, minus the command's 300 ms, "
            "incl. the exec's own calls at %d ms each): median %.0f ms\n",
            provider, LATENCY_MS, lat[RUNS / 2]);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:s, s:i}", "bench", "providers",
                  "figure", fig, "unit", "ms", "median", lat[RUNS / 2], "min", lat[0], "max",
                  lat[RUNS - 1], "runs", RUNS, "lines", RUNS, "checksum", sum, "latency_ms",
                  LATENCY_MS);
    if (!o)
        exit(1);
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

int main(int argc, char **argv)
{
    /* cycles per run at concurrency 1 / 50 / 500; scaled down from 1,000 to keep runs short */
    static const int conc[3] = {1, 50, 500};
    int cycles[3] = {10, 250, 1000};
    const char *only = argc > 1 ? argv[1] : NULL;
    int k;

    signal(SIGPIPE, SIG_IGN);
    setenv("EVOLVE_BATCH_ID", "bench", 1);
    if (getenv("BENCH_PROVIDERS_SCALE")) {
        double sc = strtod(getenv("BENCH_PROVIDERS_SCALE"), NULL);

        for (k = 0; k < 3; k++)
            cycles[k] = cycles[k] * sc < 1 ? 1 : (int)(cycles[k] * sc);
    }
    fprintf(stderr,
            "providers: %d/%d/%d cycles per run at concurrency 1/50/500 (the brief's "
            "1,000 at concurrency 1 would take minutes at 50 ms per call)\n",
            cycles[0], cycles[1], cycles[2]);
    if (!only || !strcmp(only, "e2b")) {
        setenv("E2B_API_KEY", "e2b_test", 1);
        setenv("E2B_DOMAIN", "e2b.test", 1);
        latency_figure("e2b", TS_FAKE_E2B);
    }
    if (!only || !strcmp(only, "daytona")) {
        setenv("DAYTONA_API_KEY", "dtn_test", 1);
        latency_figure("daytona", TS_FAKE_DAYTONA);
    }
    for (k = 0; k < 3; k++) {
        if (!only || !strcmp(only, "e2b"))
            figure("e2b", TS_FAKE_E2B, cycles[k], conc[k]);
        if (!only || !strcmp(only, "daytona"))
            figure("daytona", TS_FAKE_DAYTONA, cycles[k] < 5 ? cycles[k] : cycles[k] / 2, conc[k]);
    }
    return 0;
}
