/* kimi.c — Kimi Code (`kimi -p … --output-format stream-json`, also the legacy kimi-cli's
 * message lines and the wire envelopes {type, payload}): its command line and stream parser
 * (spec harness-wire §3.5).
 * Owns: the per-run state: ids of todo-list tool calls (their first result is swallowed) and
 * the counter behind fallback tool-call ids (`kimi_<name>_<n>`).
 * Kimi prints no session id, timestamp, model or usage on this stream, so its events carry none
 * of them (never invented). Differences from the reference, on purpose (DESIGN.md §4): tool_call
 * carries toolName; lines the reference drops without a trace (other roles, tool lines without
 * an id, unhandled envelope types such as StatusUpdate) become `unknown`.
 * Produce nothing, deliberately: session-log metadata (`_meta`, `_prompt`) and `role:"meta"`
 * resume hints; an assistant line with no text and no tool call; the first result of a todo
 * list call (the reference's suppression).
 * Size: over ~600 lines because the reference's tool tables, the parser and the command
 * builder of one agent live in one file (one descriptor per agent, DESIGN.md §3).
 * Threads: a parser instance is used by one thread at a time. */
#include "harness/harness.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define DEFAULT_MODEL "kimi-k2.6"

struct kimi_state {
    json_t *todo_ids; /* object used as a set */
    unsigned long counter;
};

static int state_new(void **out)
{
    struct kimi_state *st = calloc(1, sizeof(*st));

    if (!st || !(st->todo_ids = json_object())) {
        free(st);
        return core_error_oom();
    }
    *out = st;
    return 0;
}

static void state_free(void *state)
{
    struct kimi_state *st = state;

    if (!st)
        return;
    json_decref(st->todo_ids);
    free(st);
}

static int in_list(const char *name, const char *const *list)
{
    for (; name && *list; list++)
        if (!strcmp(name, *list))
            return 1;
    return 0;
}

static const char *tool_kind(const char *name)
{
    static const char *const read[] = {"Read", "ReadFile", "ReadMediaFile", NULL};
    static const char *const edit[] = {"Write", "WriteFile", "Edit", "StrReplaceFile", NULL};
    static const char *const exec[] = {"Bash", "Shell", NULL};
    static const char *const search[] = {"Glob", "Grep", NULL};
    static const char *const fetch[] = {"WebSearch", "SearchWeb", "FetchURL", NULL};
    static const char *const think[] = {"Agent", "AgentSwarm",     "Task",
                                        "Think", "CreateSubagent", NULL};

    return in_list(name, read)     ? "read"
           : in_list(name, edit)   ? "edit"
           : in_list(name, exec)   ? "execute"
           : in_list(name, search) ? "search"
           : in_list(name, fetch)  ? "fetch"
           : in_list(name, think)  ? "think"
                                   : "other";
}

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);

    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* "<prefix><String(v || fallback)><suffix>" */
static char *titled(const char *prefix, const json_t *v, const char *fallback, const char *suffix)
{
    char *mid = hns_str_or(v, fallback), *out;

    if (!mid)
        return NULL;
    out = cat3(prefix, mid, suffix);
    free(mid);
    return out;
}

static const json_t *nullish(const json_t *a, const json_t *b)
{
    return a && !json_is_null(a) ? a : b;
}

static int tool_info(const char *name, const json_t *in, char **title, json_t **content,
                     json_t **locations)
{
    static const char *const read[] = {"Read", "ReadFile", NULL};
    static const char *const write[] = {"Write", "WriteFile", NULL};
    static const char *const editn[] = {"Edit", "StrReplaceFile", NULL};
    static const char *const agent[] = {"Agent", "AgentSwarm", "Task", NULL};
    const json_t *path = nullish(json_object_get(in, "path"), json_object_get(in, "file_path"));
    const json_t *loc = NULL;

    *content = json_array();
    if (in_list(name, read) || !strcmp(name, "ReadMediaFile")) {
        *title = titled(!strcmp(name, "ReadMediaFile") ? "Read media " : "Read ", path, "file", "");
        loc = path;
    } else if (in_list(name, write)) {
        const json_t *text = json_object_get(in, "content");

        *title = titled("Write ", path, "file", "");
        if (hns_js_truthy(path) && json_is_string(text) && *content)
            json_array_append_new(*content, json_pack("{s:s, s:O, s:n, s:O}", "type", "diff",
                                                      "path", path, "oldText", "newText", text));
        loc = path;
    } else if (in_list(name, editn)) {
        *title = titled("Edit ", path, "file", "");
        loc = path;
    } else if (!strcmp(name, "Bash") || !strcmp(name, "Shell")) {
        const json_t *cmd = json_object_get(in, "command");

        *title = hns_js_truthy(cmd) ? titled("`", cmd, NULL, "`") : strdup("Run command");
    } else if (!strcmp(name, "Glob") || !strcmp(name, "Grep")) {
        const json_t *pat = json_object_get(in, "pattern");

        *title = !strcmp(name, "Glob") ? titled("Find ", pat, "files", "")
                                       : titled("grep \"", pat, "", "\"");
        loc = json_object_get(in, "path");
    } else if (!strcmp(name, "WebSearch") || !strcmp(name, "SearchWeb")) {
        const json_t *q = json_object_get(in, "query");

        *title = hns_js_truthy(q) ? titled("\"", q, NULL, "\"") : strdup("Web search");
    } else if (!strcmp(name, "FetchURL")) {
        const json_t *url = json_object_get(in, "url");

        *title = hns_js_truthy(url) ? titled("Fetch ", url, NULL, "") : strdup("Web fetch");
    } else if (in_list(name, agent)) {
        *title = hns_str_or(json_object_get(in, "description"), "Subagent task");
    } else if (!strcmp(name, "Think")) {
        *title = hns_str_or(json_object_get(in, "thought"), "Thinking");
    } else if (!strcmp(name, "CreateSubagent")) {
        const json_t *n = json_object_get(in, "name");

        *title = hns_js_truthy(n) ? titled("Subagent: ", n, NULL, "") : strdup("Create subagent");
    } else {
        *title = strdup(name);
    }
    *locations = hns_js_truthy(loc) ? json_pack("[{s:O}]", "path", loc) : json_array();
    if (!*title || !*content || !*locations) {
        free(*title);
        json_decref(*content);
        json_decref(*locations);
        return core_error_oom();
    }
    return 0;
}

/* ---- content parts ----------------------------------------------------------------------------
 */

static int is_line_end(const unsigned char *s, size_t i, size_t n)
{
    return s[i] == '\n' || s[i] == '\r' ||
           (s[i] == 0xE2 && i + 2 < n && s[i + 1] == 0x80 &&
            (s[i + 2] == 0xA8 || s[i + 2] == 0xA9));
}

/* Kimi's data-URL rule (spec §3.5): data:<mime>[;param]*,<data> with ;base64 among the params
 * -> {data, mimeType}; anything else -> {data:"", mimeType:"", uri}. */
static json_t *image_block(const char *url, size_t n)
{
    const unsigned char *s = (const unsigned char *)url;
    size_t i, mime_end, comma;
    int b64 = 0;

    if (n < 5 || strncasecmp(url, "data:", 5))
        goto remote;
    for (i = 5; i < n && s[i] != ';' && s[i] != ','; i++)
        ;
    mime_end = i;
    if (mime_end == 5 || i == n)
        goto remote;
    while (i < n && s[i] == ';') {
        size_t start = i + 1;

        for (i = start; i < n && s[i] != ';' && s[i] != ','; i++)
            ;
        if (i - start >= 6 && !strncasecmp(url + start, "base64", 6))
            b64 = 1; /* the params text contains ";base64" */
    }
    if (i == n || s[i] != ',')
        goto remote;
    comma = i;
    if (comma + 1 == n)
        goto remote;
    for (i = comma + 1; i < n; i++)
        if (is_line_end(s, i, n))
            goto remote;
    if (!b64)
        goto remote;
    return json_pack("{s:s, s:s%, s:s%}", "type", "image", "data", url + comma + 1, n - comma - 1,
                     "mimeType", url + 5, mime_end - 5);
remote:
    return json_pack("{s:s, s:s, s:s, s:s%}", "type", "image", "data", "", "mimeType", "", "uri",
                     url, n);
}

/* A content part -> content block, or NULL with *skip set when the part yields nothing. */
static json_t *part_block(const json_t *part, int *skip, int assistant)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    const json_t *v;

    *skip = 1;
    if (!type)
        return NULL;
    if (!strcmp(type, "text")) {
        v = json_object_get(part, "text");
        if (!json_is_string(v) || !json_string_length(v))
            return NULL;
        *skip = 0;
        return hns_text_block(json_string_value(v), json_string_length(v));
    }
    if (!strcmp(type, "think") && assistant) {
        v = json_object_get(part, "think");
        if (!json_is_string(v) || !json_string_length(v))
            return NULL;
        *skip = 0;
        return hns_text_block(json_string_value(v), json_string_length(v));
    }
    if (!strcmp(type, "image_url") || !strcmp(type, "video_url") || !strcmp(type, "audio_url")) {
        const json_t *url = json_object_get(json_object_get(part, type), "url");
        char *s;
        json_t *b;

        if (!json_is_string(url))
            return NULL;
        *skip = 0;
        if (type[0] == 'i')
            return image_block(json_string_value(url), json_string_length(url));
        s = cat3(type[0] == 'v' ? "[video] " : "[audio] ", json_string_value(url), "");
        b = s ? hns_text_block(s, strlen(s)) : NULL;
        free(s);
        return b;
    }
    return NULL;
}

static int marks_error(const char *s, size_t n)
{
    size_t i, j;

    for (i = 0; i < n; i++) {
        if (i + 7 <= n && !memcmp(s + i, "<error>", 7))
            return 1;
        if (i + 9 <= n && !memcmp(s + i, "ToolError", 9))
            return 1;
        if (i + 8 <= n && !strncasecmp(s + i, "<system>", 8)) {
            for (j = i + 8; j < n && isspace((unsigned char)s[j]); j++)
                ;
            if (j + 6 <= n && !strncasecmp(s + j, "ERROR:", 6))
                return 1;
        }
    }
    return 0;
}

/* Appends {type:"content", content:block} for one tool output part; *err |= error markers. */
static int add_tool_part(json_t *content, const json_t *part, int *err)
{
    int skip;
    json_t *b;

    if (json_is_string(part)) {
        if (!json_string_length(part))
            return 0;
        b = hns_text_block(json_string_value(part), json_string_length(part));
    } else {
        b = part_block(part, &skip, 0);
        if (!b && skip)
            return 0;
    }
    if (!b)
        return core_error_oom();
    if (!strcmp(json_string_value(json_object_get(b, "type")), "text"))
        *err |= marks_error(json_string_value(json_object_get(b, "text")),
                            json_string_length(json_object_get(b, "text")));
    if (json_array_append_new(content, json_pack("{s:s, s:o}", "type", "content", "content", b)) <
        0)
        return core_error_oom();
    return 0;
}

/* ---- events -----------------------------------------------------------------------------------
 */

static int emit_chunk(struct hns_parser *p, const char *kind, json_t *block)
{
    return hns_emit_update(p, NULL, hns_chunk_update(kind, block));
}

/* One tool call (a tool_calls entry or a wire ToolCall payload) whose id is already decided. */
static int emit_call(struct hns_parser *p, const char *id, const json_t *fn)
{
    struct kimi_state *st = p->state;
    const json_t *jname = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
    char *name = json_is_string(jname)           ? strdup(json_string_value(jname))
                 : jname && !json_is_null(jname) ? hns_js_string(jname)
                                                 : strdup("");
    json_t *input = NULL, *u = NULL;
    char *title = NULL;
    json_t *content, *locations;
    int rc;

    if (!name)
        return core_error_oom();
    if (json_is_string(args) && json_string_length(args))
        input = json_loadb(json_string_value(args), json_string_length(args),
                           JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!input)
        input = hns_js_truthy(args) ? json_incref((json_t *)args) : json_object();
    if (!strcmp(name, "TodoList") || !strcmp(name, "SetTodoList")) {
        json_t *entries = json_array(), *todo;
        size_t i;

        rc = json_object_set_new(st->todo_ids, id, json_true()) < 0 || !entries ? core_error_oom()
                                                                                : 0;
        json_array_foreach(json_object_get(input, "todos"), i, todo)
        {
            const json_t *title_v = json_object_get(todo, "title");
            const char *s = json_string_value(json_object_get(todo, "status"));
            const char *status = !s                                              ? "pending"
                                 : !strcmp(s, "in_progress")                     ? "in_progress"
                                 : !strcmp(s, "done") || !strcmp(s, "completed") ? "completed"
                                                                                 : "pending";

            if (rc < 0 || !json_is_string(title_v) || !json_string_length(title_v))
                continue;
            if (json_array_append_new(entries, json_pack("{s:O, s:s, s:s}", "content", title_v,
                                                         "status", status, "priority", "medium")) <
                0)
                rc = core_error_oom();
        }
        if (rc == 0 && json_array_size(entries))
            rc = hns_emit_update(
                p, NULL, json_pack("{s:s, s:O}", "sessionUpdate", "plan", "entries", entries));
        json_decref(entries);
        json_decref(input);
        free(name);
        return rc;
    }
    rc = tool_info(name, json_is_object(input) ? input : NULL, &title, &content, &locations);
    if (rc == 0) {
        u = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:o, s:o}", "sessionUpdate", "tool_call",
                      "toolCallId", id, "title", title, "toolName", name, "kind", tool_kind(name),
                      "status", "pending", "rawInput", input, "content", content, "locations",
                      locations);
        rc = hns_emit_update(p, NULL, u);
    }
    free(title);
    free(name);
    json_decref(input);
    return rc;
}

/* The fallback id kimi_<name, non-[A-Za-z0-9_] as _, or "tool">_<n>. */
static char *fallback_id(struct kimi_state *st, const json_t *fn)
{
    const json_t *jname = json_object_get(fn, "name");
    char *name = json_is_string(jname) && json_string_length(jname)
                     ? strdup(json_string_value(jname))
                 : hns_js_truthy(jname) ? hns_js_string(jname)
                                        : strdup("tool");
    char num[32], *out, *c;

    if (!name)
        return NULL;
    for (c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            *c = '_';
    snprintf(num, sizeof(num), "_%lu", ++st->counter);
    out = cat3("kimi_", name, num);
    free(name);
    return out;
}

static int tool_call_entry(struct hns_parser *p, const json_t *entry, int id_first)
{
    const json_t *id = json_object_get(entry, "id"), *fn = json_object_get(entry, "function");
    char *fid = NULL;
    int rc;

    /* the wire path picks the fallback id before looking at `function` (spec §3.5) */
    if (!id_first && !hns_js_truthy(fn))
        return 0;
    if (!json_is_string(id) || !json_string_length(id)) {
        fid = fallback_id(p->state, fn);
        if (!fid)
            return core_error_oom();
    }
    rc = hns_js_truthy(fn) ? emit_call(p, fid ? fid : json_string_value(id), fn) : 0;
    free(fid);
    return rc;
}

static int emit_result(struct hns_parser *p, const char *id, json_t *content, int failed)
{
    return hns_emit_update(p, NULL,
                           json_pack("{s:s, s:s, s:s, s:o}", "sessionUpdate", "tool_call_update",
                                     "toolCallId", id, "status", failed ? "failed" : "completed",
                                     "content", content));
}

/* true when `id` was a todo call: forgets it (only the first result is swallowed) */
static int swallow_todo(struct kimi_state *st, const char *id)
{
    if (!json_object_get(st->todo_ids, id))
        return 0;
    json_object_del(st->todo_ids, id);
    return 1;
}

static int parse_tool_line(struct hns_parser *p, const json_t *root, const char *line, size_t len)
{
    const json_t *id = json_object_get(root, "tool_call_id"), *c = json_object_get(root, "content");
    json_t *content;
    int err = 0, rc = 0;

    if (!json_is_string(id) || !json_string_length(id))
        return hns_emit_unknown(p, line, len, "kimi tool line without a tool_call_id");
    if (swallow_todo(p->state, json_string_value(id)))
        return 0;
    content = json_array();
    if (!content)
        return core_error_oom();
    if (json_is_string(c)) {
        rc = add_tool_part(content, c, &err);
    } else if (json_is_array(c)) {
        const json_t *part;
        size_t i;

        json_array_foreach(c, i, part)
        {
            if (rc == 0 && json_is_object(part)) /* bare strings are dropped, as the reference */
                rc = add_tool_part(content, part, &err);
        }
    }
    if (rc < 0) {
        json_decref(content);
        return rc;
    }
    return emit_result(p, json_string_value(id), content, err);
}

static int output_parts(json_t *content, const json_t *v, int *err)
{
    const json_t *part;
    size_t i;
    int rc = 0;

    if (json_is_string(v) || json_is_object(v))
        return add_tool_part(content, v, err);
    json_array_foreach(v, i, part)
    {
        if (rc == 0 && (json_is_string(part) || json_is_object(part)))
            rc = add_tool_part(content, part, err);
    }
    return rc;
}

static int wire_tool_result(struct hns_parser *p, const json_t *pl, const char *line, size_t len)
{
    const json_t *id = json_object_get(pl, "tool_call_id");
    const json_t *rv = nullish(json_object_get(pl, "return_value"), json_object_get(pl, "content"));
    int err = json_object_get(pl, "is_error") == json_true(), rc;
    json_t *content;

    if (!json_is_string(id) || !json_string_length(id))
        return hns_emit_unknown(p, line, len, "kimi ToolResult without a tool_call_id");
    if (swallow_todo(p->state, json_string_value(id)))
        return 0;
    content = json_array();
    if (!content)
        return core_error_oom();
    if (json_is_object(rv)) {
        const char *t = json_string_value(json_object_get(rv, "type"));
        const json_t *msg = json_object_get(rv, "message");

        err |= (t && !strcmp(t, "ToolError")) || json_object_get(rv, "is_error") == json_true();
        rc = output_parts(content, json_object_get(rv, "output"), &err);
        if (rc == 0 && !json_array_size(content) && json_is_string(msg) && json_string_length(msg))
            rc = add_tool_part(content, msg, &err);
        if (rc == 0 && !json_array_size(content))
            rc = output_parts(content, rv, &err);
    } else
        rc = output_parts(content, rv, &err);
    if (rc < 0) {
        json_decref(content);
        return rc;
    }
    return emit_result(p, json_string_value(id), content, err);
}

static int parse_envelope(struct hns_parser *p, const char *type, const json_t *pl,
                          const char *line, size_t len)
{
    const json_t *v;

    if (!strcmp(type, "TextPart") || !strcmp(type, "ThinkPart")) {
        v = json_object_get(pl, type[0] == 'T' && type[1] == 'e' ? "text" : "think");
        if (!json_is_string(v) || !json_string_length(v))
            return 0;
        return emit_chunk(p, type[1] == 'e' ? "agent_message_chunk" : "agent_thought_chunk",
                          hns_text_block(json_string_value(v), json_string_length(v)));
    }
    if (!strcmp(type, "ToolCall"))
        return json_is_object(pl) ? tool_call_entry(p, pl, 1) : 0;
    if (!strcmp(type, "ToolResult"))
        return wire_tool_result(p, pl, line, len);
    return hns_emit_unknown(p, line, len, "kimi wire event of a type evolve does not map");
}

static int parse_assistant(struct hns_parser *p, const json_t *root)
{
    const json_t *c = json_object_get(root, "content"),
                 *calls = json_object_get(root, "tool_calls");
    const json_t *v;
    size_t i;
    int rc = 0;

    if (json_is_string(c) && json_string_length(c))
        rc = emit_chunk(p, "agent_message_chunk",
                        hns_text_block(json_string_value(c), json_string_length(c)));
    else if (json_is_array(c)) {
        json_array_foreach(c, i, v)
        {
            const char *t = json_string_value(json_object_get(v, "type"));
            int skip;
            json_t *b;

            if (rc < 0)
                break;
            b = part_block(v, &skip, 1);
            if (!b && skip)
                continue;
            rc = emit_chunk(
                p, t && !strcmp(t, "think") ? "agent_thought_chunk" : "agent_message_chunk", b);
        }
    }
    json_array_foreach(calls, i, v)
    {
        if (rc == 0 && json_is_object(v))
            rc = tool_call_entry(p, v, 0);
    }
    return rc;
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    int rc;
    json_t *root = hns_parse_object(p, line, len, &rc);
    const char *role, *type;

    if (!root)
        return rc;
    role = json_string_value(json_object_get(root, "role"));
    type = json_string_value(json_object_get(root, "type"));
    if (json_object_get(root, "_meta") || json_object_get(root, "_prompt") ||
        json_object_get(root, "_sessionEnd") || (role && !strcmp(role, "meta")))
        rc = 0;
    else if (role && !strcmp(role, "assistant"))
        rc = parse_assistant(p, root);
    else if (role && !strcmp(role, "tool"))
        rc = parse_tool_line(p, root, line, len);
    else if (type && json_object_get(root, "payload"))
        rc = parse_envelope(p, type, json_object_get(root, "payload"), line, len);
    else
        rc = hns_emit_unknown(p, line, len, "kimi line of unknown shape");
    json_decref(root);
    return rc;
}

/* ---- command ----------------------------------------------------------------------------------
 */

static int build_command(struct hns_command *out, const struct hns_run_spec *spec)
{
    static const char *const off[] = {"off", "none", "minimal", "no-thinking", NULL};
    static const char *const efforts[] = {"low", "medium", "high", "xhigh", "max", NULL};
    const char *model = spec->model ? spec->model : DEFAULT_MODEL;
    int thinking = !in_list(spec->reasoning, off);
    int rc;

    if (!spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "kimi: the run has no prompt");
    memset(out, 0, sizeof(*out));
    /* The prompt is the value of -p: one argv element, never quoted or escaped (the reference
     * single-quoted an already double-quote-escaped prompt, adding backslashes). */
    rc = hns_command_arg(out, "kimi");
    if (rc == 0 && spec->resume)
        rc = hns_command_arg(out, "--continue");
    if (rc == 0)
        rc = hns_command_arg(out, "-p");
    if (rc == 0)
        rc = hns_command_arg(out, spec->prompt);
    if (rc == 0)
        rc = hns_command_arg(out, "--output-format");
    if (rc == 0)
        rc = hns_command_arg(out, "stream-json");
    /* Kimi takes its model from the environment (no model flag), as in the reference's direct
     * mode; no config file is written, so no credential lands in ~/.kimi-code. */
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_NAME", model);
    if (rc == 0 && spec->api_key)
        rc = hns_command_env(out, "KIMI_MODEL_API_KEY", spec->api_key);
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_PROVIDER_TYPE", "kimi");
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_MAX_CONTEXT_SIZE", "262144");
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_DEFAULT_THINKING", thinking ? "true" : "false");
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_THINKING_MODE", thinking ? "on" : "off");
    if (rc == 0 && thinking && in_list(spec->reasoning, efforts))
        rc = hns_command_env(out, "KIMI_MODEL_THINKING_EFFORT", spec->reasoning);
    if (rc == 0)
        rc = hns_command_env(out, "KIMI_MODEL_BASE_URL",
                             spec->base_url ? spec->base_url : "https://api.moonshot.ai/v1");
    if (rc < 0)
        hns_command_dispose(out);
    return rc;
}

/* Checkpointed with the workspace; storage must leave out .kimi-code/config.toml (it may hold a
 * provider key, and the reference excludes it). */
static const char *const state_dirs[] = {".kimi-code", NULL};
/* Gateway credentials live in config.toml: never archived. */
static const char *const state_excludes[] = {".kimi-code/config.toml", NULL};

const struct hns_agent hns_agent_kimi = {
    .name = "kimi",
    .instruction_file = "AGENTS.md",
    .state_dirs = state_dirs,
    .state_excludes = state_excludes,
    .default_model = DEFAULT_MODEL,
    .api_key_env = "KIMI_MODEL_API_KEY",
    .base_url_env = "KIMI_MODEL_BASE_URL",
    .state_new = state_new,
    .state_free = state_free,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
