/* vectors.c — loading and matching harness test vectors (see vectors.h). */
#include "support/vectors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/support.h"

json_t *vec_load(const char *rel)
{
    char path[1024];
    json_t *cases = json_array();
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;

    ts_data_path(path, sizeof(path), "vectors");
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", rel);
    f = fopen(path, "r");
    if (!f)
        ts_die("cannot open %s", path);
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t err;
        json_t *c;

        lineno++;
        if (n <= 1)
            continue;
        c = json_loadb(line, (size_t)n, 0, &err);
        if (!c)
            ts_die("%s:%d: %s", path, lineno, err.text);
        json_array_append_new(cases, c);
    }
    free(line);
    fclose(f);
    return cases;
}

json_t *vec_case(json_t *cases, const char *name)
{
    size_t i;
    json_t *c;

    json_array_foreach(cases, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "name"));
        if (n && !strcmp(n, name))
            return c;
    }
    return NULL;
}

static void collect(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    json_array_append_new(payload, event);
}

json_t *vec_run(const char *agent, const json_t *vcase)
{
    struct hns_parser *p;
    json_t *out = json_array(), *line;
    size_t i;

    if (hns_parser_new(&p, agent, collect, out) < 0) {
        json_decref(out);
        return NULL;
    }
    json_array_foreach(json_object_get(vcase, "input"), i, line)
    {
        if (hns_parser_feed(p, json_string_value(line), json_string_length(line)) < 0)
            goto fail;
    }
    if (hns_parser_finish(p) < 0)
        goto fail;
    hns_parser_free(p);
    return out;
fail:
    hns_parser_free(p);
    json_decref(out);
    return NULL;
}

bool vec_subset(const json_t *expect, const json_t *actual, char *path, size_t path_size)
{
    size_t plen = strlen(path);

    if (!actual)
        return false;
    if (json_is_number(expect) && json_is_number(actual))
        return json_number_value(expect) == json_number_value(actual);
    if (json_typeof(expect) != json_typeof(actual))
        return false;
    if (json_is_object(expect)) {
        const char *key;
        json_t *v;

        json_object_foreach((json_t *)expect, key, v)
        {
            snprintf(path + plen, path_size - plen, ".%s", key);
            if (!vec_subset(v, json_object_get(actual, key), path, path_size))
                return false;
            path[plen] = '\0';
        }
        return true;
    }
    if (json_is_array(expect)) {
        size_t i;
        json_t *v;

        if (json_array_size(expect) != json_array_size(actual)) {
            snprintf(path + plen, path_size - plen, "[length %zu != %zu]", json_array_size(expect),
                     json_array_size(actual));
            return false;
        }
        json_array_foreach((json_t *)expect, i, v)
        {
            snprintf(path + plen, path_size - plen, "[%zu]", i);
            if (!vec_subset(v, json_array_get(actual, i), path, path_size))
                return false;
            path[plen] = '\0';
        }
        return true;
    }
    return json_equal((json_t *)expect, (json_t *)actual);
}

static bool ignored(const json_t *ev, unsigned ignore)
{
    const char *t =
        json_string_value(json_object_get(json_object_get(ev, "update"), "sessionUpdate"));

    if (!t)
        return false;
    return ((ignore & VEC_IGNORE_USAGE) && !strcmp(t, "usage")) ||
           ((ignore & VEC_IGNORE_ERROR) && !strcmp(t, "error")) ||
           ((ignore & VEC_IGNORE_UNKNOWN) && !strcmp(t, "unknown"));
}

bool vec_match(const json_t *expect, const json_t *actual, unsigned ignore, char *why,
               size_t why_size)
{
    size_t e = 0, a = 0, ne = json_array_size(expect), na = json_array_size(actual);

    for (;;) {
        char path[512] = "";
        json_t *ev;

        while (a < na && ignored(json_array_get(actual, a), ignore))
            a++;
        if (e == ne || a == na)
            break;
        ev = json_array_get(actual, a);
        if (!vec_subset(json_array_get(expect, e), ev, path, sizeof(path))) {
            char *want = json_dumps(json_array_get(expect, e), JSON_COMPACT);
            char *got = json_dumps(ev, JSON_COMPACT);

            snprintf(why, why_size, "event %zu differs at %s\n  want %s\n  got  %s", e, path, want,
                     got);
            free(want);
            free(got);
            return false;
        }
        e++;
        a++;
    }
    if (e < ne) {
        char *want = json_dumps(json_array_get(expect, e), JSON_COMPACT);

        snprintf(why, why_size, "missing event %zu of %zu: %s", e, ne, want);
        free(want);
        return false;
    }
    if (a < na) {
        char *got = json_dumps(json_array_get(actual, a), JSON_COMPACT);

        snprintf(why, why_size, "extra event after %zu expected: %s", ne, got);
        free(got);
        return false;
    }
    return true;
}
