/* mock_scenario.c — the scenario file of evolve mock-llm: finding it by name or path, parsing and
 * validating it into struct mock_scenario (format: docs/mock-llm.md). Unknown keys are errors,
 * so a typo in a scenario fails loudly instead of silently changing the script.
 * Threads: the thread starting the server; a loaded scenario is read-only afterwards. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "mockllm/mock_impl.h"

#ifndef EVOLVE_SOURCE_DATADIR
#define EVOLVE_SOURCE_DATADIR "data"
#endif
#ifndef EVOLVE_DATADIR
#define EVOLVE_DATADIR "/usr/local/share/evolve"
#endif

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void free_call(struct mock_call *c)
{
    free(c->command);
    free(c->path);
    free(c->content);
    free(c->old_text);
    free(c->new_text);
}

void mock_scenario_free(struct mock_scenario *sc)
{
    size_t i, k;

    if (!sc)
        return;
    for (i = 0; i < sc->nturns; i++) {
        struct mock_turn *t = &sc->turns[i];

        free(t->thinking);
        free(t->text);
        free(t->error_message);
        for (k = 0; k < t->ncalls; k++)
            free_call(&t->calls[k]);
        free(t->calls);
    }
    free(sc->turns);
    free(sc->name);
    free(sc->source);
    free(sc->final_text);
    free(sc->side_text);
    free(sc);
}

/* Every key of `obj` must be in the NULL-terminated `allowed` list. */
static int check_keys(const json_t *obj, const char *const *allowed, const char *src,
                      const char *where)
{
    const char *key;
    json_t *val;
    size_t i;

    json_object_foreach((json_t *)obj, key, val)
    {
        for (i = 0; allowed[i]; i++)
            if (!strcmp(allowed[i], key))
                break;
        if (!allowed[i])
            return core_error_set(EVOLVE_EINVAL, "%s: %s: unknown key \"%s\"", src, where, key);
    }
    return 0;
}

/* Optional string member: *out stays NULL when absent. */
static int get_str(const json_t *obj, const char *key, char **out, const char *src,
                   const char *where)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return 0;
    if (!json_is_string(v))
        return core_error_set(EVOLVE_EINVAL, "%s: %s.%s must be a string", src, where, key);
    *out = strdup(json_string_value(v));
    return *out ? 0 : core_error_oom();
}

static int get_num(const json_t *obj, const char *key, double lo, double hi, double *out,
                   const char *src, const char *where)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return 0;
    if (!json_is_number(v) || json_number_value(v) < lo || json_number_value(v) > hi)
        return core_error_set(EVOLVE_EINVAL, "%s: %s.%s must be a number in [%g, %g]", src, where,
                              key, lo, hi);
    *out = json_number_value(v);
    return 0;
}

static int parse_pacing(const json_t *p, struct mock_pacing *out, const char *src,
                        const char *where)
{
    static const char *const keys[] = {"ttft_ms", "tokens_per_second", NULL};
    double ttft = out->ttft_ms, tps = out->tokens_per_second;
    int rc;

    if (!json_is_object(p))
        return core_error_set(EVOLVE_EINVAL, "%s: %s.pacing must be an object", src, where);
    if ((rc = check_keys(p, keys, src, where)) ||
        (rc = get_num(p, "ttft_ms", 0, 600000, &ttft, src, where)) ||
        (rc = get_num(p, "tokens_per_second", 0, 1e9, &tps, src, where)))
        return rc;
    out->ttft_ms = (uint32_t)ttft;
    out->tokens_per_second = tps;
    return 0;
}

/* One call: {"shell": "cmd"} | {"write": {"path","content"}} | {"edit": {"path","old","new"}}. */
static int parse_call(const json_t *obj, struct mock_call *c, const char *src, const char *where)
{
    static const char *const wkeys[] = {"path", "content", NULL};
    static const char *const ekeys[] = {"path", "old", "new", NULL};
    json_t *v;
    int rc;

    if ((v = json_object_get(obj, "shell"))) {
        if (!json_is_string(v))
            return core_error_set(EVOLVE_EINVAL, "%s: %s.shell must be a string", src, where);
        c->kind = MOCK_CALL_SHELL;
        c->command = strdup(json_string_value(v));
        return c->command ? 0 : core_error_oom();
    }
    if ((v = json_object_get(obj, "write"))) {
        c->kind = MOCK_CALL_WRITE;
        if (!json_is_object(v))
            return core_error_set(EVOLVE_EINVAL, "%s: %s.write must be an object", src, where);
        if ((rc = check_keys(v, wkeys, src, where)) ||
            (rc = get_str(v, "path", &c->path, src, where)) ||
            (rc = get_str(v, "content", &c->content, src, where)))
            return rc;
        if (!c->path || !c->content)
            return core_error_set(EVOLVE_EINVAL, "%s: %s.write needs \"path\" and \"content\"", src,
                                  where);
        return 0;
    }
    if ((v = json_object_get(obj, "edit"))) {
        c->kind = MOCK_CALL_EDIT;
        if (!json_is_object(v))
            return core_error_set(EVOLVE_EINVAL, "%s: %s.edit must be an object", src, where);
        if ((rc = check_keys(v, ekeys, src, where)) ||
            (rc = get_str(v, "path", &c->path, src, where)) ||
            (rc = get_str(v, "old", &c->old_text, src, where)) ||
            (rc = get_str(v, "new", &c->new_text, src, where)))
            return rc;
        if (!c->path || !c->old_text || !c->new_text || !*c->old_text)
            return core_error_set(EVOLVE_EINVAL,
                                  "%s: %s.edit needs \"path\", a non-empty \"old\" and \"new\"",
                                  src, where);
        return 0;
    }
    return core_error_set(EVOLVE_EINVAL, "%s: %s: a call needs \"shell\", \"write\" or \"edit\"",
                          src, where);
}

static int parse_error(const json_t *e, struct mock_turn *t, const char *src, const char *where)
{
    static const char *const keys[] = {"status", "retry_after", "message", "times", NULL};
    double status = 0, retry = 0, times = 0;
    int rc;

    if (!json_is_object(e))
        return core_error_set(EVOLVE_EINVAL, "%s: %s.error must be an object", src, where);
    if ((rc = check_keys(e, keys, src, where)) ||
        (rc = get_num(e, "status", 400, 599, &status, src, where)) ||
        (rc = get_num(e, "retry_after", 0, 86400, &retry, src, where)) ||
        (rc = get_num(e, "times", 0, 1e6, &times, src, where)) ||
        (rc = get_str(e, "message", &t->error_message, src, where)))
        return rc;
    if (status == 0)
        return core_error_set(EVOLVE_EINVAL, "%s: %s.error needs \"status\" (e.g. 429)", src,
                              where);
    t->error_status = (int)status;
    t->retry_after_s = (int)retry;
    t->error_times = (unsigned)times;
    return 0;
}

static int parse_turn(const json_t *obj, struct mock_turn *t, const struct mock_scenario *sc,
                      size_t idx)
{
    static const char *const keys[] = {"thinking", "text",  "shell",  "write", "edit",
                                       "calls",    "error", "pacing", NULL};
    const char *src = sc->source;
    char where[48], cw[96];
    json_t *calls = json_object_get(obj, "calls"), *v;
    size_t i, n = 0;
    int rc;

    snprintf(where, sizeof(where), "turns[%zu]", idx);
    if (!json_is_object(obj))
        return core_error_set(EVOLVE_EINVAL, "%s: %s must be an object", src, where);
    if (json_object_size(obj) == 0)
        return core_error_set(EVOLVE_EINVAL, "%s: %s is empty", src, where);
    if ((rc = check_keys(obj, keys, src, where)) ||
        (rc = get_str(obj, "thinking", &t->thinking, src, where)) ||
        (rc = get_str(obj, "text", &t->text, src, where)))
        return rc;
    if (calls && !json_is_array(calls))
        return core_error_set(EVOLVE_EINVAL, "%s: %s.calls must be an array", src, where);
    n = json_array_size(calls) + !!json_object_get(obj, "shell") + !!json_object_get(obj, "write") +
        !!json_object_get(obj, "edit");
    if (n > MOCK_MAX_BLOCKS - 2)
        return core_error_set(EVOLVE_EINVAL, "%s: %s has more than %d calls", src, where,
                              MOCK_MAX_BLOCKS - 2);
    if (n && !(t->calls = calloc(n, sizeof(*t->calls))))
        return core_error_oom();
    /* The shorthand keys come first, then "calls" in order. */
    for (i = 0; i < 3; i++) {
        static const char *const shorthand[] = {"shell", "write", "edit"};
        json_t *one;

        if (!json_object_get(obj, shorthand[i]))
            continue;
        one = json_pack("{sO}", shorthand[i], json_object_get(obj, shorthand[i]));
        if (!one)
            return core_error_oom();
        rc = parse_call(one, &t->calls[t->ncalls++], src, where);
        json_decref(one);
        if (rc)
            return rc;
    }
    json_array_foreach(calls, i, v)
    {
        snprintf(cw, sizeof(cw), "%s.calls[%zu]", where, i);
        if (!json_is_object(v) || json_object_size(v) != 1)
            return core_error_set(EVOLVE_EINVAL, "%s: %s must be an object with one key", src, cw);
        if ((rc = parse_call(v, &t->calls[t->ncalls++], src, cw)))
            return rc;
    }
    if ((v = json_object_get(obj, "error")) && (rc = parse_error(v, t, src, where)))
        return rc;
    if ((v = json_object_get(obj, "pacing"))) {
        t->pacing = sc->pacing;
        if ((rc = parse_pacing(v, &t->pacing, src, where)))
            return rc;
        t->has_pacing = 1;
    }
    return 0;
}

int mock_scenario_parse(struct mock_scenario **out, const char *json, size_t len,
                        const char *source)
{
    static const char *const keys[] = {"name",      "description", "turns", "final_text",
                                       "side_text", "pacing",      "usage", NULL};
    static const char *const ukeys[] = {"cache_read_fraction", "cache_write_fraction", NULL};
    struct mock_scenario *sc;
    json_error_t jerr;
    json_t *root, *turns, *v;
    size_t i;
    int rc = 0;

    *out = NULL;
    root = json_loadb(json, len, 0, &jerr);
    if (!root)
        return core_error_set(EVOLVE_EINVAL, "%s:%d: %s", source, jerr.line, jerr.text);
    if (!(sc = calloc(1, sizeof(*sc))) || !(sc->source = strdup(source))) {
        free(sc);
        json_decref(root);
        return core_error_oom();
    }
    turns = json_object_get(root, "turns");
    if (!json_is_object(root)) {
        rc = core_error_set(EVOLVE_EINVAL, "%s: the scenario must be a JSON object", source);
        goto out;
    }
    if ((rc = check_keys(root, keys, source, "scenario")) ||
        (rc = get_str(root, "name", &sc->name, source, "scenario")) ||
        (rc = get_str(root, "final_text", &sc->final_text, source, "scenario")) ||
        (rc = get_str(root, "side_text", &sc->side_text, source, "scenario")))
        goto out;
    if ((v = json_object_get(root, "pacing")) &&
        (rc = parse_pacing(v, &sc->pacing, source, "scenario")))
        goto out;
    if ((v = json_object_get(root, "usage"))) {
        if (!json_is_object(v)) {
            rc = core_error_set(EVOLVE_EINVAL, "%s: usage must be an object", source);
            goto out;
        }
        if ((rc = check_keys(v, ukeys, source, "usage")) ||
            (rc = get_num(v, "cache_read_fraction", 0, 1, &sc->cache_read_fraction, source,
                          "usage")) ||
            (rc = get_num(v, "cache_write_fraction", 0, 1, &sc->cache_write_fraction, source,
                          "usage")))
            goto out;
        if (sc->cache_read_fraction + sc->cache_write_fraction > 1) {
            rc = core_error_set(EVOLVE_EINVAL, "%s: usage: the cache fractions add up past 1",
                                source);
            goto out;
        }
    }
    if (!json_is_array(turns) || json_array_size(turns) == 0) {
        rc = core_error_set(EVOLVE_EINVAL, "%s: \"turns\" must be a non-empty array", source);
        goto out;
    }
    if (!(sc->turns = calloc(json_array_size(turns), sizeof(*sc->turns)))) {
        rc = core_error_oom();
        goto out;
    }
    json_array_foreach(turns, i, v)
    {
        sc->nturns = i + 1;
        if ((rc = parse_turn(v, &sc->turns[i], sc, i)))
            goto out;
    }
    if (!sc->name) {
        const char *base = strrchr(source, '/');

        if (!(sc->name = strdup(base ? base + 1 : source))) {
            rc = core_error_oom();
            goto out;
        }
    }
    if ((!sc->final_text && !(sc->final_text = dup_str("Done."))) ||
        (!sc->side_text && !(sc->side_text = dup_str("Mock reply."))))
        rc = core_error_oom();
out:
    json_decref(root);
    if (rc) {
        mock_scenario_free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

static int read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, n = 0, got;
    char *b = NULL, *nb;

    if (!f)
        return core_error_set(errno == ENOENT ? EVOLVE_ENOTFOUND : EVOLVE_EIO, "%s: %s", path,
                              strerror(errno));
    for (;;) {
        if (!(nb = realloc(b, cap))) {
            free(b);
            fclose(f);
            return core_error_oom();
        }
        b = nb;
        got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        cap *= 2;
    }
    if (ferror(f)) {
        free(b);
        fclose(f);
        return core_error_set(EVOLVE_EIO, "%s: read error", path);
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
}

static int is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int mock_scenario_load(struct mock_scenario **out, const char *name_or_path, const char *extra_dir)
{
    const char *dirs[4];
    char path[4096];
    size_t i, nd = 0, len = 0;
    char *buf = NULL;
    int rc;

    *out = NULL;
    if (!name_or_path || !*name_or_path)
        return core_error_set(EVOLVE_EINVAL, "no scenario given (a file or a name like hello)");
    if (strchr(name_or_path, '/') || is_file(name_or_path)) {
        snprintf(path, sizeof(path), "%s", name_or_path);
    } else {
        dirs[nd++] = getenv("EVOLVE_SCENARIO_DIR");
        dirs[nd++] = extra_dir;
        dirs[nd++] = EVOLVE_SOURCE_DATADIR "/scenarios";
        dirs[nd++] = EVOLVE_DATADIR "/scenarios";
        path[0] = '\0';
        for (i = 0; i < nd; i++) {
            if (!dirs[i] || !*dirs[i])
                continue;
            snprintf(path, sizeof(path), "%s/%s.json", dirs[i], name_or_path);
            if (is_file(path))
                break;
            path[0] = '\0';
        }
        if (!path[0])
            return core_error_set(EVOLVE_ENOTFOUND,
                                  "scenario \"%s\": no %s.json in $EVOLVE_SCENARIO_DIR, %s or %s",
                                  name_or_path, name_or_path, EVOLVE_SOURCE_DATADIR "/scenarios",
                                  EVOLVE_DATADIR "/scenarios");
    }
    if ((rc = read_file(path, &buf, &len)))
        return rc;
    rc = mock_scenario_parse(out, buf, len, path);
    free(buf);
    return rc;
}
