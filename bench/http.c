/* bench/http.c — requests/s and TCP connections opened for 1,000 GETs through io_http against
 * a loopback libmicrohttpd server, with 1, 50 and 500 requests in flight.
 *
 * The server (tests/support/httpd.c) runs in a forked child process, so its CPU time is not in
 * this process's accounting; it still shares the machine's cores. Each run uses a fresh reactor
 * (so connections are opened anew and counted per run, via CURLINFO_NUM_CONNECTS); the clock
 * runs from the first io_http_start to the last on_done. Prints one JSON object per figure per
 * line on stdout (median of RUNS runs), human text on stderr. */
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evolve/common.h"
#include "io/http.h"
#include "support/httpd.h"
#include "support/latch.h"
#include "support/support.h"

#define REQUESTS 1000
#define RUNS     9
#define BODY     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"

struct run {
    struct io_reactor *r;
    struct io_http_request req;
    struct ts_latch done;
    /* reactor thread only until the latch fires */
    unsigned in_flight;
    unsigned started, finished, failed;
    long connects;
    uint64_t checksum;
};

static void on_chunk(const char *data, size_t len, void *payload)
{
    struct run *run = payload;
    size_t i;

    for (i = 0; i < len; i++) /* FNV-1a over every body byte received */
        run->checksum = (run->checksum ^ (unsigned char)data[i]) * 0x100000001b3ULL;
}

static void on_done(const struct io_http_result *res, void *payload);
static const struct io_http_callbacks cbs = {NULL, on_chunk, on_done};

static void start_one(struct run *run)
{
    run->started++;
    if (io_http_start(NULL, run->r, &run->req, &cbs, run) < 0) {
        run->failed++;
        run->finished++;
    }
}

static void on_done(const struct io_http_result *res, void *payload)
{
    struct run *run = payload;

    run->finished++;
    run->connects += res->connects;
    if (res->code || res->status != 200)
        run->failed++;
    if (run->started < REQUESTS)
        start_one(run); /* from the reactor thread: posted, runs in the next inbox stage */
    if (run->finished == REQUESTS)
        ts_latch_add(&run->done, 1);
}

static void kick(struct io_reactor *r, void *arg)
{
    struct run *run = arg;
    unsigned n = run->in_flight;

    (void)r;
    while (n-- && run->started < REQUESTS)
        start_one(run);
}

/* One run: returns requests/s, or a negative value on failure. */
static double one_run(const char *url, unsigned in_flight, long *connects, uint64_t *checksum)
{
    struct run run;
    struct timespec t0, t1;
    double secs;

    memset(&run, 0, sizeof(run));
    ts_latch_init(&run.done);
    run.checksum = 0xcbf29ce484222325ULL;
    run.req.url = url;
    run.req.timeout_ms = 30000;
    if (io_reactor_new(&run.r) < 0 || io_http_limit(run.r, NULL, 0) < 0)
        return -1;
    run.in_flight = in_flight;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (io_reactor_post(run.r, kick, &run) < 0)
        return -1;
    if (!ts_latch_wait(&run.done, 1, 120000))
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    io_reactor_free(run.r);
    ts_latch_dispose(&run.done);
    if (run.failed)
        return -1;
    *connects = run.connects;
    *checksum ^= run.checksum;
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return (double)REQUESTS / secs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;

    return x < y ? -1 : x > y;
}

static void emit(const char *figure, const char *unit, double median, double min, double max,
                 unsigned in_flight, uint64_t checksum)
{
    char sum[17];
    json_t *o;

    snprintf(sum, sizeof(sum), "%016" PRIx64, checksum);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:s}", "bench", "http",
                  "figure", figure, "unit", unit, "median", median, "min", min, "max", max, "runs",
                  RUNS, "requests", REQUESTS, "in_flight", (int)in_flight, "checksum", sum,
                  "server", "libmicrohttpd in a forked child process, loopback");
    if (!o)
        exit(1);
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

/* The server child: serves until the parent closes the control pipe. */
static void serve(int port_fd, int ctl_fd)
{
    struct ts_httpd_route route = {.path = "/hello", .kind = TS_HTTPD_FIXED, .body = BODY};
    struct ts_httpd *s = ts_httpd_start();
    unsigned port;
    char c;

    ts_httpd_route(s, &route);
    port = ts_httpd_port(s);
    if (write(port_fd, &port, sizeof(port)) != sizeof(port))
        _exit(1);
    while (read(ctl_fd, &c, 1) > 0)
        ;
    ts_httpd_stop(s);
    _exit(0);
}

int main(void)
{
    static const unsigned levels[] = {1, 50, 500};
    int port_pipe[2], ctl_pipe[2], status;
    unsigned port, li;
    pid_t child;
    char url[64];

    if (pipe(port_pipe) < 0 || pipe(ctl_pipe) < 0)
        return 1;
    child = fork(); /* before any thread exists */
    if (child < 0)
        return 1;
    if (child == 0) {
        close(port_pipe[0]);
        close(ctl_pipe[1]);
        serve(port_pipe[1], ctl_pipe[0]);
    }
    close(port_pipe[1]);
    close(ctl_pipe[0]);
    if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port)) {
        fprintf(stderr, "bench http: server did not start\n");
        return 1;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/hello", port);
    fprintf(stderr, "bench http: %d GETs of %zu bytes from %s, %d runs per level\n", REQUESTS,
            strlen(BODY), url, RUNS);
    for (li = 0; li < sizeof(levels) / sizeof(levels[0]); li++) {
        double rate[RUNS], conn_d[RUNS];
        long conns[RUNS];
        uint64_t checksum = 0;
        char figure[64];
        int i;

        for (i = 0; i < RUNS; i++) {
            rate[i] = one_run(url, levels[li], &conns[i], &checksum);
            if (rate[i] < 0) {
                fprintf(stderr, "bench http: run failed at %u in flight\n", levels[li]);
                return 1;
            }
            fprintf(stderr, "  in flight %3u run %d: %8.0f req/s, %ld connections\n", levels[li],
                    i + 1, rate[i], conns[i]);
        }
        qsort(rate, RUNS, sizeof(rate[0]), cmp_double);
        qsort(conns, RUNS, sizeof(conns[0]), cmp_long);
        for (i = 0; i < RUNS; i++)
            conn_d[i] = (double)conns[i];
        snprintf(figure, sizeof(figure), "requests_per_s_inflight_%u", levels[li]);
        emit(figure, "requests/s", rate[RUNS / 2], rate[0], rate[RUNS - 1], levels[li], checksum);
        snprintf(figure, sizeof(figure), "connections_inflight_%u", levels[li]);
        emit(figure, "connections", conn_d[RUNS / 2], conn_d[0], conn_d[RUNS - 1], levels[li],
             checksum);
    }
    close(ctl_pipe[1]);
    waitpid(child, &status, 0);
    return 0;
}
