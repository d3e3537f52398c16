/* qwen.c — Qwen Code (`qwen --output-format stream-json`): its command line and the parser of
 * its stream (spec harness-wire §3.4; the schema is Claude Code's).
 * Owns: the per-run streaming state (content blocks and tool-input buffers by block index).
 * Differences from the reference, on purpose (DESIGN.md §4): per-message `usage` (call scope,
 * messageId = message.id) and the `result` totals (run scope); `result.is_error` becomes an
 * `error` update; tool error text is not fenced; OutputEvents carry model, messageId,
 * parentToolCallId (subagent lines) and extra.stop_reason; tool_call carries toolName and
 * tool_call_update rawOutput (`tool_use_result` when the line has one); lines and blocks the
 * reference drops or crashes on become `unknown`.
 * Produce nothing, deliberately: `system` lines (init: session and tool list), session-log
 * metadata (`_meta`, `_prompt`), `stream_event` message_start/message_delta/message_stop/ping
 * (the assistant line repeats their content and usage), a `result` with neither usage nor error.
 * Qwen prints no timestamps, so none is set.
 * Size: over ~600 lines because the reference's tool tables, the parser and the command
 * builder of one agent live in one file (one descriptor per agent, DESIGN.md §3).
 * Threads: a parser instance is used by one thread at a time. */
#include "harness/harness.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define DEFAULT_MODEL "qwen3.7-max"
#define MAX_SLOTS     4096

/* One streaming content block slot, keyed by its `index` (JS Map semantics: default 0). */
struct slot {
    char *key;
    json_t *block; /* content_block from content_block_start; NULL once stopped */
    char *buf;     /* accumulated input_json_delta text of a tool_use block */
    size_t len, cap;
    int has_buf;
};

struct qwen_state {
    struct slot *slots;
    size_t n, cap;
};

static int state_new(void **out)
{
    struct qwen_state *st = calloc(1, sizeof(*st));

    if (!st)
        return core_error_oom();
    *out = st;
    return 0;
}

static void slot_clear(struct slot *s)
{
    free(s->key);
    json_decref(s->block);
    free(s->buf);
}

static void state_free(void *state)
{
    struct qwen_state *st = state;
    size_t i;

    if (!st)
        return;
    for (i = 0; i < st->n; i++)
        slot_clear(&st->slots[i]);
    free(st->slots);
    free(st);
}

/* ---- tool tables (spec §1.5, §3.4) ---------------------------------------------------------- */

static const char *tool_kind(const char *name)
{
    static const struct {
        const char *name, *kind;
    } kinds[] = {
        {"Read", "read"},
        {"read_file", "read"},
        {"Write", "edit"},
        {"Edit", "edit"},
        {"write_file", "edit"},
        {"edit_file", "edit"},
        {"Bash", "execute"},
        {"BashOutput", "execute"},
        {"KillShell", "execute"},
        {"shell", "execute"},
        {"run_shell_command", "execute"},
        {"Glob", "search"},
        {"Grep", "search"},
        {"LS", "search"},
        {"list_directory", "search"},
        {"WebFetch", "fetch"},
        {"WebSearch", "fetch"},
        {"brave_web_search", "fetch"},
        {"Task", "think"},
        {"ExitPlanMode", "switch_mode"},
    };
    size_t i;

    for (i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i].name, name))
            return kinds[i].kind;
    return "other";
}

static int is(const char *name, const char *a, const char *b, const char *c)
{
    return name && ((a && !strcmp(name, a)) || (b && !strcmp(name, b)) || (c && !strcmp(name, c)));
}

/* "<prefix><String(v || fallback)><suffix>", malloc'd. */
static char *titled(const char *prefix, const json_t *v, const char *fallback, const char *suffix)
{
    char *mid = hns_str_or(v, fallback), *out;
    size_t n;

    if (!mid)
        return NULL;
    n = strlen(prefix) + strlen(mid) + strlen(suffix) + 1;
    out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s%s", prefix, mid, suffix);
    else
        core_error_oom();
    free(mid);
    return out;
}

static json_t *location(const json_t *path)
{
    return json_pack("[{s:O}]", "path", path);
}

/* Title, content and locations of a tool_use per the reference's table. */
static int tool_info(const char *name, const json_t *in, char **title, json_t **content,
                     json_t **locations)
{
    const json_t *fp = json_object_get(in, "file_path");

    *title = NULL;
    *content = json_array();
    *locations = json_array();
    if (!*content || !*locations)
        goto oom;
    if (is(name, "Read", "read_file", NULL)) {
        const json_t *path = hns_js_truthy(fp) ? fp : json_object_get(in, "absolute_path");

        *title = titled("Read ", path, "file", "");
        if (hns_js_truthy(path)) {
            json_decref(*locations);
            *locations = location(path);
        }
    } else if (is(name, "Write", "write_file", NULL)) {
        *title = titled("Write ", fp, "file", "");
        if (hns_js_truthy(fp)) {
            const json_t *text = json_object_get(in, "content");
            json_t *nt = hns_js_truthy(text) ? json_incref((json_t *)text) : json_string("");

            json_decref(*content);
            *content = json_pack("[{s:s, s:O, s:n, s:o}]", "type", "diff", "path", fp, "oldText",
                                 "newText", nt);
            json_decref(*locations);
            *locations = location(fp);
        }
    } else if (is(name, "Edit", "edit_file", NULL)) {
        *title = titled("Edit ", fp, "file", "");
        if (hns_js_truthy(fp)) {
            json_decref(*locations);
            *locations = location(fp);
        }
    } else if (is(name, "Bash", "shell", "run_shell_command")) {
        const json_t *cmd = json_object_get(in, "command"), *desc;

        *title = hns_js_truthy(cmd) ? titled("`", cmd, NULL, "`") : strdup("Run command");
        desc = json_object_get(in, "description");
        if (hns_js_truthy(desc)) {
            char *d = hns_js_string(desc);

            if (d && json_array_append_new(*content, hns_text_content(d, strlen(d))) < 0) {
                free(d);
                goto oom;
            }
            free(d);
        }
    } else if (is(name, "WebFetch", NULL, NULL)) {
        const json_t *url = json_object_get(in, "url");

        *title = hns_js_truthy(url) ? titled("Fetch ", url, NULL, "") : strdup("Web fetch");
    } else if (is(name, "WebSearch", "brave_web_search", NULL)) {
        const json_t *q = json_object_get(in, "query");

        *title = hns_js_truthy(q) ? titled("\"", q, NULL, "\"") : strdup("Web search");
    } else if (is(name, "Glob", "Grep", NULL)) {
        const json_t *pat = json_object_get(in, "pattern"), *path = json_object_get(in, "path");

        *title = !strcmp(name, "Glob") ? titled("Find ", pat, "files", "")
                                       : titled("grep \"", pat, "", "\"");
        if (!strcmp(name, "Glob") && hns_js_truthy(path)) {
            json_decref(*locations);
            *locations = location(path);
        }
    } else if (is(name, "LS", "list_directory", NULL)) {
        const json_t *path = json_object_get(in, "path");

        *title = titled("List ", path, "directory", "");
        if (hns_js_truthy(path)) {
            json_decref(*locations);
            *locations = location(path);
        }
    } else if (is(name, "Task", NULL, NULL)) {
        *title = hns_str_or(json_object_get(in, "description"), "Subagent task");
    } else if (is(name, "TodoWrite", NULL, NULL)) {
        *title = strdup("Update todos");
    } else if (is(name, "ExitPlanMode", NULL, NULL)) {
        *title = strdup("Exit plan mode");
    } else {
        *title = strdup(name);
    }
    if (!*title || !*content || !*locations)
        goto oom;
    return 0;
oom:
    free(*title);
    json_decref(*content);
    json_decref(*locations);
    return core_error_oom();
}

/* ---- events -----------------------------------------------------------------------------------
 */

/* tool_use block -> plan (TodoWrite with a todos array) or tool_call. `input` NULL = absent. */
static int emit_tool_use(struct hns_parser *p, const struct hns_meta *m, const char *line,
                         size_t len, const json_t *block, const json_t *input)
{
    const json_t *id = json_object_get(block, "id"), *jname = json_object_get(block, "name");
    const json_t *todos = json_object_get(input, "todos");
    const json_t *in = json_is_object(input) ? input : NULL;
    char *title, *sname = NULL;
    const char *name;
    json_t *content, *locations, *u;
    int rc;

    if (!json_is_string(jname)) {
        sname = hns_js_string(jname);
        if (!sname)
            return EVOLVE_ENOMEM;
    }
    name = sname ? sname : json_string_value(jname);
    if (!strcmp(name, "TodoWrite") && json_is_array(todos)) {
        json_t *entries = json_array(), *todo;
        size_t i;

        free(sname);
        json_array_foreach(todos, i, todo)
        {
            const json_t *status = json_object_get(todo, "status");
            json_t *e;

            if (!json_is_object(todo)) /* the reference throws on a null todo */
                continue;
            e = json_pack("{s:O*, s:o, s:s}", "content", json_object_get(todo, "content"), "status",
                          hns_js_truthy(status) ? json_incref((json_t *)status)
                                                : json_string("pending"),
                          "priority", "medium");
            if (json_array_append_new(entries, e) < 0) {
                json_decref(entries);
                return core_error_oom();
            }
        }
        return hns_emit_update(
            p, m, json_pack("{s:s, s:o}", "sessionUpdate", "plan", "entries", entries));
    }
    if (!json_is_string(id)) {
        free(sname);
        return hns_emit_unknown(p, line, len, "qwen tool_use block without a string id");
    }
    rc = tool_info(name, in, &title, &content, &locations);
    if (rc < 0) {
        free(sname);
        return rc;
    }
    u = json_pack("{s:s, s:O, s:s, s:s, s:s, s:o, s:o}", "sessionUpdate", "tool_call", "toolCallId",
                  id, "title", title, "kind", tool_kind(name), "status", "pending", "content",
                  content, "locations", locations);
    if (u && json_is_string(jname) && json_object_set(u, "toolName", (json_t *)jname) < 0)
        goto oom;
    if (u && input && json_object_set(u, "rawInput", (json_t *)input) < 0)
        goto oom;
    free(title);
    free(sname);
    return hns_emit_update(p, m, u);
oom:
    free(title);
    free(sname);
    json_decref(u);
    return core_error_oom();
}

/* tool_result block -> tool_call_update (no pairing check, as the reference). */
static int emit_tool_result(struct hns_parser *p, const struct hns_meta *m, const char *line,
                            size_t len, const json_t *block, const json_t *raw_output)
{
    const json_t *id = json_object_get(block, "tool_use_id"),
                 *c = json_object_get(block, "content");
    bool failed = hns_js_truthy(json_object_get(block, "is_error"));
    json_t *content = json_array(), *u;

    if (!json_is_string(id)) {
        json_decref(content);
        return hns_emit_unknown(p, line, len,
                                "qwen tool_result block without a string tool_use_id");
    }
    if (!content)
        return core_error_oom();
    /* DESIGN §4: the harness's text verbatim, so unlike the reference no fence on errors */
    if (json_is_string(c) && json_string_length(c) > 0) {
        if (json_array_append_new(
                content, hns_text_content(json_string_value(c), json_string_length(c))) < 0)
            goto oom;
    } else if (json_is_array(c)) {
        const json_t *item;
        size_t i;

        json_array_foreach(c, i, item)
        {
            const json_t *t = json_object_get(item, "text");
            const char *type = json_string_value(json_object_get(item, "type"));
            char *s;

            if (!type || strcmp(type, "text"))
                continue;
            s = hns_js_string(t);
            if (!s || json_array_append_new(content, hns_text_content(s, strlen(s))) < 0) {
                free(s);
                goto oom;
            }
            free(s);
        }
    }
    u = json_pack("{s:s, s:O, s:s, s:o}", "sessionUpdate", "tool_call_update", "toolCallId", id,
                  "status", failed ? "failed" : "completed", "content", content);
    if (u && raw_output && json_object_set(u, "rawOutput", (json_t *)raw_output) < 0) {
        json_decref(u);
        return core_error_oom();
    }
    return hns_emit_update(p, m, u);
oom:
    json_decref(content);
    return core_error_oom();
}

static int emit_text(struct hns_parser *p, const struct hns_meta *m, const char *kind,
                     const json_t *text)
{
    return hns_emit_update(
        p, m,
        hns_chunk_update(kind, hns_text_block(json_string_value(text), json_string_length(text))));
}

/* Usage as qwen prints it (OpenAI-derived: input_tokens already includes the cached share). */
static int emit_usage(struct hns_parser *p, const struct hns_meta *m, const char *scope,
                      const json_t *usage)
{
    static const char *const known[] = {"input_tokens", "output_tokens", "cache_read_input_tokens",
                                        NULL};
    const json_t *in = json_object_get(usage, "input_tokens");
    const json_t *out = json_object_get(usage, "output_tokens");
    const json_t *cached = json_object_get(usage, "cache_read_input_tokens");

    return hns_emit_update(
        p, m,
        hns_usage_update(scope, json_is_number(in) ? json_incref((json_t *)in) : NULL,
                         json_is_number(out) ? json_incref((json_t *)out) : NULL,
                         json_is_number(cached) ? json_incref((json_t *)cached) : NULL, NULL,
                         hns_object_except(usage, known)));
}

static int parse_assistant(struct hns_parser *p, struct hns_meta *m, const json_t *root,
                           const char *line, size_t len)
{
    const json_t *msg = json_object_get(root, "message"), *blocks = json_object_get(msg, "content");
    const json_t *block, *usage = json_object_get(msg, "usage");
    json_t *extra = NULL;
    size_t i;
    int rc = 0, any = 0;

    if (!json_is_array(blocks))
        return hns_emit_unknown(p, line, len, "qwen assistant line without a content array");
    if (json_is_string(json_object_get(msg, "model")))
        m->model = json_object_get(msg, "model");
    if (json_is_string(json_object_get(msg, "id")))
        m->message_id = json_object_get(msg, "id");
    if (json_is_string(json_object_get(msg, "stop_reason"))) {
        extra = json_pack("{s:O}", "stop_reason", json_object_get(msg, "stop_reason"));
        if (!extra)
            return core_error_oom();
        m->extra = extra;
    }
    json_array_foreach(blocks, i, block)
    {
        const char *type = json_string_value(json_object_get(block, "type"));
        const json_t *t;

        if (rc < 0)
            break;
        if (type && !strcmp(type, "text")) {
            t = json_object_get(block, "text");
            if (json_is_string(t) && json_string_length(t) > 0)
                rc = emit_text(p, m, "agent_message_chunk", t);
        } else if (type && !strcmp(type, "thinking")) {
            t = json_object_get(block, "thinking");
            if (json_is_string(t) && json_string_length(t) > 0)
                rc = emit_text(p, m, "agent_thought_chunk", t);
        } else if (type && !strcmp(type, "tool_use")) {
            rc = emit_tool_use(p, m, line, len, block, json_object_get(block, "input"));
        } else if (type && !strcmp(type, "tool_result")) {
            rc = emit_tool_result(p, m, line, len, block, NULL);
        } else if (!any) {
            /* the reference throws on these (image, redacted_thinking, null): keep the line */
            any = 1;
            rc = hns_emit_unknown(p, line, len, "qwen assistant content block of unknown type");
        }
    }
    if (rc >= 0 && json_is_object(usage))
        rc = emit_usage(p, m, "call", usage);
    json_decref(extra);
    return rc;
}

static int parse_user(struct hns_parser *p, const struct hns_meta *m, const json_t *root,
                      const char *line, size_t len)
{
    const json_t *c = json_object_get(json_object_get(root, "message"), "content"), *block;
    const json_t *raw_output = json_object_get(root, "tool_use_result");
    size_t i;
    int rc = 0;

    if (json_is_string(c))
        return emit_text(p, m, "user_message_chunk", c);
    if (!json_is_array(c))
        return hns_emit_unknown(p, line, len, "qwen user line without content");
    json_array_foreach(c, i, block)
    {
        const char *type = json_string_value(json_object_get(block, "type"));

        if (rc < 0)
            break;
        if (type && !strcmp(type, "text")) {
            const json_t *t = json_object_get(block, "text");
            char *s = hns_js_string(t);

            if (!s)
                return EVOLVE_ENOMEM;
            rc = hns_emit_update(
                p, m, hns_chunk_update("user_message_chunk", hns_text_block(s, strlen(s))));
            free(s);
        } else if (type && !strcmp(type, "tool_result")) {
            rc = emit_tool_result(p, m, line, len, block, raw_output);
        }
    }
    return rc;
}

/* ---- stream_event -----------------------------------------------------------------------------
 */

static char *index_key(const json_t *idx)
{
    char num[40], *s, *out;
    size_t n;

    if (!idx || json_is_null(idx))
        return strdup("n:0");
    if (json_is_number(idx)) {
        hns_js_number(json_number_value(idx), num, sizeof(num));
        n = strlen(num) + 3;
        out = malloc(n);
        if (out)
            snprintf(out, n, "n:%s", num);
        return out;
    }
    s = hns_js_stringify(idx);
    if (!s)
        return NULL;
    n = strlen(s) + 3;
    out = malloc(n);
    if (out)
        snprintf(out, n, "j:%s", s);
    free(s);
    return out;
}

static struct slot *slot_get(struct qwen_state *st, const char *key, int create)
{
    size_t i;

    for (i = 0; i < st->n; i++)
        if (!strcmp(st->slots[i].key, key))
            return &st->slots[i];
    if (!create)
        return NULL;
    if (st->n >= MAX_SLOTS) /* blocks that never stop: bound the memory a stream can hold */
        return NULL;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4;
        struct slot *ns = realloc(st->slots, cap * sizeof(*ns));

        if (!ns)
            return NULL;
        st->slots = ns;
        st->cap = cap;
    }
    memset(&st->slots[st->n], 0, sizeof(st->slots[0]));
    st->slots[st->n].key = strdup(key);
    if (!st->slots[st->n].key)
        return NULL;
    return &st->slots[st->n++];
}

static void slot_drop_if_empty(struct qwen_state *st, struct slot *s)
{
    if (s->block || s->has_buf)
        return;
    slot_clear(s);
    *s = st->slots[--st->n];
}

static int is_tool_use(const json_t *block)
{
    const char *t = json_string_value(json_object_get(block, "type"));

    return t && !strcmp(t, "tool_use");
}

static int stream_stop(struct hns_parser *p, const struct hns_meta *m, const char *line, size_t len,
                       struct slot *s)
{
    struct qwen_state *st = p->state;
    json_t *block = s->block;
    const char *type = json_string_value(json_object_get(block, "type"));
    int rc = 0;

    if (!block)
        return 0;
    s->block = NULL;
    if (type && !strcmp(type, "tool_use")) {
        json_t *parsed = NULL;

        if (s->has_buf && s->len > 0)
            parsed = json_loadb(s->buf, s->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        free(s->buf);
        s->buf = NULL;
        s->len = s->cap = 0;
        s->has_buf = 0;
        rc = emit_tool_use(p, m, line, len, block,
                           parsed ? parsed : json_object_get(block, "input"));
        json_decref(parsed);
    } else if (type && !strcmp(type, "tool_result")) {
        rc = emit_tool_result(p, m, line, len, block, NULL);
    }
    json_decref(block);
    slot_drop_if_empty(st, s);
    return rc;
}

static int parse_stream_event(struct hns_parser *p, const struct hns_meta *m, const json_t *root,
                              const char *line, size_t len)
{
    struct qwen_state *st = p->state;
    const json_t *ev = json_object_get(root, "event");
    const char *type = json_string_value(json_object_get(ev, "type"));
    char *key;
    struct slot *s;
    int rc = 0;

    if (!type)
        return hns_emit_unknown(p, line, len, "qwen stream_event without an event type");
    if (!strcmp(type, "message_start") || !strcmp(type, "message_delta") ||
        !strcmp(type, "message_stop") || !strcmp(type, "ping"))
        return 0;
    if (strcmp(type, "content_block_start") && strcmp(type, "content_block_delta") &&
        strcmp(type, "content_block_stop"))
        return hns_emit_unknown(p, line, len, "qwen stream_event of unknown type");
    key = index_key(json_object_get(ev, "index"));
    if (!key)
        return core_error_oom();
    if (!strcmp(type, "content_block_start")) {
        const json_t *block = json_object_get(ev, "content_block");

        if (block) {
            s = slot_get(st, key, 1);
            if (!s && st->n < MAX_SLOTS) {
                free(key);
                return core_error_oom();
            }
            if (!s) {
                free(key);
                return hns_emit_unknown(p, line, len, "qwen stream with too many open blocks");
            }
            json_decref(s->block);
            s->block = json_incref((json_t *)block);
            if (is_tool_use(block)) {
                s->len = 0;
                s->has_buf = 1;
            }
        }
    } else if (!strcmp(type, "content_block_delta")) {
        const json_t *d = json_object_get(ev, "delta");
        const char *dt = json_string_value(json_object_get(d, "type"));
        const json_t *t;

        if (dt && !strcmp(dt, "text_delta")) {
            t = json_object_get(d, "text");
            if (json_is_string(t) && json_string_length(t) > 0)
                rc = emit_text(p, m, "agent_message_chunk", t);
        } else if (dt && !strcmp(dt, "thinking_delta")) {
            t = json_object_get(d, "thinking");
            if (json_is_string(t) && json_string_length(t) > 0)
                rc = emit_text(p, m, "agent_thought_chunk", t);
        } else if (dt && !strcmp(dt, "input_json_delta")) {
            t = json_object_get(d, "partial_json");
            s = slot_get(st, key, 0);
            if (json_is_string(t) && json_string_length(t) > 0 && s && is_tool_use(s->block)) {
                size_t add = json_string_length(t);

                if (s->len + add + 1 > s->cap) {
                    size_t cap = (s->len + add + 1) * 2;
                    char *nb = realloc(s->buf, cap);

                    if (!nb) {
                        free(key);
                        return core_error_oom();
                    }
                    s->buf = nb;
                    s->cap = cap;
                }
                memcpy(s->buf + s->len, json_string_value(t), add);
                s->len += add;
                s->has_buf = 1;
            }
        }
    } else {
        s = slot_get(st, key, 0);
        if (s)
            rc = stream_stop(p, m, line, len, s);
    }
    free(key);
    return rc;
}

/* ---- entry point ------------------------------------------------------------------------------
 */

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    int rc;
    json_t *root = hns_parse_object(p, line, len, &rc);
    const json_t *sid, *parent;
    const char *type;
    struct hns_meta m = {0};

    if (!root)
        return rc;
    type = json_string_value(json_object_get(root, "type"));
    sid = json_object_get(root, "session_id");
    if (hns_js_truthy(sid))
        m.session_id = sid;
    parent = json_object_get(root, "parent_tool_use_id");
    if (json_is_string(parent) && json_string_length(parent) > 0)
        m.parent_tool_call_id = parent;
    if (json_object_get(root, "_meta") || json_object_get(root, "_prompt") ||
        json_object_get(root, "_sessionEnd"))
        rc = 0; /* session-log metadata, not harness output */
    else if (!type)
        rc = hns_emit_unknown(p, line, len, "qwen line without a type");
    else if (!strcmp(type, "assistant"))
        rc = parse_assistant(p, &m, root, line, len);
    else if (!strcmp(type, "user"))
        rc = parse_user(p, &m, root, line, len);
    else if (!strcmp(type, "stream_event"))
        rc = parse_stream_event(p, &m, root, line, len);
    else if (!strcmp(type, "system"))
        rc = 0;
    else if (!strcmp(type, "result")) {
        static const char *const keys[] = {"subtype", "duration_ms", "duration_api_ms", "num_turns",
                                           NULL};
        const json_t *usage = json_object_get(root, "usage");
        json_t *extra = json_object();
        size_t i;

        for (i = 0; extra && keys[i]; i++)
            if (json_object_get(root, keys[i]) &&
                json_object_set(extra, keys[i], json_object_get(root, keys[i])) < 0) {
                json_decref(extra);
                extra = NULL;
            }
        if (!extra) {
            json_decref(root);
            return core_error_oom();
        }
        m.extra = extra;
        rc = 0;
        if (json_object_get(root, "is_error") == json_true()) {
            const json_t *err = json_object_get(root, "error"),
                         *msg = json_object_get(err, "message");
            const json_t *res = json_object_get(root, "result");
            const char *text = json_is_string(msg)   ? json_string_value(msg)
                               : json_is_string(err) ? json_string_value(err)
                               : json_is_string(res) && json_string_length(res) > 0
                                   ? json_string_value(res)
                               : json_is_string(json_object_get(root, "subtype"))
                                   ? json_string_value(json_object_get(root, "subtype"))
                                   : "qwen reported an error";

            rc = hns_emit_update(p, &m,
                                 json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message",
                                           text, "fatal", 1));
        }
        if (rc >= 0 && json_is_object(usage))
            rc = emit_usage(p, &m, "run", usage);
        json_decref(extra);
    } else
        rc = hns_emit_unknown(p, line, len, "qwen line of unknown type");
    json_decref(root);
    return rc;
}

/* ---- command ----------------------------------------------------------------------------------
 */

static int thinking_enabled(const char *effort)
{
    static const char *const off[] = {"off", "none", "minimal", "no-thinking"};
    size_t i;

    for (i = 0; effort && i < 4; i++)
        if (!strcmp(effort, off[i]))
            return 0;
    return 1;
}

static int build_command(struct hns_command *out, const struct hns_run_spec *spec)
{
    const char *model = spec->model ? spec->model : DEFAULT_MODEL;
    const char *base =
        spec->base_url ? spec->base_url : "https://dashscope-intl.aliyuncs.com/compatible-mode/v1";
    char *prompt_arg = NULL, *settings = NULL;
    json_t *cfg = NULL;
    size_t n;
    int rc;

    if (!spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "qwen: the run has no prompt");
    /* `--prompt=<text>` keeps the prompt one argv element even when it starts with '-' */
    n = strlen(spec->prompt) + sizeof("--prompt=");
    prompt_arg = malloc(n);
    if (!prompt_arg)
        return core_error_oom();
    snprintf(prompt_arg, n, "--prompt=%s", spec->prompt);
    /* What qwen needs headless and offline (tools/fakemodel): no update check, telemetry, IDE
     * probe, or the managed-memory side requests; plus the reference's enable_thinking. */
    cfg = json_pack("{s:{s:{s:s}, s:{s:b}}, s:{s:b}, s:{s:b}, s:{s:b}, s:{s:b}, "
                    "s:{s:b, s:b}, s:{s:{s:{s:b}}}}",
                    "security", "auth", "selectedType", "openai", "folderTrust", "enabled", 0,
                    "general", "enableAutoUpdate", 0, "privacy", "usageStatisticsEnabled", 0,
                    "telemetry", "enabled", 0, "ide", "enabled", 0, "memory",
                    "enableManagedAutoMemory", 0, "enableManagedAutoDream", 0, "model",
                    "generationConfig", "extra_body", "enable_thinking",
                    thinking_enabled(spec->reasoning));
    settings = cfg ? json_dumps(cfg, JSON_INDENT(2)) : NULL;
    json_decref(cfg);
    memset(out, 0, sizeof(*out));
    rc = settings ? 0 : core_error_oom();
    if (rc == 0)
        rc = hns_command_arg(out, "qwen");
    if (rc == 0)
        rc = hns_command_arg(out, prompt_arg);
    if (rc == 0 && spec->resume)
        rc = hns_command_arg(out, "--continue");
    if (rc == 0)
        rc = hns_command_arg(out, "--output-format");
    if (rc == 0)
        rc = hns_command_arg(out, "stream-json");
    if (rc == 0)
        rc = hns_command_arg(out, "--approval-mode");
    if (rc == 0)
        rc = hns_command_arg(out, "yolo");
    if (rc == 0)
        rc = hns_command_arg(out, "--auth-type");
    if (rc == 0)
        rc = hns_command_arg(out, "openai");
    if (rc == 0 && model)
        rc = hns_command_arg(out, "--model");
    if (rc == 0 && model)
        rc = hns_command_arg(out, model);
    if (rc == 0 && spec->api_key)
        rc = hns_command_env(out, "OPENAI_API_KEY", spec->api_key);
    if (rc == 0)
        rc = hns_command_env(out, "OPENAI_BASE_URL", base);
    if (rc == 0 && model)
        rc = hns_command_env(out, "OPENAI_MODEL", model);
    if (rc == 0)
        rc = hns_command_file(out, ".qwen/settings.json", settings, 0644);
    free(prompt_arg);
    free(settings);
    if (rc < 0)
        hns_command_dispose(out);
    return rc;
}

static const char *const state_dirs[] = {".qwen", NULL};

const struct hns_agent hns_agent_qwen = {
    .name = "qwen",
    .instruction_file = "QWEN.md",
    .state_dirs = state_dirs,
    .default_model = DEFAULT_MODEL,
    .api_key_env = "OPENAI_API_KEY",
    .base_url_env = "OPENAI_BASE_URL",
    .state_new = state_new,
    .state_free = state_free,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
