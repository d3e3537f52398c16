/* bench/parse.c — throughput of the stdout path of the claude and codex harnesses: raw 64 KiB
 * chunks -> line splitting -> parser -> emitted events (each event released by the
 * subscriber), printed beside bare jansson json_loadb of the same lines in the same run, plus a
 * jdoc-tokenizer-only and a jsmn-tokenizer-only figure, and peak RSS / RSS growth over
 * 1,000,000 streamed claude lines. Traces come from tools/gen-traces.mjs (deterministic) and
 * are cached in EVOLVE_BINARY_DIR/bench-data. One JSON object per figure on stdout; progress
 * on stderr. EVOLVE_BENCH_LINES overrides the 200,000-line trace size (quick runs).
 * Threads: main thread only. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JSMN_STATIC
#include <jsmn.h>

#include "harness/harness.h"
#include "harness/jdoc.h"
#include "harness/lines.h"

#define RUNS  5
#define CHUNK 65536

extern char **environ;

struct trace {
    const char *agent;
    char path[1024];
    char *data;
    size_t len, lines;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this thread: the per-core figure, robust when other processes share the cores. */
static double cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double last_cpu; /* CPU seconds of the last timed section */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_parse: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void ensure_trace(struct trace *t, const char *kind, unsigned long lines)
{
    char dir[900], count[32], script[1024];
    struct stat st;
    pid_t pid;
    int status;

    snprintf(dir, sizeof(dir), "%s/bench-data", EVOLVE_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(t->path, sizeof(t->path), "%s/%s-%lu.jsonl", dir, kind, lines);
    if (stat(t->path, &st) == 0 && st.st_size > 0)
        return;
    snprintf(count, sizeof(count), "%lu", lines);
    snprintf(script, sizeof(script), "%s/../shared/tools/gen-traces.mjs", EVOLVE_SOURCE_DIR);
    if (access(script, R_OK) != 0)
        snprintf(script, sizeof(script), "/work/shared/tools/gen-traces.mjs");
    fprintf(stderr, "generating %s with %s\n", t->path, script);
    {
        char *argv[] = {"node", script, (char *)kind, count, t->path, NULL};

        if (posix_spawnp(&pid, "node", NULL, NULL, argv, environ) != 0)
            die("spawn node");
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(t->path);
        fprintf(stderr, "bench_parse: gen-traces.mjs failed\n");
        exit(1);
    }
}

static void load(struct trace *t)
{
    FILE *f = fopen(t->path, "rb");
    size_t i;

    if (!f)
        die(t->path);
    fseek(f, 0, SEEK_END);
    t->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    t->data = malloc(t->len + 1);
    if (!t->data || fread(t->data, 1, t->len, f) != t->len)
        die("read trace");
    fclose(f);
    t->lines = 0;
    for (i = 0; i < t->len; i++)
        t->lines += t->data[i] == '\n';
}

/* ---- the measured path -------------------------------------------------------------------- */

struct sink {
    struct hns_parser *p;
    unsigned long events, checksum;
};

static void on_event(void *payload, evolve_update_type_t type, json_t *ev)
{
    struct sink *s = payload;

    s->events++;
    s->checksum = s->checksum * 31 + (unsigned long)type + 1;
    json_decref(ev);
}

static int feed_line(void *arg, const char *line, size_t len)
{
    return hns_parser_feed(((struct sink *)arg)->p, line, len);
}

static double run_parser(const struct trace *t, unsigned long *checksum, unsigned long *events)
{
    struct sink s = {0};
    struct hns_lines split;
    size_t off;
    double t0;

    if (hns_parser_new(&s.p, t->agent, on_event, &s) < 0)
        die("parser");
    hns_lines_init(&split);
    last_cpu = cpu_s();
    t0 = now_s();
    for (off = 0; off < t->len; off += CHUNK)
        if (hns_lines_feed(&split, t->data + off, off + CHUNK > t->len ? t->len - off : CHUNK,
                           feed_line, &s) < 0)
            die("feed");
    hns_lines_finish(&split, feed_line, &s);
    hns_parser_finish(s.p);
    t0 = now_s() - t0;
    last_cpu = cpu_s() - last_cpu;
    hns_lines_dispose(&split);
    hns_parser_free(s.p);
    *checksum = s.checksum;
    *events = s.events;
    return t0;
}

static int loads_line(void *arg, const char *line, size_t len)
{
    json_t *v = json_loadb(line, len, 0, NULL);

    *(unsigned long *)arg += v != NULL;
    json_decref(v);
    return 0;
}

struct tok_ctx {
    struct hns_jdoc d;
    jsmntok_t *toks;
    unsigned long ok;
};

static int jdoc_line(void *arg, const char *line, size_t len)
{
    struct tok_ctx *c = arg;

    c->ok += hns_jdoc_parse(&c->d, line, len) == 0;
    return 0;
}

static int jsmn_line(void *arg, const char *line, size_t len)
{
    struct tok_ctx *c = arg;
    jsmn_parser p;

    jsmn_init(&p);
    c->ok += jsmn_parse(&p, line, len, c->toks, 1u << 16) > 0;
    return 0;
}

/* The same 64 KiB chunking and splitting, then `fn` per line. */
static double run_lines(const struct trace *t, hns_line_fn fn, void *arg)
{
    struct hns_lines split;
    size_t off;
    double t0;

    hns_lines_init(&split);
    last_cpu = cpu_s();
    t0 = now_s();
    for (off = 0; off < t->len; off += CHUNK)
        hns_lines_feed(&split, t->data + off, off + CHUNK > t->len ? t->len - off : CHUNK, fn, arg);
    hns_lines_finish(&split, fn, arg);
    t0 = now_s() - t0;
    last_cpu = cpu_s() - last_cpu;
    hns_lines_dispose(&split);
    return t0;
}

static void stats(double *v, double *med, double *min, double *max)
{
    qsort(v, RUNS, sizeof(double), cmp_double);
    *med = v[RUNS / 2];
    *min = v[0];
    *max = v[RUNS - 1];
}

/* Prints one figure as compact JSON (jansson does the escaping). `extra` (stolen, may be NULL)
 * adds fields. */
static void emit_json(json_t *o, json_t *extra)
{
    if (extra)
        json_object_update(o, extra);
    json_decref(extra);
    if (!o || json_dumpf(o, stdout, JSON_COMPACT) < 0)
        die("print");
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

static void print_figure(const char *figure, const char *unit, const double *per_run_s, double work,
                         const char *work_unit, unsigned long checksum, const double *base_s)
{
    double rates[RUNS], med, min, max, bmed, bmin, bmax, brates[RUNS];
    char sum[32];
    int i;

    for (i = 0; i < RUNS; i++) {
        rates[i] = work / per_run_s[i];
        if (base_s)
            brates[i] = work / base_s[i];
    }
    stats(rates, &med, &min, &max);
    snprintf(sum, sizeof(sum), "%016lx", checksum);
    if (base_s)
        stats(brates, &bmed, &bmin, &bmax);
    emit_json(json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:f, s:s, s:s}", "bench", "parse",
                        "figure", figure, "unit", unit, "median", med, "min", min, "max", max,
                        "runs", RUNS, "work", work, "work_unit", work_unit, "checksum", sum),
              base_s ? json_pack("{s:s, s:f, s:f}", "baseline", "json_loadb per line",
                                 "baseline_median", bmed, "ratio", med / bmed)
                     : NULL);
}

static void bench_trace(struct trace *t)
{
    double ours[RUNS], base[RUNS], jd[RUNS], js[RUNS], ours_cpu[RUNS], base_cpu[RUNS];
    unsigned long sum = 0, events = 0, ok = 0;
    struct tok_ctx tc;
    int i;

    memset(&tc, 0, sizeof(tc));
    hns_jdoc_init(&tc.d);
    tc.toks = malloc(sizeof(jsmntok_t) << 16);
    for (i = 0; i < RUNS; i++) {
        ok = 0;
        ours[i] = run_parser(t, &sum, &events);
        ours_cpu[i] = last_cpu;
        base[i] = run_lines(t, loads_line, &ok);
        base_cpu[i] = last_cpu;
        tc.ok = 0;
        jd[i] = run_lines(t, jdoc_line, &tc);
        js[i] = run_lines(t, jsmn_line, &tc);
        fprintf(stderr,
                "%s run %d: parser %.2fs (%lu events), json_loadb %.2fs, jdoc %.2fs, jsmn %.2fs\n",
                t->agent, i + 1, ours[i], events, base[i], jd[i], js[i]);
    }
    {
        char fig[64];

        snprintf(fig, sizeof(fig), "%s_stdout_path_lines", t->agent);
        print_figure(fig, "lines/s", ours, (double)t->lines, "lines", sum, base);
        snprintf(fig, sizeof(fig), "%s_stdout_path_mb", t->agent);
        print_figure(fig, "MB/s", ours, (double)t->len / 1e6, "MB", sum, base);
        snprintf(fig, sizeof(fig), "%s_stdout_path_lines_per_cpu_s", t->agent);
        print_figure(fig, "lines/CPU-s", ours_cpu, (double)t->lines, "lines", sum, base_cpu);
        snprintf(fig, sizeof(fig), "%s_jdoc_tokenize_lines", t->agent);
        print_figure(fig, "lines/s", jd, (double)t->lines, "lines", (unsigned long)ok, base);
        snprintf(fig, sizeof(fig), "%s_jsmn_tokenize_lines", t->agent);
        print_figure(fig, "lines/s", js, (double)t->lines, "lines", (unsigned long)ok, base);
    }
    hns_jdoc_dispose(&tc.d);
    free(tc.toks);
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;

    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Streams the claude trace from disk in 64 KiB reads through ONE parser until `target` lines,
 * recording RSS after the first pass and at the end. */
static void bench_rss(const struct trace *t, unsigned long target)
{
    static char chunk[CHUNK];
    struct sink s = {0};
    struct hns_lines split;
    unsigned long lines = 0;
    long first = 0, last;
    struct rusage ru;
    double t0 = now_s();
    int pass = 0;

    if (hns_parser_new(&s.p, t->agent, on_event, &s) < 0)
        die("parser");
    hns_lines_init(&split);
    while (lines < target) {
        int fd = open(t->path, O_RDONLY);
        ssize_t n;

        if (fd < 0)
            die(t->path);
        while ((n = read(fd, chunk, sizeof(chunk))) > 0)
            hns_lines_feed(&split, chunk, (size_t)n, feed_line, &s);
        close(fd);
        lines += (unsigned long)t->lines;
        if (++pass == 1)
            first = rss_kb();
    }
    hns_lines_finish(&split, feed_line, &s);
    last = rss_kb();
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr,
            "rss: %lu lines in %.1fs, RSS after pass 1 %ld KiB, at end %ld KiB, peak %ld KiB\n",
            lines, now_s() - t0, first, last, ru.ru_maxrss);
    {
        char sum[32];

        snprintf(sum, sizeof(sum), "%016lx", s.checksum);
        emit_json(json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:s, s:s}", "bench", "parse",
                            "figure", "claude_peak_rss", "unit", "KiB", "median",
                            (json_int_t)ru.ru_maxrss, "min", (json_int_t)ru.ru_maxrss, "max",
                            (json_int_t)ru.ru_maxrss, "runs", 1, "work", (json_int_t)lines,
                            "work_unit", "lines", "checksum", sum),
                  NULL);
        emit_json(json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:s, s:s, s:I, s:I}", "bench",
                            "parse", "figure", "claude_rss_growth_after_first_pass", "unit", "KiB",
                            "median", (json_int_t)(last - first), "min", (json_int_t)(last - first),
                            "max", (json_int_t)(last - first), "runs", 1, "work", (json_int_t)lines,
                            "work_unit", "lines", "checksum", sum, "rss_first_pass_kib",
                            (json_int_t)first, "rss_end_kib", (json_int_t)last),
                  NULL);
    }
    hns_lines_dispose(&split);
    hns_parser_free(s.p);
}

int main(void)
{
    const char *env = getenv("EVOLVE_BENCH_LINES");
    unsigned long lines = env ? strtoul(env, NULL, 10) : 200000;
    struct trace claude = {.agent = "claude"}, codex = {.agent = "codex"};

    if (lines == 0)
        lines = 200000;
    ensure_trace(&claude, "claude", lines);
    ensure_trace(&codex, "codex", lines);
    /* RSS first, before the traces are loaded into memory for the timed runs. */
    claude.lines = lines;
    bench_rss(&claude, lines * 5);
    load(&claude);
    bench_trace(&claude);
    free(claude.data);
    load(&codex);
    bench_trace(&codex);
    free(codex.data);
    return 0;
}
