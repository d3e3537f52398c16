/* Droid harness: stream parser against the reference vectors (v0.0.55 and the project-sable live
 * tool shapes), error and usage updates, sticky session and model, the session-id capture
 * helper, and the command line (prompt on stdin, --session-id resume). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"
#include "support/agentcheck.h"
#include "support/vectors.h"

TestSuite(hns_droid, .timeout = 20);

/* The reference printed these failures as agent text; we emit the same text as `error`. */
static void to_error(json_t *expect, size_t i, bool fatal)
{
    json_t *u = json_object_get(json_array_get(expect, i), "update");
    const char *text = json_string_value(json_object_get(json_object_get(u, "content"), "text"));

    json_object_set_new(
        json_array_get(expect, i), "update",
        json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message", text, "fatal", fatal));
}

static void result_error(json_t *expect)
{
    to_error(expect, 1, true);
    /* its message is the error's own message, not the JSON of the error object */
    json_object_set_new(json_object_get(json_array_get(expect, 1), "update"), "message",
                        json_string("bad"));
}

static void rpc_errors(json_t *expect)
{
    to_error(expect, 1, false);
    to_error(expect, 2, false);
}

static void error_lines(json_t *expect)
{
    size_t i;

    for (i = 0; i < json_array_size(expect); i++)
        to_error(expect, i, false);
}

static const struct ac_diff diffs[] = {
    {"json_result_fallback", 0, result_error,
     "a result with is_error:true is a fatal `error` update carrying error.message"},
    {"jsonrpc_response_result_and_error", 0, rpc_errors,
     "JSON-RPC error responses are `error` updates (not fatal), not agent text"},
    {"error_lines", 0, error_lines, "error lines are `error` updates (not fatal), not agent text"},
    {"ignored_lines", VEC_IGNORE_USAGE | VEC_IGNORE_UNKNOWN, NULL,
     "session_token_usage_changed is a run `usage`; non-JSON, arrays, unknown types and other "
     "JSON-RPC methods are kept as `unknown`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_droid, every_reference_vector_matches_except_stated_differences)
{
    char msg[8192];

    cr_assert_eq(ac_run_vectors("droid", "droid.jsonl", diffs, msg, sizeof(msg)), 0, "%s", msg);
}

Test(hns_droid, live_tool_shapes_of_the_later_reference_match)
{
    char msg[8192];

    cr_assert_eq(ac_run_vectors("droid", "project-sable-delta/droid.jsonl", NULL, msg, sizeof(msg)),
                 0, "%s", msg);
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

Test(hns_droid, init_model_timestamps_and_run_usage)
{
    static const char *const lines[] = {
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"d1\",\"model\":\"gpt-5.5\"}",
        "{\"type\":\"tool_call\",\"id\":\"c1\",\"messageId\":\"m1\",\"toolName\":\"Execute\","
        "\"parameters\":{\"command\":\"ls\"},\"timestamp\":1704067201000}",
        "{\"type\":\"tool_result\",\"id\":\"c1\",\"toolId\":\"Execute\",\"isError\":true,\"value\":"
        "\"no such file\"}",
        "{\"jsonrpc\":\"2.0\",\"type\":\"notification\",\"method\":\"droid.session_notification\","
        "\"params\":{\"notification\":{\"type\":\"session_token_usage_changed\",\"usage\":{"
        "\"inputTokens\":100,\"outputTokens\":20,\"cacheReadTokens\":300,\"cacheCreationTokens\":"
        "7,\"thinkingTokens\":5}}}}",
        "{\"type\":\"completion\",\"finalText\":\"done\",\"numTurns\":2,\"durationMs\":900}",
    };
    json_t *ev = ac_feed("droid", lines, 5);
    char msg[1024];

    cr_assert_eq(json_array_size(ev), 4);
    assert_subset(json_array_get(ev, 0),
                  "{\"sessionId\":\"d1\",\"model\":\"gpt-5.5\",\"messageId\":\"m1\",\"timestamp\":"
                  "\"2024-01-01T00:00:01.000Z\",\"update\":{\"sessionUpdate\":\"tool_call\","
                  "\"toolName\":\"Execute\",\"kind\":\"execute\",\"title\":\"Execute ls\"}}");
    assert_subset(json_array_get(ev, 1),
                  "{\"sessionId\":\"d1\",\"update\":{\"sessionUpdate\":\"tool_call_update\","
                  "\"status\":\"failed\",\"title\":\"Execute\",\"content\":[{\"content\":{\"text\":"
                  "\"no such file\"}}]}}");
    assert_subset(json_array_get(ev, 2),
                  "{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"run\",\"usage\":{"
                  "\"promptTokens\":407,\"completionTokens\":20,\"cachedTokens\":300,\"extra\":{"
                  "\"thinkingTokens\":5}}}}");
    cr_assert_null(json_object_get(
        json_object_get(json_object_get(json_array_get(ev, 2), "update"), "usage"), "costUsd"));
    assert_subset(json_array_get(ev, 3),
                  "{\"update\":{\"sessionUpdate\":\"agent_message_chunk\"}}");
    cr_assert(ac_trace_clean(ev, msg, sizeof(msg)), "%s", msg);
    json_decref(ev);
}

Test(hns_droid, session_id_capture_follows_the_spec_search_order)
{
    char id[64];
    const char *nested =
        "{\"jsonrpc\":\"2.0\",\"params\":{\"notification\":{\"sessionId\":\"n-1\"}}}";
    const char *top =
        "{\"session_id\":\"\",\"sessionId\":\"top\",\"result\":{\"session_id\":\"r\"}}";
    const char *res = "{\"type\":\"response\",\"result\":{\"session_id\":\"from-result\"}}";

    cr_assert_eq(hns_droid_session_id(nested, strlen(nested), id, sizeof(id)), 3);
    cr_assert_str_eq(id, "n-1");
    cr_assert_eq(hns_droid_session_id(top, strlen(top), id, sizeof(id)), 3);
    cr_assert_str_eq(id, "top");
    cr_assert_eq(hns_droid_session_id(res, strlen(res), id, sizeof(id)), 11);
    cr_assert_eq(hns_droid_session_id("not json", 8, id, sizeof(id)), 0);
    cr_assert_str_eq(id, "");
    cr_assert_eq(hns_droid_session_id("{\"session_id\":7}", 16, id, sizeof(id)), 0);
    cr_assert_eq(hns_droid_session_id(top, strlen(top), id, 3), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "droid session id"));
}

static int argv_index(const struct hns_command *c, const char *arg)
{
    int i;

    for (i = 0; c->argv[i]; i++)
        if (!strcmp(c->argv[i], arg))
            return i;
    return -1;
}

Test(hns_droid, prompt_goes_to_stdin_byte_for_byte)
{
    const char *prompt = "say \"hi\" to $USER, it's `now` \\ ok\n-x 'q' $(id)";
    struct hns_run_spec spec = {
        .prompt = prompt, .api_key = "fk", .workdir = "/w", .session_id = "s-9"};
    struct hns_command c;
    size_t i;

    cr_assert_eq(hns_agent_find("droid")->build_command(&c, &spec), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(c.stdin_len, strlen(prompt));
    cr_assert_eq(memcmp(c.stdin_data, prompt, c.stdin_len), 0);
    for (i = 0; c.argv[i]; i++)
        cr_assert_null(strstr(c.argv[i], "USER"), "the prompt is not on the command line");
    cr_assert_lt(argv_index(&c, "--session-id"), 0, "resume:false starts a fresh session");
    cr_assert_str_eq(c.argv[argv_index(&c, "--cwd") + 1], "/w");
    cr_assert_str_eq(c.argv[argv_index(&c, "--model") + 1], "gpt-5.5");
    cr_assert_str_eq(c.argv[argv_index(&c, "--output-format") + 1], "stream-json");
    cr_assert_str_eq(c.env[0], "FACTORY_API_KEY=fk");
    hns_command_dispose(&c);
}

Test(hns_droid, resume_needs_a_known_session_id)
{
    struct hns_run_spec spec = {.prompt = "p",
                                .resume = true,
                                .session_id = "s-9",
                                .base_url = "http://127.0.0.1:5/v1",
                                .reasoning = "high"};
    struct hns_command c;
    json_t *cfg;

    cr_assert_eq(hns_agent_find("droid")->build_command(&c, &spec), 0);
    cr_assert_str_eq(c.argv[argv_index(&c, "--session-id") + 1], "s-9");
    cr_assert_str_eq(c.argv[argv_index(&c, "--model") + 1], "custom:Evolve-Gateway-0");
    cr_assert_str_eq(c.argv[argv_index(&c, "--reasoning-effort") + 1], "high");
    cr_assert_str_eq(c.files[0].path, ".factory/evolve-settings.json");
    cfg = json_loadb(c.files[0].content, c.files[0].len, 0, NULL);
    cr_assert(json_is_false(json_object_get(cfg, "cloudSessionSync")));
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(cfg, "customModels"), 0), "baseUrl")),
                     "http://127.0.0.1:5/v1");
    json_decref(cfg);
    hns_command_dispose(&c);
    spec.session_id = NULL;
    cr_assert_eq(hns_agent_find("droid")->build_command(&c, &spec), 0);
    cr_assert_lt(argv_index(&c, "--session-id"), 0,
                 "no id known: a fresh session, as the reference");
    hns_command_dispose(&c);
    cr_assert_str_eq(hns_agent_find("droid")->state_dirs[0], ".factory");
    cr_assert_str_eq(hns_agent_find("droid")->instruction_file, "AGENTS.md");
}
