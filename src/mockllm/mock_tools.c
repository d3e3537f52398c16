/* mock_tools.c — finding the agent's own tools among those a request advertises (shell, write,
 * edit, apply_patch) and building a call with that tool's argument schema: the command as a
 * string or an argv array as the schema says, file paths made absolute with the agent's cwd,
 * required extras filled. A write or edit with no such tool goes through apply_patch, then the
 * shell tool. Also the schema filler and the cwd finder.
 * Threads: any connection thread; nothing here is shared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "mockllm/mock_impl.h"

static const struct mock_tool *by_names(const struct mock_view *v, const char *const *names)
{
    size_t i, k;

    for (k = 0; names[k]; k++)
        for (i = 0; i < v->ntools; i++)
            if (!strcmp(v->tools[i].name, names[k]))
                return &v->tools[i];
    return NULL;
}

static json_t *props_of(const struct mock_tool *t)
{
    return t && t->schema ? json_object_get(t->schema, "properties") : NULL;
}

/* The first of `keys` that the tool's schema has as a property, or NULL. */
static const char *prop_key(const struct mock_tool *t, const char *const *keys)
{
    json_t *props = props_of(t);
    size_t k;

    for (k = 0; keys[k]; k++)
        if (json_object_get(props, keys[k]))
            return keys[k];
    return NULL;
}

static const char *const cmd_keys[] = {"command", "cmd", "script", "commands", NULL};
static const char *const path_keys[] = {"file_path", "filePath", "path", "absolute_path",
                                        "filename",  "file",     NULL};
static const char *const content_keys[] = {"content", "contents", "text", "file_text", NULL};
static const char *const old_keys[] = {"old_string", "oldString", "old_str", "old_text", NULL};
static const char *const new_keys[] = {"new_string", "newString", "new_str", "new_text", NULL};

static int contains_ci(const char *hay, const char *needle)
{
    return hay && strcasestr(hay, needle) != NULL;
}

const struct mock_tool *mock_find_shell_tool(const struct mock_view *v)
{
    static const char *const names[] = {"Bash",         "bash",         "run_shell_command",
                                        "exec_command", "shell",        "shell_command",
                                        "local_shell",  "execute_bash", NULL};
    const struct mock_tool *t = by_names(v, names);
    size_t i;

    if (t)
        return t;
    /* By description: a tool that says it runs shell commands and takes a command. */
    for (i = 0; i < v->ntools; i++) {
        t = &v->tools[i];
        if ((contains_ci(t->name, "shell") || contains_ci(t->name, "bash") ||
             contains_ci(t->description, "shell command") ||
             contains_ci(t->description, "bash command")) &&
            prop_key(t, cmd_keys))
            return t;
    }
    return NULL;
}

const struct mock_tool *mock_find_write_tool(const struct mock_view *v)
{
    static const char *const names[] = {"Write", "write_file", "write", "create_file", NULL};
    const struct mock_tool *t = by_names(v, names);
    size_t i;

    if (t && t->kind == MOCK_TOOL_FUNCTION && prop_key(t, path_keys) && prop_key(t, content_keys))
        return t;
    for (i = 0; i < v->ntools; i++) {
        t = &v->tools[i];
        if (t->kind == MOCK_TOOL_FUNCTION && contains_ci(t->name, "write") &&
            prop_key(t, path_keys) && prop_key(t, content_keys))
            return t;
    }
    return NULL;
}

const struct mock_tool *mock_find_edit_tool(const struct mock_view *v)
{
    static const char *const names[] = {"Edit",        "edit",      "replace",
                                        "str_replace", "edit_file", NULL};
    const struct mock_tool *t = by_names(v, names);
    size_t i;

    if (t && prop_key(t, path_keys) && prop_key(t, old_keys) && prop_key(t, new_keys))
        return t;
    for (i = 0; i < v->ntools; i++) {
        t = &v->tools[i];
        if (t->kind == MOCK_TOOL_FUNCTION && prop_key(t, path_keys) && prop_key(t, old_keys) &&
            prop_key(t, new_keys))
            return t;
    }
    return NULL;
}

const struct mock_tool *mock_find_patch_tool(const struct mock_view *v)
{
    static const char *const names[] = {"apply_patch", NULL};
    const struct mock_tool *t = by_names(v, names);
    static const char *const input_key[] = {"input", "patch", NULL};

    /* freeform (custom) tool, or a function taking the patch text as "input" */
    if (t && (t->kind == MOCK_TOOL_CUSTOM || prop_key(t, input_key)))
        return t;
    return NULL;
}

/* ---- schema filling ---- */

static const char *type_of(const json_t *s)
{
    json_t *t = json_object_get(s, "type"), *x;
    const char *key[] = {"anyOf", "oneOf"};
    size_t i, k;

    if (json_is_string(t))
        return json_string_value(t);
    json_array_foreach(t, i, x)
    {
        if (json_is_string(x) && strcmp(json_string_value(x), "null"))
            return json_string_value(x);
    }
    for (k = 0; k < 2; k++)
        json_array_foreach(json_object_get(s, key[k]), i, x)
        {
            const char *st = type_of(x);

            if (st && strcmp(st, "null"))
                return st;
        }
    return NULL;
}

json_t *mock_fill_schema(const json_t *s)
{
    const char *t = type_of(s);
    json_t *en = json_object_get(s, "enum"), *props, *v, *out;
    const char *key;

    if (json_array_size(en) > 0)
        return json_deep_copy(json_array_get(en, 0));
    props = json_object_get(s, "properties");
    if ((t && !strcmp(t, "object")) || props) {
        out = json_object();
        json_object_foreach(props, key, v) json_object_set_new(out, key, mock_fill_schema(v));
        return out;
    }
    if (!t)
        return json_string("mock");
    if (!strcmp(t, "array"))
        return json_array();
    if (!strcmp(t, "boolean"))
        return json_false();
    if (!strcmp(t, "integer") || !strcmp(t, "number")) {
        double lo = json_number_value(json_object_get(s, "minimum"));

        return !strcmp(t, "integer") ? json_integer((json_int_t)lo) : json_real(lo);
    }
    return json_string("mock");
}

/* Adds the schema's required properties that `args` does not have yet. */
static void fill_required(json_t *args, const struct mock_tool *t, const char *what)
{
    json_t *req = t->schema ? json_object_get(t->schema, "required") : NULL, *props = props_of(t);
    size_t i;
    json_t *k;

    json_array_foreach(req, i, k)
    {
        const char *key = json_string_value(k);
        json_t *ps;

        if (!key || json_object_get(args, key))
            continue;
        ps = json_object_get(props, key);
        if (contains_ci(key, "description") || contains_ci(key, "instruction") ||
            contains_ci(key, "justification") || contains_ci(key, "reason"))
            json_object_set_new(args, key, json_string(what));
        else
            json_object_set_new(args, key, mock_fill_schema(ps));
    }
}

/* ---- cwd and paths ---- */

void mock_find_cwd(const char *raw, size_t len, char *out, size_t size)
{
    static const char *const markers[] = {
        "Primary working directory: ",          /* claude */
        "<cwd>",                                /* codex */
        "Working directory: ",                  /* opencode */
        "currently working in the directory: ", /* qwen */
        "Workspace Directories:**\\n  - ",      /* gemini (inside JSON text) */
        NULL};
    size_t k, n;

    out[0] = '\0';
    for (k = 0; markers[k]; k++) {
        const char *p = memmem(raw, len, markers[k], strlen(markers[k])), *e;

        if (!p)
            continue;
        p += strlen(markers[k]);
        for (e = p; e < raw + len && *e != '\\' && *e != '"' && *e != '<' && *e != '\n'; e++)
            ;
        n = (size_t)(e - p);
        while (n > 1 && p[n - 1] == ' ')
            n--;
        if (n == 0 || n >= size || p[0] != '/')
            continue;
        memcpy(out, p, n);
        out[n] = '\0';
        return;
    }
}

static char *abs_path(const char *path, const struct mock_view *v)
{
    char buf[4096];

    if (path[0] == '/' || !v->cwd[0])
        return strdup(path);
    snprintf(buf, sizeof(buf), "%s/%s", v->cwd, path);
    return strdup(buf);
}

/* Appends `s` single-quoted for a POSIX shell to buf (size cap). */
static void shq(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(buf);

    if (n + 1 < cap)
        buf[n++] = '\'';
    for (; *s && n + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    if (n + 1 < cap)
        buf[n++] = '\'';
    buf[n] = '\0';
}

/* sed escapes for a basic-regex pattern / a replacement, delimiter '|'. */
static void sed_escape(char *buf, size_t cap, const char *s, int pattern)
{
    size_t n = strlen(buf);

    for (; *s && n + 3 < cap; s++) {
        if (*s == '\\' || *s == '|' || *s == '&' || *s == '\n' || (pattern && strchr(".[]*^$", *s)))
            buf[n++] = '\\';
        buf[n++] = *s == '\n' ? 'n' : *s;
    }
    buf[n] = '\0';
}

/* ---- building calls ---- */

static int set_call(struct mock_block *b, const struct mock_tool *t, json_t *args, char *input)
{
    b->kind = MOCK_BLOCK_CALL;
    b->tool_kind = t->kind;
    b->tool_name = strdup(t->name);
    b->args = args;
    b->input = input;
    b->args_json = input ? strdup(input) : args ? json_dumps(args, JSON_COMPACT) : NULL;
    if (!b->tool_name || !b->args_json)
        return core_error_oom();
    return 0;
}

static int shell_call(struct mock_block *b, const struct mock_tool *t, const char *cmd,
                      const struct mock_view *v)
{
    const char *key = prop_key(t, cmd_keys), *type;
    json_t *args = json_object(), *props = props_of(t);
    char what[200];

    if (!args)
        return core_error_oom();
    if (!key)
        key = "command";
    type = type_of(json_object_get(props, key));
    if (t->kind == MOCK_TOOL_LOCAL_SHELL || (type && !strcmp(type, "array")))
        json_object_set_new(args, key, json_pack("[sss]", "bash", "-lc", cmd));
    else
        json_object_set_new(args, key, json_string(cmd));
    snprintf(what, sizeof(what), "Run: %.180s", cmd);
    if (json_object_get(props, "description"))
        json_object_set_new(args, "description", json_string(what));
    if (json_object_get(props, "is_background"))
        json_object_set_new(args, "is_background", json_false());
    if (json_object_get(props, "workdir") && v->cwd[0])
        json_object_set_new(args, "workdir", json_string(v->cwd));
    fill_required(args, t, what);
    return set_call(b, t, args, NULL);
}

static int patch_call(struct mock_block *b, const struct mock_tool *t, const char *body)
{
    char *input = strdup(body);

    if (!input)
        return core_error_oom();
    if (t->kind == MOCK_TOOL_CUSTOM)
        return set_call(b, t, NULL, input);
    free(input);
    return set_call(b, t,
                    json_pack("{ss}",
                              prop_key(t, (const char *const[]){"input", NULL}) ? "input" : "patch",
                              body),
                    NULL);
}

/* "+line\n" per line of `text` (an empty text adds one empty line). */
static void patch_lines(char *buf, size_t cap, char sign, const char *text)
{
    size_t n = strlen(buf);
    const char *p = text;

    do {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);

        if (!e && l == 0 && p != text)
            break;
        if (n + l + 3 >= cap)
            break;
        buf[n++] = sign;
        memcpy(buf + n, p, l);
        n += l;
        buf[n++] = '\n';
        p = e ? e + 1 : p + l;
    } while (*p);
    buf[n] = '\0';
}

static int write_call(struct mock_block *b, const struct mock_call *c, const struct mock_view *v)
{
    const struct mock_tool *t = mock_find_write_tool(v);
    char what[160], *path, *buf;
    size_t cap = 65536;
    int rc;

    snprintf(what, sizeof(what), "Write %.140s", c->path);
    if (t) {
        json_t *args = json_object();

        if (!args || !(path = abs_path(c->path, v))) {
            json_decref(args);
            return core_error_oom();
        }
        json_object_set_new(args, prop_key(t, path_keys), json_string(path));
        json_object_set_new(args, prop_key(t, content_keys), json_string(c->content));
        free(path);
        fill_required(args, t, what);
        return set_call(b, t, args, NULL);
    }
    if (!(buf = calloc(1, cap)))
        return core_error_oom();
    if ((t = mock_find_patch_tool(v))) {
        snprintf(buf, cap, "*** Begin Patch\n*** Add File: %s\n", c->path);
        patch_lines(buf, cap, '+', c->content);
        snprintf(buf + strlen(buf), cap - strlen(buf), "*** End Patch\n");
        rc = patch_call(b, t, buf);
    } else if ((t = mock_find_shell_tool(v))) {
        const char *slash = strrchr(c->path, '/');

        if (slash) {
            snprintf(buf, cap, "mkdir -p ");
            snprintf(what, sizeof(what), "%.*s", (int)(slash - c->path), c->path);
            shq(buf, cap, what);
            snprintf(buf + strlen(buf), cap - strlen(buf), " && ");
        }
        snprintf(buf + strlen(buf), cap - strlen(buf), "printf '%%s' ");
        shq(buf, cap, c->content);
        snprintf(buf + strlen(buf), cap - strlen(buf), " > ");
        shq(buf, cap, c->path);
        rc = shell_call(b, t, buf, v);
    } else {
        rc = EVOLVE_ENOTFOUND;
    }
    free(buf);
    return rc;
}

static int edit_call(struct mock_block *b, const struct mock_call *c, const struct mock_view *v)
{
    const struct mock_tool *t = mock_find_edit_tool(v);
    char what[160], *path, *buf;
    size_t cap = 65536;
    int rc;

    snprintf(what, sizeof(what), "Edit %.140s", c->path);
    if (t) {
        json_t *args = json_object();

        if (!args || !(path = abs_path(c->path, v))) {
            json_decref(args);
            return core_error_oom();
        }
        json_object_set_new(args, prop_key(t, path_keys), json_string(path));
        json_object_set_new(args, prop_key(t, old_keys), json_string(c->old_text));
        json_object_set_new(args, prop_key(t, new_keys), json_string(c->new_text));
        free(path);
        fill_required(args, t, what);
        return set_call(b, t, args, NULL);
    }
    if (!(buf = calloc(1, cap)))
        return core_error_oom();
    if ((t = mock_find_patch_tool(v))) {
        snprintf(buf, cap, "*** Begin Patch\n*** Update File: %s\n@@\n", c->path);
        patch_lines(buf, cap, '-', c->old_text);
        patch_lines(buf, cap, '+', c->new_text);
        snprintf(buf + strlen(buf), cap - strlen(buf), "*** End Patch\n");
        rc = patch_call(b, t, buf);
    } else if ((t = mock_find_shell_tool(v))) {
        char expr[16384] = "s|";

        sed_escape(expr, sizeof(expr), c->old_text, 1);
        snprintf(expr + strlen(expr), sizeof(expr) - strlen(expr), "|");
        sed_escape(expr, sizeof(expr), c->new_text, 0);
        snprintf(expr + strlen(expr), sizeof(expr) - strlen(expr), "|");
        snprintf(buf, cap, "sed -i ");
        shq(buf, cap, expr);
        snprintf(buf + strlen(buf), cap - strlen(buf), " ");
        shq(buf, cap, c->path);
        rc = shell_call(b, t, buf, v);
    } else {
        rc = EVOLVE_ENOTFOUND;
    }
    free(buf);
    return rc;
}

int mock_resolve_call(struct mock_block *b, const struct mock_call *call, const struct mock_view *v)
{
    const struct mock_tool *t;

    switch (call->kind) {
    case MOCK_CALL_SHELL:
        if (!(t = mock_find_shell_tool(v)))
            return EVOLVE_ENOTFOUND;
        return shell_call(b, t, call->command, v);
    case MOCK_CALL_WRITE:
        return write_call(b, call, v);
    case MOCK_CALL_EDIT:
        return edit_call(b, call, v);
    }
    return EVOLVE_ENOTFOUND;
}
