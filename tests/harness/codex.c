/* codex parser: reference vectors (with our stated differences), the project-sable error
 * delta, long traces, real traces, usage and the command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_codex, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"errors_dropped_in_v0_0_55", VEC_IGNORE_ERROR, NULL,
     "error, turn.failed and error items are `error` updates (project-sable behaviour)"},
    {"ignored_and_malformed", VEC_IGNORE_UNKNOWN, NULL,
     "non-JSON, item events without an item, the unknown item type collab_tool_call and the "
     "unknown line type session.created are `unknown`"},
    {"real_trace_codex_hello", VEC_IGNORE_ERROR, NULL,
     "the \"Model metadata ... not found\" error item is a non-fatal `error` update"},
    {"real_trace_codex_tool", VEC_IGNORE_ERROR, NULL,
     "the \"Model metadata ... not found\" error item is a non-fatal `error` update"},
    {NULL, 0, NULL, NULL},
};

Test(hns_codex, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("codex", "codex.jsonl", VEC_IGNORE_USAGE,
                                     "turn.completed gives a run `usage`", diffs),
                 0);
}

Test(hns_codex, project_sable_error_delta)
{
    cr_assert_gt(hvec_check_file("codex", "project-sable-delta/codex.jsonl", NULL), 0);
}

static const struct hvec_diff long_diffs[] = {
    {"bench_codex_lines_1076_1090", VEC_IGNORE_ERROR, NULL,
     "the top-level error line is an `error` update"},
    {NULL, 0, NULL, NULL},
};

Test(hns_codex, long_trace_vectors)
{
    cr_assert_gt(hvec_check_file_all("codex", "long/codex-200k-head200.jsonl", VEC_IGNORE_USAGE,
                                     "turn.completed gives a run `usage`", long_diffs),
                 0);
}

Test(hns_codex, real_traces_parse_without_unknown_and_pair_tools)
{
    static const char *const traces[] = {"traces/codex-hello.stdout.jsonl",
                                         "traces/codex-tool.stdout.jsonl",
                                         "traces/codex-error.stdout.jsonl", NULL};
    const char *const *t;
    size_t calls = 0;

    for (t = traces; *t; t++) {
        json_t *ev = hvec_run_file("codex", *t);

        calls += hvec_check_trace(*t, ev);
        json_decref(ev);
    }
    cr_assert_eq(calls, 1);
}

Test(hns_codex, tool_result_raw_output_usage_and_session)
{
    json_t *ev = hvec_run_file("codex", "traces/codex-tool.stdout.jsonl"), *e, *up, *u;

    cr_assert_eq(hvec_count(ev, "tool_call_update", &e), 1);
    up = json_object_get(e, "update");
    cr_assert_str_eq(json_string_value(json_object_get(e, "sessionId")),
                     "01a22aa0-a363-7340-a7c6-b48c163b9468", "thread_id of thread.started");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(up, "rawOutput"), "exit_code")),
                 0);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(up, "rawOutput"), "aggregated_output")),
        "");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(up, "rawOutput"), "status")),
                     "completed");
    cr_assert_eq(hvec_count(ev, "tool_call", &e), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "update"), "toolName")),
                     "command_execution");
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", &e), 1);
    cr_assert_str_eq(json_string_value(json_object_get(e, "messageId")), "item_1");
    cr_assert_eq(hvec_count(ev, "usage", &e), 1);
    up = json_object_get(e, "update");
    cr_assert_str_eq(json_string_value(json_object_get(up, "scope")), "run");
    u = json_object_get(up, "usage");
    cr_assert_eq(json_integer_value(json_object_get(u, "promptTokens")), 13991);
    cr_assert_eq(json_integer_value(json_object_get(u, "completionTokens")), 108);
    cr_assert_eq(json_integer_value(json_object_get(u, "cachedTokens")), 0);
    cr_assert_null(json_object_get(u, "costUsd"), "codex prices nothing");
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(u, "extra"), "reasoning_output_tokens")),
        0);
    json_decref(ev);
}

Test(hns_codex, stream_errors_and_fatal_turn_failure)
{
    json_t *ev = hvec_run_file("codex", "traces/codex-error.stdout.jsonl"), *e;

    cr_assert_eq(hvec_count(ev, "error", &e), 2);
    cr_assert(json_is_false(json_object_get(json_object_get(e, "update"), "fatal")));
    e = json_array_get(ev, json_array_size(ev) - 1);
    cr_assert(json_is_true(json_object_get(json_object_get(e, "update"), "fatal")),
              "turn.failed is fatal");
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", NULL), 0, "errors are never message text");
    json_decref(ev);
}

Test(hns_codex, inputs_that_crash_the_reference_do_not_crash_us)
{
    static const char *const lines[] = {
        "null",
        "{\"type\":\"item.completed\",\"item\":{\"id\":\"r\",\"type\":\"reasoning\",\"summary\":"
        "\"not an array\"}}",
        "{\"type\":\"item.completed\",\"item\":{\"id\":\"t\",\"type\":\"todo_list\",\"items\":"
        "[null,{\"text\":\"a\"}]}}",
        "{\"type\":\"item.completed\",\"item\":{\"id\":\"f\",\"type\":\"file_change\",\"changes\":"
        "[null,{\"path\":\"/a\",\"kind\":\"add\"}],\"status\":\"completed\"}}",
        "{\"type\":\"item.started\",\"item\":{\"id\":\"m\",\"type\":\"mcp_tool_call\"}}",
        NULL};
    json_t *ev = hvec_run_lines("codex", lines), *e;

    cr_assert_eq(hvec_count(ev, "unknown", NULL), 1);
    cr_assert_eq(hvec_count(ev, "agent_thought_chunk", &e), 1);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(e, "update"), "content"), "text")),
                     "");
    cr_assert_eq(hvec_count(ev, "plan", NULL), 1);
    cr_assert_eq(hvec_count(ev, "tool_call", &e), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "update"), "title")),
                     "Create /a");
    json_decref(ev);
}

static bool has_arg(const struct hns_command *cmd, const char *a)
{
    size_t i;

    for (i = 0; cmd->argv[i]; i++)
        if (!strcmp(cmd->argv[i], a))
            return true;
    return false;
}

Test(hns_codex, command_line_prompt_resume_config)
{
    static const char prompt[] = "Say \"hi\" to $USER, it's `now` \\ ok\n'x'";
    struct hns_run_spec spec = {.prompt = prompt,
                                .model = "gpt-5.5",
                                .api_key = "sk-1",
                                .base_url = "http://127.0.0.1:9/v1",
                                .home = "/home/user",
                                .reasoning = "low",
                                .offline = true};
    struct hns_command cmd = {0};
    const struct hns_agent *a = hns_agent_find("codex");
    size_t n;

    cr_assert_str_eq(a->instruction_file, "AGENTS.md");
    cr_assert_str_eq(a->state_dirs[0], ".codex");
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert_str_eq(cmd.argv[0], "codex");
    cr_assert_str_eq(cmd.argv[1], "exec");
    cr_assert(has_arg(&cmd, "--json"));
    cr_assert(has_arg(&cmd, "model_reasoning_effort=\"low\""));
    cr_assert(!has_arg(&cmd, "resume"));
    cr_assert_eq(cmd.stdin_len, strlen(prompt));
    cr_assert(!memcmp(cmd.stdin_data, prompt, cmd.stdin_len), "the prompt is stdin, verbatim");
    cr_assert_eq(cmd.files_count, 1);
    cr_assert_str_eq(cmd.files[0].path, ".codex/config.toml");
    cr_assert(strstr(cmd.files[0].content, "[features]\nplugins = false"),
              "plugins off, or codex syncs them from github.com");
    cr_assert(strstr(cmd.files[0].content, "base_url = \"http://127.0.0.1:9/v1\""));
    cr_assert(strstr(cmd.files[0].content, "model = \"gpt-5.5\""));
    hns_command_dispose(&cmd);
    spec.resume = true;
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    for (n = 0; cmd.argv[n]; n++)
        ;
    cr_assert_str_eq(cmd.argv[n - 2], "resume");
    cr_assert_str_eq(cmd.argv[n - 1], "--last", "`exec ... resume --last` at the very end");
    hns_command_dispose(&cmd);
}
