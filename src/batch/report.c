/* report.c — batch summary statistics and the HTML report.
 * Owns: percentile and histogram computation, HTML escaping and the page layout. The page is
 * one file with inline CSS and SVG so it opens from a laptop or a CI artifact store offline.
 * Threads: any (pure functions of their inputs, plus file writes). */
#include "batch/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double p)
{
    size_t rank;

    if (n == 0)
        return 0;
    rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

static json_int_t tok(const json_t *r, const char *k)
{
    return json_integer_value(json_object_get(json_object_get(r, "tokens"), k));
}

static int bump(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_object_set_new(obj, key, json_integer(v ? json_integer_value(v) + 1 : 1));
}

json_t *bat_summary_build(const json_t *results)
{
    size_t n = json_array_size(results), i, nd = 0, unpriced = 0;
    double *durations = calloc(n ? n : 1, sizeof(double)), sum_d = 0, cost = 0;
    json_t *by_status = json_object(), *by_class = json_object(), *groups = json_object();
    json_t *by_am = json_array(), *out = NULL, *r;
    json_int_t prompt = 0, completion = 0, cached = 0;
    char ts[CORE_ISO8601_SIZE];
    const char *key;
    json_t *g;

    if (!durations || !by_status || !by_class || !groups || !by_am)
        goto done;
    json_array_foreach((json_t *)results, i, r)
    {
        const char *status = json_string_value(json_object_get(r, "status"));
        const char *fc = json_string_value(json_object_get(r, "failureClass"));
        const char *agent = json_string_value(json_object_get(r, "agent"));
        const char *model = json_string_value(json_object_get(r, "model"));
        const json_t *d = json_object_get(r, "durationMs"), *c = json_object_get(r, "costUsd");
        char gk[512];

        if (bump(by_status, status ? status : "unknown") < 0)
            goto done;
        if (fc && strcmp(fc, "none") && bump(by_class, fc) < 0)
            goto done;
        if (json_is_number(d)) {
            durations[nd++] = json_number_value(d);
            sum_d += json_number_value(d);
        }
        prompt += tok(r, "prompt");
        completion += tok(r, "completion");
        cached += tok(r, "cached");
        if (json_is_number(c))
            cost += json_number_value(c);
        else if (json_object_get(r, "tokens"))
            unpriced++;
        snprintf(gk, sizeof(gk), "%s\x1f%s", agent ? agent : "", model ? model : "");
        g = json_object_get(groups, gk);
        if (!g) {
            g = json_pack("{s:s?, s:s?, s:I, s:I, s:I, s:f, s:b}", "agent", agent, "model", model,
                          "tasks", (json_int_t)0, "prompt", (json_int_t)0, "completion",
                          (json_int_t)0, "costUsd", 0.0, "priced", 1);
            if (!g || json_object_set_new(groups, gk, g) < 0 || json_array_append(by_am, g) < 0)
                goto done;
        }
        json_object_set_new(g, "tasks",
                            json_integer(json_integer_value(json_object_get(g, "tasks")) + 1));
        json_object_set_new(
            g, "prompt",
            json_integer(json_integer_value(json_object_get(g, "prompt")) + tok(r, "prompt")));
        json_object_set_new(g, "completion",
                            json_integer(json_integer_value(json_object_get(g, "completion")) +
                                         tok(r, "completion")));
        if (json_is_number(c))
            json_object_set_new(
                g, "costUsd",
                json_real(json_number_value(json_object_get(g, "costUsd")) + json_number_value(c)));
        else if (json_object_get(r, "tokens"))
            json_object_set_new(g, "priced", json_false());
    }
    json_object_foreach(groups, key, g)
    {
        if (json_is_false(json_object_get(g, "priced")))
            json_object_set_new(g, "costUsd", json_null());
        json_object_del(g, "priced");
    }
    qsort(durations, nd, sizeof(double), cmp_double);
    out = json_pack("{s:I, s:O, s:O, s:{s:f, s:f, s:f, s:f, s:f}, s:{s:I, s:I, s:I}, s:o, s:I, "
                    "s:O, s:s}",
                    "total", (json_int_t)n, "byStatus", by_status, "byFailureClass", by_class,
                    "durationMs", "p50", percentile(durations, nd, 50), "p90",
                    percentile(durations, nd, 90), "p99", percentile(durations, nd, 99), "max",
                    nd ? durations[nd - 1] : 0.0, "mean", nd ? sum_d / (double)nd : 0.0, "tokens",
                    "prompt", prompt, "completion", completion, "cached", cached, "costUsd",
                    unpriced ? json_null() : json_real(cost), "unpricedTasks", (json_int_t)unpriced,
                    "byAgentModel", by_am, "generatedAt", core_iso8601(ts, core_wall_ms()));
done:
    free(durations);
    json_decref(by_status);
    json_decref(by_class);
    json_decref(groups);
    json_decref(by_am);
    if (!out)
        core_error_oom();
    return out;
}

/* ---- HTML ----------------------------------------------------------------------------------- */

static void html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* Task ids go into relative links: percent-encode everything but unreserved characters. */
static void url_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~')
            fputc(c, f);
        else
            fprintf(f, "%%%02X", c);
    }
}

static const char *status_color(const char *status)
{
    if (!status)
        return "#888";
    if (!strcmp(status, "success"))
        return "#2e7d32";
    if (!strcmp(status, "interrupted"))
        return "#f9a825";
    return "#c62828";
}

static void write_status_bar(FILE *f, const json_t *summary)
{
    const json_t *by = json_object_get(summary, "byStatus");
    double total = (double)json_integer_value(json_object_get(summary, "total")), x = 0;
    const char *key;
    json_t *v;

    fputs("<h2>Status</h2><svg width=\"800\" height=\"40\" role=\"img\" aria-label=\"status "
          "breakdown\">",
          f);
    json_object_foreach((json_t *)by, key, v)
    {
        double w = total > 0 ? 800.0 * (double)json_integer_value(v) / total : 0;

        fprintf(f,
                "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"40\" fill=\"%s\">"
                "<title>",
                x, w, status_color(key));
        html_escape(f, key);
        fprintf(f, ": %lld</title></rect>", (long long)json_integer_value(v));
        x += w;
    }
    fputs("</svg><p>", f);
    json_object_foreach((json_t *)by, key, v)
    {
        fprintf(f, "<span class=\"chip\" style=\"background:%s\">", status_color(key));
        html_escape(f, key);
        fprintf(f, " %lld</span> ", (long long)json_integer_value(v));
    }
    fputs("</p>", f);
}

static void write_histogram(FILE *f, const json_t *results)
{
    enum { BINS = 20 };
    size_t counts[BINS] = {0}, i, maxc = 1;
    double maxd = 0;
    json_t *r;

    json_array_foreach((json_t *)results, i, r)
    {
        double d = json_number_value(json_object_get(r, "durationMs"));
        if (d > maxd)
            maxd = d;
    }
    json_array_foreach((json_t *)results, i, r)
    {
        double d = json_number_value(json_object_get(r, "durationMs"));
        size_t b = maxd > 0 ? (size_t)(d / maxd * (BINS - 1)) : 0;

        if (++counts[b] > maxc)
            maxc = counts[b];
    }
    fprintf(f, "<h2>Duration</h2><svg width=\"820\" height=\"180\" role=\"img\" "
               "aria-label=\"duration histogram\">");
    for (i = 0; i < BINS; i++) {
        double h = 150.0 * (double)counts[i] / (double)maxc;

        fprintf(f,
                "<rect x=\"%zu\" y=\"%.1f\" width=\"36\" height=\"%.1f\" fill=\"#1565c0\">"
                "<title>%.1f-%.1f s: %zu tasks</title></rect>",
                10 + i * 40, 155 - h, h, maxd * (double)i / (BINS - 1) / 1000.0,
                maxd * (double)(i + 1) / (BINS - 1) / 1000.0, counts[i]);
    }
    fprintf(f,
            "<text x=\"10\" y=\"175\" font-size=\"12\">0 s</text><text x=\"760\" y=\"175\" "
            "font-size=\"12\">%.1f s</text></svg>",
            maxd / 1000.0);
}

static void write_table(FILE *f, const json_t *results)
{
    size_t i;
    json_t *r;

    fputs("<h2>Tasks</h2><table><thead><tr><th>id</th><th>status</th><th>class</th>"
          "<th>agent</th><th>model</th><th>duration s</th><th>tokens in/out</th>"
          "<th>cost USD</th><th>links</th></tr></thead><tbody>",
          f);
    json_array_foreach((json_t *)results, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "id"));
        const char *status = json_string_value(json_object_get(r, "status"));
        const json_t *c = json_object_get(r, "costUsd");

        fputs("<tr><td>", f);
        html_escape(f, id);
        fprintf(f, "</td><td style=\"color:%s\">", status_color(status));
        html_escape(f, status);
        fputs("</td><td>", f);
        html_escape(f, json_string_value(json_object_get(r, "failureClass")));
        fputs("</td><td>", f);
        html_escape(f, json_string_value(json_object_get(r, "agent")));
        fputs("</td><td>", f);
        html_escape(f, json_string_value(json_object_get(r, "model")));
        fprintf(f, "</td><td>%.1f</td><td>%lld / %lld</td><td>",
                json_number_value(json_object_get(r, "durationMs")) / 1000.0,
                (long long)tok(r, "prompt"), (long long)tok(r, "completion"));
        if (json_is_number(c))
            fprintf(f, "%.4f", json_number_value(c));
        else
            fputs("&ndash;", f);
        fputs("</td><td><a href=\"events/", f);
        url_escape(f, id);
        fputs(".jsonl\">events</a> <a href=\"outputs/", f);
        url_escape(f, id);
        fputs("/\">outputs</a></td></tr>", f);
    }
    fputs("</tbody></table>", f);
}

static int commit_temp(FILE *f, const char *tmp, const char *path)
{
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;

    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}

static FILE *open_temp(char *tmp, size_t size, const char *path)
{
    int fd;

    snprintf(tmp, size, "%s.tmp-XXXXXX", path);
    fd = mkstemp(tmp);
    if (fd < 0) {
        core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fchmod(fd, 0644) < 0) {
        core_error_set(EVOLVE_EIO, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return NULL;
    }
    return fdopen(fd, "w");
}

int bat_report_write_html(const char *path, const json_t *results, const json_t *summary,
                          const char *title)
{
    char tmp[4096];
    FILE *f = open_temp(tmp, sizeof(tmp), path);
    const json_t *cost = json_object_get(summary, "costUsd");
    const json_t *d = json_object_get(summary, "durationMs");

    if (!f)
        return EVOLVE_EIO;
    fputs("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>", f);
    html_escape(f, title);
    fputs("</title><style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}"
          "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
          "padding:4px 8px;text-align:left}th{background:#f3f3f3}.chip{color:#fff;padding:2px "
          "8px;border-radius:8px;margin-right:6px}.kpi{display:inline-block;margin-right:32px}"
          ".kpi b{display:block;font-size:22px}</style></head><body><h1>",
          f);
    html_escape(f, title);
    fprintf(f,
            "</h1><div><span class=\"kpi\"><b>%lld</b>tasks</span><span class=\"kpi\"><b>%.1f "
            "s</b>p50 duration</span><span class=\"kpi\"><b>%.1f s</b>p99 duration</span>"
            "<span class=\"kpi\"><b>%lld / %lld</b>tokens in / out</span><span "
            "class=\"kpi\"><b>",
            (long long)json_integer_value(json_object_get(summary, "total")),
            json_number_value(json_object_get(d, "p50")) / 1000.0,
            json_number_value(json_object_get(d, "p99")) / 1000.0,
            (long long)json_integer_value(
                json_object_get(json_object_get(summary, "tokens"), "prompt")),
            (long long)json_integer_value(
                json_object_get(json_object_get(summary, "tokens"), "completion")));
    if (json_is_number(cost))
        fprintf(f, "$%.4f", json_number_value(cost));
    else
        fputs("unpriced", f);
    fputs("</b>cost</span></div>", f);
    write_status_bar(f, summary);
    write_histogram(f, results);
    write_table(f, results);
    fputs("</body></html>\n", f);
    if (ferror(f)) {
        fclose(f);
        unlink(tmp);
        return core_error_set(EVOLVE_EIO, "%s: write failed", path);
    }
    return commit_temp(f, tmp, path);
}

int bat_write_json_atomic(const char *path, const json_t *value)
{
    char tmp[4096];
    FILE *f = open_temp(tmp, sizeof(tmp), path);

    if (!f)
        return EVOLVE_EIO;
    if (json_dumpf(value, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF) {
        fclose(f);
        unlink(tmp);
        return core_error_set(EVOLVE_EIO, "%s: write failed", path);
    }
    return commit_temp(f, tmp, path);
}
