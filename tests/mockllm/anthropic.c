/* Anthropic Messages against evolve mock-llm: the SSE event sequence claude parses, tool_use
 * built from the advertised Bash schema, thinking blocks, usage with cache fields, the JSON
 * (non-streamed) shape and the start-up endpoints (HEAD /, models, count_tokens). */
#include <criterion/criterion.h>
#include <string.h>

#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_anthropic, .timeout = 30);

#define BASH_TOOL                                                                                  \
    "{\"name\":\"Bash\",\"description\":\"Executes a bash command\",\"input_schema\":{\"type\":"   \
    "\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"description\":{\"type\":"      \
    "\"string\"},\"timeout\":{\"type\":\"number\"}},\"required\":[\"command\"],"                   \
    "\"additionalProperties\":false}}"
#define WRITE_TOOL                                                                                 \
    "{\"name\":\"Write\",\"description\":\"Writes a file\",\"input_schema\":{\"type\":\"object\"," \
    "\"properties\":{\"file_path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},"      \
    "\"required\":[\"file_path\",\"content\"]}}"

static const char *const events_text[] = {
    "message_start",      "ping",          "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop",        NULL};

Test(mockllm_anthropic, hello_stream_has_the_event_sequence_and_text)
{
    struct mock_server *srv = ts_mock_start("hello", NULL, 0);
    struct ts_http r;
    struct ts_sse *ev;
    size_t n, i, k = 0;
    char text[256] = "";

    ts_http_post(&r, mock_server_port(srv), "/v1/messages?beta=true",
                 "{\"model\":\"claude-opus-4-8\",\"stream\":true,\"max_tokens\":100,"
                 "\"messages\":[{\"role\":\"user\",\"content\":\"Say hello.\"}]}",
                 NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(r.content_type, "text/event-stream");
    n = ts_sse_parse(r.body, &ev);
    /* event names in order, deltas collapsed */
    for (i = 0; i < n; i++) {
        if (i > 0 && !strcmp(ev[i].event, "content_block_delta") &&
            !strcmp(ev[i - 1].event, "content_block_delta")) {
            strncat(
                text,
                json_string_value(json_object_get(json_object_get(ev[i].data, "delta"), "text")),
                sizeof(text) - strlen(text) - 1);
            continue;
        }
        cr_assert_not_null(events_text[k], "extra event %s", ev[i].event);
        cr_assert_str_eq(ev[i].event, events_text[k], "event %zu", i);
        cr_assert_str_eq(json_string_value(json_object_get(ev[i].data, "type")), ev[i].event);
        if (!strcmp(ev[i].event, "content_block_delta"))
            strncat(
                text,
                json_string_value(json_object_get(json_object_get(ev[i].data, "delta"), "text")),
                sizeof(text) - strlen(text) - 1);
        k++;
    }
    cr_assert_null(events_text[k]);
    cr_assert_str_eq(text, "Hello from evolve mock-llm. This is a scripted reply.");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(ev[0].data, "message"), "model")),
        "claude-opus-4-8");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(ev[n - 2].data, "delta"), "stop_reason")),
        "end_turn");
    ts_sse_free(ev, n);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_anthropic, tool_turn_calls_bash_with_its_schema_then_final_text)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    struct ts_http r;
    struct ts_sse *ev;
    size_t n, i;
    char json[8192] = "";
    json_t *input, *usage, *start = NULL;

    ts_http_post(&r, mock_server_port(srv), "/v1/messages",
                 "{\"model\":\"m\",\"stream\":true,\"tools\":[" WRITE_TOOL "," BASH_TOOL "],"
                 "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                 "\"Run the shell command\"}]}]}",
                 NULL);
    cr_assert_eq(r.status, 200);
    n = ts_sse_parse(r.body, &ev);
    for (i = 0; i < n; i++) {
        json_t *d = ev[i].data, *blk = json_object_get(d, "content_block"), *delta;

        if (!strcmp(ev[i].event, "content_block_start") &&
            !strcmp(json_string_value(json_object_get(blk, "type")), "tool_use"))
            start = blk;
        delta = json_object_get(d, "delta");
        if (json_string_value(json_object_get(delta, "partial_json")))
            strncat(json, json_string_value(json_object_get(delta, "partial_json")),
                    sizeof(json) - strlen(json) - 1);
    }
    cr_assert_not_null(start);
    cr_assert_str_eq(json_string_value(json_object_get(start, "name")), "Bash");
    cr_assert_not_null(json_string_value(json_object_get(start, "id")));
    input = json_loads(json, 0, NULL);
    cr_assert_not_null(input, "input_json_delta pieces join to JSON: %s", json);
    cr_assert_str_eq(json_string_value(json_object_get(input, "command")),
                     "echo hi > output/hello.txt");
    /* only keys the schema has (additionalProperties:false) */
    cr_assert_null(json_object_get(input, "is_background"));
    json_decref(input);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(ev[n - 2].data, "delta"), "stop_reason")),
        "tool_use");
    usage = json_object_get(ev[n - 2].data, "usage");
    cr_assert(json_is_integer(json_object_get(usage, "cache_creation_input_tokens")));
    cr_assert(json_is_integer(json_object_get(usage, "cache_read_input_tokens")));
    cr_assert_gt(json_integer_value(json_object_get(usage, "output_tokens")), 0);
    ts_sse_free(ev, n);
    ts_http_free(&r);

    /* after the tool result: the second turn's text, stop_reason end_turn */
    ts_http_post(
        &r, mock_server_port(srv), "/v1/messages",
        "{\"model\":\"m\",\"stream\":false,\"tools\":[" BASH_TOOL "],\"messages\":["
        "{\"role\":\"user\",\"content\":\"Run the shell command\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"I'll run the "
        "command.\"},{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
        "\"content\":\"ok\"}]}]}",
        NULL);
    cr_assert_eq(r.status, 200);
    input = json_loads(r.body, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(input, "type")), "message");
    cr_assert_str_eq(json_string_value(json_object_get(input, "stop_reason")), "end_turn");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(input, "content"), 0), "text")),
                     "Done: I ran the command and wrote output/hello.txt.");
    json_decref(input);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_anthropic, thinking_block_and_cache_usage)
{
    struct mock_server *srv =
        ts_mock_start("{\"usage\":{\"cache_read_fraction\":0.5,\"cache_write_fraction\":0.25},"
                      "\"turns\":[{\"thinking\":\"hmm\",\"text\":\"ok\"}]}",
                      NULL, 0);
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    struct ts_http r;
    json_t *msg, *c0, *usage;
    json_int_t in, cr, cw, total = (json_int_t)((strlen(body) + 3) / 4);

    ts_http_post(&r, mock_server_port(srv), "/v1/messages", body, NULL);
    cr_assert_eq(r.status, 200);
    msg = json_loads(r.body, 0, NULL);
    c0 = json_array_get(json_object_get(msg, "content"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c0, "type")), "thinking");
    cr_assert_str_eq(json_string_value(json_object_get(c0, "thinking")), "hmm");
    cr_assert_not_null(json_string_value(json_object_get(c0, "signature")));
    usage = json_object_get(msg, "usage");
    in = json_integer_value(json_object_get(usage, "input_tokens"));
    cr = json_integer_value(json_object_get(usage, "cache_read_input_tokens"));
    cw = json_integer_value(json_object_get(usage, "cache_creation_input_tokens"));
    /* input_tokens excludes both cache shares; together they are the whole prompt */
    cr_assert_eq(in + cr + cw, total, "%lld + %lld + %lld != %lld", (long long)in, (long long)cr,
                 (long long)cw, (long long)total);
    cr_assert_eq(cr, total / 2);
    /* completion tokens: "hmm" (1) + "ok" (1) */
    cr_assert_eq(json_integer_value(json_object_get(usage, "output_tokens")), 2);
    json_decref(msg);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_anthropic, startup_endpoints)
{
    struct mock_server *srv = ts_mock_start("hello", NULL, 0);
    uint16_t port = mock_server_port(srv);
    const char *count_body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"12345678\"}]}";
    struct ts_http r;
    json_t *o;

    ts_http_req(&r, port, "HEAD", "/");
    cr_assert_eq(r.status, 200);
    ts_http_free(&r);
    ts_http_req(&r, port, "GET", "/v1/models");
    cr_assert_eq(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    cr_assert_gt(json_array_size(json_object_get(o, "data")), 0);
    cr_assert_not_null(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "data"), 0), "id")));
    json_decref(o);
    ts_http_free(&r);
    ts_http_post(&r, port, "/v1/messages/count_tokens", count_body, NULL);
    cr_assert_eq(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    /* the documented tokenizer: ceil(bytes / 4) of the request body */
    cr_assert_eq(json_integer_value(json_object_get(o, "input_tokens")),
                 (json_int_t)((strlen(count_body) + 3) / 4));
    json_decref(o);
    ts_http_free(&r);
    ts_http_req(&r, port, "GET", "/nope");
    cr_assert_eq(r.status, 404);
    ts_http_free(&r);
    ts_http_post(&r, port, "/v1/messages", "{not json", NULL);
    cr_assert_eq(r.status, 400);
    ts_http_free(&r);
    mock_server_stop(srv);
}
