/* opencode.c — OpenCode (`opencode run --format json`): its command line, the config it needs
 * to run headless and offline, and the parser of its stream (spec harness-wire §3.6).
 * Stateless: OpenCode prints a tool only once it has finished, so one tool_use line yields the
 * tool_call, the plan (todowrite) and the tool_call_update.
 * Differences from the reference, on purpose (DESIGN.md §4): `step_finish` becomes a call-scope
 * `usage` (tokens and cost); `error` lines become fatal `error` updates instead of "❌" text;
 * failed tool output is not fenced; OutputEvents carry timestamp (the line's epoch ms as ISO
 * 8601), messageId (part.messageID) and extra; tool_call carries toolName (as printed, before
 * lower-casing) and tool_call_update rawOutput (the tool state without its input); lines the
 * reference drops (unknown types, tool parts without a callID, non-JSON) become `unknown`.
 * Produce nothing, deliberately: `step_start` (a step boundary with a snapshot id), text and
 * reasoning parts with empty text, session-log metadata (`_meta`, `_prompt`, `_sessionEnd`).
 * Size: over ~600 lines because the reference's tool tables, the parser and the command
 * builder of one agent live in one file (one descriptor per agent, DESIGN.md §3).
 * Threads: any; no state. */
#include "harness/harness.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define DEFAULT_MODEL "openrouter/anthropic/claude-sonnet-4.6"
/* The CLI release whose plugin stub is pre-seeded (tools/fakemodel pins 1.18.33): OpenCode
 * installs @opencode-ai/plugin@<its own version> into its config dir unless package-lock.json
 * already lists that exact version. */
#define OPENCODE_VERSION "1.18.33"

static const char *tool_kind(const char *name)
{
    static const struct {
        const char *name, *kind;
    } kinds[] = {
        {"read", "read"},
        {"write", "edit"},
        {"edit", "edit"},
        {"multiedit", "edit"},
        {"apply_patch", "edit"},
        {"bash", "execute"},
        {"glob", "search"},
        {"grep", "search"},
        {"list", "search"},
        {"codesearch", "search"},
        {"lsp", "search"},
        {"webfetch", "fetch"},
        {"websearch", "fetch"},
        {"task", "think"},
        {"batch", "think"},
        {"plan_enter", "switch_mode"},
        {"plan_exit", "switch_mode"},
    };
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i].name, name))
            return kinds[i].kind;
    return "other";
}

static const json_t *nullish(const json_t *a, const json_t *b)
{
    return a && !json_is_null(a) ? a : b;
}

static int add_text(json_t *arr, const json_t *v)
{
    char *s = hns_js_string(v);
    int rc;

    if (!s)
        return EVOLVE_ENOMEM;
    rc = json_array_append_new(arr, hns_text_content(s, strlen(s))) < 0 ? core_error_oom() : 0;
    free(s);
    return rc;
}

/* content and locations of the tool_call (spec §3.6 tool info table) */
static int tool_info(const char *name, const json_t *in, json_t *content, json_t *locations)
{
    const json_t *path = nullish(json_object_get(in, "filePath"), json_object_get(in, "path"));
    const json_t *loc = NULL;
    int rc = 0;

    if (!strcmp(name, "read") && hns_js_truthy(path)) {
        const json_t *off = json_object_get(in, "offset");
        json_t *l = json_pack("{s:O}", "path", path);

        if (l && json_is_number(off) && isfinite(json_number_value(off))) {
            double line = json_number_value(off) - 1;

            json_object_set_new(l, "line",
                                json_is_integer(off) ? json_integer(line < 0 ? 0 : (json_int_t)line)
                                                     : json_real(line < 0 ? 0 : line));
        }
        return json_array_append_new(locations, l) < 0 ? core_error_oom() : 0;
    }
    if (!strcmp(name, "write") && hns_js_truthy(path)) {
        const json_t *text = json_object_get(in, "content");

        if (json_is_string(text))
            rc =
                json_array_append_new(content, json_pack("{s:s, s:O, s:n, s:O}", "type", "diff",
                                                         "path", path, "oldText", "newText", text));
        loc = path;
    } else if (!strcmp(name, "edit") && hns_js_truthy(path)) {
        const json_t *o = json_object_get(in, "oldString"), *n = json_object_get(in, "newString");

        if (o || n) {
            json_t *ot = o && !json_is_null(o) ? json_incref((json_t *)o) : json_string("");
            json_t *nt = n && !json_is_null(n) ? json_incref((json_t *)n) : json_string("");

            rc = json_array_append_new(content,
                                       json_pack("{s:s, s:O, s:o, s:o}", "type", "diff", "path",
                                                 path, "oldText", ot, "newText", nt));
        }
        loc = path;
    } else if (!strcmp(name, "multiedit") && hns_js_truthy(path)) {
        loc = path;
    } else if (!strcmp(name, "bash")) {
        const json_t *cmd = json_object_get(in, "command"),
                     *desc = json_object_get(in, "description");

        if (hns_js_truthy(cmd))
            rc = add_text(content, hns_js_truthy(desc) ? desc : cmd);
    } else if (!strcmp(name, "glob") || !strcmp(name, "list") || !strcmp(name, "grep")) {
        loc = json_object_get(in, "path");
    } else if (!strcmp(name, "codesearch") || !strcmp(name, "websearch") ||
               !strcmp(name, "webfetch") || !strcmp(name, "task")) {
        const json_t *v = json_object_get(in, name[0] == 'w' && name[3] == 'f' ? "url"
                                              : name[0] == 't'                 ? "description"
                                                                               : "query");

        if (hns_js_truthy(v))
            rc = add_text(content, v);
    }
    if (rc < 0)
        return core_error_oom();
    if (hns_js_truthy(loc) && json_array_append_new(locations, json_pack("{s:O}", "path", loc)) < 0)
        return core_error_oom();
    return 0;
}

/* OpenCode's data-URL rule: "data:" (case-sensitive), optional mime, ;params of 1+ chars, ",",
 * any data (newlines too); an image only with ;base64 among the params. Returns the mime end or
 * 0 when not such a URL; *data_at gets the offset of the data. */
static size_t data_url(const char *u, size_t n, size_t *data_at)
{
    size_t i = 5, mime_end;
    int b64 = 0;

    if (n < 5 || strncmp(u, "data:", 5))
        return 0;
    while (i < n && u[i] != ';' && u[i] != ',')
        i++;
    mime_end = i;
    while (i < n && u[i] == ';') {
        size_t start = ++i;

        while (i < n && u[i] != ';' && u[i] != ',')
            i++;
        if (i == start)
            return 0;
        if (i - start >= 6 && !strncasecmp(u + start, "base64", 6))
            b64 = 1;
    }
    if (i >= n || u[i] != ',' || !b64)
        return 0;
    *data_at = i + 1;
    return mime_end;
}

static int add_attachments(json_t *content, const json_t *atts)
{
    const json_t *a;
    size_t i;

    json_array_foreach(atts, i, a)
    {
        const json_t *jm = json_object_get(a, "mime"), *ju = json_object_get(a, "url");
        const char *mime = json_is_string(jm) ? json_string_value(jm) : "";
        const char *url = json_is_string(ju) ? json_string_value(ju) : "";
        size_t ul = json_is_string(ju) ? json_string_length(ju) : 0, at = 0, me;
        json_t *b;

        if (!json_is_object(a))
            continue;
        if (!strncmp(mime, "image/", 6)) {
            if (!ul)
                continue;
            me = data_url(url, ul, &at);
            if (me)
                b = json_pack("{s:s, s:s%, s:s%}", "type", "image", "data", url + at, ul - at,
                              "mimeType", me > 5 ? url + 5 : mime, me > 5 ? me - 5 : strlen(mime));
            else
                b = json_pack("{s:s, s:s, s:s, s:s%}", "type", "image", "data", "", "mimeType",
                              mime, "uri", url, ul);
        } else {
            const json_t *fn = json_object_get(a, "filename");
            char *name = hns_str_or(fn, "attachment");
            size_t n = (name ? strlen(name) : 0) + strlen(mime) + 32;
            char *s = malloc(n);

            if (!name || !s) {
                free(name);
                free(s);
                return core_error_oom();
            }
            snprintf(s, n, "[attachment] %s (%s)", name, *mime ? mime : "file");
            b = hns_text_block(s, strlen(s));
            free(name);
            free(s);
        }
        if (json_array_append_new(content,
                                  json_pack("{s:s, s:o}", "type", "content", "content", b)) < 0)
            return core_error_oom();
    }
    return 0;
}

static const char *todo_status(const json_t *v)
{
    char s[16];
    size_t i, n = json_string_length(v);

    if (!json_is_string(v) || n >= sizeof(s))
        return "pending";
    for (i = 0; i <= n; i++)
        s[i] = (char)tolower((unsigned char)json_string_value(v)[i]);
    if (!strcmp(s, "in_progress") || !strcmp(s, "in-progress") || !strcmp(s, "running"))
        return "in_progress";
    if (!strcmp(s, "completed") || !strcmp(s, "done") || !strcmp(s, "cancelled"))
        return "completed";
    return "pending";
}

static json_t *todo_entries(const json_t *todos)
{
    json_t *entries = json_array();
    const json_t *t;
    size_t i;

    json_array_foreach(todos, i, t)
    {
        const json_t *c = json_object_get(t, "content");
        const char *pr = json_string_value(json_object_get(t, "priority"));

        if (!entries || !json_is_object(t) || !json_is_string(c) || !json_string_length(c))
            continue;
        if (!pr || (strcmp(pr, "high") && strcmp(pr, "medium") && strcmp(pr, "low")))
            pr = "medium";
        if (json_array_append_new(entries, json_pack("{s:O, s:s, s:s}", "content", c, "status",
                                                     todo_status(json_object_get(t, "status")),
                                                     "priority", pr)) < 0) {
            json_decref(entries);
            return NULL;
        }
    }
    return entries;
}

static int parse_tool(struct hns_parser *p, const struct hns_meta *m, const json_t *part,
                      const char *line, size_t len)
{
    const json_t *call = json_object_get(part, "callID"), *tool = json_object_get(part, "tool");
    const json_t *state = json_object_get(part, "state"), *in, *title, *exit, *out;
    const char *status, *ustatus;
    char *name = NULL, *title_s = NULL, *text = NULL;
    json_t *content = NULL, *locations = NULL, *u, *empty = NULL;
    int rc;
    size_t i;

    if (!json_is_string(call) || !json_string_length(call))
        return hns_emit_unknown(p, line, len, "opencode tool part without a callID");
    if (!hns_js_truthy(state) || !json_is_object(state))
        state = empty = json_object();
    in = json_object_get(state, "input");
    if (!hns_js_truthy(in) || !json_is_object(in))
        in = NULL;
    name = strdup(json_is_string(tool) ? json_string_value(tool) : "");
    if (!name) {
        json_decref(empty);
        return core_error_oom();
    }
    for (i = 0; name[i]; i++) /* ASCII only, as JS toLowerCase on the names in the tables */
        name[i] = (char)tolower((unsigned char)name[i]);
    title = nullish(json_object_get(state, "title"),
                    json_object_get(json_object_get(state, "metadata"), "description"));
    title_s = title && !json_is_null(title) ? hns_js_string(title) : strdup(name);
    content = json_array();
    locations = json_array();
    rc = title_s && content && locations ? tool_info(name, in, content, locations)
                                         : core_error_oom();
    if (rc < 0)
        goto done;
    u = json_pack("{s:s, s:O, s:s, s:s, s:s, s:o, s:o}", "sessionUpdate", "tool_call", "toolCallId",
                  call, "title", title_s, "kind", tool_kind(name), "status", "pending", "content",
                  content, "locations", locations);
    content = locations = NULL;
    if (u &&
        (json_object_set_new(u, "rawInput", in ? json_incref((json_t *)in) : json_object()) < 0 ||
         (json_is_string(tool) && json_object_set(u, "toolName", (json_t *)tool) < 0))) {
        json_decref(u);
        u = NULL;
    }
    rc = hns_emit_update(p, m, u);
    if (rc < 0)
        goto done;
    if (!strcmp(name, "todowrite")) {
        json_t *entries = todo_entries(json_object_get(in, "todos"));

        out = json_object_get(state, "output");
        if (entries && !json_array_size(entries) && json_is_string(out)) {
            json_t *parsed = json_loadb(json_string_value(out), json_string_length(out),
                                        JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

            if (json_is_array(parsed)) {
                json_decref(entries);
                entries = todo_entries(parsed);
            }
            json_decref(parsed);
        }
        if (!entries)
            rc = core_error_oom();
        else if (json_array_size(entries))
            rc = hns_emit_update(
                p, m, json_pack("{s:s, s:O}", "sessionUpdate", "plan", "entries", entries));
        json_decref(entries);
        if (rc < 0)
            goto done;
    }
    status = json_string_value(json_object_get(state, "status"));
    exit = json_object_get(json_object_get(state, "metadata"), "exit");
    if (status && !strcmp(status, "pending"))
        goto done;
    ustatus = status && !strcmp(status, "error")                     ? "failed"
              : status && !strcmp(status, "running")                 ? "in_progress"
              : json_is_number(exit) && json_number_value(exit) != 0 ? "failed"
                                                                     : "completed";
    out = json_object_get(state, "output");
    if (status && !strcmp(status, "error")) {
        const json_t *e = json_object_get(state, "error");

        text = json_is_string(e) ? strdup(json_string_value(e)) : NULL;
    } else if (json_is_string(out))
        text = strdup(json_string_value(out));
    else if (out && !json_is_null(out))
        text = hns_js_stringify(out);
    content = json_array();
    rc = content ? 0 : core_error_oom();
    /* DESIGN §4: the harness's text verbatim, so unlike the reference no fence when failed */
    if (rc == 0 && text && *text &&
        json_array_append_new(content, hns_text_content(text, strlen(text))) < 0)
        rc = core_error_oom();
    if (rc == 0)
        rc = add_attachments(content, json_object_get(state, "attachments"));
    if (rc == 0) {
        u = json_pack("{s:s, s:O, s:s, s:o, s:o}", "sessionUpdate", "tool_call_update",
                      "toolCallId", call, "status", ustatus, "content", content, "rawOutput",
                      hns_object_except(state, (const char *const[]){"input", NULL}));
        content = NULL;
        rc = hns_emit_update(p, m, u);
    }
done:
    free(name);
    free(text);
    free(title_s);
    json_decref(content);
    json_decref(locations);
    json_decref(empty);
    return rc;
}

/* step_finish tokens {total?, input, output, reasoning, cache:{read, write}} and cost. OpenCode's
 * input excludes both cache shares, so promptTokens adds them back. */
static int parse_step_finish(struct hns_parser *p, struct hns_meta *m, const json_t *part)
{
    static const char *const mapped[] = {"input", "output", NULL};
    const json_t *tok = json_object_get(part, "tokens"), *cost = json_object_get(part, "cost");
    const json_t *cache = json_object_get(tok, "cache"), *reason = json_object_get(part, "reason");
    const json_t *read = json_object_get(cache, "read");
    json_t *extra = NULL;
    int rc;

    if (!json_is_object(tok) && !json_is_number(cost))
        return 0;
    if (reason) {
        extra = json_pack("{s:O}", "reason", reason);
        m->extra = extra;
    }
    rc = hns_emit_update(
        p, m,
        hns_usage_update("call",
                         json_is_number(json_object_get(tok, "input"))
                             ? hns_number_sum(json_object_get(tok, "input"), read,
                                              json_object_get(cache, "write"))
                             : NULL,
                         hns_number_sum(json_object_get(tok, "output"), NULL, NULL),
                         hns_number_sum(read, NULL, NULL),
                         json_is_number(cost) ? json_incref((json_t *)cost) : NULL,
                         json_is_object(tok) ? hns_object_except(tok, mapped) : NULL));
    json_decref(extra);
    return rc;
}

static int parse_error(struct hns_parser *p, struct hns_meta *m, const json_t *root)
{
    const json_t *err = json_object_get(root, "error");
    const json_t *msg = nullish(json_object_get(json_object_get(err, "data"), "message"),
                                json_object_get(err, "message"));
    char *text = json_is_string(msg) ? strdup(json_string_value(msg))
                 : msg               ? hns_js_stringify(msg)
                 : err               ? hns_js_stringify(err)
                                     : strdup("opencode reported an error without a message");
    json_t *extra = err ? json_pack("{s:O}", "error", err) : NULL;
    int rc;

    if (!text) {
        json_decref(extra);
        return core_error_oom();
    }
    m->extra = extra;
    /* OpenCode prints an error line when the session fails; the run then ends */
    rc = hns_emit_update(
        p, m, json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message", text, "fatal", 1));
    free(text);
    json_decref(extra);
    return rc;
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    int rc;
    json_t *root = hns_parse_object(p, line, len, &rc), *ts;
    const json_t *part, *t;
    const char *type;
    struct hns_meta m = {0};

    if (!root)
        return rc;
    type = json_string_value(json_object_get(root, "type"));
    part = json_object_get(root, "part");
    m.session_id = json_object_get(root, "sessionID");
    ts = hns_iso_time_ms(json_object_get(root, "timestamp"));
    m.timestamp = ts;
    if (json_is_string(json_object_get(part, "messageID")))
        m.message_id = json_object_get(part, "messageID");
    rc = 0;
    if (json_object_get(root, "_meta") || json_object_get(root, "_prompt") ||
        json_object_get(root, "_sessionEnd"))
        ; /* session-log metadata */
    else if (!type)
        rc = hns_emit_unknown(p, line, len, "opencode line without a type");
    else if (!strcmp(type, "text") || !strcmp(type, "reasoning")) {
        t = json_object_get(part, "text");
        if (json_is_string(t) && json_string_length(t))
            rc = hns_emit_update(
                p, &m,
                hns_chunk_update(type[0] == 't' ? "agent_message_chunk" : "agent_thought_chunk",
                                 hns_text_block(json_string_value(t), json_string_length(t))));
    } else if (!strcmp(type, "tool_use"))
        rc = parse_tool(p, &m, part, line, len);
    else if (!strcmp(type, "step_finish"))
        rc = parse_step_finish(p, &m, part);
    else if (!strcmp(type, "error"))
        rc = parse_error(p, &m, root);
    else if (strcmp(type, "step_start"))
        rc = hns_emit_unknown(p, line, len, "opencode line of unknown type");
    json_decref(ts);
    json_decref(root);
    return rc;
}

/* ---- command ----------------------------------------------------------------------------------
 */

/* The reference's --variant mapping; NULL = no variant flags. */
static const char *variant_of(const char *effort)
{
    if (!effort || !strcmp(effort, "thinking") || !strcmp(effort, "medium"))
        return "medium";
    if (!strcmp(effort, "off") || !strcmp(effort, "none") || !strcmp(effort, "no-thinking"))
        return NULL;
    if (!strcmp(effort, "low") || !strcmp(effort, "minimal"))
        return "minimal";
    if (!strcmp(effort, "xhigh"))
        return "max";
    return effort;
}

static int set_env_path(struct hns_command *out, const char *name, const char *home,
                        const char *rel)
{
    size_t n = strlen(home) + strlen(rel) + 2;
    char *s = malloc(n);
    int rc;

    if (!s)
        return core_error_oom();
    snprintf(s, n, "%s/%s", home, rel);
    rc = hns_command_env(out, name, s);
    free(s);
    return rc;
}

/* ~/.config/opencode/opencode.json. With a base URL the model is served by an OpenAI-compatible
 * provider "evolve" (bundled in OpenCode; key from $OPENCODE_EVOLVE_API_KEY at run time, so the
 * file holds no secret). */
static char *config_json(const struct hns_run_spec *spec, const char *model, const char *variant,
                         char **model_arg)
{
    json_t *cfg = json_pack("{s:s, s:b, s:s}", "$schema", "https://opencode.ai/config.json",
                            "autoupdate", 0, "share", "disabled");
    json_t *perm = spec->offline ? json_pack("{s:s, s:s, s:s, s:s}", "*", "allow", "webfetch",
                                             "deny", "websearch", "deny", "codesearch", "deny")
                                 : json_pack("{s:s}", "*", "allow");
    char *s = NULL;
    size_t n;

    if (!cfg || !perm || json_object_set_new(cfg, "permission", perm) < 0) {
        json_decref(cfg);
        return NULL;
    }
    if (spec->base_url) {
        json_t *m = json_pack("{s:s, s:b, s:{s:i, s:i}}", "name", model, "tool_call", 1, "limit",
                              "context", 200000, "output", 32768);
        json_t *prov;

        if (m && variant)
            json_object_set_new(m, "variants",
                                json_pack("{s:{s:s}}", variant, "reasoningEffort", variant));
        prov = json_pack("{s:{s:s, s:s, s:{s:s, s:s}, s:{s:o}}}", "evolve", "npm",
                         "@ai-sdk/openai-compatible", "name", "evolve", "options", "baseURL",
                         spec->base_url, "apiKey", "{env:OPENCODE_EVOLVE_API_KEY}", "models", model,
                         m);
        n = strlen(model) + sizeof("evolve/");
        *model_arg = malloc(n);
        if (!prov || !*model_arg || json_object_set_new(cfg, "provider", prov) < 0) {
            json_decref(cfg);
            return NULL;
        }
        snprintf(*model_arg, n, "evolve/%s", model);
    } else {
        *model_arg = strdup(model);
        if (!*model_arg) {
            json_decref(cfg);
            return NULL;
        }
    }
    if (json_object_set_new(cfg, "model", json_string(*model_arg)) == 0 &&
        json_object_set_new(cfg, "small_model", json_string(*model_arg)) == 0)
        s = json_dumps(cfg, JSON_INDENT(2));
    json_decref(cfg);
    return s;
}

static int build_command(struct hns_command *out, const struct hns_run_spec *spec)
{
    static const char *const disable[] = {
        "OPENCODE_DISABLE_AUTOUPDATE",      "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_SHARE",           "OPENCODE_DISABLE_CLAUDE_CODE",
        "OPENCODE_DISABLE_EXTERNAL_SKILLS", NULL};
    const char *model = spec->model ? spec->model : DEFAULT_MODEL;
    /* a custom provider only gets a variant the caller asked for (it must define it) */
    const char *variant = spec->base_url && !spec->reasoning ? NULL : variant_of(spec->reasoning);
    char *model_arg = NULL, *cfg;
    const char *const *d;
    int rc;

    if (!spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "opencode: the run has no prompt");
    memset(out, 0, sizeof(*out));
    cfg = config_json(spec, model, variant, &model_arg);
    rc = cfg ? 0 : core_error_oom();
    if (rc == 0)
        rc = hns_command_arg(out, "opencode");
    if (rc == 0)
        rc = hns_command_arg(out, "run");
    if (rc == 0 && spec->resume)
        rc = hns_command_arg(out, "--continue");
    if (rc == 0)
        rc = hns_command_arg(out, "--format");
    if (rc == 0)
        rc = hns_command_arg(out, "json");
    if (rc == 0)
        rc = hns_command_arg(out, "--model");
    if (rc == 0)
        rc = hns_command_arg(out, model_arg);
    if (rc == 0 && variant)
        rc = hns_command_arg(out, "--variant");
    if (rc == 0 && variant)
        rc = hns_command_arg(out, variant);
    if (rc == 0 && variant)
        rc = hns_command_arg(out, "--thinking");
    /* the message is the positional argument; "--" keeps one that starts with '-' a message */
    if (rc == 0 && spec->prompt[0] == '-')
        rc = hns_command_arg(out, "--");
    if (rc == 0)
        rc = hns_command_arg(out, spec->prompt);
    for (d = disable; rc == 0 && *d; d++)
        rc = hns_command_env(out, *d, "1");
    if (rc == 0 && spec->api_key)
        rc = hns_command_env(out, spec->base_url ? "OPENCODE_EVOLVE_API_KEY" : "OPENROUTER_API_KEY",
                             spec->api_key);
    /* pin OpenCode's XDG dirs under HOME: they are what the checkpoint saves */
    if (rc == 0 && spec->home) {
        rc = set_env_path(out, "XDG_CONFIG_HOME", spec->home, ".config");
        if (rc == 0)
            rc = set_env_path(out, "XDG_DATA_HOME", spec->home, ".local/share");
        if (rc == 0)
            rc = set_env_path(out, "XDG_STATE_HOME", spec->home, ".local/state");
        if (rc == 0)
            rc = set_env_path(out, "XDG_CACHE_HOME", spec->home, ".cache");
    }
    if (rc == 0)
        rc = hns_command_file(out, ".config/opencode/opencode.json", cfg, 0644);
    /* pre-seeded plugin dir: no background npm install (tools/fakemodel README) */
    if (rc == 0)
        rc = hns_command_file(
            out, ".config/opencode/package.json",
            "{\"dependencies\":{\"@opencode-ai/plugin\":\"" OPENCODE_VERSION "\"}}\n", 0644);
    if (rc == 0)
        rc = hns_command_file(out, ".config/opencode/package-lock.json",
                              "{\"lockfileVersion\":3,\"packages\":{\"\":{\"dependencies\":{"
                              "\"@opencode-ai/plugin\":\"" OPENCODE_VERSION "\"}}}}\n",
                              0644);
    if (rc == 0)
        rc = hns_command_file(out, ".config/opencode/node_modules/.evolve-seeded", "", 0644);
    free(cfg);
    free(model_arg);
    if (rc < 0)
        hns_command_dispose(out);
    return rc;
}

static const char *const state_dirs[] = {".local/share/opencode", ".config/opencode",
                                         ".local/state/opencode", NULL};

const struct hns_agent hns_agent_opencode = {
    .name = "opencode",
    .instruction_file = "AGENTS.md",
    .state_dirs = state_dirs,
    .default_model = DEFAULT_MODEL,
    .api_key_env = "OPENROUTER_API_KEY",
    /* OpenCode reads no such variable; evolve does (host side), so a batch's one environment can
     * point opencode at an OpenAI-compatible endpoint as it does the other agents. */
    .base_url_env = "OPENCODE_BASE_URL",
    .state_new = NULL,
    .state_free = NULL,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
