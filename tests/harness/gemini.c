/* gemini parser: reference vectors (with our stated differences), real traces, envelope
 * fields, usage and the command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_gemini, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"ignored_and_malformed", VEC_IGNORE_UNKNOWN, NULL,
     "non-JSON, the unknown `thought` type and a truncated line are `unknown`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_gemini, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("gemini", "gemini.jsonl", VEC_IGNORE_USAGE,
                                     "result stats give a run `usage`", diffs),
                 0);
}

Test(hns_gemini, real_traces_parse_without_unknown_and_pair_tools)
{
    static const char *const traces[] = {"traces/gemini-hello.stdout.jsonl",
                                         "traces/gemini-tool.stdout.jsonl",
                                         "traces/gemini-error.stdout.jsonl", NULL};
    const char *const *t;
    size_t calls = 0;

    for (t = traces; *t; t++) {
        json_t *ev = hvec_run_file("gemini", *t);

        calls += hvec_check_trace(*t, ev);
        json_decref(ev);
    }
    cr_assert_eq(calls, 1);
}

Test(hns_gemini, envelope_model_from_init_timestamps_and_usage)
{
    json_t *ev = hvec_run_file("gemini", "traces/gemini-tool.stdout.jsonl"), *e, *up, *u;

    cr_assert_eq(hvec_count(ev, "tool_call", &e), 1);
    cr_assert_str_eq(json_string_value(json_object_get(e, "model")), "gemini-2.5-pro");
    cr_assert_str_eq(json_string_value(json_object_get(e, "timestamp")),
                     "2026-11-30T04:05:20.019Z");
    cr_assert_str_eq(json_string_value(json_object_get(e, "sessionId")),
                     "01176b76-b9bd-4f26-b580-51edae870f8b");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "update"), "toolName")),
                     "run_shell_command");
    cr_assert_eq(hvec_count(ev, "tool_call_update", &e), 1);
    up = json_object_get(e, "update");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(up, "rawOutput"), "status")),
                     "success");
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", &e), 5);
    cr_assert(json_is_true(json_object_get(json_object_get(e, "extra"), "delta")));
    cr_assert_eq(hvec_count(ev, "usage", &e), 1);
    up = json_object_get(e, "update");
    cr_assert_str_eq(json_string_value(json_object_get(up, "scope")), "run");
    u = json_object_get(up, "usage");
    cr_assert_eq(json_integer_value(json_object_get(u, "promptTokens")), 12268);
    cr_assert_eq(json_integer_value(json_object_get(u, "completionTokens")), 58);
    cr_assert_eq(json_integer_value(json_object_get(u, "cachedTokens")), 0);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(u, "extra"), "tool_calls")), 1);
    json_decref(ev);
}

Test(hns_gemini, error_lines_and_failed_results_are_error_updates)
{
    static const char *const lines[] = {
        "{\"type\":\"error\",\"severity\":\"warning\",\"message\":\"slow down\"}",
        "{\"type\":\"result\",\"status\":\"error\",\"error\":{\"type\":\"x\",\"message\":\"quota\"}"
        ","
        "\"stats\":{\"input_tokens\":5,\"cached\":2,\"output_tokens\":1}}",
        "{\"type\":\"message\",\"role\":\"system\",\"content\":\"?\"}",
        "{\"type\":\"tool_use\",\"tool_name\":\"web_fetch\",\"tool_id\":\"w\",\"parameters\":"
        "{\"prompt\":[\"not\",\"a string\"]}}",
        "{\"type\":\"tool_use\",\"tool_name\":\"save_memory\",\"tool_id\":\"s\",\"parameters\":"
        "{\"fact\":\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98"
        "\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0"
        "\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98"
        "\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80z\"}}",
        "null",
        NULL};
    json_t *ev = hvec_run_lines("gemini", lines), *e;
    size_t i, fatal = 0, errors = 0;

    json_array_foreach(ev, i, e)
    {
        json_t *up = json_object_get(e, "update");
        if (strcmp(json_string_value(json_object_get(up, "sessionUpdate")), "error"))
            continue;
        errors++;
        fatal += json_is_true(json_object_get(up, "fatal"));
    }
    cr_assert_eq(errors, 2);
    cr_assert_eq(fatal, 1, "a failed result ends the run");
    cr_assert_eq(hvec_count(ev, "unknown", NULL), 2, "a system-role message and `null`");
    cr_assert_eq(hvec_count(ev, "tool_call", &e), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "update"), "title")),
                     "Fetch: not,a string...");
    e = json_array_get(ev, json_array_size(ev) - 2);
    /* 20 emoji = 40 UTF-16 units: the cut falls exactly after the 20th */
    cr_assert(strstr(json_string_value(json_object_get(json_object_get(e, "update"), "title")),
                     "\xf0\x9f\x98\x80...\""));
    json_decref(ev);
}

static bool has_arg_pair(const struct hns_command *cmd, const char *a, const char *b)
{
    size_t i;

    for (i = 0; cmd->argv[i] && cmd->argv[i + 1]; i++)
        if (!strcmp(cmd->argv[i], a) && !strcmp(cmd->argv[i + 1], b))
            return true;
    return false;
}

Test(hns_gemini, command_line_prompt_is_one_unescaped_argument)
{
    static const char prompt[] = "-Say \"hi\" to $USER, it's `now` \\ ok\n'x'";
    struct hns_run_spec spec = {
        .prompt = prompt, .api_key = "k", .base_url = "http://127.0.0.1:9", .offline = true};
    struct hns_command cmd = {0};
    const struct hns_agent *a = hns_agent_find("gemini");
    size_t i;
    bool found = false;

    cr_assert_str_eq(a->instruction_file, "GEMINI.md");
    cr_assert_str_eq(a->state_dirs[0], ".gemini");
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    for (i = 0; cmd.argv[i]; i++)
        if (!strncmp(cmd.argv[i], "--prompt=", 9))
            found = !strcmp(cmd.argv[i] + 9, prompt);
    cr_assert(found, "the prompt is one argv element, byte for byte (no double escaping)");
    cr_assert_null(cmd.stdin_data);
    cr_assert(has_arg_pair(&cmd, "--model", "gemini-3.1-pro-preview"),
              "always an explicit model: `auto` makes an extra router call");
    cr_assert(has_arg_pair(&cmd, "--output-format", "stream-json"));
    cr_assert_eq(cmd.files_count, 1);
    cr_assert(strstr(cmd.files[0].content, "\"selectedType\": \"gemini-api-key\""));
    cr_assert(strstr(cmd.files[0].content, "\"usageStatisticsEnabled\": false"));
    cr_assert_str_neq(cmd.argv[1], "--resume");
    hns_command_dispose(&cmd);
    spec.resume = true;
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert(has_arg_pair(&cmd, "--resume", "latest"));
    hns_command_dispose(&cmd);
}

Test(hns_gemini, message_edge_cases_follow_the_reference)
{
    static const char *const lines[] = {
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"\",\"delta\":true}",
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":5}",
        "{\"type\":\"message\",\"role\":\"user\",\"content\":\"again\"}",
        "{\"type\":\"tool_result\",\"tool_id\":\"x\",\"error\":{\"message\":\"boom\"}}", NULL};
    json_t *ev = hvec_run_lines("gemini", lines), *e, *up;

    cr_assert_eq(json_array_size(ev), 3, "an empty delta produces nothing");
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", &e), 1);
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_object_get(e, "update"), "content"), "text")),
                 5, "a non-string content is passed through, as the reference does");
    cr_assert_eq(hvec_count(ev, "user_message_chunk", NULL), 1);
    cr_assert_eq(hvec_count(ev, "tool_call_update", &e), 1);
    up = json_object_get(e, "update");
    cr_assert_str_eq(json_string_value(json_object_get(up, "status")), "failed",
                     "a result without status failed");
    cr_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(up, "content"), 0), "content"), "text")),
        "```\nboom\n```");
    json_decref(ev);
}
