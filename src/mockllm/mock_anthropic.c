/* mock_anthropic.c — the Anthropic Messages dialect (POST /v1/messages, streamed as SSE or one
 * JSON message): reading a request into the neutral view (tools with input_schema, turns =
 * assistant messages, cwd) and rendering a reply plan as message_start, content blocks
 * (thinking with signature, text, tool_use with input_json_delta), message_delta with usage
 * incl. cache fields, message_stop; errors as {"type":"error","error":{type,message}}.
 * Threads: any connection thread. */
#include <string.h>

#include "mockllm/mock_impl.h"

static int classify(const json_t *m, const char **text)
{
    const char *role = json_string_value(json_object_get(m, "role"));
    json_t *content = json_object_get(m, "content"), *b;
    int kind = 1;
    size_t i;

    if (!role || strcmp(role, "assistant"))
        return 0;
    *text = json_string_value(content);
    json_array_foreach(content, i, b)
    {
        const char *type = json_string_value(json_object_get(b, "type"));

        if (type && (!strcmp(type, "tool_use") || !strcmp(type, "server_tool_use")))
            kind = 2;
        else if (type && !strcmp(type, "text") && !*text)
            *text = json_string_value(json_object_get(b, "text"));
    }
    return kind;
}

static int inspect(struct mock_view *v)
{
    json_t *tools = json_object_get(v->body, "tools"), *msgs = json_object_get(v->body, "messages");
    json_t *t, *m;
    size_t i;

    if (!json_is_array(msgs))
        return EVOLVE_EINVAL;
    v->model = json_string_value(json_object_get(v->body, "model"));
    v->stream = json_is_true(json_object_get(v->body, "stream"));
    json_array_foreach(tools, i, t)
    {
        const char *type = json_string_value(json_object_get(t, "type"));

        /* server tools (web_search_20250305, ...) carry a type and no schema: not callable */
        if (type && strcmp(type, "custom"))
            continue;
        mock_add_tool(v, json_string_value(json_object_get(t, "name")),
                      json_string_value(json_object_get(t, "description")),
                      json_object_get(t, "input_schema"), MOCK_TOOL_FUNCTION);
    }
    mock_collect_runs(v, msgs, classify);
    json_array_foreach(msgs, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));

        if (role && !strcmp(role, "user")) {
            v->conv_key = mock_fnv(v->conv_key, mock_first_text(json_object_get(m, "content")));
            break;
        }
    }
    return 0;
}

static const char *stop_reason(const struct mock_reply *r)
{
    return r->has_calls ? "tool_use" : "end_turn";
}

static json_t *usage(const struct mock_reply *r, int final)
{
    unsigned fresh = r->prompt_tokens - r->cache_read_tokens - r->cache_write_tokens;

    /* Anthropic's input_tokens excludes both cache shares. */
    return json_pack("{sI sI sI sI}", "input_tokens", (json_int_t)fresh, "output_tokens",
                     (json_int_t)(final ? r->completion_tokens : 1), "cache_creation_input_tokens",
                     (json_int_t)r->cache_write_tokens, "cache_read_input_tokens",
                     (json_int_t)r->cache_read_tokens);
}

static json_t *block_json(const struct mock_block *b)
{
    switch (b->kind) {
    case MOCK_BLOCK_THINKING:
        return json_pack("{ss ss ss}", "type", "thinking", "thinking", b->text, "signature",
                         "mock-signature");
    case MOCK_BLOCK_TEXT:
        return json_pack("{ss ss}", "type", "text", "text", b->text);
    case MOCK_BLOCK_CALL:
        return json_pack("{ss ss ss so}", "type", "tool_use", "id", b->id, "name", b->tool_name,
                         "input", b->args ? json_incref(b->args) : json_object());
    }
    return NULL;
}

struct delta_ctx {
    struct mock_stream *out;
    size_t index;
    const char *dtype, *field;
};

static void on_piece(const char *p, size_t len, void *ud)
{
    struct delta_ctx *c = ud;

    mock_stream_tokens(c->out, mock_tokens(len));
    mock_stream_sse(c->out, "content_block_delta",
                    json_pack("{ss sI s{ss ss%}}", "type", "content_block_delta", "index",
                              (json_int_t)c->index, "delta", "type", c->dtype, c->field, p, len));
}

static void render_error(const struct mock_reply *r, struct mock_stream *out)
{
    const char *type = r->error_status == 429   ? "rate_limit_error"
                       : r->error_status == 529 ? "overloaded_error"
                       : r->error_status < 500  ? "invalid_request_error"
                                                : "api_error";

    mock_stream_error(out, r->error_status, r->retry_after_s,
                      json_pack("{ss s{ss ss}}", "type", "error", "error", "type", type, "message",
                                r->error_message));
}

static void render(const struct mock_reply *r, const struct mock_view *v, struct mock_stream *out)
{
    const char *model = v->model ? v->model : "mock-model";
    struct delta_ctx dc = {out, 0, NULL, NULL};
    json_t *content;
    size_t i;

    if (r->error_status) {
        render_error(r, out);
        return;
    }
    if (!v->stream) {
        content = json_array();
        for (i = 0; i < r->nblocks; i++)
            json_array_append_new(content, block_json(&r->blocks[i]));
        mock_stream_tokens(out, r->completion_tokens);
        out->content_type = "application/json";
        mock_stream_json(out, json_pack("{ss ss ss ss so ss sn so}", "id", r->id, "type", "message",
                                        "role", "assistant", "model", model, "content", content,
                                        "stop_reason", stop_reason(r), "stop_sequence", "usage",
                                        usage(r, 1)));
        return;
    }
    mock_stream_sse(out, "message_start",
                    json_pack("{ss s{ss ss ss ss s[] sn sn so}}", "type", "message_start",
                              "message", "id", r->id, "type", "message", "role", "assistant",
                              "model", model, "content", "stop_reason", "stop_sequence", "usage",
                              usage(r, 0)));
    mock_stream_sse(out, "ping", json_pack("{ss}", "type", "ping"));
    for (i = 0; i < r->nblocks; i++) {
        const struct mock_block *b = &r->blocks[i];
        json_t *start = block_json(b);

        dc.index = i;
        /* blocks start empty; their content arrives as deltas */
        if (b->kind == MOCK_BLOCK_THINKING) {
            json_object_set_new(start, "thinking", json_string(""));
            json_object_set_new(start, "signature", json_string(""));
            dc.dtype = "thinking_delta";
            dc.field = "thinking";
        } else if (b->kind == MOCK_BLOCK_TEXT) {
            json_object_set_new(start, "text", json_string(""));
            dc.dtype = "text_delta";
            dc.field = "text";
        } else {
            json_object_set_new(start, "input", json_object());
            dc.dtype = "input_json_delta";
            dc.field = "partial_json";
        }
        mock_stream_sse(out, "content_block_start",
                        json_pack("{ss sI so}", "type", "content_block_start", "index",
                                  (json_int_t)i, "content_block", start));
        mock_split(b->kind == MOCK_BLOCK_CALL ? b->args_json : b->text,
                   b->kind == MOCK_BLOCK_CALL ? 32 : 16, on_piece, &dc);
        if (b->kind == MOCK_BLOCK_THINKING)
            mock_stream_sse(out, "content_block_delta",
                            json_pack("{ss sI s{ss ss}}", "type", "content_block_delta", "index",
                                      (json_int_t)i, "delta", "type", "signature_delta",
                                      "signature", "mock-signature"));
        mock_stream_sse(out, "content_block_stop",
                        json_pack("{ss sI}", "type", "content_block_stop", "index", (json_int_t)i));
    }
    mock_stream_sse(out, "message_delta",
                    json_pack("{ss s{ss sn} so}", "type", "message_delta", "delta", "stop_reason",
                              stop_reason(r), "stop_sequence", "usage", usage(r, 1)));
    mock_stream_sse(out, "message_stop", json_pack("{ss}", "type", "message_stop"));
}

const struct mock_dialect mock_dialect_anthropic = {"anthropic", inspect, render};
