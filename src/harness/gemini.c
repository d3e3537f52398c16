/* gemini.c — the gemini agent (Gemini CLI `--output-format stream-json`): command line,
 * settings file and stream parser (harness-wire §3.3, DESIGN §4).
 * Known shapes that produce no event: `init` (its model and session_id are carried by every
 * later event of the run), `message` with empty content, and session-log metadata.
 * Differences from the reference: `error` lines are `error` updates (not emoji-prefixed message
 * text), `result` gives a run `usage` from its stats and a fatal `error` unless its status is
 * success, tool results carry the line's status/output/error as rawOutput, messages of other
 * roles and unknown line types are `unknown`.
 * Threads: a parser instance is used by one thread at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/hline.h"

struct gemini_state {
    struct hns_jdoc doc;
    char *model;      /* from the init line */
    char *session_id; /* from the init line */
};

static int state_new(void **out)
{
    struct gemini_state *st = calloc(1, sizeof(*st));

    if (!st)
        return core_error_oom();
    hns_jdoc_init(&st->doc);
    *out = st;
    return 0;
}

static void state_free(void *state)
{
    struct gemini_state *st = state;

    if (!st)
        return;
    hns_jdoc_dispose(&st->doc);
    free(st->model);
    free(st->session_id);
    free(st);
}

static const struct {
    const char *name, *kind;
} kinds[] = {
    {"read_file", "read"},        {"read_many_files", "read"},
    {"write_file", "edit"},       {"replace", "edit"},
    {"edit_file", "edit"},        {"run_shell_command", "execute"},
    {"shell", "execute"},         {"glob", "search"},
    {"grep", "search"},           {"search_file_content", "search"},
    {"list_directory", "search"}, {"brave_web_search", "fetch"},
    {"web_search", "fetch"},      {"google_web_search", "fetch"},
    {"web_fetch", "fetch"},       {"delegate_to_agent", "think"},
};

static const char *kind_of(struct hns_jdoc *d, int name)
{
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (hns_jstreq(d, name, kinds[i].name))
            return kinds[i].kind;
    return "other";
}

/* First value of the list that is truthy, or -1. */
static int first_truthy(struct hns_jdoc *d, int a, int b)
{
    return hns_jtruthy(d, a) ? a : hns_jtruthy(d, b) ? b : -1;
}

/* Appends String(v) cut to `units` UTF-16 code units, as JS substring(0, units); a surrogate
 * pair cut in half leaves a lone surrogate in JS, which UTF-8 carries as U+FFFD. */
static void add_utf16_prefix(struct hns_buf *b, struct hns_jdoc *d, int v, size_t units)
{
    struct hns_buf t = {0};
    size_t i = 0, used = 0;

    hns_buf_add_js(&t, d, v);
    while (i < t.len && used < units) {
        unsigned char c = (unsigned char)t.p[i];
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;

        if (n == 4 && used + 2 > units) {
            hns_buf_addz(b, "\xEF\xBF\xBD");
            break;
        }
        hns_buf_add(b, t.p + i, n);
        used += n == 4 ? 2 : 1;
        i += n;
    }
    b->oom |= t.oom;
    hns_buf_free(&t);
}

static json_t *path_list(struct hns_jdoc *d, int v)
{
    json_t *arr = json_array();

    if (arr && v >= 0 &&
        json_array_append_new(arr, hns_put(json_object(), "path", hns_jjson(d, v))) < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

static json_t *diff(struct hns_jdoc *d, int path, json_t *old_text, json_t *new_text)
{
    json_t *o = hns_put(json_object(), "type", json_string_nocheck("diff"));

    o = hns_put(o, "path", hns_jjson(d, path));
    o = hns_put(o, "oldText", old_text);
    return hns_put(o, "newText", new_text);
}

/* v || "" as JSON (the raw value when truthy). */
static json_t *or_empty(struct hns_jdoc *d, int v)
{
    return hns_jtruthy(d, v) ? hns_jjson(d, v) : json_string("");
}

static json_t *tool_use(struct hns_jdoc *d)
{
    int name = hns_jget(d, 0, "tool_name"), p = hns_jget(d, 0, "parameters"), v;
    struct hns_buf b = {0};
    json_t *content = json_array(), *locs = NULL, *up;
    bool titled = true;

    if (!hns_jtruthy(d, p))
        p = -1;
#define IS(n) hns_jstreq(d, name, n)
#define P(k)  hns_jget(d, p, k)
    if (IS("read_file")) {
        v = first_truthy(d, P("absolute_path"), P("file_path"));
        hns_buf_addz(&b, "Read ");
        v >= 0 ? hns_buf_add_js(&b, d, v) : hns_buf_addz(&b, "file");
        locs = path_list(d, v);
    } else if (IS("write_file") || IS("edit_file") || IS("replace")) {
        v = first_truthy(d, P("file_path"), -1);
        hns_buf_addz(&b, IS("write_file") ? "Write " : "Edit ");
        v >= 0 ? hns_buf_add_js(&b, d, v) : hns_buf_addz(&b, "file");
        if (v >= 0 && IS("write_file"))
            json_array_append_new(content, diff(d, v, json_null(), or_empty(d, P("content"))));
        if (v >= 0 && IS("replace") && (P("old_string") >= 0 || P("new_string") >= 0))
            json_array_append_new(
                content, diff(d, v, or_empty(d, P("old_string")), or_empty(d, P("new_string"))));
        locs = path_list(d, v);
    } else if (IS("run_shell_command") || IS("shell")) {
        if (hns_jtruthy(d, v = P("command"))) {
            hns_buf_addz(&b, "`");
            hns_buf_add_js(&b, d, v);
            hns_buf_addz(&b, "`");
        } else {
            hns_buf_addz(&b, "Run command");
        }
        if (hns_jtruthy(d, v = P("description"))) {
            struct hns_buf t = {0};

            hns_buf_add_js(&t, d, v);
            json_array_append_new(content, hns_content(hns_put(hns_put(json_object(), "type",
                                                                       json_string_nocheck("text")),
                                                               "text", hns_buf_json(&t))));
            hns_buf_free(&t);
        }
    } else if (IS("brave_web_search") || IS("web_search") || IS("google_web_search")) {
        if (hns_jtruthy(d, v = P("query"))) {
            hns_buf_addz(&b, "\"");
            hns_buf_add_js(&b, d, v);
            hns_buf_addz(&b, "\"");
        } else {
            hns_buf_addz(&b, "Web search");
        }
    } else if (IS("web_fetch")) {
        if (hns_jtruthy(d, v = P("prompt"))) {
            hns_buf_addz(&b, "Fetch: ");
            add_utf16_prefix(&b, d, v, 50);
            hns_buf_addz(&b, "...");
        } else {
            hns_buf_addz(&b, "Web fetch");
        }
    } else if (IS("glob")) {
        hns_buf_addz(&b, "Find ");
        (v = first_truthy(d, P("pattern"), -1)) >= 0 ? hns_buf_add_js(&b, d, v)
                                                     : hns_buf_addz(&b, "files");
        locs = path_list(d, first_truthy(d, P("dir_path"), -1));
    } else if (IS("grep") || IS("search_file_content")) {
        hns_buf_addz(&b, "grep \"");
        if ((v = first_truthy(d, P("pattern"), P("query"))) >= 0)
            hns_buf_add_js(&b, d, v);
        hns_buf_addz(&b, "\"");
    } else if (IS("list_directory")) {
        v = first_truthy(d, P("dir_path"), P("path"));
        hns_buf_addz(&b, "List ");
        v >= 0 ? hns_buf_add_js(&b, d, v) : hns_buf_addz(&b, "directory");
        locs = path_list(d, v);
    } else if (IS("read_many_files")) {
        int inc = P("include"), e;
        char num[32];

        hns_buf_addz(&b, "Read ");
        if (hns_jtype(d, inc) == HNS_J_ARRAY && d->t[inc].size > 0) {
            snprintf(num, sizeof(num), "%u", d->t[inc].size);
            hns_buf_addz(&b, num);
        } else {
            hns_buf_addz(&b, "multiple");
        }
        hns_buf_addz(&b, " files");
        locs = json_array();
        for (e = hns_jfirst(d, inc); e >= 0 && locs; e = hns_jnext(d, inc, e))
            json_array_append_new(locs, hns_put(json_object(), "path", hns_jjson(d, e)));
    } else if (IS("delegate_to_agent")) {
        if (hns_jtruthy(d, v = P("agent_name"))) {
            hns_buf_addz(&b, "Agent: ");
            hns_buf_add_js(&b, d, v);
        } else {
            hns_buf_addz(&b, "Delegate to agent");
        }
    } else if (IS("write_todos")) {
        hns_buf_addz(&b, "Update todos");
    } else if (IS("save_memory")) {
        if (hns_jtruthy(d, v = P("fact"))) {
            hns_buf_addz(&b, "Remember: \"");
            add_utf16_prefix(&b, d, v, 40);
            hns_buf_addz(&b, "...\"");
        } else {
            hns_buf_addz(&b, "Save memory");
        }
    } else if (IS("activate_skill")) {
        hns_buf_addz(&b, "Activate skill");
        if (hns_jtruthy(d, v = P("name"))) {
            hns_buf_addz(&b, ": ");
            hns_buf_add_js(&b, d, v);
        }
    } else if (name >= 0 && hns_jtype(d, name) != HNS_J_NULL) {
        hns_buf_add_js(&b, d, name);
    } else {
        titled = false;
    }
#undef IS
#undef P
    if (!locs)
        locs = json_array();
    up = hns_put_tok(hns_upd("tool_call"), "toolCallId", d, hns_jget(d, 0, "tool_id"));
    up = titled ? hns_put(up, "title", hns_buf_json(&b)) : up;
    up = hns_put_tok(up, "toolName", d, name);
    up = hns_put(up, "kind", json_string_nocheck(kind_of(d, name)));
    up = hns_put(up, "status", json_string_nocheck("pending"));
    up = hns_put(up, "rawInput", p >= 0 ? hns_jjson(d, p) : json_object());
    up = hns_put(up, "content", content);
    up = hns_put(up, "locations", locs);
    hns_buf_free(&b);
    return up;
}

static json_t *tool_result(struct hns_jdoc *d)
{
    static const char *const envelope[] = {"type", "timestamp", "tool_id", "session_id", NULL};
    int status = hns_jget(d, 0, "status"), out = hns_jget(d, 0, "output"), v;
    bool ok = hns_jstreq(d, status, "success"), err = hns_jstreq(d, status, "error");
    json_t *content = json_array(), *up, *raw = json_object(), *text = NULL;
    size_t n;
    const char *s;

    if ((s = hns_jstr(d, out, &n)) && n > 0) {
        text = err ? hns_fence_json(s, n) : json_stringn_nocheck(s, n);
    } else if (hns_jtruthy(d, v = hns_jget(d, hns_jget(d, 0, "error"), "message"))) {
        struct hns_buf b = {0};

        hns_buf_add_js(&b, d, v);
        text = b.oom ? NULL : hns_fence_json(b.p, b.len);
        hns_buf_free(&b);
    }
    if (text && json_array_append_new(
                    content,
                    hns_content(hns_put(hns_put(json_object(), "type", json_string_nocheck("text")),
                                        "text", text))) < 0) {
        json_decref(content);
        content = NULL;
    }
    if (raw && hns_jcopy_members(d, 0, envelope, raw) < 0) {
        json_decref(raw);
        raw = NULL;
    }
    up = hns_put_tok(hns_upd("tool_call_update"), "toolCallId", d, hns_jget(d, 0, "tool_id"));
    up = hns_put(up, "status", json_string_nocheck(ok ? "completed" : "failed"));
    up = hns_put(up, "content", content);
    return hns_put(up, "rawOutput", raw);
}

static int result_line(struct hns_line *l)
{
    static const char *const mapped[] = {"input_tokens", "output_tokens", "cached", NULL};
    struct hns_jdoc *d = l->d;
    int stats = hns_jget(d, 0, "stats"), status = hns_jget(d, 0, "status"), rc = 0, v;

    if (hns_jtype(d, stats) == HNS_J_OBJECT) {
        struct hns_usage u = {-1, -1, -1, -1, NULL};

        /* Gemini's input_tokens (promptTokenCount) includes the cached share; `input` is the
         * uncached rest and stays under extra. */
        u.prompt = hns_jnum_at(d, stats, "input_tokens");
        u.completion = hns_jnum_at(d, stats, "output_tokens");
        u.cached = hns_jnum_at(d, stats, "cached");
        u.extra = json_object();
        if (!u.extra || hns_jcopy_members(d, stats, mapped, u.extra) < 0) {
            json_decref(u.extra);
            return core_error_oom();
        }
        rc = hns_line_emit(l, hns_line_usage_update("run", &u));
    }
    if (rc >= 0 && status >= 0 && !hns_jstreq(d, status, "success")) {
        struct hns_buf b = {0};
        json_t *up;

        if (hns_jtruthy(d, v = hns_jget(d, hns_jget(d, 0, "error"), "message"))) {
            hns_buf_add_js(&b, d, v);
        } else {
            hns_buf_addz(&b, "gemini run ended with status ");
            hns_buf_add_js(&b, d, status);
        }
        up = hns_put(hns_upd("error"), "message", hns_buf_json(&b));
        hns_buf_free(&b);
        rc = hns_line_emit(l, hns_put(up, "fatal", json_true()));
    }
    return rc;
}

static char *dup_tok(struct hns_jdoc *d, int v)
{
    size_t n;
    const char *s = hns_jstr(d, v, &n);

    return s && n && !memchr(s, '\0', n) ? strndup(s, n) : NULL;
}

static int parse_line(struct hns_parser *p, const char *line, size_t len)
{
    struct gemini_state *st = p->state;
    struct hns_jdoc *d = &st->doc;
    struct hns_line l;
    int rc, type, v;

    rc = hns_line_open(&l, p, d, line, len, "gemini");
    if (rc <= 0)
        return rc;
    type = hns_jget(d, 0, "type");
    if (hns_jstreq(d, type, "init")) {
        char *m = dup_tok(d, hns_jget(d, 0, "model")),
             *s = dup_tok(d, hns_jget(d, 0, "session_id"));

        if (m) {
            free(st->model);
            st->model = m;
        }
        if (s) {
            free(st->session_id);
            st->session_id = s;
        }
        return 0;
    }
    l.session_id = hns_jget(d, 0, "session_id");
    l.session_text = st->session_id;
    l.model_text = st->model;
    v = hns_jget(d, 0, "timestamp");
    if (hns_jtype(d, v) == HNS_J_STRING || hns_jtype(d, v) == HNS_J_NUMBER)
        l.timestamp = v;
    if (hns_jstreq(d, type, "message")) {
        int role = hns_jget(d, 0, "role"), content = hns_jget(d, 0, "content");
        const char *kind = hns_jstreq(d, role, "assistant") ? "agent_message_chunk"
                           : hns_jstreq(d, role, "user")    ? "user_message_chunk"
                                                            : NULL;
        json_t *text;

        if (!kind)
            rc = hns_line_unknown(&l, "gemini: message of an unknown role");
        else if (!hns_jtruthy(d, content))
            rc = 0; /* an empty delta */
        else {
            /* a non-string content is passed through as the reference does */
            if ((v = hns_jget(d, 0, "delta")) >= 0)
                rc = hns_line_extra(&l, "delta", hns_jjson(d, v));
            text = hns_put(hns_put(json_object(), "type", json_string_nocheck("text")), "text",
                           hns_jjson(d, content));
            if (rc >= 0)
                rc = hns_line_emit(&l, hns_put(hns_upd(kind), "content", text));
            else
                json_decref(text);
        }
    } else if (hns_jstreq(d, type, "tool_use")) {
        rc = hns_line_emit(&l, tool_use(d));
    } else if (hns_jstreq(d, type, "tool_result")) {
        rc = hns_line_emit(&l, tool_result(d));
    } else if (hns_jstreq(d, type, "error")) {
        int msg = hns_jget(d, 0, "message"), sev = hns_jget(d, 0, "severity");
        struct hns_buf b = {0};
        json_t *up;

        if (sev >= 0)
            rc = hns_line_extra(&l, "severity", hns_jjson(d, sev));
        if (hns_jtruthy(d, msg))
            hns_buf_add_js(&b, d, msg);
        else
            hns_buf_add_compact(&b, d, 0);
        up = hns_put(hns_upd("error"), "message", hns_buf_json(&b));
        hns_buf_free(&b);
        if (rc >= 0)
            rc = hns_line_emit(&l, hns_put(up, "fatal", json_false()));
        else
            json_decref(up);
    } else if (hns_jstreq(d, type, "result")) {
        rc = result_line(&l);
    } else {
        rc = hns_line_unknown(&l, "gemini: unknown line type");
    }
    hns_line_end(&l);
    return rc;
}

/* ---- command ---------------------------------------------------------------------------- */

static int build_command(struct hns_command *cmd, const struct hns_run_spec *spec)
{
    struct hns_buf b = {0};
    int rc = 0;

    if (!spec || !spec->prompt)
        return core_error_set(EVOLVE_EINVAL, "gemini: the run has no prompt");
    /* gemini [--resume latest] --prompt=<prompt> --model M --yolo --output-format stream-json:
     * the prompt is one argv element, unescaped (the reference's double escaping is not
     * copied); `--prompt=` keeps a prompt that starts with '-' from reading as a flag. An
     * explicit model also skips the `auto` router's extra model call. */
    rc |= hns_command_arg(cmd, "gemini");
    if (spec->resume) {
        rc |= hns_command_arg(cmd, "--resume");
        rc |= hns_command_arg(cmd, "latest");
    }
    hns_buf_addz(&b, "--prompt=");
    hns_buf_add(&b, spec->prompt, strlen(spec->prompt));
    rc |= b.oom ? EVOLVE_ENOMEM : hns_command_arg(cmd, b.p);
    hns_buf_free(&b);
    rc |= hns_command_arg(cmd, "--model");
    rc |= hns_command_arg(cmd, spec->model ? spec->model : "gemini-3.1-pro-preview");
    rc |= hns_command_arg(cmd, "--yolo");
    rc |= hns_command_arg(cmd, "--output-format");
    rc |= hns_command_arg(cmd, "stream-json");
    if (spec->api_key)
        rc |= hns_command_env(cmd, "GEMINI_API_KEY", spec->api_key);
    if (spec->base_url)
        rc |= hns_command_env(cmd, "GOOGLE_GEMINI_BASE_URL", spec->base_url);
    rc |= hns_command_env(cmd, "GEMINI_CLI_NO_RELAUNCH", "true");
    rc |= hns_command_file(
        cmd, ".gemini/settings.json",
        spec->offline
            ? "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"},"
              " \"folderTrust\": {\"enabled\": false}},\n"
              "  \"general\": {\"enableAutoUpdate\": false, \"enableAutoUpdateNotification\": "
              "false},\n"
              "  \"privacy\": {\"usageStatisticsEnabled\": false},\n"
              "  \"telemetry\": {\"enabled\": false},\n  \"ide\": {\"enabled\": false}\n}\n"
            : "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"},"
              " \"folderTrust\": {\"enabled\": false}}\n}\n",
        0644);
    return rc ? core_error_oom() : 0;
}

static const char *const gemini_dirs[] = {".gemini", NULL};

const struct hns_agent hns_agent_gemini = {
    .name = "gemini",
    .instruction_file = "GEMINI.md",
    .state_dirs = gemini_dirs,
    .default_model = "gemini-3.1-pro-preview",
    .api_key_env = "GEMINI_API_KEY",
    .base_url_env = "GOOGLE_GEMINI_BASE_URL",
    .state_new = state_new,
    .state_free = state_free,
    .parse_line = parse_line,
    .finish = NULL,
    .build_command = build_command,
};
