/* mock_chat.c — the OpenAI Chat Completions dialect (POST /v1/chat/completions; qwen and
 * opencode speak it): function tools, turns = assistant messages, streamed chunks with
 * reasoning_content, content and tool_calls deltas, a finish chunk, the usage chunk when
 * stream_options.include_usage is set, then [DONE]; or one chat.completion object.
 * Threads: any connection thread. */
#include <string.h>
#include <time.h>

#include "mockllm/mock_impl.h"

static int classify(const json_t *m, const char **text)
{
    const char *role = json_string_value(json_object_get(m, "role"));

    if (!role || strcmp(role, "assistant"))
        return 0;
    *text = mock_first_text(json_object_get(m, "content"));
    return json_array_size(json_object_get(m, "tool_calls")) ? 2 : 1;
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
    v->include_usage =
        json_is_true(json_object_get(json_object_get(v->body, "stream_options"), "include_usage"));
    json_array_foreach(tools, i, t)
    {
        json_t *fn = json_object_get(t, "function");

        if (json_is_object(fn))
            mock_add_tool(v, json_string_value(json_object_get(fn, "name")),
                          json_string_value(json_object_get(fn, "description")),
                          json_object_get(fn, "parameters"), MOCK_TOOL_FUNCTION);
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

static json_t *usage(const struct mock_reply *r)
{
    /* OpenAI's prompt_tokens includes the cached share. */
    return json_pack("{sI sI sI s{sI}}", "prompt_tokens", (json_int_t)r->prompt_tokens,
                     "completion_tokens", (json_int_t)r->completion_tokens, "total_tokens",
                     (json_int_t)(r->prompt_tokens + r->completion_tokens), "prompt_tokens_details",
                     "cached_tokens", (json_int_t)r->cache_read_tokens);
}

struct chunk_ctx {
    struct mock_stream *out;
    const struct mock_reply *r;
    const char *model;
    json_int_t created;
    const char *field; /* "content", "reasoning_content" or NULL for tool arguments */
    size_t call_index;
};

static void chunk(struct chunk_ctx *c, json_t *delta, const char *finish)
{
    json_t *choice = json_pack("{sI so sn}", "index", (json_int_t)0, "delta", delta, "logprobs");

    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    mock_stream_sse(c->out, NULL,
                    json_pack("{ss ss sI ss s[o]}", "id", c->r->id, "object",
                              "chat.completion.chunk", "created", c->created, "model", c->model,
                              "choices", choice));
}

static void on_piece(const char *p, size_t len, void *ud)
{
    struct chunk_ctx *c = ud;

    mock_stream_tokens(c->out, mock_tokens(len));
    if (c->field)
        chunk(c, json_pack("{ss%}", c->field, p, len), NULL);
    else
        chunk(c,
              json_pack("{s[{sI s{ss%}}]}", "tool_calls", "index", (json_int_t)c->call_index,
                        "function", "arguments", p, len),
              NULL);
}

static void render(const struct mock_reply *r, const struct mock_view *v, struct mock_stream *out)
{
    struct chunk_ctx c = {out,  r, v->model ? v->model : "mock-model", (json_int_t)time(NULL),
                          NULL, 0};
    const char *finish = r->has_calls ? "tool_calls" : "stop";
    json_t *msg, *calls, *text = NULL, *reasoning = NULL;
    size_t i, ncall = 0;

    if (r->error_status) {
        const char *type = r->error_status == 429 ? "rate_limit_exceeded" : "server_error";

        mock_stream_error(out, r->error_status, r->retry_after_s,
                          json_pack("{s{ss ss ss}}", "error", "message", r->error_message, "type",
                                    type, "code", type));
        return;
    }
    if (!v->stream) {
        calls = json_array();
        for (i = 0; i < r->nblocks; i++) {
            const struct mock_block *b = &r->blocks[i];

            if (b->kind == MOCK_BLOCK_CALL)
                json_array_append_new(calls, json_pack("{ss ss s{ss ss}}", "id", b->id, "type",
                                                       "function", "function", "name", b->tool_name,
                                                       "arguments", b->args_json));
            else if (b->kind == MOCK_BLOCK_TEXT && !text)
                text = json_string(b->text);
            else if (b->kind == MOCK_BLOCK_THINKING && !reasoning)
                reasoning = json_string(b->text);
        }
        msg = json_pack("{ss so}", "role", "assistant", "content", text ? text : json_null());
        if (reasoning)
            json_object_set_new(msg, "reasoning_content", reasoning);
        if (json_array_size(calls))
            json_object_set(msg, "tool_calls", calls);
        json_decref(calls);
        mock_stream_tokens(out, r->completion_tokens);
        out->content_type = "application/json";
        mock_stream_json(out, json_pack("{ss ss sI ss s[{sI so ss sn}] so}", "id", r->id, "object",
                                        "chat.completion", "created", c.created, "model", c.model,
                                        "choices", "index", (json_int_t)0, "message", msg,
                                        "finish_reason", finish, "logprobs", "usage", usage(r)));
        return;
    }
    chunk(&c, json_pack("{ss ss}", "role", "assistant", "content", ""), NULL);
    for (i = 0; i < r->nblocks; i++) {
        const struct mock_block *b = &r->blocks[i];

        if (b->kind != MOCK_BLOCK_CALL) {
            c.field = b->kind == MOCK_BLOCK_TEXT ? "content" : "reasoning_content";
            mock_split(b->text, 16, on_piece, &c);
            continue;
        }
        c.field = NULL;
        c.call_index = ncall++;
        chunk(&c,
              json_pack("{s[{sI ss ss s{ss ss}}]}", "tool_calls", "index", (json_int_t)c.call_index,
                        "id", b->id, "type", "function", "function", "name", b->tool_name,
                        "arguments", ""),
              NULL);
        mock_split(b->args_json, 32, on_piece, &c);
    }
    chunk(&c, json_object(), finish);
    if (v->include_usage)
        mock_stream_sse(out, NULL,
                        json_pack("{ss ss sI ss s[] so}", "id", r->id, "object",
                                  "chat.completion.chunk", "created", c.created, "model", c.model,
                                  "choices", "usage", usage(r)));
    mock_stream_raw(out, "data: [DONE]\n\n", 14);
}

const struct mock_dialect mock_dialect_chat = {"openai-chat", inspect, render};
