/* claude.c — the claude agent (Claude Code `claude -p --output-format stream-json --verbose`):
 * its command line and its stream parser (harness-wire §3.1, DESIGN §4).
 * Owns: the line dispatch (assistant/user/result/system/stream_event), the per-run tool-use
 * cache, the event envelope (sessionId, timestamp, model, messageId, parentToolCallId, extra),
 * usage and error updates. Tool titles/contents live in claude_tools.c.
 * Known shapes that produce no event: `system` lines (init and status: lifecycle; the model is
 * taken from each assistant line instead), `stream_event` (partial deltas that the following
 * complete `assistant` line repeats), user echoes (string content or a single text block),
 * session-log metadata (`_meta`/`_prompt` truthy, `_sessionEnd`), TodoWrite's tool_result (its
 * call became a `plan`), and the block types the reference skips (redacted_thinking, document,
 * search_result, *_delta, container_upload). Everything else not understood is `unknown`.
 * Deliberate differences from the reference: orphan or repeated tool results are `unknown`
 * (the reference drops them); synthetic API-error assistant lines (`error` set)
 * become `error` updates instead of message text; `result` gives a run `usage` and, when
 * is_error, a fatal `error`; every assistant line gives a call `usage`.
 * Threads: a parser instance is used by one thread at a time. */
#include "harness/claude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct claude_state {
    struct hns_jdoc doc;
    struct hns_smap tools; /* tool_use id -> tool name, until its result arrives */
};

int hns_claude_state_new(void **out)
{
    struct claude_state *st = calloc(1, sizeof(*st));

    if (!st)
        return core_error_oom();
    hns_jdoc_init(&st->doc);
    hns_smap_init(&st->tools);
    *out = st;
    return 0;
}

void hns_claude_state_free(void *state)
{
    struct claude_state *st = state;

    if (!st)
        return;
    hns_jdoc_dispose(&st->doc);
    hns_smap_free(&st->tools);
    free(st);
}

static const char *const skipped_blocks[] = {
    "document",        "search_result",   "redacted_thinking", "input_json_delta",
    "citations_delta", "signature_delta", "container_upload",  NULL};

static const char *const result_blocks[] = {"tool_result",
                                            "tool_search_tool_result",
                                            "web_fetch_tool_result",
                                            "web_search_tool_result",
                                            "code_execution_tool_result",
                                            "bash_code_execution_tool_result",
                                            "text_editor_code_execution_tool_result",
                                            "mcp_tool_result",
                                            NULL};

static bool in_list(struct hns_jdoc *d, int tok, const char *const *list)
{
    for (; *list; list++)
        if (hns_jstreq(d, tok, *list))
            return true;
    return false;
}

struct conv {
    struct claude_state *st;
    struct hns_line *l;
    bool assistant;  /* role */
    bool api_error;  /* the line is a synthetic API-error message */
    int raw_output;  /* tool_use_result token to attach to the (single) result, or -1 */
    const char *bad; /* first reason this line has something we did not understand */
    char why[160];
};

static int text_event(struct conv *c, const char *type, int text_tok)
{
    struct hns_jdoc *d = c->l->d;
    json_t *block;

    if (c->api_error && !strcmp(type, "agent_message_chunk")) {
        size_t n;
        const char *s = hns_jstr(d, text_tok, &n);
        json_t *up = hns_put(hns_upd("error"), "message", json_stringn_nocheck(s ? s : "", n));

        return hns_line_emit(c->l, hns_put(up, "fatal", json_false()));
    }
    block = hns_put(json_object(), "type", json_string_nocheck("text"));
    if (block && text_tok >= 0)
        block = hns_put(block, "text", hns_jjson(d, text_tok));
    return hns_line_emit(c->l, hns_put(hns_upd(type), "content", block));
}

static int image_event(struct conv *c, int block)
{
    struct hns_jdoc *d = c->l->d;
    int src = hns_jget(d, block, "source"), st = hns_jget(d, src, "type");
    json_t *img = hns_put(json_object(), "type", json_string_nocheck("image"));

    if (hns_jstreq(d, st, "base64")) {
        img = hns_put_tok(img, "data", d, hns_jget(d, src, "data"));
        img = hns_put_tok(img, "mimeType", d, hns_jget(d, src, "media_type"));
    } else {
        img = hns_put(hns_put(img, "data", json_string("")), "mimeType", json_string(""));
        if (hns_jstreq(d, st, "url"))
            img = hns_put_tok(img, "uri", d, hns_jget(d, src, "url"));
    }
    return hns_line_emit(c->l, hns_put(hns_upd("agent_message_chunk"), "content", img));
}

static int plan_event(struct conv *c, int todos)
{
    struct hns_jdoc *d = c->l->d;
    json_t *entries = json_array();
    int t;

    for (t = hns_jfirst(d, todos); t >= 0 && entries; t = hns_jnext(d, todos, t)) {
        int st = hns_jget(d, t, "status");
        json_t *e;

        if (hns_jtype(d, t) != HNS_J_OBJECT)
            continue; /* the reference throws on a null todo */
        e = hns_put_tok(json_object(), "content", d, hns_jget(d, t, "content"));
        e = hns_put(e, "status", hns_jtruthy(d, st) ? hns_jjson(d, st) : json_string("pending"));
        e = hns_put(e, "priority", json_string_nocheck("medium"));
        if (json_array_append_new(entries, e) < 0) {
            json_decref(entries);
            entries = NULL;
        }
    }
    return hns_line_emit(c->l, hns_put(hns_upd("plan"), "entries", entries));
}

static int tool_use(struct conv *c, int block)
{
    struct hns_jdoc *d = c->l->d;
    int id = hns_jget(d, block, "id"), name_tok = hns_jget(d, block, "name");
    struct hns_buf name = {0}, idb = {0};
    int rc = 0;

    if (hns_jtruthy(d, name_tok))
        hns_buf_add_js(&name, d, name_tok);
    hns_buf_addz(&name, "");
    hns_buf_add_js(&idb, d, id);
    hns_buf_addz(&idb, "");
    if (name.oom || idb.oom) {
        rc = core_error_oom();
        goto out;
    }
    if ((rc = hns_smap_put(&c->st->tools, idb.p, idb.len, name.p, name.len)) < 0)
        goto out;
    if (!strcmp(name.p, "TodoWrite")) {
        int todos = hns_jget(d, hns_jget(d, block, "input"), "todos");

        if (hns_jtype(d, todos) == HNS_J_ARRAY)
            rc = plan_event(c, todos);
        goto out;
    }
    rc = hns_line_emit(c->l, hns_claude_tool_call(d, block, name.p));
out:
    hns_buf_free(&name);
    hns_buf_free(&idb);
    return rc;
}

static int tool_result(struct conv *c, int block)
{
    struct hns_jdoc *d = c->l->d;
    struct hns_buf idb = {0};
    char name[128];
    bool known;
    json_t *up;

    hns_buf_add_js(&idb, d, hns_jget(d, block, "tool_use_id"));
    hns_buf_addz(&idb, "");
    if (idb.oom)
        return core_error_oom();
    known = hns_smap_take(&c->st->tools, idb.p, idb.len, name, sizeof(name));
    hns_buf_free(&idb);
    if (!known) {
        /* The reference drops a result whose call this run has not seen (or has already
         * answered); we keep the line as `unknown`. */
        if (!c->bad)
            c->bad =
                "claude: tool result for a tool_use not seen (or already answered) in this run";
        return 0;
    }
    if (!strcmp(name, "TodoWrite"))
        return 0;
    up = hns_claude_tool_result(d, block, name);
    if (up && c->raw_output >= 0)
        up = hns_put(up, "rawOutput", hns_jjson(d, c->raw_output));
    return hns_line_emit(c->l, up);
}

static int block_event(struct conv *c, int block)
{
    struct hns_jdoc *d = c->l->d;
    int type = hns_jget(d, block, "type");

    if (hns_jtype(d, block) != HNS_J_OBJECT) {
        c->bad = "claude: a content block is not an object";
        return 0;
    }
    if (hns_jstreq(d, type, "text") || hns_jstreq(d, type, "text_delta"))
        return c->assistant ? text_event(c, "agent_message_chunk", hns_jget(d, block, "text")) : 0;
    if (hns_jstreq(d, type, "image"))
        return c->assistant ? image_event(c, block) : 0;
    if (hns_jstreq(d, type, "thinking") || hns_jstreq(d, type, "thinking_delta"))
        return text_event(c, "agent_thought_chunk", hns_jget(d, block, "thinking"));
    if (hns_jstreq(d, type, "tool_use") || hns_jstreq(d, type, "server_tool_use") ||
        hns_jstreq(d, type, "mcp_tool_use"))
        return tool_use(c, block);
    if (in_list(d, type, result_blocks))
        return tool_result(c, block);
    if (in_list(d, type, skipped_blocks))
        return 0;
    if (!c->bad) {
        size_t n;
        const char *s = hns_jstr(d, type, &n);

        snprintf(c->why, sizeof(c->why), "claude: unknown content block type \"%.*s\"",
                 s ? (int)(n > 80 ? 80 : n) : 9, s ? s : "(missing)");
        c->bad = c->why;
    }
    return 0;
}

/* Call or run usage from a Claude usage object (plus cost and modelUsage for `result`). */
static int usage_event(struct hns_line *l, const char *scope, int usage, int cost, int model_usage)
{
    static const char *const mapped[] = {"output_tokens", "cache_read_input_tokens", NULL};
    struct hns_jdoc *d = l->d;
    struct hns_usage u = {-1, -1, -1, -1, NULL};
    double in = hns_jnum_at(d, usage, "input_tokens");
    double cw = hns_jnum_at(d, usage, "cache_creation_input_tokens");
    double cr = hns_jnum_at(d, usage, "cache_read_input_tokens");

    if (in >= 0 || cw >= 0 || cr >= 0)
        u.prompt = (in > 0 ? in : 0) + (cw > 0 ? cw : 0) + (cr > 0 ? cr : 0);
    u.completion = hns_jnum_at(d, usage, "output_tokens");
    u.cached = cr;
    if (cost >= 0 && !hns_jnum(d, cost, &u.cost))
        u.cost = -1;
    if (hns_jtype(d, usage) == HNS_J_OBJECT || model_usage >= 0) {
        u.extra = json_object();
        if (!u.extra || hns_jcopy_members(d, usage, mapped, u.extra) < 0 ||
            (model_usage >= 0 &&
             json_object_set_new_nocheck(u.extra, "modelUsage", hns_jjson(d, model_usage)) < 0)) {
            json_decref(u.extra);
            return core_error_oom();
        }
    }
    return hns_line_emit(l, hns_line_usage_update(scope, &u));
}

static int message_line(struct claude_state *st, struct hns_line *l, bool assistant)
{
    static const char *const envelope[] = {
        "type",      "message",         "session_id", "parent_tool_use_id",
        "timestamp", "tool_use_result", NULL};
    struct hns_jdoc *d = l->d;
    int msg = hns_jget(d, 0, "message"), content = hns_jget(d, msg, "content"), b, rc = 0;
    struct conv c = {st, l, assistant, false, -1, NULL, ""};
    int results = 0, v;

    if (hns_jtype(d, msg) != HNS_J_OBJECT)
        return hns_line_unknown(l, "claude: message is not an object");
    if (hns_jtype(d, v = hns_jget(d, msg, "model")) == HNS_J_STRING)
        l->model = v;
    if (hns_jtype(d, v = hns_jget(d, msg, "id")) == HNS_J_STRING)
        l->message_id = v;
    l->extra = json_object();
    if (!l->extra || hns_jcopy_members(d, 0, envelope, l->extra) < 0)
        return core_error_oom();
    if (hns_jtype(d, v = hns_jget(d, msg, "stop_reason")) > HNS_J_NONE &&
        hns_jtype(d, v) != HNS_J_NULL &&
        (rc = hns_line_extra(l, "stop_reason", hns_jjson(d, v))) < 0)
        return rc;
    c.api_error = assistant && hns_jtruthy(d, hns_jget(d, 0, "error"));

    if (hns_jtype(d, content) == HNS_J_STRING) {
        if (assistant)
            rc = text_event(&c, "agent_message_chunk", content);
        /* user: a string is the prompt echo */
    } else if (hns_jtype(d, content) == HNS_J_ARRAY) {
        if (!assistant && d->t[content].size == 1 &&
            hns_jstreq(d, hns_jget(d, content + 1, "type"), "text"))
            return 0; /* user echo */
        for (b = hns_jfirst(d, content); b >= 0; b = hns_jnext(d, content, b))
            if (in_list(d, hns_jget(d, b, "type"), result_blocks))
                results++;
        v = hns_jget(d, 0, "tool_use_result");
        if (v >= 0 && results == 1)
            c.raw_output = v;
        else if (v >= 0 && (rc = hns_line_extra(l, "tool_use_result", hns_jjson(d, v))) < 0)
            return rc;
        for (b = hns_jfirst(d, content); b >= 0 && rc >= 0; b = hns_jnext(d, content, b))
            rc = block_event(&c, b);
    } else if (content >= 0 || assistant) {
        c.bad = "claude: message.content is neither a string nor an array";
    }
    if (rc >= 0 && c.bad)
        rc = hns_line_unknown(l, c.bad);
    v = hns_jget(d, msg, "usage");
    if (rc >= 0 && assistant && hns_jtype(d, v) == HNS_J_OBJECT)
        rc = usage_event(l, "call", v, -1, -1);
    return rc;
}

static int result_line(struct hns_line *l)
{
    static const char *const consumed[] = {"type",           "session_id", "usage",
                                           "total_cost_usd", "modelUsage", NULL};
    struct hns_jdoc *d = l->d;
    int usage = hns_jget(d, 0, "usage"), cost = hns_jget(d, 0, "total_cost_usd"), rc = 0, r;

    l->extra = json_object();
    if (!l->extra || hns_jcopy_members(d, 0, consumed, l->extra) < 0)
        return core_error_oom();
    if (hns_jtype(d, usage) == HNS_J_OBJECT || hns_jtype(d, cost) == HNS_J_NUMBER)
        rc = usage_event(l, "run", usage, cost, hns_jget(d, 0, "modelUsage"));
    if (rc >= 0 && hns_jtruthy(d, hns_jget(d, 0, "is_error"))) {
        struct hns_buf m = {0};
        json_t *up;

        r = hns_jget(d, 0, "result");
        if (hns_jtype(d, r) == HNS_J_STRING && hns_jtruthy(d, r)) {
            hns_buf_add_js(&m, d, r);
        } else {
            hns_buf_addz(&m, "claude run failed: ");
            hns_buf_add_js(&m, d, hns_jget(d, 0, "subtype"));
        }
        up = hns_put(hns_upd("error"), "message", hns_buf_json(&m));
        hns_buf_free(&m);
        rc = hns_line_emit(l, hns_put(up, "fatal", json_true()));
    }
    return rc;
}

int hns_claude_parse_line(struct hns_parser *p, const char *line, size_t len)
{
    struct claude_state *st = p->state;
    struct hns_jdoc *d = &st->doc;
    struct hns_line l;
    int rc, type, v;

    rc = hns_line_open(&l, p, d, line, len, "claude");
    if (rc <= 0)
        return rc;
    type = hns_jget(d, 0, "type");
    l.session_id = hns_jget(d, 0, "session_id");
    v = hns_jget(d, 0, "timestamp");
    if (hns_jtype(d, v) == HNS_J_STRING || hns_jtype(d, v) == HNS_J_NUMBER)
        l.timestamp = v;
    v = hns_jget(d, 0, "parent_tool_use_id");
    if (hns_jtype(d, v) == HNS_J_STRING && hns_jtruthy(d, v))
        l.parent = v;
    if (hns_jstreq(d, type, "assistant"))
        rc = message_line(st, &l, true);
    else if (hns_jstreq(d, type, "user"))
        rc = message_line(st, &l, false);
    else if (hns_jstreq(d, type, "result"))
        rc = result_line(&l);
    else if (hns_jstreq(d, type, "system") || hns_jstreq(d, type, "stream_event"))
        rc = 0;
    else
        rc = hns_line_unknown(&l, "claude: unknown line type");
    hns_line_end(&l);
    return rc;
}

/* ---- command ---------------------------------------------------------------------------- */

static int build_command(struct hns_command *cmd, const struct hns_run_spec *spec)
{
    static const char *const quiet[] = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                                        "DISABLE_AUTOUPDATER",
                                        "DISABLE_TELEMETRY",
                                        "DISABLE_ERROR_REPORTING",
                                        "DISABLE_BUG_COMMAND",
                                        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE",
                                        NULL};
    const char *const *q;
    int rc = 0;

    if (!spec || !spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "claude: the run has no prompt");
    /* claude -p [--continue] --model M [--effort E] --output-format stream-json --verbose
     * --dangerously-skip-permissions, the prompt on stdin (as the reference's `echo |`, minus
     * echo's added newline and shell quoting). */
    rc |= hns_command_arg(cmd, "claude");
    rc |= hns_command_arg(cmd, "-p");
    if (spec->resume)
        rc |= hns_command_arg(cmd, "--continue");
    rc |= hns_command_arg(cmd, "--model");
    rc |= hns_command_arg(cmd, spec->model ? spec->model : "opus");
    if (spec->reasoning) {
        rc |= hns_command_arg(cmd, "--effort");
        rc |= hns_command_arg(cmd, spec->reasoning);
    }
    rc |= hns_command_arg(cmd, "--output-format");
    rc |= hns_command_arg(cmd, "stream-json");
    rc |= hns_command_arg(cmd, "--verbose");
    rc |= hns_command_arg(cmd, "--dangerously-skip-permissions");
    if (spec->api_key)
        rc |= hns_command_env(cmd, "ANTHROPIC_API_KEY", spec->api_key);
    if (spec->base_url)
        rc |= hns_command_env(cmd, "ANTHROPIC_BASE_URL", spec->base_url);
    /* As root, bypassing permissions is refused unless IS_SANDBOX=1 (fakemodel README). */
    rc |= hns_command_env(cmd, "IS_SANDBOX", "1");
    if (spec->offline)
        for (q = quiet; *q; q++)
            rc |= hns_command_env(cmd, *q, "1");
    if (rc)
        return core_error_oom();
    return hns_command_stdin(cmd, spec->prompt, strlen(spec->prompt));
}

static const char *const claude_dirs[] = {".claude", NULL};

const struct hns_agent hns_agent_claude = {
    .name = "claude",
    .instruction_file = "CLAUDE.md",
    .state_dirs = claude_dirs,
    .default_model = "opus",
    .api_key_env = "ANTHROPIC_API_KEY",
    .base_url_env = "ANTHROPIC_BASE_URL",
    .state_new = hns_claude_state_new,
    .state_free = hns_claude_state_free,
    .parse_line = hns_claude_parse_line,
    .finish = NULL,
    .build_command = build_command,
};
