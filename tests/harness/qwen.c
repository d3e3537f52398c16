/* Qwen Code harness: stream parser against the reference vectors and real traces, our added
 * fields (usage, error, unknown, model, messageId, parentToolCallId), and the command line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"
#include "support/agentcheck.h"
#include "support/vectors.h"

TestSuite(hns_qwen, .timeout = 20);

#define USAGE_WHY                                                                                  \
    "assistant lines carry message.usage (call usage) and result lines totals (run usage): we "    \
    "emit `usage` updates where the reference printed nothing"

static const struct ac_diff diffs[] = {
    {"init_text_thinking_result", VEC_IGNORE_USAGE, NULL, USAGE_WHY},
    {"bash_tool_pairing", VEC_IGNORE_USAGE, NULL, USAGE_WHY},
    {"tool_result_error_and_array", 0, ac_unfence,
     "tool error text stays verbatim (DESIGN §4); the reference wraps it in a ``` fence"},
    {"file_tools_and_unknown_names", VEC_IGNORE_USAGE, NULL, USAGE_WHY},
    {"real_trace_qwen_hello", VEC_IGNORE_USAGE, NULL, USAGE_WHY},
    {"real_trace_qwen_tool", VEC_IGNORE_USAGE, NULL, USAGE_WHY},
    {NULL, 0, NULL, NULL},
};

Test(hns_qwen, every_reference_vector_matches_except_stated_differences)
{
    char msg[8192];

    cr_assert_eq(ac_run_vectors("qwen", "qwen.jsonl", diffs, msg, sizeof(msg)), 0, "%s", msg);
}

static json_t *feed1(const char *line)
{
    const char *lines[1] = {line};
    json_t *ev = ac_feed("qwen", lines, 1);

    cr_assert_not_null(ev, "%s", evolve_error_last()->message);
    return ev;
}

static void assert_subset(const json_t *event, const char *want_json)
{
    json_error_t err;
    json_t *want = json_loads(want_json, 0, &err);
    char path[512] = "";
    char *got = json_dumps(event, JSON_COMPACT);

    cr_assert_not_null(want, "bad test JSON: %s", err.text);
    cr_assert(vec_subset(want, event, path, sizeof(path)), "at %s\n want %s\n got  %s", path,
              want_json, got);
    free(got);
    json_decref(want);
}

Test(hns_qwen, real_traces_parse_without_unknown_and_pair_tool_calls)
{
    static const char *const traces[] = {"traces/qwen-hello.stdout.jsonl",
                                         "traces/qwen-tool.stdout.jsonl",
                                         "traces/qwen-error.stdout.jsonl"};
    size_t i;

    for (i = 0; i < 3; i++) {
        json_t *ev = ac_feed_file("qwen", traces[i]);
        char msg[2048];

        cr_assert(ac_trace_clean(ev, msg, sizeof(msg)), "%s: %s", traces[i], msg);
        json_decref(ev);
    }
}

Test(hns_qwen, tool_trace_carries_usage_model_and_message_ids)
{
    json_t *ev = ac_feed_file("qwen", "traces/qwen-tool.stdout.jsonl");
    json_t *usage = ac_of_type(ev, "usage");

    cr_assert_eq(json_array_size(ev), 6, "tool_call, call usage, update, text, call usage, run");
    assert_subset(
        json_array_get(ev, 0),
        "{\"model\":\"fake-model\",\"messageId\":\"1e4018b5-b3c4-4628-a586-8560ca6591ef\","
        "\"extra\":{\"stop_reason\":\"tool_use\"},\"update\":{\"sessionUpdate\":"
        "\"tool_call\",\"toolName\":\"run_shell_command\",\"kind\":\"execute\"}}");
    cr_assert_null(json_object_get(json_array_get(ev, 0), "timestamp"), "qwen stamps no line");
    cr_assert_null(json_object_get(json_array_get(ev, 0), "parentToolCallId"));
    cr_assert_eq(json_array_size(usage), 3);
    assert_subset(json_array_get(usage, 0),
                  "{\"messageId\":\"1e4018b5-b3c4-4628-a586-8560ca6591ef\",\"update\":{\"scope\":"
                  "\"call\",\"usage\":{\"promptTokens\":6382,\"completionTokens\":62,"
                  "\"cachedTokens\":0,\"extra\":{\"total_tokens\":6444}}}}");
    assert_subset(
        json_array_get(usage, 2),
        "{\"extra\":{\"subtype\":\"success\",\"num_turns\":2,\"duration_ms\":8664},"
        "\"update\":{\"scope\":\"run\",\"usage\":{\"promptTokens\":12899,"
        "\"completionTokens\":76,\"cachedTokens\":0,\"extra\":{\"total_tokens\":12975}}}}");
    cr_assert_null(
        json_object_get(
            json_object_get(json_object_get(json_array_get(usage, 2), "update"), "usage"),
            "costUsd"),
        "qwen does not price its runs");
    json_decref(usage);
    json_decref(ev);
}

Test(hns_qwen, subagent_lines_name_their_parent_tool_call)
{
    json_t *ev = feed1("{\"type\":\"assistant\",\"session_id\":\"s\",\"parent_tool_use_id\":"
                       "\"call_task\",\"message\":{\"id\":\"m9\",\"content\":[{\"type\":\"text\","
                       "\"text\":\"sub\"}]}}");

    cr_assert_eq(json_array_size(ev), 1);
    assert_subset(json_array_get(ev, 0), "{\"sessionId\":\"s\",\"parentToolCallId\":\"call_task\","
                                         "\"messageId\":\"m9\",\"update\":{\"sessionUpdate\":"
                                         "\"agent_message_chunk\"}}");
    json_decref(ev);
}

Test(hns_qwen, error_result_is_a_fatal_error_update_not_text)
{
    json_t *ev = feed1("{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"session_id\":"
                       "\"s\",\"is_error\":true,\"error\":{\"message\":\"Connection error.\"}}");

    cr_assert_eq(json_array_size(ev), 1);
    assert_subset(json_array_get(ev, 0),
                  "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":"
                  "\"error\",\"message\":\"Connection error.\",\"fatal\":true}}");
    cr_assert(!evolve_update_is_agent_work(EVOLVE_UPDATE_ERROR));
    json_decref(ev);
}

Test(hns_qwen, noise_and_unknown_shapes_become_unknown_with_the_raw_line)
{
    static const char *const lines[] = {
        "Loaded cached credentials.",
        "[1,2]",
        "{\"type\":\"telemetry\"}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"image\",\"data\":\"x\"},"
        "{\"type\":\"text\",\"text\":\"kept\"}]}}",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_mystery\"}}",
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}",
        "{\"_meta\":{\"agent\":\"qwen\"}}",
    };
    json_t *ev = ac_feed("qwen", lines, 7);

    cr_assert_eq(json_array_size(ev), 6, "4 unknown lines, the image block, and the text block");
    assert_subset(json_array_get(ev, 0), "{\"update\":{\"sessionUpdate\":\"unknown\",\"raw\":"
                                         "\"Loaded cached credentials.\"}}");
    cr_assert_not_null(strstr(json_string_value(json_object_get(
                                  json_object_get(json_array_get(ev, 0), "update"), "reason")),
                              "not JSON"));
    assert_subset(json_array_get(ev, 1),
                  "{\"update\":{\"sessionUpdate\":\"unknown\",\"raw\":\"[1,2]\"}}");
    assert_subset(json_array_get(ev, 3), "{\"update\":{\"sessionUpdate\":\"unknown\"}}");
    assert_subset(
        json_array_get(ev, 4),
        "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"text\":\"kept\"}}}");
    assert_subset(json_array_get(ev, 5), "{\"update\":{\"sessionUpdate\":\"unknown\"}}");
    json_decref(ev);
}

Test(hns_qwen, streamed_tool_input_is_assembled_and_big_numbers_survive)
{
    static const char *const lines[] = {
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_start\",\"index\":2,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{}}}}",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":2,"
        "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\":\"}}}",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"index\":2.0,"
        "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"ls\\\",\\\"n\\\":1}\"}}}",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_stop\",\"index\":2}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[],\"usage\":{\"input_tokens\":"
        "123456789012345678901234}}}",
    };
    json_t *ev = ac_feed("qwen", lines, 5);

    cr_assert_eq(json_array_size(ev), 2);
    assert_subset(json_array_get(ev, 0), "{\"update\":{\"sessionUpdate\":\"tool_call\",\"title\":"
                                         "\"`ls`\",\"rawInput\":{\"command\":\"ls\",\"n\":1}}}");
    cr_assert(json_is_real(
        json_object_get(json_object_get(json_object_get(json_array_get(ev, 1), "update"), "usage"),
                        "promptTokens")));
    json_decref(ev);
}

static void assert_argv_has(const struct hns_command *c, const char *arg)
{
    size_t i;

    for (i = 0; c->argv[i]; i++)
        if (!strcmp(c->argv[i], arg))
            return;
    cr_assert_fail("argv lacks \"%s\"", arg);
}

static const char *env_of(const struct hns_command *c, const char *name)
{
    size_t i, n = strlen(name);

    for (i = 0; c->env && c->env[i]; i++)
        if (!strncmp(c->env[i], name, n) && c->env[i][n] == '=')
            return c->env[i] + n + 1;
    return NULL;
}

Test(hns_qwen, command_passes_the_prompt_byte_for_byte_as_one_argument)
{
    const char *prompt = "-say \"hi\" to $USER, it's `now` \\ ok\nline2 $(rm -rf /) 'q'";
    struct hns_run_spec spec = {.prompt = prompt,
                                .api_key = "sk-test",
                                .base_url = "http://127.0.0.1:9/v1",
                                .model = "fake-model"};
    struct hns_command c;
    char want[256];
    size_t i, hits = 0;

    cr_assert_eq(hns_agent_find("qwen")->build_command(&c, &spec), 0, "%s",
                 evolve_error_last()->message);
    snprintf(want, sizeof(want), "--prompt=%s", prompt);
    cr_assert_str_eq(c.argv[0], "qwen");
    for (i = 0; c.argv[i]; i++)
        hits += !strcmp(c.argv[i], want);
    cr_assert_eq(hits, 1, "the prompt is exactly one argv element, unescaped");
    assert_argv_has(&c, "stream-json");
    assert_argv_has(&c, "yolo");
    for (i = 0; c.argv[i]; i++)
        cr_assert_str_neq(c.argv[i], "--continue", "a fresh run does not resume");
    cr_assert_null(c.stdin_data);
    cr_assert_str_eq(env_of(&c, "OPENAI_API_KEY"), "sk-test");
    cr_assert_str_eq(env_of(&c, "OPENAI_BASE_URL"), "http://127.0.0.1:9/v1");
    cr_assert_str_eq(env_of(&c, "OPENAI_MODEL"), "fake-model");
    cr_assert_eq(c.files_count, 1);
    cr_assert_str_eq(c.files[0].path, ".qwen/settings.json");
    {
        json_t *cfg = json_loadb(c.files[0].content, c.files[0].len, 0, NULL);

        cr_assert_not_null(cfg);
        cr_assert(json_is_false(
                      json_object_get(json_object_get(cfg, "memory"), "enableManagedAutoMemory")),
                  "the memory feature's side requests are off");
        cr_assert(json_is_false(json_object_get(json_object_get(cfg, "telemetry"), "enabled")));
        json_decref(cfg);
    }
    hns_command_dispose(&c);
}

Test(hns_qwen, resume_continues_the_previous_conversation)
{
    struct hns_run_spec spec = {.prompt = "again", .resume = true, .reasoning = "off"};
    struct hns_command c;
    json_t *cfg;

    cr_assert_eq(hns_agent_find("qwen")->build_command(&c, &spec), 0);
    assert_argv_has(&c, "--continue");
    assert_argv_has(&c, "qwen3.7-max");
    cfg = json_loadb(c.files[0].content, c.files[0].len, 0, NULL);
    cr_assert(json_is_false(json_object_get(
        json_object_get(json_object_get(json_object_get(cfg, "model"), "generationConfig"),
                        "extra_body"),
        "enable_thinking")));
    json_decref(cfg);
    hns_command_dispose(&c);
    cr_assert_str_eq(hns_agent_find("qwen")->instruction_file, "QWEN.md");
    cr_assert_str_eq(hns_agent_find("qwen")->state_dirs[0], ".qwen");
}

Test(hns_qwen, command_without_prompt_is_invalid)
{
    struct hns_run_spec spec = {0};
    struct hns_command c;

    cr_assert_eq(hns_agent_find("qwen")->build_command(&c, &spec), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "qwen"));
}

Test(hns_qwen, blocks_that_never_stop_are_bounded)
{
    enum { N = 4097 };
    static char buf[N][160];
    const char *lines[N];
    json_t *ev;
    size_t i;

    for (i = 0; i < N; i++) {
        snprintf(buf[i], sizeof(buf[i]),
                 "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_start\",\"index\":"
                 "%zu,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}}",
                 i);
        lines[i] = buf[i];
    }
    ev = ac_feed("qwen", lines, N);
    cr_assert_not_null(ev);
    cr_assert_eq(json_array_size(ev), 1, "only the block past the bound is reported");
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(ev, 0), "update"), "sessionUpdate")),
                     "unknown");
    json_decref(ev);
}

Test(hns_qwen, inputs_that_crash_the_reference_are_survived)
{
    /* spec §2.1: unknown/null assistant blocks, null user blocks and null tool_result items */
    static const char *const lines[] = {
        "{\"type\":\"assistant\",\"message\":{\"content\":[null,{\"type\":\"redacted_thinking\"},"
        "{\"type\":\"text\",\"text\":\"ok\"}]}}",
        "{\"type\":\"user\",\"message\":{\"content\":[null,{\"type\":\"tool_result\",\"tool_use_"
        "id\":"
        "\"t\",\"content\":[null,{\"type\":\"text\",\"text\":\"r\"},{\"type\":\"text\",\"text\":7}]"
        "}]}}",
        "null",
    };
    json_t *ev = ac_feed("qwen", lines, 3);

    cr_assert_not_null(ev);
    cr_assert_eq(json_array_size(ev), 4, "unknown, text, tool update, unknown");
    assert_subset(json_array_get(ev, 1), "{\"update\":{\"content\":{\"text\":\"ok\"}}}");
    assert_subset(json_array_get(ev, 2),
                  "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"content\":[{\"content\":"
                  "{\"text\":\"r\"}},{\"content\":{\"text\":\"7\"}}]}}");
    json_decref(ev);
}
