/* harness.c — the parser object every agent shares, and helpers for building events and commands.
 * Owns: blank-line skipping and line numbering (as the reference's run loop), the event envelope,
 * `unknown`/`error` updates, and hns_command memory. Does not own: any agent's wire format.
 * Threads: a parser belongs to one thread at a time. */
#include "harness/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int hns_parser_new(struct hns_parser **out, const char *agent_name, hns_emit_fn emit, void *payload)
{
    const struct hns_agent *agent = hns_agent_find(agent_name);
    struct hns_parser *p;
    int rc;

    if (!agent) {
        char known[256] = "";
        const struct hns_agent *const *a;
        size_t n = 0;

        for (a = hns_agent_list(); *a; a++) {
            int w = snprintf(known + n, sizeof(known) - n, "%s%s", n ? ", " : "", (*a)->name);
            if (w < 0 || (size_t)w >= sizeof(known) - n)
                break;
            n += (size_t)w;
        }
        return core_error_set(EVOLVE_ENOTFOUND, "unknown agent \"%s\" (known: %s)",
                              agent_name ? agent_name : "(null)", known);
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return core_error_oom();
    p->agent = agent;
    p->emit = emit;
    p->payload = payload;
    if (agent->state_new) {
        rc = agent->state_new(&p->state);
        if (rc < 0) {
            free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

static int is_blank(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\v' &&
            s[i] != '\f')
            return 0;
    return 1;
}

int hns_parser_feed(struct hns_parser *p, const char *line, size_t len)
{
    p->line_no++;
    if (is_blank(line, len))
        return 0;
    return p->agent->parse_line(p, line, len);
}

int hns_parser_finish(struct hns_parser *p)
{
    return p->agent->finish ? p->agent->finish(p) : 0;
}

void hns_parser_free(struct hns_parser *p)
{
    if (!p)
        return;
    if (p->agent->state_free)
        p->agent->state_free(p->state);
    free(p);
}

int hns_emit(struct hns_parser *p, json_t *event)
{
    const char *name;
    evolve_update_type_t type;

    if (!event)
        return core_error_oom();
    name = json_string_value(json_object_get(json_object_get(event, "update"), "sessionUpdate"));
    type = evolve_update_type_from_name(name);
    if (type == EVOLVE_UPDATE_TYPE_COUNT)
        type = EVOLVE_UPDATE_UNKNOWN;
    p->emit(p->payload, type, event);
    return 0;
}

json_t *hns_event_new(const char *session_id, json_t *update)
{
    json_t *ev;

    if (!update)
        return NULL;
    ev = json_object();
    if (!ev) {
        json_decref(update);
        return NULL;
    }
    if (session_id && json_object_set_new(ev, "sessionId", json_string(session_id)) < 0)
        goto fail;
    if (json_object_set_new(ev, "update", update) < 0) {
        json_decref(ev);
        return NULL;
    }
    return ev;
fail:
    json_decref(update);
    json_decref(ev);
    return NULL;
}

/* The line as a JSON string. Bytes that are not UTF-8 become U+FFFD, one per maximal invalid
 * subpart (WHATWG decoding, what Node's stdout decoding gives the reference), because a JSON
 * string cannot hold them; the raw bytes stay in the session log. NULL only on OOM. */
static json_t *utf8_string(const char *line, size_t len)
{
    const unsigned char *s = (const unsigned char *)line;
    json_t *v = json_stringn(line, len);
    char *out;
    size_t i = 0, n = 0;

    if (v)
        return v;
    out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    while (i < len) {
        unsigned char c = s[i];
        size_t need = c >= 0xC2 && c <= 0xDF   ? 1
                      : c >= 0xE0 && c <= 0xEF ? 2
                      : c >= 0xF0 && c <= 0xF4 ? 3
                                               : 0;
        unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        size_t k = 1;

        if (c < 0x80) {
            out[n++] = (char)c;
            i++;
            continue;
        }
        while (need && k <= need && i + k < len && s[i + k] >= (k == 1 ? lo : 0x80) &&
               s[i + k] <= (k == 1 ? hi : 0xBF))
            k++;
        if (need && k == need + 1) { /* a whole sequence */
            memcpy(out + n, s + i, k);
            n += k;
        } else { /* the lead byte and its valid continuations: one replacement */
            memcpy(out + n, "\xEF\xBF\xBD", 3);
            n += 3;
        }
        i += k;
    }
    v = json_stringn(out, n);
    free(out);
    return v;
}

int hns_emit_unknown(struct hns_parser *p, const char *line, size_t len, const char *reason)
{
    json_t *u = json_object();

    if (!u)
        return core_error_oom();
    if (json_object_set_new(u, "sessionUpdate", json_string("unknown")) < 0 ||
        json_object_set_new(u, "raw", utf8_string(line, len)) < 0 ||
        json_object_set_new(u, "reason", utf8_string(reason, strlen(reason))) < 0) {
        json_decref(u);
        return core_error_oom();
    }
    return hns_emit(p, hns_event_new(NULL, u));
}

int hns_emit_error(struct hns_parser *p, const char *session_id, const char *message, bool fatal)
{
    json_t *u = json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message",
                          message ? message : "", "fatal", fatal);

    return hns_emit(p, hns_event_new(session_id, u));
}

static int grow(void *arrp, size_t *count, size_t elem, size_t extra)
{
    void **arr = arrp;
    void *n = realloc(*arr, (*count + extra) * elem);

    if (!n)
        return core_error_oom();
    *arr = n;
    return 0;
}

static size_t vec_len(char **v)
{
    size_t n = 0;

    while (v && v[n])
        n++;
    return n;
}

static int vec_push(char ***v, char *s)
{
    size_t n = vec_len(*v);
    size_t cap = n;

    if (!s)
        return core_error_oom();
    if (grow(v, &cap, sizeof(char *), 2) < 0) {
        free(s);
        return EVOLVE_ENOMEM;
    }
    (*v)[n] = s;
    (*v)[n + 1] = NULL;
    return 0;
}

int hns_command_arg(struct hns_command *cmd, const char *arg)
{
    return vec_push(&cmd->argv, strdup(arg));
}

int hns_command_env(struct hns_command *cmd, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *s = malloc(n);

    if (!s)
        return core_error_oom();
    snprintf(s, n, "%s=%s", name, value);
    return vec_push(&cmd->env, s);
}

int hns_command_file(struct hns_command *cmd, const char *path, const char *content, mode_t mode)
{
    struct hns_file *f;
    size_t len = strlen(content);

    if (grow(&cmd->files, &cmd->files_count, sizeof(*f), 1) < 0)
        return EVOLVE_ENOMEM;
    f = &cmd->files[cmd->files_count];
    f->path = strdup(path);
    f->content = malloc(len + 1);
    if (!f->path || !f->content) {
        free(f->path);
        free(f->content);
        return core_error_oom();
    }
    memcpy(f->content, content, len + 1);
    f->len = len;
    f->mode = mode;
    cmd->files_count++;
    return 0;
}

int hns_command_stdin(struct hns_command *cmd, const char *data, size_t len)
{
    char *copy = malloc(len + 1);

    if (!copy)
        return core_error_oom();
    memcpy(copy, data, len);
    copy[len] = '\0';
    free(cmd->stdin_data);
    cmd->stdin_data = copy;
    cmd->stdin_len = len;
    return 0;
}

void hns_command_dispose(struct hns_command *cmd)
{
    size_t i;

    if (!cmd)
        return;
    for (i = 0; cmd->argv && cmd->argv[i]; i++)
        free(cmd->argv[i]);
    free(cmd->argv);
    for (i = 0; cmd->env && cmd->env[i]; i++)
        free(cmd->env[i]);
    free(cmd->env);
    for (i = 0; i < cmd->files_count; i++) {
        free(cmd->files[i].path);
        free(cmd->files[i].content);
    }
    free(cmd->files);
    free(cmd->stdin_data);
    memset(cmd, 0, sizeof(*cmd));
}

bool hns_js_truthy(const json_t *v)
{
    if (!v)
        return false;
    switch (json_typeof(v)) {
    case JSON_NULL:
    case JSON_FALSE:
        return false;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0.0 && !isnan(json_real_value(v));
    default:
        return true;
    }
}

char *hns_js_number(double d, char *buf, size_t size)
{
    char tmp[40], *e;
    int prec, exp10;

    if (isnan(d)) {
        snprintf(buf, size, "NaN");
        return buf;
    }
    if (isinf(d)) {
        snprintf(buf, size, d < 0 ? "-Infinity" : "Infinity");
        return buf;
    }
    if (d == 0) {
        snprintf(buf, size, "0");
        return buf;
    }
    /* The shortest precision that reads back to the same double: what JS prints. */
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* tmp = [-]D[.DDD]e[+-]XX; JS uses plain notation for 1e-6 <= abs(d) < 1e21. */
    e = strchr(tmp, 'e');
    exp10 = (int)strtol(e + 1, NULL, 10);
    if (exp10 >= -6 && exp10 < 21) {
        char digits[24];
        size_t nd = 0, i;
        const char *q;
        size_t w = 0;
        int neg = tmp[0] == '-', point;

        for (q = tmp + neg; q < e; q++)
            if (*q != '.')
                digits[nd++] = *q;
        point = exp10 + 1; /* digits before the decimal point */
        if (neg)
            w += (size_t)snprintf(buf + w, size - w, "-");
        if (point <= 0) {
            w += (size_t)snprintf(buf + w, size - w, "0.");
            for (i = 0; i < (size_t)-point && w < size; i++)
                w += (size_t)snprintf(buf + w, size - w, "0");
            for (i = 0; i < nd && w < size; i++)
                w += (size_t)snprintf(buf + w, size - w, "%c", digits[i]);
        } else {
            for (i = 0; i < (size_t)point && w < size; i++)
                w += (size_t)snprintf(buf + w, size - w, "%c", i < nd ? digits[i] : '0');
            if ((size_t)point < nd && w < size) {
                w += (size_t)snprintf(buf + w, size - w, ".");
                for (i = (size_t)point; i < nd && w < size; i++)
                    w += (size_t)snprintf(buf + w, size - w, "%c", digits[i]);
            }
        }
        return buf;
    }
    /* exponent form: mantissa without trailing zeros, "e+21" / "e-7" */
    *e = '\0';
    snprintf(buf, size, "%s%se%s%d", tmp, "", exp10 > 0 ? "+" : "", exp10);
    return buf;
}

static char *dup_str(const char *s)
{
    char *d = strdup(s);

    if (!d)
        core_error_oom();
    return d;
}

char *hns_js_string(const json_t *v)
{
    char num[40];

    if (!v)
        return dup_str("undefined");
    switch (json_typeof(v)) {
    case JSON_STRING: {
        size_t n = json_string_length(v);
        char *d = malloc(n + 1);

        if (!d) {
            core_error_oom();
            return NULL;
        }
        memcpy(d, json_string_value(v), n);
        d[n] = '\0';
        return d;
    }
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return dup_str(num);
    case JSON_REAL:
        return dup_str(hns_js_number(json_real_value(v), num, sizeof(num)));
    case JSON_TRUE:
        return dup_str("true");
    case JSON_FALSE:
        return dup_str("false");
    case JSON_NULL:
        return dup_str("null");
    case JSON_OBJECT:
        return dup_str("[object Object]");
    case JSON_ARRAY: {
        size_t i, len = 0, cap = 64;
        char *out = malloc(cap);

        if (!out) {
            core_error_oom();
            return NULL;
        }
        out[0] = '\0';
        for (i = 0; i < json_array_size(v); i++) {
            const json_t *el = json_array_get(v, i);
            char *part = (el && !json_is_null(el)) ? hns_js_string(el) : dup_str("");
            size_t pl;

            if (!part) {
                free(out);
                return NULL;
            }
            pl = strlen(part);
            if (len + pl + 2 > cap) {
                char *n;

                cap = (len + pl + 2) * 2;
                n = realloc(out, cap);
                if (!n) {
                    free(part);
                    free(out);
                    core_error_oom();
                    return NULL;
                }
                out = n;
            }
            if (i > 0)
                out[len++] = ',';
            memcpy(out + len, part, pl);
            len += pl;
            out[len] = '\0';
            free(part);
        }
        return out;
    }
    }
    return dup_str("undefined");
}

char *hns_fence(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(n + 9);

    if (!out) {
        core_error_oom();
        return NULL;
    }
    memcpy(out, "```\n", 4);
    memcpy(out + 4, s, n);
    memcpy(out + 4 + n, "\n```", 5);
    out[n + 8] = '\0';
    return out;
}
