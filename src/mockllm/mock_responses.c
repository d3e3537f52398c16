/* mock_responses.c — the OpenAI Responses dialect (POST /v1/responses; codex speaks it): function,
 * custom (freeform, e.g. apply_patch) and local_shell tools, turns = runs of assistant-side input
 * items, and the SSE sequence codex expects: response.created, response.in_progress, per output
 * item output_item.added … (reasoning summary / output_text / function_call_arguments /
 * custom_tool_call_input deltas) … output_item.done, then response.completed with usage; or one
 * response object.
 * Threads: any connection thread. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mockllm/mock_impl.h"

static int classify(const json_t *it, const char **text)
{
    static const char *const types[] = {
        "function_call",   "custom_tool_call", "local_shell_call",      "reasoning",
        "web_search_call", "tool_search_call", "image_generation_call", NULL};
    const char *type = json_string_value(json_object_get(it, "type"));
    const char *role = json_string_value(json_object_get(it, "role"));
    size_t i;

    if (role) {
        if (strcmp(role, "assistant"))
            return 0;
        *text = mock_first_text(json_object_get(it, "content"));
        return 1;
    }
    if (type && !strcmp(type, "reasoning"))
        return 1;
    for (i = 0; type && types[i]; i++)
        if (!strcmp(type, types[i]))
            return 2;
    return 0;
}

static int inspect(struct mock_view *v)
{
    json_t *tools = json_object_get(v->body, "tools"), *input = json_object_get(v->body, "input");
    json_t *t, *it;
    size_t i;

    v->model = json_string_value(json_object_get(v->body, "model"));
    v->stream = json_is_true(json_object_get(v->body, "stream"));
    json_array_foreach(tools, i, t)
    {
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *desc = json_string_value(json_object_get(t, "description"));

        if (!type)
            continue;
        if (!strcmp(type, "function"))
            mock_add_tool(v, name, desc, json_object_get(t, "parameters"), MOCK_TOOL_FUNCTION);
        else if (!strcmp(type, "custom"))
            mock_add_tool(v, name, desc, NULL, MOCK_TOOL_CUSTOM);
        else if (!strcmp(type, "local_shell"))
            mock_add_tool(v, "local_shell", "local shell", NULL, MOCK_TOOL_LOCAL_SHELL);
    }
    if (json_is_string(input)) {
        v->conv_key = mock_fnv(v->conv_key, json_string_value(input));
        return 0;
    }
    if (!json_is_array(input))
        return EVOLVE_EINVAL;
    mock_collect_runs(v, input, classify);
    json_array_foreach(input, i, it)
    {
        const char *role = json_string_value(json_object_get(it, "role"));

        if (role && !strcmp(role, "user")) {
            v->conv_key = mock_fnv(v->conv_key, mock_first_text(json_object_get(it, "content")));
            break;
        }
    }
    return 0;
}

struct ev_ctx {
    struct mock_stream *out;
    int seq;
    const char *item_id;
    size_t output_index;
    const char *kind; /* which delta event on_piece emits */
};

/* Emits one event: adds "type" and "sequence_number" to obj (stolen). */
static void ev(struct ev_ctx *c, const char *type, json_t *obj)
{
    json_object_set_new(obj, "type", json_string(type));
    json_object_set_new(obj, "sequence_number", json_integer(c->seq++));
    mock_stream_sse(c->out, type, obj);
}

static void on_piece(const char *p, size_t len, void *ud)
{
    struct ev_ctx *c = ud;
    json_t *o = json_pack("{ss sI ss%}", "item_id", c->item_id, "output_index",
                          (json_int_t)c->output_index, "delta", p, len);

    mock_stream_tokens(c->out, mock_tokens(len));
    if (!strcmp(c->kind, "response.output_text.delta"))
        json_object_set_new(o, "content_index", json_integer(0));
    if (!strcmp(c->kind, "response.reasoning_summary_text.delta"))
        json_object_set_new(o, "summary_index", json_integer(0));
    ev(c, c->kind, o);
}

/* The finished item for block b (id is the item id). */
static json_t *item_of(const struct mock_block *b, const char *id)
{
    switch (b->kind) {
    case MOCK_BLOCK_THINKING:
        return json_pack("{ss ss s[{ss ss}] ss}", "id", id, "type", "reasoning", "summary", "type",
                         "summary_text", "text", b->text, "encrypted_content", "mock-reasoning");
    case MOCK_BLOCK_TEXT:
        return json_pack("{ss ss ss ss s[{ss ss s[]}]}", "id", id, "type", "message", "status",
                         "completed", "role", "assistant", "content", "type", "output_text", "text",
                         b->text, "annotations");
    case MOCK_BLOCK_CALL:
        if (b->tool_kind == MOCK_TOOL_CUSTOM)
            return json_pack("{ss ss ss ss ss ss}", "id", id, "type", "custom_tool_call", "status",
                             "completed", "call_id", b->id, "name", b->tool_name, "input",
                             b->input);
        if (b->tool_kind == MOCK_TOOL_LOCAL_SHELL)
            return json_pack("{ss ss ss ss s{ss sO s{} sI}}", "id", id, "type", "local_shell_call",
                             "status", "completed", "call_id", b->id, "action", "type", "exec",
                             "command", json_object_get(b->args, "command"), "env", "timeout_ms",
                             (json_int_t)60000);
        return json_pack("{ss ss ss ss ss ss}", "id", id, "type", "function_call", "status",
                         "completed", "call_id", b->id, "name", b->tool_name, "arguments",
                         b->args_json);
    }
    return NULL;
}

static json_t *usage(const struct mock_reply *r)
{
    return json_pack("{sI s{sI} sI s{sI} sI}", "input_tokens", (json_int_t)r->prompt_tokens,
                     "input_tokens_details", "cached_tokens", (json_int_t)r->cache_read_tokens,
                     "output_tokens", (json_int_t)r->completion_tokens, "output_tokens_details",
                     "reasoning_tokens", (json_int_t)0, "total_tokens",
                     (json_int_t)(r->prompt_tokens + r->completion_tokens));
}

static json_t *response(const struct mock_reply *r, const struct mock_view *v, const char *status,
                        json_t *output, json_t *use)
{
    json_t *o = json_pack("{ss ss sI ss ss so sb s[] sn sn}", "id", r->id, "object", "response",
                          "created_at", (json_int_t)time(NULL), "model",
                          v->model ? v->model : "mock-model", "status", status, "output", output,
                          "parallel_tool_calls", 0, "tools", "error", "incomplete_details");

    json_object_set_new(o, "usage", use ? use : json_null());
    return o;
}

static void render_block(struct ev_ctx *c, const struct mock_block *b, json_t *done)
{
    json_t *added = json_deep_copy(done);
    size_t oi = c->output_index;
    const char *id = c->item_id;

    json_object_set_new(added, "status", json_string("in_progress"));
    if (b->kind == MOCK_BLOCK_THINKING) {
        json_object_set_new(added, "summary", json_array());
        ev(c, "response.output_item.added",
           json_pack("{sI so}", "output_index", (json_int_t)oi, "item", added));
        ev(c, "response.reasoning_summary_part.added",
           json_pack("{ss sI sI s{ss ss}}", "item_id", id, "output_index", (json_int_t)oi,
                     "summary_index", (json_int_t)0, "part", "type", "summary_text", "text", ""));
        c->kind = "response.reasoning_summary_text.delta";
        mock_split(b->text, 16, on_piece, c);
        ev(c, "response.reasoning_summary_text.done",
           json_pack("{ss sI sI ss}", "item_id", id, "output_index", (json_int_t)oi,
                     "summary_index", (json_int_t)0, "text", b->text));
        ev(c, "response.reasoning_summary_part.done",
           json_pack("{ss sI sI s{ss ss}}", "item_id", id, "output_index", (json_int_t)oi,
                     "summary_index", (json_int_t)0, "part", "type", "summary_text", "text",
                     b->text));
    } else if (b->kind == MOCK_BLOCK_TEXT) {
        json_object_set_new(added, "content", json_array());
        ev(c, "response.output_item.added",
           json_pack("{sI so}", "output_index", (json_int_t)oi, "item", added));
        ev(c, "response.content_part.added",
           json_pack("{ss sI sI s{ss ss s[]}}", "item_id", id, "output_index", (json_int_t)oi,
                     "content_index", (json_int_t)0, "part", "type", "output_text", "text", "",
                     "annotations"));
        c->kind = "response.output_text.delta";
        mock_split(b->text, 16, on_piece, c);
        ev(c, "response.output_text.done",
           json_pack("{ss sI sI ss}", "item_id", id, "output_index", (json_int_t)oi,
                     "content_index", (json_int_t)0, "text", b->text));
        ev(c, "response.content_part.done",
           json_pack("{ss sI sI sO}", "item_id", id, "output_index", (json_int_t)oi,
                     "content_index", (json_int_t)0, "part",
                     json_array_get(json_object_get(done, "content"), 0)));
    } else if (b->tool_kind == MOCK_TOOL_LOCAL_SHELL) {
        json_decref(added);
        mock_stream_tokens(c->out, mock_tokens(strlen(b->args_json)));
        ev(c, "response.output_item.added",
           json_pack("{sI sO}", "output_index", (json_int_t)oi, "item", done));
    } else {
        int custom = b->tool_kind == MOCK_TOOL_CUSTOM;

        json_object_set_new(added, custom ? "input" : "arguments", json_string(""));
        ev(c, "response.output_item.added",
           json_pack("{sI so}", "output_index", (json_int_t)oi, "item", added));
        c->kind = custom ? "response.custom_tool_call_input.delta"
                         : "response.function_call_arguments.delta";
        mock_split(b->args_json, 32, on_piece, c);
        ev(c,
           custom ? "response.custom_tool_call_input.done"
                  : "response.function_call_arguments.done",
           json_pack("{ss sI ss}", "item_id", id, "output_index", (json_int_t)oi,
                     custom ? "input" : "arguments", b->args_json));
    }
    ev(c, "response.output_item.done",
       json_pack("{sI sO}", "output_index", (json_int_t)oi, "item", done));
}

static void render(const struct mock_reply *r, const struct mock_view *v, struct mock_stream *out)
{
    struct ev_ctx c = {out, 0, NULL, 0, NULL};
    json_t *items = json_array();
    char ids[MOCK_MAX_BLOCKS][96];
    size_t i;

    if (r->error_status) {
        const char *type = r->error_status == 429 ? "rate_limit_exceeded" : "server_error";

        json_decref(items);
        mock_stream_error(out, r->error_status, r->retry_after_s,
                          json_pack("{s{ss ss ss}}", "error", "message", r->error_message, "type",
                                    type, "code", type));
        return;
    }
    for (i = 0; i < r->nblocks; i++) {
        const struct mock_block *b = &r->blocks[i];
        const char *pfx = b->kind == MOCK_BLOCK_THINKING ? "rs"
                          : b->kind == MOCK_BLOCK_TEXT   ? "msg"
                                                         : "fc";

        snprintf(ids[i], sizeof(ids[i]), "%s_%s_%zu", pfx, r->id, i);
        json_array_append_new(items, item_of(b, ids[i]));
    }
    if (!v->stream) {
        mock_stream_tokens(out, r->completion_tokens);
        out->content_type = "application/json";
        mock_stream_json(out, response(r, v, "completed", items, usage(r)));
        return;
    }
    ev(&c, "response.created",
       json_pack("{so}", "response", response(r, v, "in_progress", json_array(), NULL)));
    ev(&c, "response.in_progress",
       json_pack("{so}", "response", response(r, v, "in_progress", json_array(), NULL)));
    for (i = 0; i < r->nblocks; i++) {
        c.item_id = ids[i];
        c.output_index = i;
        render_block(&c, &r->blocks[i], json_array_get(items, i));
    }
    ev(&c, "response.completed",
       json_pack("{so}", "response", response(r, v, "completed", items, usage(r))));
}

const struct mock_dialect mock_dialect_responses = {"openai-responses", inspect, render};
