/* mock_stream.c — the paced output of one mock reply: a list of chunks (SSE events or a JSON
 * body), each stamped with the millisecond after the start of the response at which it is due,
 * plus the deterministic tokenizer and the text splitter the dialects share.
 * Pacing: the clock starts at ttft_ms (so nothing, not even the first event, is sent earlier)
 * and each content piece advances it by tokens / tokens_per_second.
 * Threads: one connection thread owns a stream from render to the last byte written. */
#include <stdlib.h>
#include <string.h>

#include "mockllm/mock_impl.h"

unsigned mock_tokens(size_t bytes)
{
    return (unsigned)((bytes + 3) / 4);
}

void mock_stream_init(struct mock_stream *s, const struct mock_pacing *p)
{
    memset(s, 0, sizeof(*s));
    s->status = 200;
    s->content_type = "text/event-stream";
    s->clock_ms = p ? p->ttft_ms : 0;
    s->ms_per_token = p && p->tokens_per_second > 0 ? 1000.0 / p->tokens_per_second : 0;
}

void mock_stream_free(struct mock_stream *s)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        free(s->v[i].data);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* Takes ownership of `data` (malloc'd, `len` bytes). */
static void push(struct mock_stream *s, char *data, size_t len)
{
    if (!data || s->failed) {
        free(data);
        s->failed = 1;
        return;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        struct mock_chunk *v = realloc(s->v, cap * sizeof(*v));

        if (!v) {
            free(data);
            s->failed = 1;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].data = data;
    s->v[s->n].len = len;
    s->v[s->n].due_ms = s->clock_ms;
    s->n++;
}

void mock_stream_raw(struct mock_stream *s, const char *data, size_t len)
{
    char *d = malloc(len + 1);

    if (d) {
        memcpy(d, data, len);
        d[len] = '\0';
    }
    push(s, d, len);
}

void mock_stream_sse(struct mock_stream *s, const char *event, json_t *obj)
{
    char *js = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    size_t el = event ? strlen(event) : 0, jl, n = 0;
    char *d;

    json_decref(obj);
    if (!js) {
        s->failed = 1;
        return;
    }
    jl = strlen(js);
    d = malloc(el + jl + 32);
    if (d) {
        if (event) {
            memcpy(d, "event: ", 7);
            memcpy(d + 7, event, el);
            d[7 + el] = '\n';
            n = el + 8;
        }
        memcpy(d + n, "data: ", 6);
        memcpy(d + n + 6, js, jl);
        n += 6 + jl;
        memcpy(d + n, "\n\n", 3);
        n += 2;
    }
    free(js);
    push(s, d, n);
}

void mock_stream_json(struct mock_stream *s, json_t *obj)
{
    char *js = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

    json_decref(obj);
    push(s, js, js ? strlen(js) : 0);
}

void mock_stream_tokens(struct mock_stream *s, unsigned tokens)
{
    if (s->ms_per_token > 0)
        s->clock_ms += (uint32_t)(tokens * s->ms_per_token + 0.5);
}

void mock_stream_error(struct mock_stream *s, int status, int retry_after_s, json_t *body)
{
    s->status = status;
    s->retry_after_s = retry_after_s;
    s->content_type = "application/json";
    mock_stream_json(s, body);
}

void mock_split(const char *text, size_t n, void (*fn)(const char *p, size_t len, void *ud),
                void *ud)
{
    size_t len = strlen(text), at = 0, k;

    if (len == 0) {
        fn(text, 0, ud);
        return;
    }
    while (at < len) {
        k = len - at < n ? len - at : n;
        /* never cut a UTF-8 sequence: move the end back over continuation bytes */
        while (at + k < len && k > 1 && ((unsigned char)text[at + k] & 0xC0) == 0x80)
            k--;
        fn(text + at, k, ud);
        at += k;
    }
}
