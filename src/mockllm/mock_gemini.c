/* mock_gemini.c — the Gemini dialect (POST /v1beta/models/<model>:generateContent and
 * :streamGenerateContent, the latter as SSE with ?alt=sse or as one streamed JSON array):
 * functionDeclarations tools (parameters or parametersJsonSchema), turns = runs of "model"
 * contents, replies as candidates whose parts are thoughts ({text, thought:true}), text and
 * functionCall, usageMetadata on the last chunk. A JSON-mode request (responseMimeType
 * application/json, e.g. gemini's model router) gets its schema filled instead of the script.
 * Threads: any connection thread. */
#include <stdlib.h>
#include <string.h>

#include "mockllm/mock_impl.h"

enum framing { FRAME_UNARY, FRAME_SSE, FRAME_ARRAY };

static int is_model(const json_t *c)
{
    const char *role = json_string_value(json_object_get(c, "role"));

    return role && !strcmp(role, "model");
}

static int classify(const json_t *c, const char **text)
{
    json_t *p;
    int kind = 1;
    size_t i;

    if (!is_model(c))
        return 0;
    json_array_foreach(json_object_get(c, "parts"), i, p)
    {
        if (json_object_get(p, "functionCall"))
            kind = 2;
        else if (!*text && !json_is_true(json_object_get(p, "thought")))
            *text = json_string_value(json_object_get(p, "text"));
    }
    return kind;
}

static int inspect(struct mock_view *v)
{
    json_t *tools = json_object_get(v->body, "tools"),
           *contents = json_object_get(v->body, "contents");
    json_t *gc = json_object_get(v->body, "generationConfig"), *t, *fd, *c;
    const char *mime = json_string_value(json_object_get(gc, "responseMimeType"));
    size_t i, k;

    if (!json_is_array(contents))
        return EVOLVE_EINVAL;
    json_array_foreach(tools, i, t)
    {
        json_t *decls = json_object_get(t, "functionDeclarations");

        if (!decls)
            decls = json_object_get(t, "function_declarations");
        json_array_foreach(decls, k, fd)
        {
            json_t *schema = json_object_get(fd, "parametersJsonSchema");

            if (!schema)
                schema = json_object_get(fd, "parameters");
            mock_add_tool(v, json_string_value(json_object_get(fd, "name")),
                          json_string_value(json_object_get(fd, "description")), schema,
                          MOCK_TOOL_FUNCTION);
        }
    }
    if (mime && !strcmp(mime, "application/json")) {
        v->json_mode = 1;
        v->out_schema = json_object_get(gc, "responseJsonSchema");
        if (!v->out_schema)
            v->out_schema = json_object_get(gc, "responseSchema");
    }
    mock_collect_runs(v, contents, classify);
    json_array_foreach(contents, i, c)
    {
        if (!is_model(c)) {
            v->conv_key = mock_fnv(v->conv_key, mock_first_text(json_object_get(c, "parts")));
            break;
        }
    }
    return 0;
}

static json_t *usage(const struct mock_reply *r)
{
    return json_pack("{sI sI sI sI}", "promptTokenCount", (json_int_t)r->prompt_tokens,
                     "candidatesTokenCount", (json_int_t)r->completion_tokens, "totalTokenCount",
                     (json_int_t)(r->prompt_tokens + r->completion_tokens),
                     "cachedContentTokenCount", (json_int_t)r->cache_read_tokens);
}

static json_t *part_of(const struct mock_block *b, const char *text, size_t len)
{
    if (b->kind == MOCK_BLOCK_CALL)
        return json_pack("{s{ss sO}}", "functionCall", "name", b->tool_name, "args", b->args);
    if (b->kind == MOCK_BLOCK_THINKING)
        return json_pack("{ss% sb}", "text", text, len, "thought", 1);
    return json_pack("{ss%}", "text", text, len);
}

/* One GenerateContentResponse carrying `parts` (stolen). */
static json_t *resp(const struct mock_reply *r, const struct mock_view *v, json_t *parts, int last)
{
    json_t *cand = json_pack("{s{ss so} sI}", "content", "role", "model", "parts", parts, "index",
                             (json_int_t)0);
    json_t *o = json_pack("{s[o] ss ss}", "candidates", cand, "modelVersion",
                          v->model ? v->model : "mock-model", "responseId", r->id);

    if (last) {
        json_object_set_new(cand, "finishReason", json_string("STOP"));
        json_object_set_new(o, "usageMetadata", usage(r));
    }
    return o;
}

struct emit_ctx {
    struct mock_stream *out;
    const struct mock_reply *r;
    const struct mock_view *v;
    enum framing framing;
    size_t emitted;
    const struct mock_block *block;
    int last_block;
    size_t remaining; /* bytes of the current block still to come */
};

static void emit(struct emit_ctx *c, json_t *obj)
{
    if (c->framing == FRAME_SSE) {
        mock_stream_sse(c->out, NULL, obj);
    } else {
        mock_stream_raw(c->out, c->emitted ? "," : "[", 1);
        mock_stream_json(c->out, obj);
    }
    c->emitted++;
}

static void on_piece(const char *p, size_t len, void *ud)
{
    struct emit_ctx *c = ud;

    c->remaining -= len < c->remaining ? len : c->remaining;
    mock_stream_tokens(c->out, mock_tokens(len));
    emit(c, resp(c->r, c->v, json_pack("[o]", part_of(c->block, p, len)),
                 c->last_block && c->remaining == 0));
}

static void render_framed(const struct mock_reply *r, const struct mock_view *v,
                          struct mock_stream *out, enum framing framing)
{
    struct emit_ctx c = {out, r, v, framing, 0, NULL, 0, 0};
    json_t *parts;
    size_t i;

    if (r->error_status) {
        const char *status = r->error_status == 429   ? "RESOURCE_EXHAUSTED"
                             : r->error_status == 503 ? "UNAVAILABLE"
                             : r->error_status == 529 ? "UNAVAILABLE"
                             : r->error_status < 500  ? "INVALID_ARGUMENT"
                                                      : "INTERNAL";

        mock_stream_error(out, r->error_status, r->retry_after_s,
                          json_pack("{s{sI ss ss}}", "error", "code", (json_int_t)r->error_status,
                                    "message", r->error_message, "status", status));
        return;
    }
    if (framing != FRAME_SSE)
        out->content_type = "application/json";
    if (framing == FRAME_UNARY || r->json_value) {
        parts = json_array();
        if (r->json_value) {
            char *js = json_dumps(r->json_value, JSON_COMPACT);

            json_array_append_new(parts, json_pack("{ss}", "text", js ? js : "{}"));
            free(js);
        }
        for (i = 0; i < r->nblocks; i++) {
            const struct mock_block *b = &r->blocks[i];

            json_array_append_new(
                parts, part_of(b, b->text ? b->text : "", b->text ? strlen(b->text) : 0));
        }
        mock_stream_tokens(out, r->completion_tokens);
        if (framing == FRAME_UNARY)
            mock_stream_json(out, resp(r, v, parts, 1));
        else
            emit(&c, resp(r, v, parts, 1));
    } else {
        for (i = 0; i < r->nblocks; i++) {
            const struct mock_block *b = &r->blocks[i];

            c.block = b;
            c.last_block = i + 1 == r->nblocks;
            if (b->kind == MOCK_BLOCK_CALL) {
                mock_stream_tokens(out, mock_tokens(strlen(b->args_json)));
                emit(&c, resp(r, v, json_pack("[o]", part_of(b, NULL, 0)), c.last_block));
                continue;
            }
            c.remaining = strlen(b->text);
            mock_split(b->text, 16, on_piece, &c);
        }
    }
    if (framing == FRAME_ARRAY)
        mock_stream_raw(out, "]", 1);
}

static void render_unary(const struct mock_reply *r, const struct mock_view *v,
                         struct mock_stream *out)
{
    render_framed(r, v, out, FRAME_UNARY);
}

static void render_sse(const struct mock_reply *r, const struct mock_view *v,
                       struct mock_stream *out)
{
    render_framed(r, v, out, FRAME_SSE);
}

static void render_array(const struct mock_reply *r, const struct mock_view *v,
                         struct mock_stream *out)
{
    render_framed(r, v, out, FRAME_ARRAY);
}

const struct mock_dialect mock_dialect_gemini = {"gemini", inspect, render_unary};
const struct mock_dialect mock_dialect_gemini_sse = {"gemini-sse", inspect, render_sse};
const struct mock_dialect mock_dialect_gemini_arr = {"gemini-stream", inspect, render_array};
