/* hvec.c — whole-file vector checks with stated differences (see hvec.h). */
#include "support/hvec.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include <stdlib.h>

#include "evolve/evolve.h"
#include "harness/harness.h"
#include "support/support.h"
#include "support/vectors.h"

size_t hvec_check_file(const char *agent, const char *rel, const struct hvec_diff *diffs)
{
    return hvec_check_file_all(agent, rel, 0, "", diffs);
}

size_t hvec_check_file_all(const char *agent, const char *rel, unsigned all, const char *all_why,
                           const struct hvec_diff *diffs)
{
    json_t *cases = vec_load(rel), *c;
    size_t i, n = 0;

    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const struct hvec_diff *df = NULL, *it;
        json_t *got = vec_run(agent, c), *want;
        char why[4096] = "";

        for (it = diffs; it && it->name; it++)
            if (!strcmp(it->name, name))
                df = it;
        cr_assert_not_null(got, "%s: %s: parser failed: %s", rel, name,
                           evolve_error_last()->message);
        if (df && df->expect) {
            json_error_t err;

            want = json_loads(df->expect, 0, &err);
            cr_assert_not_null(want, "%s: bad replacement expectation: %s", name, err.text);
        } else {
            want = json_incref(json_object_get(c, "expect"));
        }
        cr_expect(vec_match(want, got, all | (df ? df->ignore : 0), why, sizeof(why)),
                  "%s: %s: %s\n  (deliberate differences: %s; %s)", rel, name, why, all_why,
                  df ? df->why : "none for this case");
        json_decref(want);
        json_decref(got);
        n++;
    }
    json_decref(cases);
    return n;
}

static void collect(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    json_array_append_new(payload, event);
}

json_t *hvec_run_lines(const char *agent, const char *const *lines)
{
    struct hns_parser *p;
    json_t *out = json_array();

    cr_assert_eq(hns_parser_new(&p, agent, collect, out), 0, "%s", evolve_error_last()->message);
    for (; *lines; lines++)
        cr_assert_eq(hns_parser_feed(p, *lines, strlen(*lines)), 0, "%s",
                     evolve_error_last()->message);
    cr_assert_eq(hns_parser_finish(p), 0);
    hns_parser_free(p);
    return out;
}

json_t *hvec_run_file(const char *agent, const char *rel)
{
    char path[1024];
    size_t len, start = 0, i;
    char *data = ts_read_file(ts_data_path(path, sizeof(path), rel), &len);
    struct hns_parser *p;
    json_t *out = json_array();

    cr_assert_not_null(data, "cannot read %s", path);
    cr_assert_eq(hns_parser_new(&p, agent, collect, out), 0, "%s", evolve_error_last()->message);
    for (i = 0; i <= len; i++) {
        if (i == len || data[i] == '\n') {
            if (i > start || i < len)
                cr_assert_eq(hns_parser_feed(p, data + start, i - start), 0, "%s",
                             evolve_error_last()->message);
            start = i + 1;
        }
    }
    cr_assert_eq(hns_parser_finish(p), 0);
    hns_parser_free(p);
    free(data);
    return out;
}

size_t hvec_count(const json_t *events, const char *type, json_t **first)
{
    size_t i, n = 0;
    json_t *ev;

    if (first)
        *first = NULL;
    json_array_foreach((json_t *)events, i, ev)
    {
        const char *t =
            json_string_value(json_object_get(json_object_get(ev, "update"), "sessionUpdate"));
        if (t && !strcmp(t, type)) {
            if (first && !*first)
                *first = ev;
            n++;
        }
    }
    return n;
}

static bool final_status(const json_t *up)
{
    const char *st = json_string_value(json_object_get(up, "status"));

    return st && (!strcmp(st, "completed") || !strcmp(st, "failed"));
}

size_t hvec_check_trace(const char *rel, const json_t *events)
{
    size_t i, j, calls = 0;
    json_t *ev;

    json_array_foreach((json_t *)events, i, ev)
    {
        json_t *up = json_object_get(ev, "update");
        const char *t = json_string_value(json_object_get(up, "sessionUpdate"));
        const char *id;
        bool paired = false;

        cr_assert(t && strcmp(t, "unknown"), "%s: event %zu is unknown: %s", rel, i,
                  json_string_value(json_object_get(up, "reason")));
        if (strcmp(t, "tool_call"))
            continue;
        calls++;
        id = json_string_value(json_object_get(up, "toolCallId"));
        cr_assert_not_null(id, "%s: tool_call %zu without toolCallId", rel, i);
        if (final_status(up))
            continue; /* codex file_change: the call is already final */
        for (j = i + 1; j < json_array_size(events) && !paired; j++) {
            json_t *u2 = json_object_get(json_array_get(events, j), "update");
            const char *t2 = json_string_value(json_object_get(u2, "sessionUpdate"));
            const char *id2 = json_string_value(json_object_get(u2, "toolCallId"));

            paired = t2 && id2 && !strcmp(id, id2) &&
                     (!strcmp(t2, "tool_call_update") || !strcmp(t2, "tool_call")) &&
                     final_status(u2);
        }
        cr_assert(paired, "%s: tool_call %s has no final update", rel, id);
    }
    return calls;
}
