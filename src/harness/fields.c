/* fields.c — helpers the qwen, kimi, opencode and droid parsers share: reading one wire line as a
 * JSON object (or reporting it as `unknown`), the optional OutputEvent fields (DESIGN.md §4),
 * ISO 8601 timestamps from epoch milliseconds, text blocks, `usage` updates, and droid's session
 * id capture (spec harness-wire §2.4).
 * Does not own: any agent's wire format, the parser object (harness.c).
 * Threads: pure functions; a parser is used by one thread at a time. */
#include "harness/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int hns_emit_update(struct hns_parser *p, const struct hns_meta *m, json_t *update)
{
    json_t *ev;

    if (!update)
        return core_error_oom();
    ev = json_object();
    if (!ev) {
        json_decref(update);
        return core_error_oom();
    }
    /* json_object_set_new steals `update` even when it fails */
    if ((m && m->session_id && json_object_set(ev, "sessionId", (json_t *)m->session_id) < 0) ||
        json_object_set_new(ev, "update", update) < 0)
        goto oom;
    update = NULL;
    if (m) {
        if ((m->timestamp && json_object_set(ev, "timestamp", (json_t *)m->timestamp) < 0) ||
            (m->model && json_object_set(ev, "model", (json_t *)m->model) < 0) ||
            (m->message_id && json_object_set(ev, "messageId", (json_t *)m->message_id) < 0) ||
            (m->parent_tool_call_id &&
             json_object_set(ev, "parentToolCallId", (json_t *)m->parent_tool_call_id) < 0) ||
            (m->extra && json_object_size(m->extra) > 0 &&
             json_object_set(ev, "extra", (json_t *)m->extra) < 0))
            goto oom;
    }
    return hns_emit(p, ev);
oom:
    json_decref(update);
    json_decref(ev);
    return core_error_oom();
}

json_t *hns_parse_object(struct hns_parser *p, const char *line, size_t len, int *rc)
{
    json_error_t err;
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    char reason[200];

    *rc = 0;
    /* JS reads 123456789012345678901234 as a double; jansson refuses it unless asked */
    if (!v && json_error_code(&err) == json_error_numeric_overflow)
        v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
    if (json_is_object(v))
        return v;
    if (!v && json_error_code(&err) == json_error_out_of_memory) {
        *rc = core_error_oom();
        return NULL;
    }
    if (v)
        snprintf(reason, sizeof(reason), "JSON %s, not an object",
                 json_is_array(v)    ? "array"
                 : json_is_string(v) ? "string"
                 : json_is_number(v) ? "number"
                 : json_is_null(v)   ? "null"
                                     : "boolean");
    else {
        /* jansson's text may quote the offending bytes (" near '...'"), which need not be UTF-8:
         * keep only the message; the line itself is in `raw` */
        char *near = strstr(err.text, " near ");

        if (near)
            *near = '\0';
        snprintf(reason, sizeof(reason), "not JSON: %s at column %d", err.text, err.column);
    }
    json_decref(v);
    *rc = hns_emit_unknown(p, line, len, reason);
    return NULL;
}

/* Days since 1970-01-01 -> proleptic Gregorian y/m/d (the well-known era-based algorithm). */
static void civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
    long long era, yy;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    yy = (long long)yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

json_t *hns_iso_time_ms(const json_t *v)
{
    double ms;
    long long t, days, rem, y;
    unsigned mo, d;
    char buf[40];

    if (!json_is_number(v))
        return NULL;
    ms = json_number_value(v);
    if (!isfinite(ms) || fabs(ms) > 8.64e15) /* outside the JS Date range: toISOString throws */
        return NULL;
    t = (long long)ms; /* TimeClip truncates toward zero */
    days = t / 86400000;
    rem = t % 86400000;
    if (rem < 0) {
        rem += 86400000;
        days--;
    }
    civil_from_days(days, &y, &mo, &d);
    if (y >= 0 && y <= 9999)
        snprintf(buf, sizeof(buf), "%04lld", y);
    else
        snprintf(buf, sizeof(buf), "%c%06lld", y < 0 ? '-' : '+', y < 0 ? -y : y);
    snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
             "-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ", mo, d, rem / 3600000, rem / 60000 % 60,
             rem / 1000 % 60, rem % 1000);
    return json_string(buf);
}

json_t *hns_text_block(const char *s, size_t len)
{
    return json_pack("{s:s, s:s%}", "type", "text", "text", s, len);
}

json_t *hns_text_content(const char *s, size_t len)
{
    return json_pack("{s:s, s:o}", "type", "content", "content", hns_text_block(s, len));
}

json_t *hns_chunk_update(const char *kind, json_t *content)
{
    return json_pack("{s:s, s:o}", "sessionUpdate", kind, "content", content);
}

json_t *hns_number_sum(const json_t *a, const json_t *b, const json_t *c)
{
    const json_t *ops[3] = {a, b, c};
    json_int_t isum = 0;
    double dsum = 0;
    int any = 0, all_int = 1;
    size_t i;

    for (i = 0; i < 3; i++) {
        if (!json_is_number(ops[i]))
            continue;
        any = 1;
        dsum += json_number_value(ops[i]);
        if (!json_is_integer(ops[i]) ||
            __builtin_add_overflow(isum, json_integer_value(ops[i]), &isum))
            all_int = 0;
    }
    if (!any)
        return NULL;
    return all_int ? json_integer(isum) : json_real(dsum);
}

json_t *hns_usage_update(const char *scope, json_t *prompt, json_t *completion, json_t *cached,
                         json_t *cost, json_t *extra)
{
    const char *keys[5] = {"promptTokens", "completionTokens", "cachedTokens", "costUsd", "extra"};
    json_t *vals[5] = {prompt, completion, cached, cost, extra};
    json_t *u = json_object();
    int fail = !u;
    size_t i;

    for (i = 0; i < 5; i++) {
        if (!vals[i])
            continue;
        if (fail || (i == 4 && json_object_size(vals[i]) == 0))
            json_decref(vals[i]);
        else if (json_object_set_new(u, keys[i], vals[i]) < 0) /* steals even on failure */
            fail = 1;
    }
    if (fail) {
        json_decref(u);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:o}", "sessionUpdate", "usage", "scope", scope, "usage", u);
}

json_t *hns_object_except(const json_t *src, const char *const *skip)
{
    json_t *out = json_object();
    const char *key;
    json_t *v;

    if (!out)
        return NULL;
    json_object_foreach((json_t *)src, key, v)
    {
        const char *const *s;

        for (s = skip; *s && strcmp(*s, key); s++)
            ;
        if (*s)
            continue;
        if (json_object_set(out, key, v) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* The spec's search order: the object itself, then result, params, notification, recursively. */
static const char *find_session_id(const json_t *o, int depth)
{
    static const char *const nested[] = {"result", "params", "notification"};
    const char *keys[2] = {"sessionId", "session_id"};
    size_t i;

    if (!json_is_object(o) || depth > 8)
        return NULL;
    for (i = 0; i < 2; i++) {
        const json_t *v = json_object_get(o, keys[i]);

        if (json_is_string(v) && json_string_length(v) > 0)
            return json_string_value(v);
    }
    for (i = 0; i < 3; i++) {
        const char *s = find_session_id(json_object_get(o, nested[i]), depth + 1);

        if (s)
            return s;
    }
    return NULL;
}

int hns_droid_session_id(const char *line, size_t len, char *out, size_t size)
{
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY, NULL);
    const char *id = find_session_id(v, 0);
    size_t n;
    int rc = 0;

    if (size)
        out[0] = '\0';
    if (id) {
        n = strlen(id);
        if (n + 1 > size)
            rc = core_error_set(EVOLVE_EINVAL, "droid session id of %zu bytes does not fit", n);
        else {
            memcpy(out, id, n + 1);
            rc = (int)n;
        }
    }
    json_decref(v);
    return rc;
}

char *hns_str_or(const json_t *v, const char *fallback)
{
    if (hns_js_truthy(v))
        return hns_js_string(v);
    if (!fallback)
        return hns_js_string(v);
    {
        char *s = strdup(fallback);

        if (!s)
            core_error_oom();
        return s;
    }
}
