/* droid.c — Factory Droid (`droid exec --output-format stream-json`, and the stream-jsonrpc
 * envelopes): its command line and stream parser (spec harness-wire §3.7 with the later
 * project-sable fixes of §7: tool input from `parameters`, results keyed by `id`/`toolId`,
 * result text from `value`, which the live CLI prints).
 * Owns: the per-run state: sticky session id and model (init line), the last assistant text and
 * whether any was emitted (completion de-dup), the last thought signature (reasoning de-dup), and
 * tool call id -> tool name (result titles).
 * Differences from the reference, on purpose (DESIGN.md §4): `error` lines and JSON-RPC error
 * responses become `error` updates (not fatal: the exit code decides), a `result` with
 * is_error:true a fatal one, instead of agent text; `session_token_usage_changed` and any usage on
 * completion/result lines become run-scope `usage` (cumulative totals: keep the last); events
 * carry timestamp (epoch ms as ISO 8601), model (the line's or the init line's), messageId and
 * toolName; lines the reference drops without a trace become `unknown`.
 * Produce nothing, deliberately: `system` lines (init: session id and model are remembered),
 * user echoes (`message` with another role), the reference's ignore list (assistant_text_complete,
 * thinking_text_complete, droid_working_state_changed, permission_resolved, settings_updated,
 * session_title_updated, mcp_status_changed, mission_*, mcp_auth_*, structured_output), JSON-RPC
 * responses that only carry a session id, repeated thoughts and completions (de-dup), and
 * session-log metadata (`_meta`, `_prompt`, `_sessionEnd`).
 * Size: over ~600 lines because the reference's tool tables, the parser and the command
 * builder of one agent live in one file (one descriptor per agent, DESIGN.md §3).
 * Threads: a parser instance is used by one thread at a time. */
#include "harness/harness.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define DEFAULT_MODEL "gpt-5.5"

struct droid_state {
    json_t *session_id; /* sticky string */
    json_t *model;      /* from the init line */
    int emitted;        /* any assistant text emitted */
    char *last;         /* last assistant text */
    size_t last_len;
    char *thought_sig; /* last thought signature */
    json_t *names;     /* tool call id -> tool name */
    unsigned work;     /* events of the current line the reference would also have emitted */
};

static int state_new(void **out)
{
    struct droid_state *st = calloc(1, sizeof(*st));

    if (!st || !(st->names = json_object())) {
        free(st);
        return core_error_oom();
    }
    *out = st;
    return 0;
}

static void state_free(void *state)
{
    struct droid_state *st = state;

    if (!st)
        return;
    json_decref(st->session_id);
    json_decref(st->model);
    json_decref(st->names);
    free(st->last);
    free(st->thought_sig);
    free(st);
}

/* "string field": the value if it is a string, else "" */
static const char *sfield(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s ? s : "";
}

/* first non-empty string field among keys (NULL-terminated), or "" */
static const char *sfirst(const json_t *o, const char *const *keys)
{
    for (; *keys; keys++)
        if (*sfield(o, *keys))
            return sfield(o, *keys);
    return "";
}

/* the reference's stringify(v): a string as-is, absent -> "", anything else compact JS JSON */
static char *stringify(const json_t *v)
{
    char *s;

    if (!v)
        s = strdup("");
    else if (json_is_string(v))
        s = strdup(json_string_value(v));
    else
        return hns_js_stringify(v);
    if (!s)
        core_error_oom();
    return s;
}

static const json_t *nullish(const json_t *a, const json_t *b)
{
    return a && !json_is_null(a) ? a : b;
}

/* extractText(content) */
static char *extract_text(const json_t *c)
{
    size_t i, n = 0;
    const json_t *el;
    char *out;

    if (json_is_string(c))
        return stringify(c);
    out = calloc(1, 1);
    if (!out) {
        core_error_oom();
        return NULL;
    }
    json_array_foreach(c, i, el)
    {
        const char *t = *sfield(el, "text") ? sfield(el, "text") : sfield(el, "content");
        size_t tl = strlen(t);
        char *nb;

        if (!json_is_object(el) || !tl)
            continue;
        nb = realloc(out, n + tl + 1);
        if (!nb) {
            free(out);
            core_error_oom();
            return NULL;
        }
        out = nb;
        memcpy(out + n, t, tl + 1);
        n += tl;
    }
    return out;
}

/* ---- emitting ---------------------------------------------------------------------------------
 */

struct line {
    struct hns_parser *p;
    const json_t *event;
    json_t *ts;
    struct hns_meta m;
};

static int emit(struct line *l, json_t *update, int work)
{
    struct droid_state *st = l->p->state;

    l->m.session_id = st->session_id;
    st->work += work;
    return hns_emit_update(l->p, &l->m, update);
}

static int emit_text(struct line *l, const char *kind, const char *text)
{
    return emit(l, hns_chunk_update(kind, hns_text_block(text, strlen(text))), 1);
}

static int set_last(struct droid_state *st, const char *text, int append)
{
    size_t n = strlen(text), base = append ? st->last_len : 0;
    char *nb = realloc(append ? st->last : NULL, base + n + 1);

    if (!nb)
        return core_error_oom();
    if (!append)
        free(st->last);
    memcpy(nb + base, text, n + 1);
    st->last = nb;
    st->last_len = base + n;
    st->emitted = 1;
    return 0;
}

static int assistant_text(struct line *l, const char *text, int append)
{
    int rc;

    if (!*text)
        return 0;
    rc = emit_text(l, "agent_message_chunk", text);
    return rc < 0 ? rc : set_last(l->p->state, text, append);
}

static void sig_part(char *out, size_t size, const json_t *v)
{
    char *s = NULL;

    if (json_is_string(v) || json_is_number(v) || json_is_boolean(v))
        s = hns_js_string(v);
    snprintf(out, size, "%s", s ? s : "");
    free(s);
}

/* Thought de-dup: `<type>:<id>:<blockIndex>:<text>` equal to the last one -> nothing. */
static int thought(struct line *l, const char *type, const char *text)
{
    struct droid_state *st = l->p->state;
    const json_t *id = json_object_get(l->event, "id");
    char ids[96], idx[64], *sig;
    size_t n;
    int rc;

    if (!*text)
        return 0;
    sig_part(ids, sizeof(ids), hns_js_truthy(id) ? id : json_object_get(l->event, "messageId"));
    sig_part(idx, sizeof(idx), json_object_get(l->event, "blockIndex"));
    n = strlen(type) + strlen(ids) + strlen(idx) + strlen(text) + 4;
    sig = malloc(n);
    if (!sig)
        return core_error_oom();
    snprintf(sig, n, "%s:%s:%s:%s", type, ids, idx, text);
    if (st->thought_sig && !strcmp(st->thought_sig, sig)) {
        free(sig);
        return 0;
    }
    free(st->thought_sig);
    st->thought_sig = sig;
    rc = emit_text(l, "agent_thought_chunk", text);
    return rc;
}

/* Factory's counters (inputTokens excludes both cache shares, as in its session files) as a
 * run-scope usage. Returns 1 without emitting when `u` is not an object. */
static int usage(struct line *l, const json_t *u)
{
    static const char *const mapped[] = {"inputTokens",
                                         "input_tokens",
                                         "outputTokens",
                                         "output_tokens",
                                         "cacheReadTokens",
                                         "cache_read_input_tokens",
                                         "cacheCreationTokens",
                                         "cache_creation_input_tokens",
                                         NULL};
    const json_t *in =
        nullish(json_object_get(u, "inputTokens"), json_object_get(u, "input_tokens"));
    const json_t *out =
        nullish(json_object_get(u, "outputTokens"), json_object_get(u, "output_tokens"));
    const json_t *read = nullish(json_object_get(u, "cacheReadTokens"),
                                 json_object_get(u, "cache_read_input_tokens"));
    const json_t *write = nullish(json_object_get(u, "cacheCreationTokens"),
                                  json_object_get(u, "cache_creation_input_tokens"));

    if (!json_is_object(u))
        return 1;
    return emit(l,
                hns_usage_update("run", json_is_number(in) ? hns_number_sum(in, read, write) : NULL,
                                 hns_number_sum(out, NULL, NULL), hns_number_sum(read, NULL, NULL),
                                 NULL, hns_object_except(u, mapped)),
                0);
}

static int error_update(struct line *l, const char *message, int fatal)
{
    return emit(
        l,
        json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message", message, "fatal", fatal),
        1);
}

/* ---- tools ------------------------------------------------------------------------------------
 */

static void normalise(char *out, size_t size, const char *name)
{
    size_t n = 0;

    for (; *name && n + 1 < size; name++)
        if (*name != '-' && *name != '_' && !isspace((unsigned char)*name))
            out[n++] = (char)tolower((unsigned char)*name);
    out[n] = '\0';
}

static const char *tool_kind(const char *norm)
{
    static const struct {
        const char *name, *kind;
    } kinds[] = {
        {"read", "read"},       {"applypatch", "edit"}, {"create", "edit"},
        {"edit", "edit"},       {"write", "edit"},      {"execute", "execute"},
        {"skill", "execute"},   {"grep", "search"},     {"glob", "search"},
        {"ls", "search"},       {"fetchurl", "fetch"},  {"webfetch", "fetch"},
        {"websearch", "fetch"}, {"task", "think"},
    };
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i].name, norm))
            return kinds[i].kind;
    return "other";
}

static json_t *plan_entries(const json_t *todos)
{
    json_t *entries = json_array();
    const json_t *t;
    size_t i;

    json_array_foreach(todos, i, t)
    {
        const char *s = sfield(t, "status"), *pr = sfield(t, "priority");

        if (!entries || !json_is_object(t) || !*sfield(t, "content"))
            continue;
        if (json_array_append_new(
                entries,
                json_pack("{s:O, s:s, s:s}", "content", json_object_get(t, "content"), "status",
                          !strcmp(s, "in_progress") || !strcmp(s, "completed") ? s : "pending",
                          "priority", !strcmp(pr, "high") || !strcmp(pr, "low") ? pr : "medium")) <
            0) {
            json_decref(entries);
            return NULL;
        }
    }
    return entries;
}

static int tool_use(struct line *l, const json_t *tu, const char *raw, size_t len)
{
    static const char *const idk[] = {"id", "toolUseId", "tool_use_id", NULL};
    static const char *const namek[] = {"name", "toolName", "tool_name", NULL};
    static const char *const inputk[] = {"input", "toolInput", "arguments", "parameters", NULL};
    static const char *const pathk[] = {"path", "filePath", "file_path", "absolute_path", NULL};
    static const char *const targetk[] = {"command", "url", NULL};
    struct droid_state *st = l->p->state;
    const char *id = sfirst(tu, idk), *name = sfirst(tu, namek), *path, *target;
    const char *const *k;
    const json_t *input = NULL;
    char norm[64], *title, *text = NULL;
    json_t *content, *u, *empty = NULL;
    int rc;

    if (!*id)
        return hns_emit_unknown(l->p, raw, len, "droid tool call without an id");
    if (!*name)
        name = "Tool";
    if (json_object_set_new(st->names, id, json_string(name)) < 0)
        return core_error_oom();
    for (k = inputk; *k && !input; k++)
        if (json_is_object(json_object_get(tu, *k)))
            input = json_object_get(tu, *k);
    if (!input)
        input = empty = json_object();
    if (!input)
        return core_error_oom();
    normalise(norm, sizeof(norm), name);
    if (!strcmp(norm, "todowrite") && json_is_array(json_object_get(input, "todos"))) {
        json_t *entries = plan_entries(json_object_get(input, "todos"));

        if (!entries) {
            json_decref(empty);
            return core_error_oom();
        }
        if (json_array_size(entries)) {
            json_decref(empty);
            return emit(l, json_pack("{s:s, s:o}", "sessionUpdate", "plan", "entries", entries), 1);
        }
        json_decref(entries);
    }
    path = sfirst(input, pathk);
    target = *path ? path : sfirst(input, targetk);
    title = malloc(strlen(name) + strlen(target) + 2);
    content = json_array();
    if (json_object_size(input))
        text = hns_js_stringify(input);
    if (!title || !content || (json_object_size(input) && !text)) {
        rc = core_error_oom();
        goto done;
    }
    snprintf(title, strlen(name) + strlen(target) + 2, *target ? "%s %s" : "%s", name, target);
    if (text && json_array_append_new(content, hns_text_content(text, strlen(text))) < 0) {
        rc = core_error_oom();
        goto done;
    }
    u = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:o, s:o}", "sessionUpdate", "tool_call",
                  "toolCallId", id, "title", title, "toolName", name, "kind", tool_kind(norm),
                  "status", "pending", "rawInput", input, "content", content, "locations",
                  *path ? json_pack("[{s:s}]", "path", path) : json_array());
    content = NULL;
    rc = emit(l, u, 1);
done:
    free(title);
    free(text);
    json_decref(content);
    json_decref(empty);
    return rc;
}

static const char *result_id(const json_t *ev)
{
    static const char *const keys[] = {"toolUseId", "tool_use_id", "tool_id", "id", "toolId", NULL};

    return sfirst(ev, keys);
}

static int tool_result(struct line *l, const char *raw, size_t len)
{
    static const char *const titlek[] = {"toolName", "tool_name", NULL};
    struct droid_state *st = l->p->state;
    const json_t *ev = l->event;
    const char *id = result_id(ev), *title = sfirst(ev, titlek);
    bool failed = json_object_get(ev, "isError") == json_true() ||
                  json_object_get(ev, "is_error") == json_true();
    json_t *name, *content, *u;
    char *text;
    int rc;

    if (!*id)
        return hns_emit_unknown(l->p, raw, len, "droid tool result without an id");
    name = json_incref(json_object_get(st->names, id));
    json_object_del(st->names, id);
    text = stringify(
        nullish(json_object_get(ev, "content"),
                nullish(json_object_get(ev, "result"),
                        nullish(json_object_get(ev, "value"), json_object_get(ev, "error")))));
    content = json_array();
    if (!text || !content ||
        (*text && json_array_append_new(content, hns_text_content(text, strlen(text))) < 0)) {
        free(text);
        json_decref(content);
        json_decref(name);
        return core_error_oom();
    }
    u = json_pack("{s:s, s:s, s:s, s:o}", "sessionUpdate", "tool_call_update", "toolCallId", id,
                  "status", failed ? "failed" : "completed", "content", content);
    if (u && (*title || name) &&
        json_object_set_new(u, "title", *title ? json_string(title) : json_incref(name)) < 0) {
        json_decref(u);
        u = NULL;
    }
    rc = emit(l, u, 1);
    free(text);
    json_decref(name);
    return rc;
}

static int progress(struct line *l, const char *raw, size_t len)
{
    const json_t *ev = l->event, *up = json_object_get(ev, "update");
    const char *id = result_id(ev);
    char *text;
    json_t *u;

    if (!*id)
        return hns_emit_unknown(l->p, raw, len, "droid tool progress without an id");
    if (!json_is_object(up))
        up = NULL;
    text = stringify(
        nullish(json_object_get(ev, "content"),
                nullish(json_object_get(up, "text"),
                        nullish(json_object_get(up, "status"), json_object_get(up, "details")))));
    if (!text)
        return EVOLVE_ENOMEM;
    u = json_pack("{s:s, s:s, s:s}", "sessionUpdate", "tool_call_update", "toolCallId", id,
                  "status", "in_progress");
    if (u && *text &&
        json_object_set_new(u, "content", json_pack("[o]", hns_text_content(text, strlen(text)))) <
            0) {
        json_decref(u);
        u = NULL;
    }
    free(text);
    return emit(l, u, 1);
}

/* ---- lines ------------------------------------------------------------------------------------
 */

static int sticky_session(struct droid_state *st, const json_t *o)
{
    static const char *const keys[] = {"session_id", "sessionId", NULL};
    const char *s = sfirst(o, keys);

    if (!*s)
        return 0;
    json_decref(st->session_id);
    st->session_id = json_string(s);
    return st->session_id ? 0 : core_error_oom();
}

static int response(struct line *l, const json_t *root)
{
    struct droid_state *st = l->p->state;
    const json_t *result = json_object_get(root, "result"), *err = json_object_get(root, "error");
    int rc = sticky_session(st, json_is_object(result) ? result : root);
    char *text;

    if (rc < 0)
        return rc;
    if (json_is_object(err)) {
        text = stringify(nullish(json_object_get(err, "message"), err));
        if (!text)
            return EVOLVE_ENOMEM;
        if (*text)
            rc = error_update(l, text, 0);
        free(text);
        return rc;
    }
    text = strdup(*sfield(result, "finalText") ? sfield(result, "finalText")
                                               : sfield(result, "result"));
    if (!text)
        return core_error_oom();
    rc = assistant_text(l, text, 0);
    free(text);
    return rc;
}

static int dispatch(struct line *l, const char *type, const char *raw, size_t len)
{
    struct droid_state *st = l->p->state;
    const json_t *ev = l->event;
    char *text = NULL;
    int rc = 0;

    if (!strcmp(type, "system")) {
        if (json_is_string(json_object_get(ev, "model"))) {
            json_decref(st->model);
            st->model = json_incref(json_object_get(ev, "model"));
        }
    } else if (!strcmp(type, "message")) {
        if (!strcmp(sfield(ev, "role"), "assistant")) {
            text = *sfield(ev, "text") ? strdup(sfield(ev, "text"))
                                       : extract_text(json_object_get(ev, "content"));
            rc = text ? assistant_text(l, text, 0) : core_error_oom();
        }
    } else if (!strcmp(type, "completion")) {
        text = strdup(*sfield(ev, "finalText") ? sfield(ev, "finalText") : sfield(ev, "result"));
        if (!text)
            return core_error_oom();
        if (*text && (!st->emitted || strcmp(text, st->last ? st->last : "")))
            rc = assistant_text(l, text, 0);
        if (rc == 0 &&
            usage(l, nullish(json_object_get(ev, "usage"), json_object_get(ev, "tokenUsage"))) < 0)
            rc = EVOLVE_ENOMEM;
    } else if (!strcmp(type, "assistant_text_delta")) {
        text = strdup(*sfield(ev, "textDelta") ? sfield(ev, "textDelta") : sfield(ev, "text"));
        rc = text ? assistant_text(l, text, 1) : core_error_oom();
    } else if (!strcmp(type, "thinking_text_delta")) {
        rc = thought(l, type,
                     *sfield(ev, "textDelta") ? sfield(ev, "textDelta") : sfield(ev, "text"));
    } else if (!strcmp(type, "reasoning")) {
        rc = thought(l, type, sfield(ev, "text"));
    } else if (!strcmp(type, "assistant")) {
        text = *sfield(ev, "text")
                   ? strdup(sfield(ev, "text"))
                   : extract_text(json_object_get(json_object_get(ev, "message"), "content"));
        rc = text ? assistant_text(l, text, 0) : core_error_oom();
    } else if (!strcmp(type, "tool_call") || !strcmp(type, "tool_call_delta")) {
        const json_t *tu =
            json_is_object(json_object_get(ev, "toolUse"))    ? json_object_get(ev, "toolUse")
            : json_is_object(json_object_get(ev, "tool_use")) ? json_object_get(ev, "tool_use")
                                                              : ev;

        rc = tool_use(l, tu, raw, len);
    } else if (!strcmp(type, "tool_result")) {
        rc = tool_result(l, raw, len);
    } else if (!strcmp(type, "tool_progress_update") || !strcmp(type, "tool_progress")) {
        rc = progress(l, raw, len);
    } else if (!strcmp(type, "create_message")) {
        const json_t *msg = json_object_get(ev, "message"), *c = json_object_get(msg, "content"),
                     *b;
        size_t i;

        json_array_foreach(c, i, b)
        {
            if (rc == 0 && !strcmp(sfield(b, "type"), "tool_use"))
                rc = tool_use(l, b, raw, len);
        }
        if (rc == 0 && !strcmp(sfield(msg, "role"), "assistant")) {
            text = extract_text(c);
            if (!text)
                return EVOLVE_ENOMEM;
            if (*text && !(st->emitted && !strcmp(text, st->last ? st->last : "")))
                rc = assistant_text(l, text, 0);
        }
    } else if (!strcmp(type, "result")) {
        const json_t *v =
            nullish(json_object_get(ev, "result"),
                    nullish(json_object_get(ev, "text"), json_object_get(ev, "error")));

        if (json_object_get(ev, "is_error") == json_true() ||
            json_object_get(ev, "isError") == json_true()) {
            const json_t *m = json_object_get(json_object_get(ev, "error"), "message");

            text = json_is_string(m) ? strdup(json_string_value(m)) : stringify(v);
            if (!text)
                return core_error_oom();
            rc = error_update(l, *text ? text : "droid reported an error", 1);
        } else {
            text = stringify(v);
            rc = text ? assistant_text(l, text, 0) : EVOLVE_ENOMEM;
        }
        if (rc == 0 &&
            usage(l, nullish(json_object_get(ev, "usage"), json_object_get(ev, "tokenUsage"))) < 0)
            rc = EVOLVE_ENOMEM;
    } else if (!strcmp(type, "error")) {
        text = stringify(
            nullish(json_object_get(ev, "message"), nullish(json_object_get(ev, "error"), ev)));
        rc = text ? error_update(l, text, 0) : EVOLVE_ENOMEM;
    } else if (!strcmp(type, "session_token_usage_changed")) {
        rc = usage(l, nullish(json_object_get(ev, "usage"), json_object_get(ev, "tokenUsage")));
        if (rc == 1)
            rc = hns_emit_unknown(l->p, raw, len, "droid token usage without a usage object");
    } else if (!strcmp(type, "assistant_text_complete") ||
               !strcmp(type, "thinking_text_complete") ||
               !strcmp(type, "droid_working_state_changed") ||
               !strcmp(type, "permission_resolved") || !strcmp(type, "settings_updated") ||
               !strcmp(type, "session_title_updated") || !strcmp(type, "mcp_status_changed") ||
               !strcmp(type, "structured_output") || !strncmp(type, "mission_", 8) ||
               !strncmp(type, "mcp_auth_", 9)) {
        rc = 0;
    } else {
        rc = hns_emit_unknown(l->p, raw, len, "droid event of unknown type");
    }
    free(text);
    return rc;
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    struct droid_state *st = p->state;
    int rc;
    json_t *root = hns_parse_object(p, line, len, &rc);
    const json_t *ev, *notif, *ts;
    const char *type;
    struct line l = {.p = p};

    if (!root)
        return rc;
    st->work = 0;
    notif = json_object_get(json_object_get(root, "params"), "notification");
    ev = !strcmp(sfield(root, "method"), "droid.session_notification") && json_is_object(notif)
             ? notif
             : root;
    l.event = ev;
    ts = nullish(json_object_get(ev, "timestamp"), json_object_get(root, "timestamp"));
    l.ts = json_is_string(ts) ? json_incref((json_t *)ts) : hns_iso_time_ms(ts);
    l.m.timestamp = l.ts;
    l.m.model =
        json_is_string(json_object_get(ev, "model")) ? json_object_get(ev, "model") : st->model;
    if (json_is_string(json_object_get(ev, "messageId")))
        l.m.message_id = json_object_get(ev, "messageId");
    type = json_string_value(json_object_get(ev, "type"));
    if (json_object_get(root, "_meta") || json_object_get(root, "_prompt") ||
        json_object_get(root, "_sessionEnd"))
        rc = 0;
    else if (!strcmp(sfield(root, "type"), "response"))
        rc = response(&l, root);
    else {
        rc = sticky_session(st, ev);
        if (rc == 0 && !type)
            rc = hns_emit_unknown(p, line, len, "droid line without a type");
        else if (rc == 0)
            rc = dispatch(&l, type, line, len);
        if (rc == 0 && st->work && strcmp(type, "reasoning") &&
            strcmp(type, "thinking_text_delta")) {
            free(st->thought_sig);
            st->thought_sig = NULL;
        }
    }
    json_decref(l.ts);
    json_decref(root);
    return rc;
}

/* ---- command ----------------------------------------------------------------------------------
 */

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);

    if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

static int build_command(struct hns_command *out, const struct hns_run_spec *spec)
{
    const char *home = spec->home ? spec->home : "/home/user";
    const char *cwd = spec->workdir ? spec->workdir : "/home/user/workspace";
    char *settings_path = join(home, ".factory/evolve-settings.json"), *settings = NULL;
    json_t *cfg = json_pack("{s:b}", "cloudSessionSync", 0);
    int rc;

    if (!spec->prompt) {
        free(settings_path);
        json_decref(cfg);
        return core_error_set(EVOLVE_EINVAL, "droid: the run has no prompt");
    }
    /* A base URL becomes a custom model ("Evolve Gateway" -> custom:Evolve-Gateway-0), as the
     * reference's gateway settings; the key is referenced, never written. */
    if (cfg && spec->base_url &&
        json_object_set_new(
            cfg, "customModels",
            json_pack("[{s:s, s:s, s:s, s:s, s:s, s:i}]", "model",
                      spec->model ? spec->model : DEFAULT_MODEL, "displayName", "Evolve Gateway",
                      "baseUrl", spec->base_url, "apiKey", "${FACTORY_API_KEY}", "provider",
                      "generic-chat-completion-api", "maxOutputTokens", 32768)) < 0) {
        json_decref(cfg);
        cfg = NULL;
    }
    settings = cfg ? json_dumps(cfg, JSON_INDENT(2)) : NULL;
    json_decref(cfg);
    memset(out, 0, sizeof(*out));
    rc = settings && settings_path ? 0 : core_error_oom();
    if (rc == 0)
        rc = hns_command_arg(out, "droid");
    if (rc == 0)
        rc = hns_command_arg(out, "--settings");
    if (rc == 0)
        rc = hns_command_arg(out, settings_path);
    if (rc == 0)
        rc = hns_command_arg(out, "exec");
    /* spec §2.3/§3.7: resume only with a known session id, else a fresh session */
    if (rc == 0 && spec->resume && spec->session_id && *spec->session_id) {
        rc = hns_command_arg(out, "--session-id");
        if (rc == 0)
            rc = hns_command_arg(out, spec->session_id);
    }
    if (rc == 0)
        rc = hns_command_arg(out, "--skip-permissions-unsafe");
    if (rc == 0)
        rc = hns_command_arg(out, "--cwd");
    if (rc == 0)
        rc = hns_command_arg(out, cwd);
    if (rc == 0)
        rc = hns_command_arg(out, "--output-format");
    if (rc == 0)
        rc = hns_command_arg(out, "stream-json");
    if (rc == 0)
        rc = hns_command_arg(out, "--model");
    if (rc == 0)
        rc = hns_command_arg(out, spec->base_url ? "custom:Evolve-Gateway-0"
                                  : spec->model  ? spec->model
                                                 : DEFAULT_MODEL);
    if (rc == 0 && spec->reasoning) {
        rc = hns_command_arg(out, "--reasoning-effort");
        if (rc == 0)
            rc = hns_command_arg(out, spec->reasoning);
    }
    if (rc == 0 && spec->api_key)
        rc = hns_command_env(out, "FACTORY_API_KEY", spec->api_key);
    if (rc == 0)
        rc = hns_command_file(out, ".factory/evolve-settings.json", settings, 0644);
    /* the prompt goes on stdin, byte for byte (the reference pipes it with printf '%s') */
    if (rc == 0)
        rc = hns_command_stdin(out, spec->prompt, strlen(spec->prompt));
    free(settings);
    free(settings_path);
    if (rc < 0)
        hns_command_dispose(out);
    return rc;
}

static const char *const state_dirs[] = {".factory", NULL};

const struct hns_agent hns_agent_droid = {
    .name = "droid",
    .instruction_file = "AGENTS.md",
    .state_dirs = state_dirs,
    .default_model = DEFAULT_MODEL,
    .api_key_env = "FACTORY_API_KEY",
    .base_url_env = NULL,
    .state_new = state_new,
    .state_free = state_free,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
