/* manifest.c — the task manifest reader: JSONL lines to validated bat_task records.
 * Owns: field validation, defaults, resolution of file/dir sources against the manifest's
 * directory, duplicate-id detection and sharding. Does not own: reading source contents (that
 * happens at upload time, so a 500-task manifest does not hold every context in memory).
 * Threads: any; no shared state. */
#include "batch/manifest.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "harness/harness.h"

#define DEFAULT_TIMEOUT_MS 3600000u

static bool registry_knows(const char *name)
{
    return hns_agent_find(name) != NULL;
}

/* A tiny open-addressing set of ids for duplicate detection; it owns copies of the ids so tasks
 * can move when their array grows. */
struct idset {
    char **slot;
    size_t cap, count;
};

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Returns 1 when inserted, 0 when present, <0 on OOM. */
static int idset_add(struct idset *s, const char *id)
{
    size_t i;

    if ((s->count + 1) * 2 > s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64, j;
        char **n = calloc(ncap, sizeof(*n));

        if (!n)
            return core_error_oom();
        for (j = 0; j < s->cap; j++) {
            if (!s->slot[j])
                continue;
            for (i = fnv1a(s->slot[j]) & (ncap - 1); n[i]; i = (i + 1) & (ncap - 1))
                ;
            n[i] = s->slot[j];
        }
        free(s->slot);
        s->slot = n;
        s->cap = ncap;
    }
    for (i = fnv1a(id) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
        if (!strcmp(s->slot[i], id))
            return 0;
    s->slot[i] = strdup(id);
    if (!s->slot[i])
        return core_error_oom();
    s->count++;
    return 1;
}

static void idset_dispose(struct idset *s)
{
    size_t i;

    for (i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s->slot);
}

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void source_dispose(struct bat_source *src)
{
    free(src->dest);
    free(src->text);
    free(src->local_path);
}

void bat_task_dispose(struct bat_task *t)
{
    size_t i;

    free(t->id);
    free(t->prompt);
    free(t->agent);
    free(t->model);
    free(t->provider);
    for (i = 0; i < t->context_count; i++)
        source_dispose(&t->context[i]);
    free(t->context);
    for (i = 0; i < t->files_count; i++)
        source_dispose(&t->files[i]);
    free(t->files);
    json_decref(t->schema);
    free(t->system_prompt);
    free(t->from);
    for (i = 0; t->tags && t->tags[i]; i++)
        free(t->tags[i]);
    free(t->tags);
    memset(t, 0, sizeof(*t));
}

void bat_manifest_free(struct bat_manifest *m)
{
    size_t i;

    if (!m)
        return;
    for (i = 0; i < m->count; i++)
        bat_task_dispose(&m->tasks[i]);
    free(m->tasks);
    for (i = 0; i < m->problems_count; i++)
        free(m->problems[i]);
    free(m->problems);
    free(m->path);
    free(m);
}

/* "a/b" relative to the manifest dir; absolute paths stay. */
static char *resolve(const char *base_dir, const char *p)
{
    size_t n;
    char *out;

    if (p[0] == '/')
        return strdup(p);
    n = strlen(base_dir) + strlen(p) + 2;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", base_dir, p);
    return out;
}

/* A destination inside the sandbox must be relative and must not climb out. */
static bool dest_is_safe(const char *d)
{
    const char *p = d;

    if (!*d || d[0] == '/')
        return false;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);

        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

/* Fills `out` from one `context`/`files` member; returns 0 or EVOLVE_EINVAL with the reason. */
static int load_source(struct bat_source *out, const char *base_dir, const char *field,
                       const char *dest, const json_t *v)
{
    struct stat st;
    const char *p;

    memset(out, 0, sizeof(*out));
    if (!dest_is_safe(dest))
        return core_error_set(EVOLVE_EINVAL, "%s path \"%s\" must be relative and stay inside",
                              field, dest);
    out->dest = strdup(dest);
    if (!out->dest)
        return core_error_oom();
    if (json_is_string(v)) {
        out->kind = BAT_SOURCE_INLINE;
        out->text_len = json_string_length(v);
        out->text = malloc(out->text_len + 1);
        if (!out->text)
            return core_error_oom();
        memcpy(out->text, json_string_value(v), out->text_len + 1);
        return 0;
    }
    if (json_is_object(v) && json_is_string(json_object_get(v, "file"))) {
        out->kind = BAT_SOURCE_FILE;
        p = json_string_value(json_object_get(v, "file"));
    } else if (json_is_object(v) && json_is_string(json_object_get(v, "dir"))) {
        out->kind = BAT_SOURCE_DIR;
        p = json_string_value(json_object_get(v, "dir"));
    } else {
        return core_error_set(EVOLVE_EINVAL,
                              "%s \"%s\" must be a string, {\"file\": path} or {\"dir\": path}",
                              field, dest);
    }
    out->local_path = resolve(base_dir, p);
    if (!out->local_path)
        return core_error_oom();
    if (stat(out->local_path, &st) < 0 || access(out->local_path, R_OK) < 0)
        return core_error_set(EVOLVE_EINVAL, "%s \"%s\": cannot read %s: %s", field, dest,
                              out->local_path, strerror(errno));
    if (out->kind == BAT_SOURCE_FILE && !S_ISREG(st.st_mode))
        return core_error_set(EVOLVE_EINVAL, "%s \"%s\": %s is not a regular file", field, dest,
                              out->local_path);
    if (out->kind == BAT_SOURCE_DIR && !S_ISDIR(st.st_mode))
        return core_error_set(EVOLVE_EINVAL, "%s \"%s\": %s is not a directory", field, dest,
                              out->local_path);
    return 0;
}

static int load_sources(struct bat_source **arr, size_t *count, const char *base_dir,
                        const char *field, const json_t *obj)
{
    const char *key;
    json_t *v;
    int rc;

    if (!obj)
        return 0;
    if (!json_is_object(obj))
        return core_error_set(EVOLVE_EINVAL, "\"%s\" must be an object of path -> content", field);
    *arr = calloc(json_object_size(obj) + 1, sizeof(**arr));
    if (!*arr)
        return core_error_oom();
    json_object_foreach((json_t *)obj, key, v)
    {
        rc = load_source(&(*arr)[*count], base_dir, field, key, v);
        (*count)++; /* counted even on failure so dispose frees the half-built entry */
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int load_schema(json_t **out, const char *base_dir, const json_t *v)
{
    json_error_t err;
    char *p;

    if (json_is_object(v) || json_is_boolean(v)) {
        *out = json_incref((json_t *)v);
        return 0;
    }
    if (!json_is_string(v))
        return core_error_set(EVOLVE_EINVAL, "\"schema\" must be a JSON Schema or a file path");
    p = resolve(base_dir, json_string_value(v));
    if (!p)
        return core_error_oom();
    *out = json_load_file(p, JSON_DECODE_ANY, &err);
    if (!*out) {
        core_error_set(EVOLVE_EINVAL, "schema file %s: %s (line %d)", p, err.text, err.line);
        free(p);
        return EVOLVE_EINVAL;
    }
    free(p);
    return 0;
}

static int opt_string(char **out, const json_t *line, const char *key, const char *dflt)
{
    const json_t *v = json_object_get(line, key);

    if (v && !json_is_string(v) && !json_is_null(v))
        return core_error_set(EVOLVE_EINVAL, "\"%s\" must be a string", key);
    *out = xstrdup(json_is_string(v) ? json_string_value(v) : dflt);
    if ((json_is_string(v) || dflt) && !*out)
        return core_error_oom();
    return 0;
}

static int positive_int(uint64_t *out, const json_t *line, const char *key, uint64_t dflt,
                        uint64_t max)
{
    const json_t *v = json_object_get(line, key);

    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 || (uint64_t)json_integer_value(v) > max)
        return core_error_set(EVOLVE_EINVAL, "\"%s\" must be an integer from 1 to %llu", key,
                              (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int load_tags(char ***out, const json_t *v)
{
    size_t i;
    json_t *t;

    if (v && !json_is_array(v))
        return core_error_set(EVOLVE_EINVAL, "\"tags\" must be an array of strings");
    *out = calloc(json_array_size(v) + 1, sizeof(char *));
    if (!*out)
        return core_error_oom();
    json_array_foreach((json_t *)v, i, t)
    {
        if (!json_is_string(t))
            return core_error_set(EVOLVE_EINVAL, "\"tags\"[%zu] must be a string", i);
        (*out)[i] = strdup(json_string_value(t));
        if (!(*out)[i])
            return core_error_oom();
    }
    return 0;
}

static const char *const known_keys[] = {
    "id",           "prompt",    "agent", "model", "context",  "files",    "schema",
    "systemPrompt", "timeoutMs", "from",  "tags",  "attempts", "provider", NULL,
};

static int load_task(struct bat_task *t, const json_t *line, const char *base_dir,
                     const struct bat_defaults *d)
{
    const json_t *v;
    const char *key;
    json_t *val;
    uint64_t n;
    int rc;

    json_object_foreach((json_t *)line, key, val)
    {
        size_t k;

        for (k = 0; known_keys[k] && strcmp(known_keys[k], key); k++)
            ;
        if (!known_keys[k])
            return core_error_set(EVOLVE_EINVAL, "unknown field \"%s\"", key);
    }
    v = json_object_get(line, "prompt");
    if (!json_is_string(v) || json_string_length(v) == 0)
        return core_error_set(EVOLVE_EINVAL,
                              "\"prompt\" is required and must be a non-empty string");
    t->prompt = strdup(json_string_value(v));
    if (!t->prompt)
        return core_error_oom();
    if ((rc = opt_string(&t->agent, line, "agent", d->agent ? d->agent : "claude")) < 0)
        return rc;
    if (!(d->agent_known ? d->agent_known : registry_knows)(t->agent))
        return core_error_set(EVOLVE_EINVAL, "unknown agent \"%s\"", t->agent);
    if ((rc = opt_string(&t->provider, line, "provider", NULL)) < 0)
        return rc;
    if (t->provider && strcmp(t->provider, "local") && strcmp(t->provider, "e2b") &&
        strcmp(t->provider, "daytona") && strcmp(t->provider, "auto"))
        return core_error_set(EVOLVE_EINVAL, "%s",
                              !strcmp(t->provider, "modal")
                                  ? "Modal is not supported yet"
                                  : "unknown \"provider\" (local, e2b, daytona or auto)");
    if ((rc = opt_string(&t->model, line, "model", d->model)) < 0 ||
        (rc = opt_string(&t->system_prompt, line, "systemPrompt", d->system_prompt)) < 0 ||
        (rc = opt_string(&t->from, line, "from", NULL)) < 0)
        return rc;
    if ((rc = positive_int(&t->timeout_ms, line, "timeoutMs",
                           d->timeout_ms ? d->timeout_ms : DEFAULT_TIMEOUT_MS, UINT32_MAX)) < 0)
        return rc;
    if ((rc = positive_int(&n, line, "attempts", d->attempts ? d->attempts : 1, 100)) < 0)
        return rc;
    t->attempts = (unsigned)n;
    if ((rc = load_tags(&t->tags, json_object_get(line, "tags"))) < 0)
        return rc;
    if ((rc = load_sources(&t->context, &t->context_count, base_dir, "context",
                           json_object_get(line, "context"))) < 0)
        return rc;
    if ((rc = load_sources(&t->files, &t->files_count, base_dir, "files",
                           json_object_get(line, "files"))) < 0)
        return rc;
    v = json_object_get(line, "schema");
    if (v && !json_is_null(v))
        return load_schema(&t->schema, base_dir, v);
    if (d->schema_path) {
        json_t *p = json_string(d->schema_path);

        rc = p ? load_schema(&t->schema, ".", p) : core_error_oom();
        json_decref(p);
        return rc;
    }
    return 0;
}

int bat_task_parse(struct bat_task *t, const char *json, const char *base_dir,
                   const struct bat_defaults *defs)
{
    static const struct bat_defaults no_defaults;
    json_error_t jerr;
    json_t *obj;
    const json_t *id;
    int rc;

    memset(t, 0, sizeof(*t));
    obj = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    if (!obj)
        return core_error_set(EVOLVE_EINVAL, "task: invalid JSON at column %d: %s", jerr.column,
                              jerr.text);
    if (!json_is_object(obj))
        rc = core_error_set(EVOLVE_EINVAL, "task: a task must be a JSON object");
    else if (!json_is_string(id = json_object_get(obj, "id")) || json_string_length(id) == 0)
        rc = core_error_set(EVOLVE_EINVAL,
                            "task: \"id\" is required and must be a non-empty string");
    else if (!(t->id = strdup(json_string_value(id))))
        rc = core_error_oom();
    else
        rc = load_task(t, obj, base_dir ? base_dir : ".", defs ? defs : &no_defaults);
    json_decref(obj);
    if (rc < 0)
        bat_task_dispose(t);
    return rc;
}

static int add_problem(struct bat_manifest *m, size_t line)
{
    char buf[700];
    char **n = realloc(m->problems, (m->problems_count + 2) * sizeof(char *));

    if (!n)
        return core_error_oom();
    m->problems = n;
    snprintf(buf, sizeof(buf), "%s:%zu: %s", m->path, line, evolve_error_last()->message);
    m->problems[m->problems_count] = strdup(buf);
    if (!m->problems[m->problems_count])
        return core_error_oom();
    m->problems[++m->problems_count] = NULL;
    return 0;
}

int bat_manifest_load(struct bat_manifest **out, const char *path, const struct bat_defaults *defs)
{
    static const struct bat_defaults no_defaults;
    struct bat_manifest *m;
    struct idset ids = {0};
    char *line = NULL, *dircopy = NULL;
    const char *base_dir;
    size_t cap = 0, lineno = 0, tasks_cap = 0;
    ssize_t len;
    FILE *f;
    int rc = 0;

    *out = NULL;
    if (!defs)
        defs = &no_defaults;
    f = fopen(path, "r");
    if (!f)
        return core_error_set(EVOLVE_EIO, "%s: %s", path, strerror(errno));
    m = calloc(1, sizeof(*m));
    dircopy = strdup(path);
    if (!m || !dircopy || !(m->path = strdup(path))) {
        rc = core_error_oom();
        goto done;
    }
    base_dir = dirname(dircopy);
    while ((len = getline(&line, &cap, f)) >= 0) {
        struct bat_task t;
        json_error_t jerr;
        json_t *obj;
        const json_t *id;
        int lrc;

        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (len == 0)
            continue;
        memset(&t, 0, sizeof(t));
        t.line = lineno;
        obj = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj) {
            lrc = core_error_set(EVOLVE_EINVAL, "invalid JSON at column %d: %s", jerr.column,
                                 jerr.text);
        } else if (!json_is_object(obj)) {
            lrc = core_error_set(EVOLVE_EINVAL, "a task must be a JSON object");
        } else if (!json_is_string(id = json_object_get(obj, "id")) ||
                   json_string_length(id) == 0) {
            lrc =
                core_error_set(EVOLVE_EINVAL, "\"id\" is required and must be a non-empty string");
        } else if (!(t.id = strdup(json_string_value(id)))) {
            lrc = core_error_oom();
        } else {
            lrc = load_task(&t, obj, base_dir, defs);
        }
        if (lrc == 0) {
            lrc = idset_add(&ids, t.id);
            if (lrc == 0)
                lrc = core_error_set(EVOLVE_EINVAL, "duplicate id \"%s\"", t.id);
            else if (lrc > 0)
                lrc = 0;
        }
        json_decref(obj);
        if (lrc == EVOLVE_ENOMEM) {
            bat_task_dispose(&t);
            rc = lrc;
            goto done;
        }
        if (lrc < 0) {
            bat_task_dispose(&t);
            if ((rc = add_problem(m, lineno)) < 0)
                goto done;
            continue;
        }
        if (m->count == tasks_cap) {
            size_t ncap = tasks_cap ? tasks_cap * 2 : 64;
            struct bat_task *n = realloc(m->tasks, ncap * sizeof(*n));

            if (!n) {
                bat_task_dispose(&t);
                rc = core_error_oom();
                goto done;
            }
            m->tasks = n;
            tasks_cap = ncap;
        }
        m->tasks[m->count++] = t;
    }
    if (ferror(f))
        rc = core_error_set(EVOLVE_EIO, "%s: read error: %s", path, strerror(errno));
    else if (m->problems_count)
        rc = core_error_set(EVOLVE_EINVAL, "%s (and %zu more invalid line%s)", m->problems[0],
                            m->problems_count - 1, m->problems_count == 2 ? "" : "s");
done:
    fclose(f);
    free(line);
    free(dircopy);
    idset_dispose(&ids);
    if (rc < 0 && rc != EVOLVE_EINVAL) {
        bat_manifest_free(m);
        return rc;
    }
    *out = m;
    return rc;
}

bool bat_task_in_shard(const struct bat_task *t, unsigned index, unsigned count)
{
    if (count <= 1)
        return true;
    return fnv1a(t->id) % count == (uint64_t)(index - 1);
}

int bat_shard_parse(const char *text, unsigned *index, unsigned *count)
{
    char *end;
    long i, n;

    errno = 0;
    i = strtol(text, &end, 10);
    if (end == text || *end != '/')
        goto bad;
    n = strtol(end + 1, &end, 10);
    if (*end || errno || n < 1 || i < 1 || i > n || n > 100000)
        goto bad;
    *index = (unsigned)i;
    *count = (unsigned)n;
    return 0;
bad:
    return core_error_set(EVOLVE_EINVAL, "--shard \"%s\": expected I/N with 1 <= I <= N", text);
}
