/* fake.h — fake agent tasks for the batch tests: manifest lines whose "agent" is the replay agent
 * in its sh mode (EVOLVE_REPLAY_MODE=sh runs the prompt as a script), so a task can print a
 * recorded Claude trace, write output/result.json, crash, hang past its timeout, or kill its own
 * sandbox daemon once (a lost sandbox, retried). Static helpers, one copy per test program. */
#ifndef EVOLVE_TEST_BATCH_FAKE_H
#define EVOLVE_TEST_BATCH_FAKE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

enum fake_kind {
    FAKE_OK,         /* valid result.json (schema) */
    FAKE_OK_PLAIN,   /* no schema, no result.json */
    FAKE_CRASH,      /* exit 3 */
    FAKE_TIMEOUT,    /* sleeps past timeoutMs */
    FAKE_SCHEMA_BAD, /* result.json fails the schema */
    FAKE_LOST_ONCE,  /* first attempt kills its sandbox daemon; the retry succeeds */
    FAKE_SLOW_OK,    /* like OK after a short sleep (kill -9 / signal tests) */
    FAKE_HANG,       /* sleeps 30 s under the batch default timeout (cancel tests) */
    FAKE_KIND_COUNT
};

/* The kind of the i-th task of the standard mix (one in ten of each failure). */
static inline enum fake_kind fake_mix(size_t i)
{
    static const enum fake_kind mix[10] = {FAKE_OK,         FAKE_OK,       FAKE_OK,    FAKE_OK,
                                           FAKE_OK_PLAIN,   FAKE_OK_PLAIN, FAKE_CRASH, FAKE_TIMEOUT,
                                           FAKE_SCHEMA_BAD, FAKE_LOST_ONCE};
    return mix[i % 10];
}

/* The class the result must carry (NULL: success). */
static inline const char *fake_expected_class(enum fake_kind k)
{
    switch (k) {
    case FAKE_CRASH:
        return "agent-crash";
    case FAKE_TIMEOUT:
        return "agent-timeout";
    case FAKE_SCHEMA_BAD:
        return "schema-invalid";
    default:
        return NULL;
    }
}

static char fake_trace[1024] = "trace.jsonl"; /* absolute once fake_write_trace ran */

/* Writes dir/trace.jsonl (the recorded claude trace) for tasks to reference. */
static inline void fake_write_trace(const char *dir)
{
    char src[1024], dst[1024];
    size_t len;
    char *t = ts_read_file(ts_data_path(src, sizeof(src), "traces/claude-tool.stdout.jsonl"), &len);

    if (!t)
        ts_die("cannot read %s", src);
    snprintf(dst, sizeof(dst), "%s/trace.jsonl", dir);
    ts_write_file(dst, t, len);
    snprintf(fake_trace, sizeof(fake_trace), "%s", dst);
    free(t);
}

/* One manifest line (caller frees). mark_dir: host directory for FAKE_LOST_ONCE markers
 * (isolation none only: the script sees the host filesystem). */
static inline char *fake_task_line(const char *id, enum fake_kind k, const char *mark_dir)
{
    static const char ok[] =
        "cat trace.jsonl\nmkdir -p output && printf '{\"answer\": 42}' > output/result.json\n";
    char script[2048];
    json_t *t, *files;
    char *line;
    bool schema = k == FAKE_OK || k == FAKE_SCHEMA_BAD || k == FAKE_LOST_ONCE || k == FAKE_SLOW_OK;

    switch (k) {
    case FAKE_OK:
        snprintf(script, sizeof(script), "%s", ok);
        break;
    case FAKE_OK_PLAIN:
        snprintf(script, sizeof(script), "cat trace.jsonl\n");
        break;
    case FAKE_CRASH:
        snprintf(script, sizeof(script), "cat trace.jsonl\necho boom >&2\nexit 3\n");
        break;
    case FAKE_TIMEOUT:
    case FAKE_HANG:
        snprintf(script, sizeof(script), "exec sleep 30\n");
        break;
    case FAKE_SCHEMA_BAD:
        snprintf(script, sizeof(script),
                 "cat trace.jsonl\nmkdir -p output && printf "
                 "'{\"answer\": \"x\"}' > output/result.json\n");
        break;
    case FAKE_LOST_ONCE:
        snprintf(script, sizeof(script),
                 "if [ ! -e '%s/%s' ]; then : > '%s/%s'; kill -9 $PPID; exec sleep 30; fi\n%s",
                 mark_dir, id, mark_dir, id, ok);
        break;
    case FAKE_SLOW_OK:
        snprintf(script, sizeof(script), "sleep 0.%d\n%s", 1 + (int)(strlen(id) % 3), ok);
        break;
    default:
        ts_die("bad kind");
    }
    files = k == FAKE_TIMEOUT || k == FAKE_HANG ? json_pack("{s:s}", "agent.sh", script)
                                                : json_pack("{s:s, s:{s:s}}", "agent.sh", script,
                                                            "trace.jsonl", "file", fake_trace);
    t = json_pack("{s:s, s:s, s:s, s:o, s:[s]}", "id", id, "prompt", "agent.sh", "agent", "replay",
                  "files", files, "tags", "fake");
    if (schema)
        json_object_set_new(t, "schema",
                            json_pack("{s:s, s:[s], s:{s:{s:s}}}", "type", "object", "required",
                                      "answer", "properties", "answer", "type", "integer"));
    if (k == FAKE_TIMEOUT)
        json_object_set_new(t, "timeoutMs", json_integer(400));
    line = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    return line;
}

/* Writes a manifest of n tasks "t000".. with kinds from `kind_of` to path. */
static inline void fake_write_manifest(const char *path, size_t n,
                                       enum fake_kind (*kind_of)(size_t), const char *mark_dir)
{
    size_t i, len = 0, cap = 1 << 16;
    char *buf = malloc(cap), id[32];

    for (i = 0; i < n; i++) {
        char *line;
        size_t l;

        snprintf(id, sizeof(id), "t%03zu", i);
        line = fake_task_line(id, kind_of(i), mark_dir);
        l = strlen(line);
        while (len + l + 2 > cap)
            buf = realloc(buf, cap *= 2);
        memcpy(buf + len, line, l);
        len += l;
        buf[len++] = '\n';
        free(line);
    }
    ts_write_file(path, buf, len);
    free(buf);
}

/* Reads results.jsonl into an array of objects (dies when a line is not JSON). */
static inline json_t *fake_read_results(const char *outdir)
{
    char path[1024], *text, *p, *nl;
    json_t *arr = json_array();

    snprintf(path, sizeof(path), "%s/results.jsonl", outdir);
    text = ts_read_file(path, NULL);
    if (!text)
        return arr;
    for (p = text; (nl = strchr(p, '\n')); p = nl + 1) {
        json_t *r = json_loadb(p, (size_t)(nl - p), 0, NULL);

        if (!r)
            ts_die("%s: a line is not JSON: %.80s", path, p);
        json_array_append_new(arr, r);
    }
    free(text);
    return arr;
}

#endif
