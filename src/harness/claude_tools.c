/* claude_tools.c — Claude Code's tool blocks as events: the tool_call of a tool_use block
 * (title, kind, content, locations per tool name, harness-wire §3.1) and the tool_call_update
 * of a tool_result block. Split from claude.c to keep each file focused.
 * Threads: called by the thread running a claude (or replay) parser. */
#include "harness/claude.h"

#include <string.h>

#include "core/error.h"

static const struct {
    const char *name, *kind;
} kinds[] = {
    {"Read", "read"},          {"NotebookRead", "read"}, {"Edit", "edit"},
    {"Write", "edit"},         {"NotebookEdit", "edit"}, {"Bash", "execute"},
    {"BashOutput", "execute"}, {"KillShell", "execute"}, {"Glob", "search"},
    {"Grep", "search"},        {"LS", "search"},         {"WebFetch", "fetch"},
    {"WebSearch", "fetch"},    {"Task", "think"},        {"ExitPlanMode", "switch_mode"},
};

static const char *kind_of(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(kinds[i].name, name))
            return kinds[i].kind;
    return "other";
}

/* [ {type:content, content:{type:text, text:String(v)}} ] when v is truthy, else []. */
static json_t *text_content_if(struct hns_jdoc *d, int v)
{
    json_t *arr = json_array();
    struct hns_buf b = {0};

    if (arr && hns_jtruthy(d, v)) {
        json_t *t;

        hns_buf_add_js(&b, d, v);
        t = hns_buf_json(&b);
        if (!t ||
            json_array_append_new(arr, hns_content(hns_put(hns_put(json_object(), "type",
                                                                   json_string_nocheck("text")),
                                                           "text", t))) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    hns_buf_free(&b);
    return arr;
}

/* [{path: v}] when v is truthy, else [] (line = -2: no line key). */
static json_t *locations_if(struct hns_jdoc *d, int v, int line_tok, bool with_line)
{
    json_t *arr = json_array(), *loc;

    if (!arr || !hns_jtruthy(d, v))
        return arr;
    loc = hns_put(json_object(), "path", hns_jjson(d, v));
    if (with_line)
        loc = hns_put(loc, "line",
                      line_tok >= 0 && hns_jtype(d, line_tok) != HNS_J_NULL ? hns_jjson(d, line_tok)
                                                                            : json_integer(0));
    if (json_array_append_new(arr, loc) < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

/* JS `a + b` for the Read title arithmetic: numeric when both are numbers (absent/null count
 * as 0 through `?? 0` before we get here), string concatenation otherwise. */
static void add_sum(struct hns_buf *b, struct hns_jdoc *d, int a, double plus, int btok)
{
    double x = 0, y = plus;
    char num[40];
    bool anum = a < 0 || hns_jtype(d, a) == HNS_J_NULL || hns_jnum(d, a, &x);
    bool bnum = btok < 0 || hns_jnum(d, btok, &y);

    if (anum && bnum) {
        hns_buf_addz(b, hns_js_number(x + y, num, sizeof(num)));
        return;
    }
    if (a < 0 || hns_jtype(d, a) == HNS_J_NULL)
        hns_buf_addz(b, "0");
    else
        hns_buf_add_js(b, d, a);
    if (btok < 0)
        hns_buf_addz(b, hns_js_number(plus, num, sizeof(num)));
    else
        hns_buf_add_js(b, d, btok);
}

static void grep_title(struct hns_buf *b, struct hns_jdoc *d, int in)
{
    static const char *const ctx[] = {"-A", "-B", "-C"};
    size_t i;
    int v;

    hns_buf_addz(b, "grep");
    if (hns_jtruthy(d, hns_jget(d, in, "-i")))
        hns_buf_addz(b, " -i");
    if (hns_jtruthy(d, hns_jget(d, in, "-n")))
        hns_buf_addz(b, " -n");
    for (i = 0; i < 3; i++)
        if ((v = hns_jget(d, in, ctx[i])) >= 0) {
            hns_buf_addz(b, " ");
            hns_buf_addz(b, ctx[i]);
            hns_buf_addz(b, " ");
            hns_buf_add_js(b, d, v);
        }
    v = hns_jget(d, in, "output_mode");
    if (hns_jstreq(d, v, "files_with_matches"))
        hns_buf_addz(b, " -l");
    else if (hns_jstreq(d, v, "count"))
        hns_buf_addz(b, " -c");
    if ((v = hns_jget(d, in, "head_limit")) >= 0) {
        hns_buf_addz(b, " | head -");
        hns_buf_add_js(b, d, v);
    }
    if (hns_jtruthy(d, v = hns_jget(d, in, "glob"))) {
        hns_buf_addz(b, " --include=\"");
        hns_buf_add_js(b, d, v);
        hns_buf_addz(b, "\"");
    }
    if (hns_jtruthy(d, v = hns_jget(d, in, "type"))) {
        hns_buf_addz(b, " --type=");
        hns_buf_add_js(b, d, v);
    }
    if (hns_jtruthy(d, hns_jget(d, in, "multiline")))
        hns_buf_addz(b, " -P");
    hns_buf_addz(b, " \"");
    v = hns_jget(d, in, "pattern");
    if (v >= 0 && hns_jtype(d, v) != HNS_J_NULL)
        hns_buf_add_js(b, d, v);
    hns_buf_addz(b, "\"");
    if (hns_jtruthy(d, v = hns_jget(d, in, "path"))) {
        hns_buf_addz(b, " ");
        hns_buf_add_js(b, d, v);
    }
}

static void domains(struct hns_buf *b, struct hns_jdoc *d, int arr, const char *label)
{
    int e;

    if (hns_jtype(d, arr) != HNS_J_ARRAY || d->t[arr].size == 0)
        return;
    hns_buf_addz(b, " (");
    hns_buf_addz(b, label);
    hns_buf_addz(b, ": ");
    for (e = hns_jfirst(d, arr); e >= 0; e = hns_jnext(d, arr, e)) {
        if (e != arr + 1)
            hns_buf_addz(b, ", ");
        if (hns_jtype(d, e) != HNS_J_NULL)
            hns_buf_add_js(b, d, e);
    }
    hns_buf_addz(b, ")");
}

/* Adds "`" + String(v) with every backtick escaped by a backslash + "`". */
static void backticked_escaped(struct hns_buf *b, struct hns_jdoc *d, int v)
{
    struct hns_buf t = {0};
    size_t i;

    hns_buf_add_js(&t, d, v);
    hns_buf_addz(b, "`");
    for (i = 0; i < t.len; i++) {
        if (t.p[i] == '`')
            hns_buf_addz(b, "\\`");
        else
            hns_buf_add(b, t.p + i, 1);
    }
    hns_buf_addz(b, "`");
    b->oom |= t.oom;
    hns_buf_free(&t);
}

static void mcp_title(struct hns_buf *b, const char *name)
{
    /* name.split("__"): parts[1] is the server, parts[2..] joined with "__" the tool */
    const char *srv = strstr(name, "__"), *srv_end, *tool;

    srv = srv ? srv + 2 : name + strlen(name);
    srv_end = strstr(srv, "__");
    tool = srv_end ? srv_end + 2 : srv + strlen(srv);
    if (!srv_end)
        srv_end = srv + strlen(srv);
    if (srv_end > srv)
        hns_buf_add(b, srv, (size_t)(srv_end - srv));
    else
        hns_buf_addz(b, "mcp");
    hns_buf_addz(b, ": ");
    hns_buf_addz(b, *tool ? tool : name);
}

static json_t *diff(struct hns_jdoc *d, int path, json_t *old_text, json_t *new_text)
{
    json_t *o = hns_put(json_object(), "type", json_string_nocheck("diff"));

    o = hns_put(o, "path", hns_jjson(d, path));
    o = hns_put(o, "oldText", old_text);
    return hns_put(o, "newText", new_text);
}

/* v ?? fallback as JSON (raw value unless absent or null). */
static json_t *nullish(struct hns_jdoc *d, int v, json_t *fallback)
{
    if (v < 0 || hns_jtype(d, v) == HNS_J_NULL)
        return fallback;
    json_decref(fallback);
    return hns_jjson(d, v);
}

json_t *hns_claude_tool_call(struct hns_jdoc *d, int block, const char *name)
{
    int in = hns_jget(d, block, "input");
    struct hns_buf b = {0};
    json_t *up, *content = NULL, *locations = NULL, *raw;
    int v, v2;

    raw = hns_jtruthy(d, in) ? hns_jjson(d, in) : json_object();
    if (!hns_jtruthy(d, in))
        in = -1;
    if (!strcmp(name, "Task")) {
        if (hns_jtruthy(d, v = hns_jget(d, in, "description")))
            hns_buf_add_js(&b, d, v);
        else
            hns_buf_addz(&b, "Task");
        content = text_content_if(d, hns_jget(d, in, "prompt"));
    } else if (!strcmp(name, "NotebookRead") || !strcmp(name, "NotebookEdit")) {
        bool edit = name[8] == 'E';

        hns_buf_addz(&b, edit ? "Edit Notebook" : "Read Notebook");
        if (hns_jtruthy(d, v = hns_jget(d, in, "notebook_path"))) {
            hns_buf_addz(&b, " ");
            hns_buf_add_js(&b, d, v);
        }
        content = edit ? text_content_if(d, hns_jget(d, in, "new_source")) : json_array();
        locations = locations_if(d, v, -1, false);
    } else if (!strcmp(name, "Bash")) {
        if (hns_jtruthy(d, v = hns_jget(d, in, "command")))
            backticked_escaped(&b, d, v);
        else
            hns_buf_addz(&b, "Terminal");
        content = text_content_if(d, hns_jget(d, in, "description"));
    } else if (!strcmp(name, "BashOutput") || !strcmp(name, "KillShell")) {
        hns_buf_addz(&b, name[0] == 'B' ? "Tail Logs" : "Kill Process");
    } else if (!strcmp(name, "Read")) {
        int off = hns_jget(d, in, "offset"), lim = hns_jget(d, in, "limit");

        hns_buf_addz(&b, "Read ");
        v = hns_jget(d, in, "file_path");
        if (v < 0 || hns_jtype(d, v) == HNS_J_NULL)
            hns_buf_addz(&b, "File");
        else
            hns_buf_add_js(&b, d, v);
        if (hns_jtruthy(d, lim)) {
            hns_buf_addz(&b, " (");
            add_sum(&b, d, off, 1, -1);
            hns_buf_addz(&b, " - ");
            add_sum(&b, d, off, 0, lim);
            hns_buf_addz(&b, ")");
        } else if (hns_jtruthy(d, off)) {
            hns_buf_addz(&b, " (from line ");
            add_sum(&b, d, off, 1, -1);
            hns_buf_addz(&b, ")");
        }
        locations = locations_if(d, v, off, true);
    } else if (!strcmp(name, "LS")) {
        if (hns_jtruthy(d, v = hns_jget(d, in, "path"))) {
            hns_buf_addz(&b, "List `");
            hns_buf_add_js(&b, d, v);
            hns_buf_addz(&b, "` directory");
        } else {
            hns_buf_addz(&b, "List current directory");
        }
        locations = json_array();
    } else if (!strcmp(name, "Edit") || !strcmp(name, "Write")) {
        bool edit = name[0] == 'E';

        hns_buf_addz(&b, name);
        content = json_array();
        if (hns_jtruthy(d, v = hns_jget(d, in, "file_path"))) {
            hns_buf_addz(&b, edit ? " `" : " ");
            hns_buf_add_js(&b, d, v);
            if (edit)
                hns_buf_addz(&b, "`");
            json_array_append_new(
                content, edit ? diff(d, v, nullish(d, hns_jget(d, in, "old_string"), json_null()),
                                     nullish(d, hns_jget(d, in, "new_string"), json_string("")))
                              : diff(d, v, json_null(),
                                     nullish(d, hns_jget(d, in, "content"), json_string(""))));
        }
        locations = locations_if(d, v, -1, false);
    } else if (!strcmp(name, "Glob")) {
        hns_buf_addz(&b, "Find");
        if (hns_jtruthy(d, v = hns_jget(d, in, "path"))) {
            hns_buf_addz(&b, " `");
            hns_buf_add_js(&b, d, v);
            hns_buf_addz(&b, "`");
        }
        if (hns_jtruthy(d, v2 = hns_jget(d, in, "pattern"))) {
            hns_buf_addz(&b, " `");
            hns_buf_add_js(&b, d, v2);
            hns_buf_addz(&b, "`");
        }
        locations = locations_if(d, v, -1, false);
    } else if (!strcmp(name, "Grep")) {
        grep_title(&b, d, in);
    } else if (!strcmp(name, "WebFetch")) {
        hns_buf_addz(&b, "Fetch");
        if (hns_jtruthy(d, v = hns_jget(d, in, "url"))) {
            hns_buf_addz(&b, " ");
            hns_buf_add_js(&b, d, v);
        }
        content = text_content_if(d, hns_jget(d, in, "prompt"));
    } else if (!strcmp(name, "WebSearch")) {
        hns_buf_addz(&b, "\"");
        v = hns_jget(d, in, "query");
        if (v >= 0 && hns_jtype(d, v) != HNS_J_NULL)
            hns_buf_add_js(&b, d, v);
        hns_buf_addz(&b, "\"");
        domains(&b, d, hns_jget(d, in, "allowed_domains"), "allowed");
        domains(&b, d, hns_jget(d, in, "blocked_domains"), "blocked");
    } else if (!strcmp(name, "ExitPlanMode")) {
        hns_buf_addz(&b, "Ready to code?");
        content = text_content_if(d, hns_jget(d, in, "plan"));
    } else if (!strncmp(name, "mcp__", 5)) {
        mcp_title(&b, name);
    } else {
        hns_buf_addz(&b, *name ? name : "Unknown Tool");
    }
    if (!content)
        content = json_array();
    up = hns_put_tok(hns_upd("tool_call"), "toolCallId", d, hns_jget(d, block, "id"));
    up = hns_put(up, "status", json_string_nocheck("pending"));
    up = hns_put(up, "title", hns_buf_json(&b));
    up = hns_put_tok(up, "toolName", d, hns_jget(d, block, "name"));
    up = hns_put(up, "kind", json_string_nocheck(kind_of(name)));
    up = hns_put(up, "content", content);
    up = hns_put_opt(up, "locations", locations);
    up = hns_put(up, "rawInput", raw);
    hns_buf_free(&b);
    return up;
}

/* transform(item, isError) of harness-wire §3.1 for one tool result item. */
static json_t *result_item(struct hns_jdoc *d, int item, bool is_error, bool read_tool)
{
    int type = hns_jget(d, item, "type"), v, src;

    if (hns_jstreq(d, type, "text")) {
        v = hns_jget(d, item, "text");
        if (read_tool || is_error) {
            struct hns_buf b = {0};
            json_t *t;

            hns_buf_add_js(&b, d, v);
            t = b.oom ? NULL
                      : (read_tool ? hns_markdown_escape(b.p ? b.p : "", b.len)
                                   : hns_fence_json(b.p ? b.p : "", b.len));
            hns_buf_free(&b);
            return hns_put(hns_put(json_object(), "type", json_string_nocheck("text")), "text", t);
        }
        return hns_put_tok(hns_put(json_object(), "type", json_string_nocheck("text")), "text", d,
                           v);
    }
    if (hns_jstreq(d, type, "image")) {
        json_t *o = hns_put(json_object(), "type", json_string_nocheck("image"));
        int data = hns_jget(d, item, "data"), mime = hns_jget(d, item, "mimeType");

        if (hns_jtruthy(d, data) && hns_jtruthy(d, mime))
            return hns_put(hns_put(o, "data", hns_jjson(d, data)), "mimeType", hns_jjson(d, mime));
        src = hns_jget(d, item, "source");
        if (hns_jstreq(d, hns_jget(d, src, "type"), "base64")) {
            v = hns_jget(d, src, "data");
            o = hns_put(o, "data", hns_jtruthy(d, v) ? hns_jjson(d, v) : json_string(""));
            v = hns_jget(d, src, "media_type");
            return hns_put(o, "mimeType", hns_jtruthy(d, v) ? hns_jjson(d, v) : json_string(""));
        }
        if (hns_jstreq(d, hns_jget(d, src, "type"), "url")) {
            o = hns_put(hns_put(o, "data", json_string("")), "mimeType", json_string(""));
            return hns_put_tok(o, "uri", d, hns_jget(d, src, "url"));
        }
        json_decref(o);
    }
    return hns_jjson(d, item);
}

json_t *hns_claude_tool_result(struct hns_jdoc *d, int block, const char *name)
{
    bool is_error = hns_jtruthy(d, hns_jget(d, block, "is_error"));
    bool read_tool = name && !strcmp(name, "Read");
    int c = hns_jget(d, block, "content"), e;
    json_t *up, *content = NULL;
    size_t n;
    const char *s;

    up = hns_put_tok(hns_upd("tool_call_update"), "toolCallId", d,
                     hns_jget(d, block, "tool_use_id"));
    up = hns_put(up, "status", json_string_nocheck(is_error ? "failed" : "completed"));
    if (name && !strcmp(name, "ExitPlanMode"))
        return hns_put(up, "title", json_string_nocheck("Exited Plan Mode"));
    if (hns_jtype(d, c) == HNS_J_ARRAY && d->t[c].size > 0) {
        content = json_array();
        for (e = hns_jfirst(d, c); e >= 0; e = hns_jnext(d, c, e)) {
            if (hns_jtype(d, e) == HNS_J_NULL)
                continue; /* the reference throws here; we keep the other items */
            if (json_array_append_new(content,
                                      hns_content(result_item(d, e, is_error, read_tool))) < 0) {
                json_decref(content);
                json_decref(up);
                return NULL;
            }
        }
    } else if ((s = hns_jstr(d, c, &n)) && n > 0) {
        json_t *t = read_tool  ? hns_markdown_escape(s, n)
                    : is_error ? hns_fence_json(s, n)
                               : json_stringn_nocheck(s, n);

        content = json_array();
        if (json_array_append_new(content, hns_content(hns_put(hns_put(json_object(), "type",
                                                                       json_string_nocheck("text")),
                                                               "text", t))) < 0) {
            json_decref(content);
            json_decref(up);
            return NULL;
        }
    }
    return hns_put_opt(up, "content", content);
}
