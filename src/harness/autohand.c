/* autohand.c — the Autohand harness: its command line (`autohand --mode rpc`, prompt as a
 * JSON-RPC request on stdin) and the mapping of its typed hook notifications into OutputEvents.
 * Owns: hook -> update mapping (table in docs/internals/autohand.md), `unknown` updates that keep
 * method and params, tool kinds of Autohand tool names. Does not own: JSON-RPC envelope and field
 * validation (autohand_decode.c), permission replies (autohand_reply.c).
 * Threads: a parser runs on one thread at a time (the sandbox actor); the descriptor is const. */
#include "harness/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/autohand.h"

/* ---- small builders ------------------------------------------------------------------------ */

/* Sets key to a new value (stolen); NULL values mean OOM. 0 or -1. */
static int put(json_t *obj, const char *key, json_t *val)
{
    return json_object_set_new(obj, key, val);
}

static int put_str(json_t *obj, const char *key, const char *s)
{
    return s ? put(obj, key, json_string(s)) : 0;
}

/* A borrowed value of the decoded hook, shared into the event (the hook's tree is released after
 * the line; the event keeps its own reference). Absent -> nothing. */
static int put_ref(json_t *obj, const char *key, const json_t *v)
{
    return v ? put(obj, key, json_incref((json_t *)v)) : 0;
}

/* Copies the listed params members (by reference, so numbers keep their JSON form: 125 stays
 * 125) into obj; null and absent members are skipped. NULL-terminated key list. */
static int copy_keys(json_t *obj, const json_t *params, const char *const *keys)
{
    for (; *keys; keys++) {
        const json_t *v = json_object_get(params, *keys);

        if (v && !json_is_null(v) && put_ref(obj, *keys, v) < 0)
            return -1;
    }
    return 0;
}

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

static json_t *location(const char *path)
{
    return json_pack("[{s:s}]", "path", path);
}

/* Autohand's tool names -> ACP kinds (names from the CLI's tool registry; anything else: other). */
static const char *tool_kind(const char *name)
{
    static const struct {
        const char *name, *kind;
    } kinds[] = {
        {"read_file", "read"},      {"read_files", "read"},       {"read_many_files", "read"},
        {"read_image", "read"},     {"write_file", "edit"},       {"edit_file", "edit"},
        {"apply_patch", "edit"},    {"replace_in_file", "edit"},  {"search_replace", "edit"},
        {"multi_edit", "edit"},     {"create_file", "edit"},      {"append_file", "edit"},
        {"delete_path", "delete"},  {"delete_file", "delete"},    {"rename_path", "move"},
        {"move_path", "move"},      {"move_file", "move"},        {"run_command", "execute"},
        {"bash", "execute"},        {"shell", "execute"},         {"execute_command", "execute"},
        {"search", "search"},       {"search_files", "search"},   {"semantic_search", "search"},
        {"grep", "search"},         {"glob", "search"},           {"find_files", "search"},
        {"list_tree", "search"},    {"list_directory", "search"}, {"web_search", "fetch"},
        {"fetch_url", "fetch"},     {"web_fetch", "fetch"},       {"think", "think"},
        {"delegate_task", "think"}, {"plan", "switch_mode"},
    };
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i].name, name))
            return kinds[i].kind;
    return "other";
}

/* ---- hook -> event ------------------------------------------------------------------------- */

/* The envelope of every typed hook: {update, timestamp, extra:{autohand:<kind name>, ...}}. Steals
 * update and extra (either may be NULL only on OOM, then everything is released). */
static json_t *hook_event(const struct hns_autohand_hook *h, json_t *update, json_t *extra)
{
    json_t *ev;

    if (!update || !extra)
        goto fail;
    if (put(extra, "autohand", json_string(hns_autohand_kind_name(h->kind))) < 0 ||
        (h->inexact && put(extra, "inexactNumbers", json_true()) < 0))
        goto fail;
    ev = hns_event_new(NULL, update); /* steals update, also on failure */
    if (!ev) {
        json_decref(extra);
        return NULL;
    }
    /* extra first: set_new steals it even when it fails */
    if (put(ev, "extra", extra) < 0 || put(ev, "timestamp", json_string(h->timestamp)) < 0) {
        json_decref(ev);
        return NULL;
    }
    return ev;
fail:
    json_decref(update);
    json_decref(extra);
    return NULL;
}

static json_t *tool_call(const char *id, const char *title, const char *tool_name,
                         const char *status)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sessionUpdate", "tool_call", "toolCallId",
                     id, "title", title, "toolName", tool_name, "kind", tool_kind(tool_name),
                     "status", status);
}

static json_t *tool_update(const char *id)
{
    return json_pack("{s:s, s:s}", "sessionUpdate", "tool_call_update", "toolCallId", id);
}

/* usage {scope, usage:{extra}} whose extra the caller fills through *uextra (borrowed). */
static json_t *usage_update(const char *scope, json_t **uextra)
{
    json_t *u = json_pack("{s:s, s:s, s:{s:{}}}", "sessionUpdate", "usage", "scope", scope, "usage",
                          "extra");

    *uextra = u ? json_object_get(json_object_get(u, "usage"), "extra") : NULL;
    return u;
}

static const char *status_name(enum hns_autohand_token_status s)
{
    return s == HNS_AUTOHAND_TOKENS_ACTUAL        ? "actual"
           : s == HNS_AUTOHAND_TOKENS_UNAVAILABLE ? "unavailable"
                                                  : NULL;
}

/* Builds the event of a valid hook; NULL only on OOM. `line_no` names the permission hook, which
 * carries no id of its own. */
static json_t *map_hook(const struct hns_autohand_hook *h, uint64_t line_no)
{
    json_t *u = NULL, *x = json_object(), *ux = NULL;
    int bad = !x;

    switch (h->kind) {
    case HNS_AUTOHAND_PRE_TOOL: {
        const struct hns_autohand_pre_tool *t = &h->u.pre_tool;
        const char *path = json_string_value(json_object_get(t->args, "path"));

        u = tool_call(t->tool_id, t->tool_name, t->tool_name, "in_progress");
        bad |= !u || put_ref(u, "rawInput", t->args) < 0 ||
               (path && put(u, "locations", location(path)) < 0);
        break;
    }
    case HNS_AUTOHAND_POST_TOOL: {
        const struct hns_autohand_post_tool *t = &h->u.post_tool;

        u = tool_update(t->tool_id);
        bad |= !u || put(u, "status", json_string(t->success ? "completed" : "failed")) < 0 ||
               put_ref(u, "rawOutput", h->params) < 0 || put_str(x, "toolName", t->tool_name) < 0;
        if (!bad && t->output)
            bad |= put(u, "content",
                       json_pack("[{s:s, s:o}]", "type", "content", "content",
                                 text_block(t->output))) < 0;
        break;
    }
    case HNS_AUTOHAND_FILE_MODIFIED: {
        const struct hns_autohand_file_modified *f = &h->u.file_modified;

        u = tool_update(f->tool_id);
        bad |= !u || put(u, "locations", location(f->file_path)) < 0 ||
               put_str(x, "changeType", f->change_type_name) < 0;
        break;
    }
    case HNS_AUTOHAND_PRE_PROMPT:
        u = json_pack("{s:s, s:o}", "sessionUpdate", "user_message_chunk", "content",
                      text_block(h->u.pre_prompt.instruction));
        bad |= !u || put_ref(x, "mentionedFiles", h->u.pre_prompt.mentioned_files) < 0;
        break;
    case HNS_AUTOHAND_POST_RESPONSE:
    case HNS_AUTOHAND_STOP: {
        const struct hns_autohand_turn_usage *t = &h->u.turn_usage;

        static const char *const keys[] = {"tokensUsed", "toolCallsCount", "duration", NULL};

        u = usage_update(h->kind == HNS_AUTOHAND_STOP ? "run" : "call", &ux);
        bad |= !u || copy_keys(ux, h->params, keys) < 0 ||
               put_str(ux, "tokensUsageStatus", status_name(t->tokens_usage_status)) < 0;
        break;
    }
    case HNS_AUTOHAND_SESSION_ERROR:
        u = json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message",
                      h->u.session_error.error, "fatal", 0);
        bad |= !u || put_str(x, "code", h->u.session_error.code) < 0 ||
               put_ref(x, "context", h->u.session_error.context) < 0;
        break;
    case HNS_AUTOHAND_SESSION_START:
    case HNS_AUTOHAND_SESSION_END:
    case HNS_AUTOHAND_NOTIFICATION:
    case HNS_AUTOHAND_CONTEXT_COMPACTED:
    case HNS_AUTOHAND_CONTEXT_OVERFLOW:
    case HNS_AUTOHAND_CONTEXT_WARNING:
    case HNS_AUTOHAND_CONTEXT_CRITICAL: {
        /* status notices: the event model has no notice update, so they are inert usage
         * updates (no token fields) carrying the hook's facts verbatim in usage.extra */
        static const char *const start[] = {"sessionType", NULL};
        static const char *const end[] = {"reason", "duration", NULL};
        static const char *const note[] = {"notificationType", "message", NULL};
        static const char *const compacted[] = {"croppedCount", "summary", "usagePercent", "reason",
                                                NULL};
        static const char *const overflow[] = {"tokensBefore", "tokensAfter", "croppedCount",
                                               "usagePercent", NULL};
        static const char *const usage[] = {"usagePercent", "remainingTokens", NULL};
        const char *const *keys = h->kind == HNS_AUTOHAND_SESSION_START       ? start
                                  : h->kind == HNS_AUTOHAND_SESSION_END       ? end
                                  : h->kind == HNS_AUTOHAND_NOTIFICATION      ? note
                                  : h->kind == HNS_AUTOHAND_CONTEXT_COMPACTED ? compacted
                                  : h->kind == HNS_AUTOHAND_CONTEXT_OVERFLOW  ? overflow
                                                                              : usage;
        int session = h->kind == HNS_AUTOHAND_SESSION_START || h->kind == HNS_AUTOHAND_SESSION_END;

        u = usage_update(session ? "run" : "call", &ux);
        bad |= !u || copy_keys(ux, h->params, keys) < 0;
        break;
    }
    case HNS_AUTOHAND_SUBAGENT_STOP: {
        const struct hns_autohand_subagent_stop *s = &h->u.subagent_stop;

        u = tool_update(s->subagent_id);
        bad |= !u || put(u, "status", json_string(s->success ? "completed" : "failed")) < 0 ||
               put(u, "title", json_string(s->subagent_name)) < 0 ||
               put_ref(u, "rawOutput", h->params) < 0 ||
               put_str(x, "subagentType", s->subagent_type) < 0;
        if (!bad && s->error)
            bad |= put(u, "content",
                       json_pack("[{s:s, s:o}]", "type", "content", "content",
                                 text_block(s->error))) < 0;
        break;
    }
    case HNS_AUTOHAND_PERMISSION_REQUEST: {
        const struct hns_autohand_permission_request *r = &h->u.permission_request;
        size_t tlen = strlen(r->tool) + sizeof("Permission: ");
        char id[48], *title = malloc(tlen);

        if (!title) {
            json_decref(x);
            return NULL;
        }
        snprintf(id, sizeof(id), "permission:%llu", (unsigned long long)line_no);
        snprintf(title, tlen, "Permission: %s", r->tool); /* whole name: never split UTF-8 */
        u = tool_call(id, title, r->tool, "pending");
        free(title);
        bad |= !u || put_ref(u, "rawInput", h->params) < 0 ||
               (r->path && put(u, "locations", location(r->path)) < 0) ||
               put(x, "permission", json_true()) < 0;
        break;
    }
    case HNS_AUTOHAND_PERMISSION_PROMPT: {
        const struct hns_autohand_permission_prompt *r = &h->u.permission_prompt;
        const char *path = json_string_value(json_object_get(r->context, "path"));

        u = tool_call(r->request_id, r->description ? r->description : r->tool, r->tool, "pending");
        bad |= !u || put_ref(u, "rawInput", h->params) < 0 ||
               (path && put(u, "locations", location(path)) < 0) ||
               put(x, "permission", json_true()) < 0 ||
               put_str(x, "requestId", r->request_id) < 0 || put_ref(x, "options", r->options) < 0;
        break;
    }
    case HNS_AUTOHAND_ERROR:
        u = json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message", h->u.error.message,
                      "fatal", !h->u.error.recoverable);
        bad |= !u || put_ref(x, "code", json_object_get(h->params, "code")) < 0;
        break;
    default:
        bad = 1;
        break;
    }
    if (bad) {
        json_decref(u);
        json_decref(x);
        return NULL;
    }
    return hook_event(h, u, x);
}

/* {sessionUpdate:"unknown", raw, reason, method?, params? | paramsRaw?} */
static json_t *map_unknown(const struct hns_autohand_hook *h, const char *line, size_t len)
{
    const struct hns_autohand_unknown *k = &h->u.unknown;
    json_t *u = json_object();

    if (!u || put(u, "sessionUpdate", json_string("unknown")) < 0 ||
        put(u, "raw", json_stringn_nocheck(line, len)) < 0 ||
        put(u, "reason", json_string(k->reason)) < 0 ||
        (h->method && put(u, "method", json_stringn(h->method, h->method_len)) < 0) ||
        put_ref(u, "params", k->params) < 0 || put_str(u, "paramsRaw", k->params_raw) < 0) {
        json_decref(u);
        return NULL;
    }
    return hns_event_new(NULL, u);
}

/* One agent_message_chunk / agent_thought_chunk {content:{type:text, text}} with messageId. */
static json_t *chunk(const struct hns_autohand_hook *h, const char *type, const char *text)
{
    json_t *u = json_pack("{s:s, s:o}", "sessionUpdate", type, "content", text_block(text));
    json_t *ev = hook_event(h, u, json_object());

    if (ev && h->u.message_update.message_id &&
        put(ev, "messageId", json_string(h->u.message_update.message_id)) < 0) {
        json_decref(ev);
        return NULL;
    }
    return ev;
}

/* messageUpdate: the thought (when non-empty) as a thought chunk, then the delta as a message
 * chunk; an empty delta is skipped only when a thought carried the line. */
static int emit_message(struct hns_parser *p, const struct hns_autohand_hook *h)
{
    const struct hns_autohand_message_update *m = &h->u.message_update;
    int rc;

    if (m->thought && *m->thought) {
        rc = hns_emit(p, chunk(h, "agent_thought_chunk", m->thought));
        if (rc < 0 || !*m->delta)
            return rc;
    }
    return hns_emit(p, chunk(h, "agent_message_chunk", m->delta));
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    struct hns_autohand_hook h;
    json_t *ev;
    int rc = hns_autohand_decode(&h, line, len);

    if (rc < 0)
        return rc;
    if (h.kind == HNS_AUTOHAND_MESSAGE_UPDATE) {
        rc = emit_message(p, &h);
        hns_autohand_dispose(&h);
        return rc;
    }
    ev = h.kind == HNS_AUTOHAND_UNKNOWN ? map_unknown(&h, line, len) : map_hook(&h, p->line_no);
    hns_autohand_dispose(&h);
    return hns_emit(p, ev);
}

/* ---- command ------------------------------------------------------------------------------- */

/* The prompt travels as the first JSON-RPC request on stdin, so it reaches the CLI byte for byte
 * (JSON escaping is undone by the CLI's parser), never through a shell or argv quoting. */
static int prompt_request(struct hns_command *cmd, const struct hns_run_spec *spec)
{
    json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", 1, "method",
                            "autohand.prompt", "params", "message", spec->prompt);
    char *text;
    size_t n;

    if (!req)
        return core_error_oom();
    if (spec->reasoning &&
        put(json_object_get(req, "params"), "thinkingLevel", json_string(spec->reasoning)) < 0) {
        json_decref(req);
        return core_error_oom();
    }
    text = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(req);
    if (!text)
        return core_error_oom();
    n = strlen(text);
    cmd->stdin_data = malloc(n + 2);
    if (!cmd->stdin_data) {
        free(text);
        return core_error_oom();
    }
    memcpy(cmd->stdin_data, text, n);
    cmd->stdin_data[n] = '\n';
    cmd->stdin_data[n + 1] = '\0';
    cmd->stdin_len = n + 1;
    free(text);
    return 0;
}

static int build_command(struct hns_command *out, const struct hns_run_spec *spec)
{
    struct hns_command cmd = {0};
    int rc;

    if (!spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "autohand: the run has no prompt");
    if (spec->reasoning && strcmp(spec->reasoning, "none") && strcmp(spec->reasoning, "normal") &&
        strcmp(spec->reasoning, "extended"))
        return core_error_set(EVOLVE_EINVAL,
                              "autohand: reasoning \"%s\" is not none, normal or extended",
                              spec->reasoning);
    rc = hns_command_arg(&cmd, "autohand");
    if (rc == 0)
        rc = hns_command_arg(&cmd, "--mode");
    if (rc == 0)
        rc = hns_command_arg(&cmd, "rpc");
    /* Headless unless the embedder answers permission requests (evolve_write_stdin with
     * evolve_autohand_permission_reply): then stdin stays open for the replies. */
    if (rc == 0 && !spec->ask_permission)
        rc = hns_command_arg(&cmd, "--unrestricted");
    cmd.stdin_keep_open = true;
    if (rc == 0 && spec->model) {
        rc = hns_command_arg(&cmd, "--model");
        if (rc == 0)
            rc = hns_command_arg(&cmd, spec->model);
    }
    if (rc == 0 && spec->resume)
        rc = hns_command_arg(&cmd, "--continue");
    if (rc == 0)
        rc = hns_command_env(&cmd, "AUTOHAND_STREAM_TOOL_OUTPUT", "1");
    if (rc == 0 && spec->api_key) {
        rc = hns_command_env(&cmd, "AUTOHAND_PROVIDER", "autohandai");
        if (rc == 0)
            rc = hns_command_env(&cmd, "AUTOHAND_AI_PLAN", "cloud");
        if (rc == 0)
            rc = hns_command_env(&cmd, "AUTOHAND_AI_API_KEY", spec->api_key);
    }
    if (rc == 0 && spec->base_url)
        rc = hns_command_env(&cmd, "AUTOHAND_AI_BASE_URL", spec->base_url);
    if (rc == 0)
        rc = prompt_request(&cmd, spec);
    if (rc < 0) {
        hns_command_dispose(&cmd);
        return rc;
    }
    *out = cmd;
    return 0;
}

static const char *const autohand_state_dirs[] = {".autohand", NULL};

const struct hns_agent hns_agent_autohand = {
    .name = "autohand",
    .instruction_file = "AGENTS.md",
    .state_dirs = autohand_state_dirs,
    .default_model = NULL,
    .api_key_env = "AUTOHAND_AI_API_KEY",
    .base_url_env = "AUTOHAND_AI_BASE_URL",
    .state_new = NULL,
    .state_free = NULL,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
