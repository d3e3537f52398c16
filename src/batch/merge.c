/* merge.c — evolve_batch_merge: the union of several batch output directories' results (e.g. one
 * per shard) into one results.jsonl with a fresh summary.json and report.html.
 * Threads: the caller's (plain file I/O). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch/report.h"
#include "core/error.h"
#include "evolve/batch.h"

/* Adds every complete line of dir/results.jsonl to `by_id` (a success is never replaced by a
 * later failure; otherwise the later line wins) and `order` (first appearance). */
static int read_results(json_t *by_id, json_t *order, const char *dir)
{
    char path[4096], *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/results.jsonl", dir);
    if (!(f = fopen(path, "r")))
        return core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(errno));
    while ((len = getline(&line, &cap, f)) >= 0) {
        json_t *r, *prev;
        const char *id, *ps;

        lineno++;
        if (len == 0 || line[len - 1] != '\n')
            continue; /* a torn tail: that task did not finish there */
        r = json_loadb(line, (size_t)len, 0, NULL);
        id = json_string_value(json_object_get(r, "id"));
        if (!id) {
            json_decref(r);
            continue;
        }
        prev = json_object_get(by_id, id);
        ps = json_string_value(json_object_get(prev, "status"));
        if (!prev)
            json_array_append_new(order, json_string(id));
        if (!prev || !ps || strcmp(ps, "success") ||
            !strcmp(json_string_value(json_object_get(r, "status")) ?: "", "success"))
            json_object_set(by_id, id, r);
        json_decref(r);
    }
    free(line);
    fclose(f);
    return 0;
}

static int write_lines(const char *outdir, const json_t *results)
{
    char path[4096], tmp[4200];
    size_t i;
    json_t *r;
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/results.jsonl", outdir);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    if (!(f = fopen(tmp, "w")))
        return core_error_set(EVOLVE_EIO, "%s: %s", tmp, strerror(errno));
    json_array_foreach(results, i, r)
    {
        json_dumpf(r, f, JSON_COMPACT);
        fputc('\n', f);
    }
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(errno));
    }
    return 0;
}

int evolve_batch_merge(const char *outdir, const char *const *dirs, size_t count)
{
    json_t *by_id = json_object(), *order = json_array(), *results = json_array(), *summary = NULL,
           *idv;
    char path[4096];
    size_t i;
    int rc = 0;

    if (!outdir || !dirs || !count)
        rc = core_error_set(EVOLVE_EINVAL, "batch merge: an output and at least one input "
                                           "directory are needed");
    else if (!by_id || !order || !results)
        rc = core_error_oom();
    else if (mkdir(outdir, 0755) < 0 && errno != EEXIST)
        rc = core_error_set(EVOLVE_EIO, "%s: %s", outdir, strerror(errno));
    for (i = 0; rc == 0 && i < count; i++)
        rc = read_results(by_id, order, dirs[i]);
    if (rc == 0) {
        json_array_foreach(order, i, idv)
            json_array_append(results, json_object_get(by_id, json_string_value(idv)));
        rc = write_lines(outdir, results);
    }
    if (rc == 0 && !(summary = bat_summary_build(results)))
        rc = core_error_oom();
    if (rc == 0) {
        snprintf(path, sizeof(path), "%s/summary.json", outdir);
        rc = bat_write_json_atomic(path, summary);
    }
    if (rc == 0) {
        snprintf(path, sizeof(path), "%s/report.html", outdir);
        rc = bat_report_write_html(path, results, summary, "evolve batch (merged)");
    }
    json_decref(summary);
    json_decref(results);
    json_decref(order);
    json_decref(by_id);
    return rc;
}
