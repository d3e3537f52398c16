/* Gemini against evolve mock-llm: streamGenerateContent as SSE (?alt=sse) and as a JSON array,
 * unary generateContent, functionCall parts for run_shell_command, thoughts, usageMetadata on
 * the last chunk, and JSON-mode side calls (the model router) answered from their schema. */
#include <criterion/criterion.h>
#include <string.h>

#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_gemini, .timeout = 30);

#define GEMINI_BODY                                                                                \
    "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]}],\"tools\":[{"               \
    "\"functionDeclarations\":[{\"name\":\"write_file\",\"parametersJsonSchema\":{\"type\":"       \
    "\"object\",\"properties\":{\"file_path\":{\"type\":\"string\"},\"content\":{\"type\":"        \
    "\"string\"}}}},{\"name\":\"run_shell_command\",\"parametersJsonSchema\":{\"type\":"           \
    "\"object\","                                                                                  \
    "\"properties\":{\"command\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"     \
    "\"is_background\":{\"type\":\"boolean\"}},\"required\":[\"command\"]}}]}]}"

Test(mockllm_gemini, sse_stream_text_then_function_call)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    struct ts_http r;
    struct ts_sse *ev;
    size_t n, i;
    char text[256] = "";
    json_t *fc = NULL, *last_cand;

    ts_http_post(&r, mock_server_port(srv),
                 "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", GEMINI_BODY, NULL);
    cr_assert_eq(r.status, 200);
    n = ts_sse_parse(r.body, &ev);
    cr_assert_gt(n, 1);
    for (i = 0; i < n; i++) {
        json_t *cand = json_array_get(json_object_get(ev[i].data, "candidates"), 0);
        json_t *part =
            json_array_get(json_object_get(json_object_get(cand, "content"), "parts"), 0);

        cr_assert_str_eq(json_string_value(json_object_get(ev[i].data, "modelVersion")),
                         "gemini-2.5-pro");
        if (json_object_get(part, "text"))
            strncat(text, json_string_value(json_object_get(part, "text")),
                    sizeof(text) - strlen(text) - 1);
        if (json_object_get(part, "functionCall"))
            fc = json_object_get(part, "functionCall");
        /* usage and finishReason only on the last chunk */
        cr_assert_eq(json_object_get(ev[i].data, "usageMetadata") != NULL, i == n - 1);
    }
    cr_assert_str_eq(text, "I'll run the command.");
    cr_assert_not_null(fc);
    cr_assert_str_eq(json_string_value(json_object_get(fc, "name")), "run_shell_command");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(fc, "args"), "command")),
                     "echo hi > output/hello.txt");
    last_cand = json_array_get(json_object_get(ev[n - 1].data, "candidates"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(last_cand, "finishReason")), "STOP");
    ts_sse_free(ev, n);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_gemini, json_array_stream_and_unary_and_turn_two)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    struct ts_http r;
    json_t *arr, *o, *parts;
    const char *turn2 =
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]},{\"role\":\"model\","
        "\"parts\":[{\"functionCall\":{\"name\":\"run_shell_command\",\"args\":{}}}]},{\"role\":"
        "\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"run_shell_command\",\"response\":{}"
        "}}]}]}";

    ts_http_post(&r, mock_server_port(srv), "/v1beta/models/g:streamGenerateContent", GEMINI_BODY,
                 NULL);
    cr_assert_eq(r.status, 200);
    arr = json_loads(r.body, 0, NULL);
    cr_assert(json_is_array(arr), "JSON array framing: %s", r.body);
    cr_assert_gt(json_array_size(arr), 1);
    json_decref(arr);
    ts_http_free(&r);

    ts_http_post(&r, mock_server_port(srv), "/v1beta/models/g:generateContent", turn2, NULL);
    cr_assert_eq(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    parts = json_object_get(
        json_object_get(json_array_get(json_object_get(o, "candidates"), 0), "content"), "parts");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(parts, 0), "text")),
                     "Done: I ran the command and wrote output/hello.txt.");
    cr_assert_gt(json_integer_value(
                     json_object_get(json_object_get(o, "usageMetadata"), "promptTokenCount")),
                 0);
    json_decref(o);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_gemini, thoughts_and_router_json_mode)
{
    struct mock_server *srv =
        ts_mock_start("{\"turns\":[{\"thinking\":\"deep\",\"text\":\"hi\"}]}", NULL, 0);
    struct ts_http r;
    json_t *o, *parts, *val;

    ts_http_post(&r, mock_server_port(srv), "/v1beta/models/g:generateContent",
                 "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]}]}", NULL);
    o = json_loads(r.body, 0, NULL);
    parts = json_object_get(
        json_object_get(json_array_get(json_object_get(o, "candidates"), 0), "content"), "parts");
    cr_assert(json_is_true(json_object_get(json_array_get(parts, 0), "thought")));
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(parts, 0), "text")), "deep");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(parts, 1), "text")), "hi");
    json_decref(o);
    ts_http_free(&r);

    ts_http_post(&r, mock_server_port(srv), "/v1beta/models/flash-lite:generateContent",
                 "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"route\"}]}],"
                 "\"generationConfig\":{\"responseMimeType\":\"application/json\","
                 "\"responseJsonSchema\":{\"type\":\"object\",\"properties\":{\"reasoning\":{"
                 "\"type\":\"string\"},\"complexity_score\":{\"type\":\"integer\",\"minimum\":1,"
                 "\"maximum\":100}},\"required\":[\"complexity_score\"]}}}",
                 NULL);
    o = json_loads(r.body, 0, NULL);
    parts = json_object_get(
        json_object_get(json_array_get(json_object_get(o, "candidates"), 0), "content"), "parts");
    val = json_loads(json_string_value(json_object_get(json_array_get(parts, 0), "text")), 0, NULL);
    cr_assert_not_null(val);
    cr_assert_eq(json_integer_value(json_object_get(val, "complexity_score")), 1);
    json_decref(val);
    json_decref(o);
    ts_http_free(&r);
    mock_server_stop(srv);
}
