/* codex.c — the codex agent (`codex exec --json`): command line, config file and stream parser
 * (harness-wire §3.2 and §7, DESIGN §4).
 * Known shapes that produce no event: `turn.started`, `thread.started` (its thread_id becomes
 * the sessionId of later events), item.started of agent_message/reasoning/file_change/error
 * and item.updated of anything but todo_list (the completed item carries the same data), and
 * session-log metadata. Differences from the reference (v0.0.55): `error`, `turn.failed`
 * (fatal) and error items are `error` updates (as its project-sable branch); `turn.completed`
 * gives a run `usage`; completed command/MCP items carry the whole item as rawOutput; unknown
 * line or item types and malformed item lines are `unknown`.
 * Threads: a parser instance is used by one thread at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/hline.h"

struct codex_state {
    struct hns_jdoc doc;
    char *thread_id;
};

static int state_new(void **out)
{
    struct codex_state *st = calloc(1, sizeof(*st));

    if (!st)
        return core_error_oom();
    hns_jdoc_init(&st->doc);
    *out = st;
    return 0;
}

static void state_free(void *state)
{
    struct codex_state *st = state;

    if (!st)
        return;
    hns_jdoc_dispose(&st->doc);
    free(st->thread_id);
    free(st);
}

static json_t *js_string(struct hns_jdoc *d, int v)
{
    struct hns_buf b = {0};
    json_t *j;

    hns_buf_add_js(&b, d, v);
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

static json_t *text_block_json(json_t *text)
{
    return hns_put(hns_put(json_object(), "type", json_string_nocheck("text")), "text", text);
}

static json_t *plan_update(struct hns_jdoc *d, int item)
{
    int items = hns_jget(d, item, "items"), e;
    json_t *entries = json_array();
    bool current_seen = false;

    for (e = hns_jfirst(d, items); e >= 0 && entries; e = hns_jnext(d, items, e)) {
        int text = hns_jget(d, e, "text");
        const char *status;
        json_t *en;

        if (hns_jtype(d, e) != HNS_J_OBJECT)
            continue; /* the reference throws on null items */
        if (hns_jtruthy(d, hns_jget(d, e, "completed"))) {
            status = "completed";
        } else {
            status = current_seen ? "pending" : "in_progress";
            current_seen = true;
        }
        en = hns_put(json_object(), "content",
                     text >= 0 && hns_jtype(d, text) != HNS_J_NULL ? hns_jjson(d, text)
                                                                   : json_string(""));
        en = hns_put(en, "status", json_string_nocheck(status));
        en = hns_put(en, "priority", json_string_nocheck("medium"));
        if (json_array_append_new(entries, en) < 0) {
            json_decref(entries);
            entries = NULL;
        }
    }
    return hns_put(hns_upd("plan"), "entries", entries);
}

static json_t *tool_call(struct hns_jdoc *d, int item, const char *status, json_t *title,
                         const char *kind, const char *tool_name)
{
    json_t *up = hns_put_tok(hns_upd("tool_call"), "toolCallId", d, hns_jget(d, item, "id"));

    up = hns_put(up, "title", title);
    up = hns_put(up, "toolName", json_string_nocheck(tool_name));
    up = hns_put(up, "kind", json_string_nocheck(kind));
    return hns_put(up, "status", json_string_nocheck(status));
}

static json_t *mcp_title(struct hns_jdoc *d, int item)
{
    struct hns_buf b = {0};
    json_t *j;

    hns_buf_add_js(&b, d, hns_jget(d, item, "server"));
    hns_buf_addz(&b, ": ");
    hns_buf_add_js(&b, d, hns_jget(d, item, "tool"));
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

static json_t *search_call(struct hns_jdoc *d, int item, const char *status)
{
    struct hns_buf b = {0};
    int q = hns_jget(d, item, "query");
    json_t *up;

    hns_buf_addz(&b, "Search: ");
    if (q >= 0 && hns_jtype(d, q) != HNS_J_NULL)
        hns_buf_add_js(&b, d, q);
    up = tool_call(d, item, status, hns_buf_json(&b), "fetch", "web_search");
    hns_buf_free(&b);
    up = hns_put_opt(up, "rawInput",
                     q >= 0 ? hns_put(json_object(), "query", hns_jjson(d, q)) : NULL);
    return hns_put(up, "content", json_array());
}

static json_t *item_started(struct hns_jdoc *d, int item, int type)
{
    if (hns_jstreq(d, type, "mcp_tool_call")) {
        int tool = hns_jget(d, item, "tool");
        json_t *up =
            tool_call(d, item, "in_progress", mcp_title(d, item), "other", "mcp_tool_call");

        if (hns_jtype(d, tool) == HNS_J_STRING)
            up = hns_put(up, "toolName", hns_jjson(d, tool));
        up = hns_put_tok(up, "rawInput", d, hns_jget(d, item, "arguments"));
        return hns_put(up, "content", json_array());
    }
    if (hns_jstreq(d, type, "command_execution")) {
        int cmd = hns_jget(d, item, "command");
        struct hns_buf b = {0};
        json_t *up, *raw = json_object();

        if (hns_jtruthy(d, cmd)) {
            hns_buf_addz(&b, "`");
            hns_buf_add_js(&b, d, cmd);
            hns_buf_addz(&b, "`");
        } else {
            hns_buf_addz(&b, "Execute Command");
        }
        up = tool_call(d, item, "in_progress", hns_buf_json(&b), "execute", "command_execution");
        hns_buf_free(&b);
        if (cmd >= 0)
            raw = hns_put(raw, "command", hns_jjson(d, cmd));
        return hns_put(hns_put(up, "rawInput", raw), "content", json_array());
    }
    if (hns_jstreq(d, type, "web_search"))
        return search_call(d, item, "in_progress");
    if (hns_jstreq(d, type, "todo_list"))
        return plan_update(d, item);
    return NULL;
}

static json_t *mcp_content(struct hns_jdoc *d, int item)
{
    int c = hns_jget(d, hns_jget(d, item, "result"), "content"), e;
    json_t *arr = json_array();
    size_t n;
    const char *s;

    if (hns_jtype(d, c) == HNS_J_ARRAY) {
        for (e = hns_jfirst(d, c); e >= 0 && arr; e = hns_jnext(d, c, e)) {
            int type = hns_jget(d, e, "type"), v;
            json_t *block;

            if (hns_jstreq(d, type, "text")) {
                v = hns_jget(d, e, "text");
                block = text_block_json(v >= 0 && hns_jtype(d, v) != HNS_J_NULL ? hns_jjson(d, v)
                                                                                : json_string(""));
            } else if (hns_jstreq(d, type, "image")) {
                int mime = hns_jget(d, e, "mime_type");

                if (mime < 0 || hns_jtype(d, mime) == HNS_J_NULL)
                    mime = hns_jget(d, e, "mimeType");
                v = hns_jget(d, e, "data");
                block = hns_put(json_object(), "type", json_string_nocheck("image"));
                block = hns_put(block, "data",
                                v >= 0 && hns_jtype(d, v) != HNS_J_NULL ? hns_jjson(d, v)
                                                                        : json_string(""));
                block = hns_put(block, "mimeType",
                                mime >= 0 && hns_jtype(d, mime) != HNS_J_NULL ? hns_jjson(d, mime)
                                                                              : json_string(""));
                block = hns_put_tok(block, "uri", d, hns_jget(d, e, "uri"));
            } else if (hns_jtype(d, e) == HNS_J_NULL) {
                continue;
            } else {
                block = hns_jjson(d, e);
            }
            if (json_array_append_new(arr, hns_content(block)) < 0) {
                json_decref(arr);
                arr = NULL;
            }
        }
    } else if ((s = hns_jstr(d, c, &n))) {
        if (json_array_append_new(arr, hns_content(text_block_json(json_stringn_nocheck(s, n)))) <
            0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

static json_t *file_change(struct hns_jdoc *d, int item)
{
    int changes = hns_jget(d, item, "changes"), e, count = 0, first = -1;
    json_t *content = json_array(), *locs = json_array(), *up;
    struct hns_buf b = {0};
    char num[32];

    for (e = hns_jfirst(d, changes); e >= 0 && content && locs; e = hns_jnext(d, changes, e)) {
        int path = hns_jget(d, e, "path");
        json_t *df, *loc;

        if (hns_jtype(d, e) != HNS_J_OBJECT)
            continue; /* the reference throws on null changes */
        if (first < 0)
            first = e;
        count++;
        df = hns_put(json_object(), "type", json_string_nocheck("diff"));
        df = hns_put_tok(df, "path", d, path);
        df = hns_put(df, "oldText",
                     hns_jstreq(d, hns_jget(d, e, "kind"), "add") ? json_null() : json_string(""));
        df = hns_put(df, "newText", json_string(""));
        loc = hns_put_tok(json_object(), "path", d, path);
        if (json_array_append_new(content, df) < 0 || json_array_append_new(locs, loc) < 0) {
            json_decref(content);
            content = NULL;
        }
    }
    if (count == 1) {
        hns_buf_addz(&b, hns_jstreq(d, hns_jget(d, first, "kind"), "add") ? "Create " : "Edit ");
        hns_buf_add_js(&b, d, hns_jget(d, first, "path"));
    } else {
        snprintf(num, sizeof(num), "Edit %d files", count);
        hns_buf_addz(&b, num);
    }
    up = tool_call(d, item,
                   hns_jstreq(d, hns_jget(d, item, "status"), "completed") ? "completed" : "failed",
                   hns_buf_json(&b), "edit", "file_change");
    hns_buf_free(&b);
    up = hns_put(up, "content", content);
    up = hns_put(up, "locations", locs);
    return changes < 0 ? up
                       : hns_put(up, "rawInput", hns_put_tok(json_object(), "changes", d, changes));
}

static json_t *error_message(struct hns_jdoc *d, int msg, int whole)
{
    struct hns_buf b = {0};
    json_t *j;

    if (hns_jtype(d, msg) == HNS_J_STRING)
        return hns_jjson(d, msg);
    /* JSON.stringify of the value (harness-wire §7); compact raw text is identical for every
     * line without escapes or numbers JS would rewrite. */
    hns_buf_add_compact(&b, d, whole);
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

static int error_update(struct hns_line *l, json_t *message, bool fatal)
{
    json_t *up = hns_put(hns_upd("error"), "message", message);

    return hns_line_emit(l, hns_put(up, "fatal", json_boolean(fatal)));
}

static int item_completed(struct hns_line *l, int item, int type)
{
    struct hns_jdoc *d = l->d;
    json_t *up;
    int v;

    if (hns_jstreq(d, type, "reasoning") || hns_jstreq(d, type, "agent_message")) {
        bool thought = hns_jstreq(d, type, "reasoning");

        if (hns_jtype(d, v = hns_jget(d, item, "id")) == HNS_J_STRING)
            l->message_id = v;
        v = hns_jget(d, item, "text");
        if (v >= 0 && hns_jtype(d, v) != HNS_J_NULL) {
            up = text_block_json(hns_jjson(d, v));
        } else {
            static const char *const parts[] = {"summary", "content"};
            struct hns_buf b = {0};
            size_t k;

            for (k = 0; thought && k < 2; k++) {
                int arr = hns_jget(d, item, parts[k]), e;

                if (hns_jtype(d, arr) != HNS_J_ARRAY)
                    continue; /* absent; the reference throws on non-arrays */
                for (e = hns_jfirst(d, arr); e >= 0; e = hns_jnext(d, arr, e)) {
                    if (e != arr + 1)
                        hns_buf_addz(&b, "\n");
                    if (hns_jtype(d, e) != HNS_J_NULL)
                        hns_buf_add_js(&b, d, e);
                }
                break;
            }
            up = text_block_json(hns_buf_json(&b));
            hns_buf_free(&b);
        }
        return hns_line_emit(
            l, hns_put(hns_upd(thought ? "agent_thought_chunk" : "agent_message_chunk"), "content",
                       up));
    }
    if (hns_jstreq(d, type, "mcp_tool_call")) {
        bool failed = hns_jstreq(d, hns_jget(d, item, "status"), "failed") ||
                      hns_jtruthy(d, hns_jget(d, item, "error"));

        up = hns_put_tok(hns_upd("tool_call_update"), "toolCallId", d, hns_jget(d, item, "id"));
        up = hns_put(up, "status", json_string_nocheck(failed ? "failed" : "completed"));
        up = hns_put(up, "content", mcp_content(d, item));
        return hns_line_emit(l, hns_put(up, "rawOutput", hns_jjson(d, item)));
    }
    if (hns_jstreq(d, type, "command_execution")) {
        double code;
        bool ok = hns_jstreq(d, hns_jget(d, item, "status"), "completed") ||
                  (hns_jnum(d, hns_jget(d, item, "exit_code"), &code) && code == 0);
        json_t *content = json_array();

        v = hns_jget(d, item, "aggregated_output");
        if (hns_jtruthy(d, v) && content &&
            json_array_append_new(content, hns_content(text_block_json(js_string(d, v)))) < 0) {
            json_decref(content);
            content = NULL;
        }
        up = hns_put_tok(hns_upd("tool_call_update"), "toolCallId", d, hns_jget(d, item, "id"));
        up = hns_put(up, "status", json_string_nocheck(ok ? "completed" : "failed"));
        up = hns_put(up, "content", content);
        return hns_line_emit(l, hns_put(up, "rawOutput", hns_jjson(d, item)));
    }
    if (hns_jstreq(d, type, "file_change"))
        return hns_line_emit(l, file_change(d, item));
    if (hns_jstreq(d, type, "web_search"))
        return hns_line_emit(l, search_call(d, item, "completed"));
    if (hns_jstreq(d, type, "todo_list"))
        return hns_line_emit(l, plan_update(d, item));
    if (hns_jstreq(d, type, "error")) {
        if (hns_jtype(d, v = hns_jget(d, item, "id")) == HNS_J_STRING)
            l->message_id = v;
        return error_update(l, error_message(d, hns_jget(d, item, "message"), item), false);
    }
    return hns_line_unknown(l, "codex: unknown item type");
}

static const char *const known_items[] = {"agent_message", "reasoning",     "command_execution",
                                          "file_change",   "mcp_tool_call", "web_search",
                                          "todo_list",     "error",         NULL};

static bool known_item(struct hns_jdoc *d, int type)
{
    const char *const *k;

    for (k = known_items; *k; k++)
        if (hns_jstreq(d, type, *k))
            return true;
    return false;
}

static int turn_usage(struct hns_line *l)
{
    static const char *const mapped[] = {"input_tokens", "cached_input_tokens", "output_tokens",
                                         NULL};
    struct hns_jdoc *d = l->d;
    int usage = hns_jget(d, 0, "usage");
    struct hns_usage u = {-1, -1, -1, -1, NULL};

    if (hns_jtype(d, usage) != HNS_J_OBJECT)
        return 0; /* a turn without usage: nothing to report */
    /* OpenAI's input_tokens already counts the cached (and cache-written) share. */
    u.prompt = hns_jnum_at(d, usage, "input_tokens");
    u.completion = hns_jnum_at(d, usage, "output_tokens");
    u.cached = hns_jnum_at(d, usage, "cached_input_tokens");
    u.extra = json_object();
    if (!u.extra || hns_jcopy_members(d, usage, mapped, u.extra) < 0) {
        json_decref(u.extra);
        return core_error_oom();
    }
    return hns_line_emit(l, hns_line_usage_update("run", &u));
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    struct codex_state *st = p->state;
    struct hns_jdoc *d = &st->doc;
    struct hns_line l;
    int rc, type, item, itype;

    rc = hns_line_open(&l, p, d, line, len, "codex");
    if (rc <= 0)
        return rc;
    l.session_text = st->thread_id;
    type = hns_jget(d, 0, "type");
    item = hns_jget(d, 0, "item");
    itype = hns_jget(d, item, "type");
    if (hns_jstreq(d, type, "item.started") || hns_jstreq(d, type, "item.updated") ||
        hns_jstreq(d, type, "item.completed")) {
        bool started = hns_jstreq(d, type, "item.started");

        if (hns_jtype(d, item) != HNS_J_OBJECT)
            return hns_line_unknown(&l, "codex: item event without an item object");
        if (!known_item(d, itype))
            return hns_line_unknown(&l, "codex: unknown item type");
        if (hns_jstreq(d, type, "item.completed"))
            return item_completed(&l, item, itype);
        if (started || hns_jstreq(d, itype, "todo_list")) {
            json_t *up = started ? item_started(d, item, itype) : plan_update(d, item);

            return up ? hns_line_emit(&l, up) : 0; /* NULL: a start the completion repeats */
        }
        return 0; /* item.updated of a non-todo item: the completion carries the result */
    }
    if (hns_jstreq(d, type, "thread.started")) {
        size_t n;
        const char *s = hns_jstr(d, hns_jget(d, 0, "thread_id"), &n);

        if (s && n && !memchr(s, '\0', n)) {
            char *copy = strndup(s, n);

            if (!copy)
                return core_error_oom();
            free(st->thread_id);
            st->thread_id = copy;
        }
        return 0;
    }
    if (hns_jstreq(d, type, "turn.started"))
        return 0;
    if (hns_jstreq(d, type, "turn.completed"))
        return turn_usage(&l);
    if (hns_jstreq(d, type, "error"))
        return error_update(&l, error_message(d, hns_jget(d, 0, "message"), 0), false);
    if (hns_jstreq(d, type, "turn.failed")) {
        int err = hns_jget(d, 0, "error");

        return error_update(&l,
                            error_message(d, hns_jget(d, err, "message"),
                                          err >= 0 && hns_jtype(d, err) != HNS_J_NULL ? err : 0),
                            true);
    }
    return hns_line_unknown(&l, "codex: unknown line type");
}

/* ---- command ---------------------------------------------------------------------------- */

/* Appends a TOML basic string: quotes, backslashes and control characters escaped. */
static void toml_string(struct hns_buf *b, const char *s)
{
    char esc[8];

    hns_buf_addz(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            hns_buf_add(b, esc, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04X", ch);
            hns_buf_addz(b, esc);
        } else {
            hns_buf_add(b, s, 1);
        }
    }
    hns_buf_addz(b, "\"");
}

static int build_command(struct hns_command *cmd, const struct hns_run_spec *spec)
{
    const char *model;
    struct hns_buf toml = {0};
    int rc = 0;

    if (!spec || !spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "codex: the run has no prompt");
    model = spec->model ? spec->model : "gpt-5.4";
    /* codex exec --model M [-c model_reasoning_effort="E"] --dangerously-bypass-approvals-and-
     * sandbox --skip-git-repo-check --json [resume --last], the prompt on stdin. */
    rc |= hns_command_arg(cmd, "codex");
    rc |= hns_command_arg(cmd, "exec");
    rc |= hns_command_arg(cmd, "--model");
    rc |= hns_command_arg(cmd, model);
    if (spec->reasoning) {
        hns_buf_addz(&toml, "model_reasoning_effort=");
        toml_string(&toml, spec->reasoning);
        rc |= hns_command_arg(cmd, "-c");
        rc |= toml.oom ? EVOLVE_ENOMEM : hns_command_arg(cmd, toml.p);
        toml.len = 0;
    }
    rc |= hns_command_arg(cmd, "--dangerously-bypass-approvals-and-sandbox");
    rc |= hns_command_arg(cmd, "--skip-git-repo-check");
    rc |= hns_command_arg(cmd, "--json");
    if (spec->resume) {
        rc |= hns_command_arg(cmd, "resume");
        rc |= hns_command_arg(cmd, "--last");
    }
    if (spec->api_key)
        rc |= hns_command_env(cmd, "OPENAI_API_KEY", spec->api_key);
    if (spec->base_url)
        rc |= hns_command_env(cmd, "OPENAI_BASE_URL", spec->base_url);
    if (spec->home) {
        struct hns_buf h = {0};

        hns_buf_addz(&h, spec->home);
        hns_buf_addz(&h, "/.codex");
        rc |= h.oom ? EVOLVE_ENOMEM : hns_command_env(cmd, "CODEX_HOME", h.p);
        hns_buf_free(&h);
    }
    /* ~/.codex/config.toml: the model, no approvals, and (offline) nothing that calls home —
     * without features.plugins = false every run syncs plugins from github.com/chatgpt.com. */
    hns_buf_addz(&toml, "model = ");
    toml_string(&toml, model);
    hns_buf_addz(&toml, "\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n");
    if (spec->base_url) {
        hns_buf_addz(&toml, "model_provider = \"evolve\"\n");
    }
    if (spec->offline)
        hns_buf_addz(&toml, "check_for_update_on_startup = false\n");
    if (spec->base_url) {
        hns_buf_addz(&toml, "\n[model_providers.evolve]\nname = \"evolve\"\nbase_url = ");
        toml_string(&toml, spec->base_url);
        hns_buf_addz(&toml, "\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n");
    }
    if (spec->offline)
        hns_buf_addz(&toml, "\n[features]\nplugins = false\n\n[analytics]\nenabled = false\n\n"
                            "[feedback]\nenabled = false\n\n[otel]\nexporter = \"none\"\n");
    rc |= toml.oom ? EVOLVE_ENOMEM : hns_command_file(cmd, ".codex/config.toml", toml.p, 0644);
    hns_buf_free(&toml);
    if (rc)
        return core_error_oom();
    return hns_command_stdin(cmd, spec->prompt, strlen(spec->prompt));
}

static const char *const codex_dirs[] = {".codex", NULL};

const struct hns_agent hns_agent_codex = {
    .name = "codex",
    .instruction_file = "AGENTS.md",
    .state_dirs = codex_dirs,
    .default_model = "gpt-5.4",
    .api_key_env = "OPENAI_API_KEY",
    .base_url_env = "OPENAI_BASE_URL",
    .state_new = state_new,
    .state_free = state_free,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
