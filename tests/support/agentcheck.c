/* agentcheck.c — see agentcheck.h. */
#include "support/agentcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/support.h"
#include "support/vectors.h"

int ac_run_vectors(const char *agent, const char *file, const struct ac_diff *diffs, char *msg,
                   size_t size)
{
    json_t *cases = vec_load(file), *c;
    const struct ac_diff *d;
    int failures = 0;
    size_t i;

    msg[0] = '\0';
    for (d = diffs; d && d->name; d++)
        if (!vec_case(cases, d->name)) {
            if (!failures++)
                snprintf(msg, size, "%s: the diff table names no case \"%s\"", file, d->name);
        }
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *expect = json_deep_copy(json_object_get(c, "expect"));
        json_t *actual = vec_run(agent, c);
        unsigned ignore = 0;
        char why[4096];

        for (d = diffs; d && d->name; d++)
            if (!strcmp(d->name, name)) {
                ignore = d->ignore;
                if (d->edit)
                    d->edit(expect);
            }
        if (!actual) {
            if (!failures++)
                snprintf(msg, size, "%s/%s: parser error", file, name);
        } else if (!vec_match(expect, actual, ignore, why, sizeof(why))) {
            if (!failures++)
                snprintf(msg, size, "%s/%s: %s", file, name, why);
        }
        json_decref(expect);
        json_decref(actual);
    }
    json_decref(cases);
    return failures;
}

static void collect(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    json_array_append_new(payload, event);
}

json_t *ac_feed(const char *agent, const char *const *lines, size_t n)
{
    struct hns_parser *p;
    json_t *out = json_array();
    size_t i;

    if (hns_parser_new(&p, agent, collect, out) < 0) {
        json_decref(out);
        return NULL;
    }
    for (i = 0; i < n; i++)
        if (hns_parser_feed(p, lines[i], strlen(lines[i])) < 0)
            goto fail;
    if (hns_parser_finish(p) < 0)
        goto fail;
    hns_parser_free(p);
    return out;
fail:
    hns_parser_free(p);
    json_decref(out);
    return NULL;
}

json_t *ac_feed_file(const char *agent, const char *rel)
{
    char path[1024];
    size_t len, start = 0, i;
    char *data;
    struct hns_parser *p;
    json_t *out = json_array();

    ts_data_path(path, sizeof(path), rel);
    data = ts_read_file(path, &len);
    if (!data)
        ts_die("cannot read %s", path);
    if (hns_parser_new(&p, agent, collect, out) < 0)
        ts_die("no agent %s", agent);
    for (i = 0; i <= len; i++) {
        if (i < len && data[i] != '\n')
            continue;
        if (i > start && hns_parser_feed(p, data + start, i - start) < 0)
            ts_die("%s: parser error", rel);
        start = i + 1;
    }
    hns_parser_finish(p);
    hns_parser_free(p);
    free(data);
    return out;
}

static const char *type_of(const json_t *ev)
{
    const char *t =
        json_string_value(json_object_get(json_object_get(ev, "update"), "sessionUpdate"));

    return t ? t : "";
}

bool ac_trace_clean(const json_t *events, char *msg, size_t size)
{
    json_t *calls = json_object();
    const json_t *ev;
    const char *id;
    json_t *v;
    size_t i;
    bool ok = true;

    json_array_foreach(events, i, ev)
    {
        const char *t = type_of(ev);
        const char *tid =
            json_string_value(json_object_get(json_object_get(ev, "update"), "toolCallId"));

        if (!strcmp(t, "unknown")) {
            char *d = json_dumps(ev, JSON_COMPACT);

            snprintf(msg, size, "event %zu is unknown: %s", i, d);
            free(d);
            ok = false;
            break;
        }
        if (!strcmp(t, "tool_call") && tid)
            json_object_set_new(calls, tid, json_false());
        if (!strcmp(t, "tool_call_update") && tid) {
            if (!json_object_get(calls, tid)) {
                snprintf(msg, size, "event %zu updates tool call %s that never started", i, tid);
                ok = false;
                break;
            }
            json_object_set_new(calls, tid, json_true());
        }
    }
    if (ok)
        json_object_foreach(calls, id, v)
        {
            if (!json_is_true(v)) {
                snprintf(msg, size, "tool call %s has no tool_call_update", id);
                ok = false;
                break;
            }
        }
    json_decref(calls);
    return ok;
}

json_t *ac_of_type(const json_t *events, const char *type)
{
    json_t *out = json_array();
    const json_t *ev;
    size_t i;

    json_array_foreach(events, i, ev)
    {
        if (!strcmp(type_of(ev), type))
            json_array_append(out, (json_t *)ev);
    }
    return out;
}

void ac_unfence(json_t *v)
{
    const char *key;
    json_t *child;
    size_t i;

    if (json_is_object(v)) {
        json_object_foreach(v, key, child)
        {
            const char *s = json_string_value(child);
            size_t n = json_string_length(child);

            if (s && n >= 8 && !strncmp(s, "```\n", 4) && !strcmp(s + n - 4, "\n```"))
                json_object_set_new(v, key, json_stringn(s + 4, n - 8));
            else
                ac_unfence(child);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, child)
        {
            ac_unfence(child);
        }
    }
}
