/* claude parser: reference vectors (with our stated differences), real traces, envelope
 * fields, usage arithmetic, and the command line. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_claude, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"ignored_lines", VEC_IGNORE_UNKNOWN | VEC_IGNORE_ERROR, NULL,
     "non-JSON and the unknown `rate_limit_event` type become `unknown` (never dropped); the "
     "is_error result becomes a fatal `error`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_claude, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("claude", "claude.jsonl", VEC_IGNORE_USAGE,
                                     "every assistant line carries a call `usage` and result "
                                     "lines a run `usage`, which the reference dropped",
                                     diffs),
                 0);
}

Test(hns_claude, long_session_vector)
{
    cr_assert_gt(hvec_check_file_all("claude", "long/claude-session-200.jsonl", VEC_IGNORE_USAGE,
                                     "call and run `usage` updates", NULL),
                 0);
}

Test(hns_claude, real_traces_parse_without_unknown_and_pair_tools)
{
    static const char *const traces[] = {"traces/claude-hello.stdout.jsonl",
                                         "traces/claude-tool.stdout.jsonl",
                                         "traces/claude-error.stdout.jsonl", NULL};
    const char *const *t;
    size_t calls = 0;

    for (t = traces; *t; t++) {
        json_t *ev = hvec_run_file("claude", *t);

        calls += hvec_check_trace(*t, ev);
        json_decref(ev);
    }
    cr_assert_eq(calls, 1, "the tool trace has one Bash call");
}

Test(hns_claude, envelope_fields_from_the_real_tool_trace)
{
    json_t *ev = hvec_run_file("claude", "traces/claude-tool.stdout.jsonl"), *first, *up;

    /* the first assistant text line */
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", &first), 2);
    cr_assert_str_eq(json_string_value(json_object_get(first, "model")), "claude-opus-4-8");
    cr_assert_str_eq(json_string_value(json_object_get(first, "messageId")),
                     "msg_491a26c70ed24ababc1e65d9");
    cr_assert_str_eq(json_string_value(json_object_get(first, "sessionId")),
                     "9bb8e182-b95e-47f6-b090-28aa5a0beefc");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(first, "extra"), "request_id")),
        "req_b0ea36bf400b4d6bbe10b3a9");
    cr_assert_null(json_object_get(first, "parentToolCallId"), "top-level lines have no parent");
    /* the tool call keeps the harness's tool name and input */
    cr_assert_eq(hvec_count(ev, "tool_call", &first), 1);
    up = json_object_get(first, "update");
    cr_assert_str_eq(json_string_value(json_object_get(up, "toolName")), "Bash");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(up, "rawInput"), "command")),
                     "echo hi > output/hello.txt");
    /* the result echo line: timestamp and the structured result as rawOutput */
    cr_assert_eq(hvec_count(ev, "tool_call_update", &first), 1);
    cr_assert_str_eq(json_string_value(json_object_get(first, "timestamp")),
                     "2026-11-30T04:04:52.709Z");
    up = json_object_get(first, "update");
    cr_assert(json_is_false(json_object_get(json_object_get(up, "rawOutput"), "interrupted")));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(up, "rawOutput"), "stdout")),
                     "");
    json_decref(ev);
}

Test(hns_claude, usage_call_per_message_and_run_totals)
{
    json_t *ev = hvec_run_file("claude", "traces/claude-tool.stdout.jsonl"), *u, *first;
    size_t i, calls = 0;
    json_t *e;

    /* one call usage per assistant line (3), one run usage */
    json_array_foreach(ev, i, e)
    {
        json_t *up = json_object_get(e, "update");
        const char *t = json_string_value(json_object_get(up, "sessionUpdate"));

        if (strcmp(t, "usage") || strcmp(json_string_value(json_object_get(up, "scope")), "call"))
            continue;
        calls++;
        cr_assert_not_null(json_object_get(e, "messageId"), "call usage keeps its messageId");
    }
    cr_assert_eq(calls, 3);
    first = NULL;
    json_array_foreach(ev, i, e)
    {
        json_t *up = json_object_get(e, "update");
        if (!strcmp(json_string_value(json_object_get(up, "sessionUpdate")), "usage") &&
            !strcmp(json_string_value(json_object_get(up, "scope")), "run"))
            first = e;
    }
    cr_assert_not_null(first);
    u = json_object_get(json_object_get(first, "update"), "usage");
    cr_assert_eq(json_integer_value(json_object_get(u, "promptTokens")), 6546);
    cr_assert_eq(json_integer_value(json_object_get(u, "completionTokens")), 77);
    cr_assert_eq(json_integer_value(json_object_get(u, "cachedTokens")), 0);
    cr_assert_float_eq(json_number_value(json_object_get(u, "costUsd")), 0.034655, 1e-9);
    cr_assert_not_null(json_object_get(json_object_get(u, "extra"), "modelUsage"));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(first, "extra"), "num_turns")),
                 2);
    json_decref(ev);
}

Test(hns_claude, prompt_tokens_include_cache_reads_and_writes)
{
    static const char *const lines[] = {
        "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"model\":\"claude-x\",\"content\":[{"
        "\"type\":\"text\",\"text\":\"a\"}],\"usage\":{\"input_tokens\":10,\"cache_creation_input_"
        "tokens\":100,\"cache_read_input_tokens\":1000,\"output_tokens\":5,\"service_tier\":"
        "\"standard\"}},\"parent_tool_use_id\":\"toolu_P\",\"session_id\":\"s\"}",
        NULL};
    json_t *ev = hvec_run_lines("claude", lines), *e, *u;

    cr_assert_eq(hvec_count(ev, "usage", &e), 1);
    u = json_object_get(json_object_get(e, "update"), "usage");
    cr_assert_eq(json_integer_value(json_object_get(u, "promptTokens")), 1110);
    cr_assert_eq(json_integer_value(json_object_get(u, "cachedTokens")), 1000);
    cr_assert_eq(json_integer_value(json_object_get(u, "completionTokens")), 5);
    cr_assert_null(json_object_get(u, "costUsd"), "a call is not priced");
    cr_assert_eq(json_integer_value(
                     json_object_get(json_object_get(u, "extra"), "cache_creation_input_tokens")),
                 100);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(u, "extra"), "service_tier")),
        "standard");
    cr_assert_str_eq(json_string_value(json_object_get(e, "messageId")), "m1");
    /* a subagent's line names the Task call that spawned it */
    cr_assert_eq(hvec_count(ev, "agent_message_chunk", &e), 1);
    cr_assert_str_eq(json_string_value(json_object_get(e, "parentToolCallId")), "toolu_P");
    json_decref(ev);
}

Test(hns_claude, api_errors_are_error_updates_not_text)
{
    json_t *ev = hvec_run_file("claude", "traces/claude-error.stdout.jsonl"), *e, *up;
    size_t i, fatal = 0, nonfatal = 0;

    cr_assert_eq(hvec_count(ev, "agent_message_chunk", NULL), 0);
    json_array_foreach(ev, i, e)
    {
        up = json_object_get(e, "update");
        if (strcmp(json_string_value(json_object_get(up, "sessionUpdate")), "error"))
            continue;
        cr_assert(strstr(json_string_value(json_object_get(up, "message")), "API Error: 500"));
        if (json_is_true(json_object_get(up, "fatal")))
            fatal++;
        else
            nonfatal++;
    }
    cr_assert_eq(nonfatal, 1, "the synthetic assistant message");
    cr_assert_eq(fatal, 1, "the is_error result");
    json_decref(ev);
}

Test(hns_claude, orphan_results_and_unknown_shapes_are_kept)
{
    static const char *const lines[] = {
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
        "\"gone\",\"content\":\"late\"}]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"brand_new_block\"}]}}",
        "{\"type\":\"rate_limit_event\"}",
        "not json",
        "{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"m\"}",
        "{\"type\":\"stream_event\",\"event\":{}}",
        NULL};
    json_t *ev = hvec_run_lines("claude", lines), *e;

    cr_assert_eq(hvec_count(ev, "tool_call_update", NULL), 0);
    cr_assert_eq(hvec_count(ev, "unknown", &e), 4, "an orphan result is kept as unknown");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "update"), "raw")),
                     lines[0]);
    cr_assert_not_null(strstr(
        json_string_value(json_object_get(json_object_get(e, "update"), "reason")), "not seen"));
    cr_assert_eq(json_array_size(ev), 4, "system and stream_event lines produce nothing");
    json_decref(ev);
}

Test(hns_claude, inputs_that_crash_the_reference_do_not_crash_us)
{
    static const char *const lines[] = {
        "null",
        "[1,2]",
        "{\"type\":\"assistant\",\"message\":{\"content\":[null,{\"type\":\"text\",\"text\":\"ok\"}"
        "]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
        "\"name\":\"TodoWrite\",\"input\":{\"todos\":[null,{\"content\":\"c\"}]}}]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"b\","
        "\"name\":\"Bash\",\"input\":{\"command\":[\"ls\",\"`x`\"]}}]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"n\","
        "\"name\":{\"odd\":1},\"input\":{}}]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"r\","
        "\"name\":\"Read\",\"input\":{\"file_path\":\"/a\"}}]}}",
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
        "\"r\",\"content\":[{\"type\":\"text\",\"text\":42}]}]}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":\"\\ud800 lone\"}}",
        NULL};
    json_t *ev = hvec_run_lines("claude", lines), *e;
    size_t i;

    cr_assert_eq(hvec_count(ev, "unknown", NULL), 3, "null, an array and a null block");
    cr_assert_eq(hvec_count(ev, "plan", &e), 1);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(e, "update"), "entries")), 1);
    cr_assert_eq(hvec_count(ev, "tool_call", NULL), 3);
    json_array_foreach(ev, i, e)
    {
        char *s = json_dumps(e, JSON_COMPACT);

        cr_assert_not_null(s, "event %zu serialises", i);
        free(s);
    }
    json_decref(ev);
}

static void check_prompt_roundtrip(const char *agent)
{
    static const char prompt[] = "Say \"hi\" to $USER, it's `now` \\ ok\n$(rm -rf /) 'q' \\n";
    struct hns_run_spec spec = {.prompt = prompt, .home = "/home/user", .offline = true};
    struct hns_command cmd = {0};
    const struct hns_agent *a = hns_agent_find(agent);
    size_t i;
    bool found = false;

    cr_assert_not_null(a);
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    if (cmd.stdin_data) {
        cr_assert_eq(cmd.stdin_len, strlen(prompt));
        cr_assert(!memcmp(cmd.stdin_data, prompt, cmd.stdin_len), "%s: stdin is the prompt", agent);
        found = true;
    }
    for (i = 0; cmd.argv[i]; i++) {
        const char *arg = cmd.argv[i];
        if (!strncmp(arg, "--prompt=", 9))
            arg += 9;
        if (!strcmp(arg, prompt))
            found = true;
    }
    cr_assert(found, "%s: the prompt reaches the process byte for byte", agent);
    hns_command_dispose(&cmd);
}

static bool has_arg_pair(const struct hns_command *cmd, const char *a, const char *b)
{
    size_t i;

    for (i = 0; cmd->argv[i] && cmd->argv[i + 1]; i++)
        if (!strcmp(cmd->argv[i], a) && !strcmp(cmd->argv[i + 1], b))
            return true;
    return false;
}

static bool has_env(const struct hns_command *cmd, const char *kv)
{
    size_t i;

    for (i = 0; cmd->env && cmd->env[i]; i++)
        if (!strcmp(cmd->env[i], kv))
            return true;
    return false;
}

Test(hns_claude, command_line_prompt_resume_env)
{
    struct hns_run_spec spec = {.prompt = "p",
                                .model = "sonnet",
                                .api_key = "sk-1",
                                .base_url = "http://127.0.0.1:9",
                                .reasoning = "high",
                                .resume = false,
                                .offline = true};
    struct hns_command cmd = {0};
    const struct hns_agent *a = hns_agent_find("claude");

    check_prompt_roundtrip("claude");
    cr_assert_str_eq(a->instruction_file, "CLAUDE.md");
    cr_assert_str_eq(a->state_dirs[0], ".claude");
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert_str_eq(cmd.argv[0], "claude");
    cr_assert_str_eq(cmd.argv[1], "-p");
    cr_assert_str_neq(cmd.argv[2], "--continue");
    cr_assert(has_arg_pair(&cmd, "--model", "sonnet"));
    cr_assert(has_arg_pair(&cmd, "--effort", "high"));
    cr_assert(has_arg_pair(&cmd, "--output-format", "stream-json"));
    cr_assert(has_env(&cmd, "ANTHROPIC_API_KEY=sk-1"));
    cr_assert(has_env(&cmd, "ANTHROPIC_BASE_URL=http://127.0.0.1:9"));
    cr_assert(has_env(&cmd, "IS_SANDBOX=1"), "bypassPermissions as root needs IS_SANDBOX=1");
    cr_assert(has_env(&cmd, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"));
    hns_command_dispose(&cmd);
    spec.resume = true;
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert_str_eq(cmd.argv[2], "--continue", "--continue right after -p when resuming");
    hns_command_dispose(&cmd);
    spec.prompt = NULL;
    cr_assert_eq(a->build_command(&cmd, &spec), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "claude: the run has no prompt"));
    hns_command_dispose(&cmd);
}

Test(hns_claude, replay_cats_the_trace_and_parses_like_claude)
{
    struct hns_run_spec spec = {.prompt = "/home/user/workspace/trace.jsonl"};
    struct hns_command cmd = {0};
    const struct hns_agent *a = hns_agent_find("replay");
    json_t *ev;

    cr_assert_not_null(a);
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert_str_eq(cmd.argv[0], "cat");
    cr_assert_str_eq(cmd.argv[1], "--");
    cr_assert_str_eq(cmd.argv[2], spec.prompt);
    cr_assert_null(cmd.argv[3]);
    hns_command_dispose(&cmd);
    ev = hvec_run_file("replay", "traces/claude-tool.stdout.jsonl");
    cr_assert_eq(hvec_check_trace("replay", ev), 1);
    json_decref(ev);
}
