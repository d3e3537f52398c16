/* parse_autohand.c — throughput of the Autohand parser: lines/s and MB/s through
 * hns_parser_feed() (decode, validate, build and publish events), beside bare json_loadb() of
 * the same lines in the same run. Input: 200,000 lines generated deterministically from a mix of
 * the notifications a session prints (tests/data/autohand/session-synthetic.jsonl shapes).
 * Prints one JSON object per figure on stdout (STYLE R21); human text on stderr. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/harness.h"


#define LINES 200000
#define RUNS  5

/* One generated line of shape k (literal formats, so -Wformat checks them). */
static int make_line(char *buf, size_t size, size_t k, unsigned a, unsigned b)
{
    switch (k) {
    case 0:
        return snprintf(
            buf, size,
            "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.preTool\",\"params\":{\"toolId\":"
            "\"call-%u\","
            "\"toolName\":\"read_file\",\"args\":{\"path\":\"src/file%u.ts\"},\"timestamp\":"
            "\"2026-11-30T05:00:01.100Z\"}}",
            a, b);
    case 1:
        return snprintf(
            buf, size,
            "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.postTool\",\"params\":{\"toolId\":"
            "\"call-%u\","
            "\"toolName\":\"read_file\",\"success\":true,\"duration\":%u,\"output\":\"export "
            "function "
            "parse(s) { return s.split(','); } // a line of file contents\",\"timestamp\":"
            "\"2026-11-30T05:00:01.103Z\"}}",
            a, b);
    case 2:
        return snprintf(
            buf, size,
            "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.messageUpdate\",\"params\":{\"messageId\":"
            "\"msg-%u\",\"delta\":\"Some streamed text of the agent's reply, chunk "
            "%u.\",\"timestamp\":"
            "\"2026-11-30T05:00:03.100Z\"}}",
            a, b);
    case 3:
        return snprintf(buf, size,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.postResponse\",\"params\":"
                        "{\"tokensUsed\":%u,"
                        "\"tokensUsageStatus\":\"actual\",\"toolCallsCount\":%u,\"duration\":1200,"
                        "\"timestamp\":"
                        "\"2026-11-30T05:00:01.200Z\"}}",
                        a, b);
    case 4:
        return snprintf(
            buf, size,
            "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.fileModified\",\"params\":{"
            "\"filePath\":"
            "\"test/t%u.ts\",\"changeType\":\"modify\",\"toolId\":\"call-%u\",\"timestamp\":"
            "\"2026-11-30T05:00:02.510Z\"}}",
            a, b);
    case 5:
        return snprintf(buf, size,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.contextWarning\","
                        "\"params\":{\"usagePercent\":"
                        "0.8%u,\"remainingTokens\":%u,\"timestamp\":\"2026-11-30T05:00:03.000Z\"}}",
                        a, b);
    default:
        return snprintf(buf, size,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.contextWarning\","
                        "\"params\":{\"usagePercent\":0.8%u,\"remainingTokens\":%u,"
                        "\"timestamp\":\"2026-11-30T05:00:03.000Z\"}}",
                        a, b);
    }
}

struct sink {
    uint64_t events, checksum;
};

static void on_event(void *payload, evolve_update_type_t type, json_t *event)
{
    struct sink *s = payload;

    s->events++;
    s->checksum = (s->checksum ^ (uint64_t)(type + 1)) * 1099511628211ULL;
    json_decref(event);
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

    return (x > y) - (x < y);
}

static void print_figure(const char *figure, const char *unit, double *v, double *base,
                         size_t bytes, uint64_t checksum)
{
    char sum[32];
    json_t *o;

    qsort(v, RUNS, sizeof(v[0]), cmp_double);
    qsort(base, RUNS, sizeof(base[0]), cmp_double);
    snprintf(sum, sizeof(sum), "%016" PRIx64, checksum);
    o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:I, s:s, s:f, s:f}", "bench",
                  "parse_autohand", "figure", figure, "unit", unit, "median", v[RUNS / 2], "min",
                  v[0], "max", v[RUNS - 1], "runs", RUNS, "lines", LINES, "bytes",
                  (json_int_t)bytes, "checksum", sum, "baseline_median", base[RUNS / 2], "ratio",
                  v[RUNS / 2] / base[RUNS / 2]);
    if (!o)
        exit(1);
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(o);
}

int main(void)
{
    char **lines = malloc(LINES * sizeof(char *));
    size_t *lens = malloc(LINES * sizeof(size_t)), bytes = 0, i;
    double rate[RUNS], mb[RUNS], base_rate[RUNS], base_mb[RUNS];
    uint64_t checksum = 0;
    int r;

    if (!lines || !lens)
        return 1;
    for (i = 0; i < LINES; i++) {
        char buf[512];
        unsigned a = (unsigned)(i * 2654435761u % 100000u);
        int n = make_line(buf, sizeof(buf), i % 6, a, (unsigned)(i % 97));

        lines[i] = strdup(buf);
        lens[i] = (size_t)n;
        bytes += (size_t)n + 1;
    }
    for (r = 0; r < RUNS; r++) {
        struct sink s = {0, 1469598103934665603ULL};
        struct hns_parser *p = NULL;
        double t0, t;

        if (hns_parser_new(&p, "autohand", on_event, &s) < 0)
            return 1;
        t0 = now_s();
        for (i = 0; i < LINES; i++)
            if (hns_parser_feed(p, lines[i], lens[i]) < 0)
                return 1;
        t = now_s() - t0;
        hns_parser_free(p);
        rate[r] = LINES / t;
        mb[r] = (double)bytes / t / 1e6;
        checksum = s.checksum ^ s.events;

        t0 = now_s();
        for (i = 0; i < LINES; i++) {
            json_t *j = json_loadb(lines[i], lens[i], 0, NULL);

            if (!j)
                return 1;
            json_decref(j);
        }
        t = now_s() - t0;
        base_rate[r] = LINES / t;
        base_mb[r] = (double)bytes / t / 1e6;
    }
    print_figure("lines_per_s", "lines/s", rate, base_rate, bytes, checksum);
    print_figure("mb_per_s", "MB/s", mb, base_mb, bytes, checksum);
    fprintf(stderr, "parse_autohand: %d lines, %zu bytes; baseline = bare json_loadb\n", LINES,
            bytes);
    for (i = 0; i < LINES; i++)
        free(lines[i]);
    free(lines);
    free(lens);
    return 0;
}
