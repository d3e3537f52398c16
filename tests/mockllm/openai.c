/* OpenAI dialects against evolve mock-llm: Chat Completions streaming (tool_calls deltas, the
 * usage chunk, [DONE]) as qwen and opencode read it, the command as a string or an argv array
 * as the advertised schema says; Responses (codex): the SSE event order, exec_command's cmd,
 * apply_patch as a custom tool call for writes, usage in response.completed. */
#include <criterion/criterion.h>
#include <string.h>

#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_openai, .timeout = 30);

static char *chat_args(const char *body_tools, uint16_t port, const char **finish)
{
    static char fin[32];
    char body[4096], args[4096] = "";
    struct ts_http r;
    struct ts_sse *ev;
    size_t n, i;
    int usage_seen = 0, done_seen = 0;

    snprintf(
        body, sizeof(body),
        "{\"model\":\"mock-model\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
        "\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\","
        "\"content\":\"go\"}],\"tools\":[%s]}",
        body_tools);
    ts_http_post(&r, port, "/v1/chat/completions", body, NULL);
    cr_assert_eq(r.status, 200);
    n = ts_sse_parse(r.body, &ev);
    cr_assert(ev[n - 1].done, "the stream ends with [DONE]");
    for (i = 0; i < n; i++) {
        json_t *ch = json_array_get(json_object_get(ev[i].data, "choices"), 0);
        json_t *tc = json_array_get(json_object_get(json_object_get(ch, "delta"), "tool_calls"), 0);
        const char *a =
            json_string_value(json_object_get(json_object_get(tc, "function"), "arguments"));

        if (ev[i].done) {
            done_seen = 1;
            continue;
        }
        cr_assert_str_eq(json_string_value(json_object_get(ev[i].data, "object")),
                         "chat.completion.chunk");
        if (json_string_value(json_object_get(ch, "finish_reason")))
            snprintf(fin, sizeof(fin), "%s",
                     json_string_value(json_object_get(ch, "finish_reason")));
        if (a)
            strncat(args, a, sizeof(args) - strlen(args) - 1);
        if (json_object_get(ev[i].data, "usage")) {
            json_t *u = json_object_get(ev[i].data, "usage");

            usage_seen = 1;
            cr_assert_eq(json_array_size(json_object_get(ev[i].data, "choices")), 0);
            cr_assert_eq(json_integer_value(json_object_get(u, "prompt_tokens")),
                         (json_int_t)((strlen(body) + 3) / 4));
            cr_assert_eq(json_integer_value(json_object_get(u, "total_tokens")),
                         json_integer_value(json_object_get(u, "prompt_tokens")) +
                             json_integer_value(json_object_get(u, "completion_tokens")));
        }
    }
    cr_assert(usage_seen && done_seen);
    ts_sse_free(ev, n);
    ts_http_free(&r);
    *finish = fin;
    return strdup(args);
}

Test(mockllm_openai, chat_shell_tool_string_command)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    const char *finish;
    char *args = chat_args(
        "{\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"parameters\":{\"type\":"
        "\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"run_shell_command\",\"description\":"
        "\"Executes a shell command\",\"parameters\":{\"type\":\"object\",\"properties\":{"
        "\"command\":{\"type\":\"string\"},\"is_background\":{\"type\":\"boolean\"},"
        "\"description\":{\"type\":\"string\"}},\"required\":[\"command\"]}}}",
        mock_server_port(srv), &finish);
    json_t *a = json_loads(args, 0, NULL);

    cr_assert_not_null(a, "arguments deltas join to JSON: %s", args);
    cr_assert_str_eq(json_string_value(json_object_get(a, "command")),
                     "echo hi > output/hello.txt");
    cr_assert(json_is_false(json_object_get(a, "is_background")));
    cr_assert_str_eq(finish, "tool_calls");
    json_decref(a);
    free(args);
    mock_server_stop(srv);
}

Test(mockllm_openai, chat_shell_tool_array_command_found_by_description)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    const char *finish;
    /* not a known name: found because its description says it runs shell commands */
    char *args = chat_args(
        "{\"type\":\"function\",\"function\":{\"name\":\"runner\",\"description\":\"Runs a shell "
        "command and returns its output\",\"parameters\":{\"type\":\"object\",\"properties\":{"
        "\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"timeout_ms\":{"
        "\"type\":\"integer\",\"minimum\":1000}},\"required\":[\"command\",\"timeout_ms\"]}}}",
        mock_server_port(srv), &finish);
    json_t *a = json_loads(args, 0, NULL), *cmd = json_object_get(a, "command");

    cr_assert(json_is_array(cmd), "array schema gives an argv array: %s", args);
    cr_assert_str_eq(json_string_value(json_array_get(cmd, 0)), "bash");
    cr_assert_str_eq(json_string_value(json_array_get(cmd, 1)), "-lc");
    cr_assert_str_eq(json_string_value(json_array_get(cmd, 2)), "echo hi > output/hello.txt");
    /* required extra filled from its schema */
    cr_assert_eq(json_integer_value(json_object_get(a, "timeout_ms")), 1000);
    json_decref(a);
    free(args);
    mock_server_stop(srv);
}

Test(mockllm_openai, chat_side_request_without_tools_gets_text)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    const char *finish;
    char *args = chat_args("", mock_server_port(srv), &finish);

    cr_assert_str_eq(args, "");
    cr_assert_str_eq(finish, "stop");
    free(args);
    mock_server_stop(srv);
}

#define CODEX_TOOLS                                                                                \
    "[{\"type\":\"function\",\"name\":\"exec_command\",\"description\":\"Runs a command\","        \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"cmd\":{\"type\":\"string\"},"           \
    "\"workdir\":{\"type\":\"string\"}},\"required\":[\"cmd\"]}},{\"type\":\"custom\",\"name\":"   \
    "\"apply_patch\",\"description\":\"edit files\",\"format\":{\"type\":\"grammar\"}},"           \
    "{\"type\":\"web_search\"}]"

static const char *const responses_order[] = {"response.created",
                                              "response.in_progress",
                                              "response.output_item.added",
                                              "response.content_part.added",
                                              "response.output_text.delta",
                                              "response.output_text.done",
                                              "response.content_part.done",
                                              "response.output_item.done",
                                              "response.output_item.added",
                                              "response.function_call_arguments.delta",
                                              "response.function_call_arguments.done",
                                              "response.output_item.done",
                                              "response.completed",
                                              NULL};

Test(mockllm_openai, responses_event_sequence_and_exec_command)
{
    struct mock_server *srv = ts_mock_start("tool", NULL, 0);
    struct ts_http r;
    struct ts_sse *ev;
    size_t n, i, k = 0;
    json_t *done = NULL, *args, *usage;

    ts_http_post(&r, mock_server_port(srv), "/v1/responses",
                 "{\"model\":\"gpt-5.5\",\"stream\":true,\"input\":[{\"type\":\"message\",\"role\":"
                 "\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"<environment_context>"
                 "\\n  <cwd>/work/ws</cwd>\\n</environment_context>\"}]},{\"type\":\"message\","
                 "\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"go\"}]}],"
                 "\"tools\":" CODEX_TOOLS "}",
                 NULL);
    cr_assert_eq(r.status, 200);
    n = ts_sse_parse(r.body, &ev);
    for (i = 0; i < n; i++) {
        cr_assert_eq(json_integer_value(json_object_get(ev[i].data, "sequence_number")),
                     (json_int_t)i);
        cr_assert_str_eq(json_string_value(json_object_get(ev[i].data, "type")), ev[i].event);
        if (i > 0 && !strcmp(ev[i].event, ev[i - 1].event) && strstr(ev[i].event, ".delta"))
            continue;
        cr_assert_not_null(responses_order[k], "extra event %s", ev[i].event);
        cr_assert_str_eq(ev[i].event, responses_order[k]);
        if (!strcmp(ev[i].event, "response.output_item.done"))
            done = json_object_get(ev[i].data, "item");
        k++;
    }
    cr_assert_null(responses_order[k]);
    cr_assert_str_eq(json_string_value(json_object_get(done, "type")), "function_call");
    cr_assert_str_eq(json_string_value(json_object_get(done, "name")), "exec_command");
    cr_assert_not_null(json_string_value(json_object_get(done, "call_id")));
    args = json_loads(json_string_value(json_object_get(done, "arguments")), 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(args, "cmd")), "echo hi > output/hello.txt");
    /* the cwd found in <cwd> goes into the tool's workdir */
    cr_assert_str_eq(json_string_value(json_object_get(args, "workdir")), "/work/ws");
    json_decref(args);
    usage = json_object_get(json_object_get(ev[n - 1].data, "response"), "usage");
    cr_assert_gt(json_integer_value(json_object_get(usage, "input_tokens")), 0);
    cr_assert(json_is_integer(
        json_object_get(json_object_get(usage, "input_tokens_details"), "cached_tokens")));
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(ev[n - 1].data, "response"), "status")),
        "completed");
    ts_sse_free(ev, n);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_openai, responses_write_goes_through_apply_patch)
{
    struct mock_server *srv = ts_mock_start(
        "{\"turns\":[{\"thinking\":\"plan\",\"write\":{\"path\":\"output/a.txt\",\"content\":"
        "\"one\\ntwo\\n\"}}]}",
        NULL, 0);
    struct ts_http r;
    json_t *o, *out, *it;

    ts_http_post(&r, mock_server_port(srv), "/v1/responses",
                 "{\"model\":\"gpt-5.5\",\"input\":\"go\",\"tools\":" CODEX_TOOLS "}", NULL);
    cr_assert_eq(r.status, 200);
    o = json_loads(r.body, 0, NULL);
    out = json_object_get(o, "output");
    cr_assert_eq(json_array_size(out), 2);
    it = json_array_get(out, 0);
    cr_assert_str_eq(json_string_value(json_object_get(it, "type")), "reasoning");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(it, "summary"), 0), "text")),
                     "plan");
    it = json_array_get(out, 1);
    cr_assert_str_eq(json_string_value(json_object_get(it, "type")), "custom_tool_call");
    cr_assert_str_eq(json_string_value(json_object_get(it, "name")), "apply_patch");
    cr_assert_str_eq(json_string_value(json_object_get(it, "input")),
                     "*** Begin Patch\n*** Add File: output/a.txt\n+one\n+two\n*** End Patch\n");
    json_decref(o);
    ts_http_free(&r);
    mock_server_stop(srv);
}
