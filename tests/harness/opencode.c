/* OpenCode harness: stream parser against the reference vectors and real traces, usage per
 * step, error updates, timestamps, rawOutput, and the command line with its offline config. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"
#include "support/agentcheck.h"
#include "support/vectors.h"

TestSuite(hns_opencode, .timeout = 20);

/* error_events: the reference printed "❌ <name>: <message>" as agent text; we emit the
 * harness's message as a fatal `error` update (DESIGN §4), its name kept under extra.error. */
static void errors_not_text(json_t *expect)
{
    static const char *const messages[] = {"Rate limited", "plain",
                                           "opencode reported an error without a message"};
    size_t i;
    json_t *ev;

    json_array_foreach(expect, i, ev)
    {
        json_object_set_new(ev, "update",
                            json_pack("{s:s, s:s, s:b}", "sessionUpdate", "error", "message",
                                      messages[i], "fatal", 1));
    }
}

static const struct ac_diff diffs[] = {
    {"steps_text_and_usage_dropped", VEC_IGNORE_USAGE, NULL,
     "step_finish carries tokens and cost: we emit a call-scope `usage` update"},
    {"bash_nonzero_exit_fails", 0, ac_unfence,
     "failed tool output stays verbatim (DESIGN §4); the reference fences it"},
    {"error_events", 0, errors_not_text, "error lines are `error` updates, not agent text"},
    {"ignored_and_malformed", VEC_IGNORE_UNKNOWN, NULL,
     "non-JSON, scalars, tool parts without callID and unknown types are kept as `unknown`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_opencode, every_reference_vector_matches_except_stated_differences)
{
    char msg[8192];

    cr_assert_eq(ac_run_vectors("opencode", "opencode.jsonl", diffs, msg, sizeof(msg)), 0, "%s",
                 msg);
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

Test(hns_opencode, real_traces_parse_without_unknown_and_pair_tool_calls)
{
    static const char *const traces[] = {"traces/opencode-hello.stdout.jsonl",
                                         "traces/opencode-tool.stdout.jsonl"};
    size_t i;

    for (i = 0; i < 2; i++) {
        json_t *ev = ac_feed_file("opencode", traces[i]);
        char msg[2048];

        cr_assert(ac_trace_clean(ev, msg, sizeof(msg)), "%s: %s", traces[i], msg);
        json_decref(ev);
    }
}

Test(hns_opencode, tool_trace_has_timestamps_raw_output_and_step_usage)
{
    json_t *ev = ac_feed_file("opencode", "traces/opencode-tool.stdout.jsonl");
    json_t *usage = ac_of_type(ev, "usage");

    cr_assert_eq(json_array_size(ev), 5, "tool_call, update, usage, text, usage");
    assert_subset(json_array_get(ev, 0),
                  "{\"sessionId\":\"ses_dd55e0cdcffeeF19TfgjmAMcH4\",\"timestamp\":"
                  "\"2026-11-30T04:06:34.427Z\",\"messageId\":\"msg_22aa20179001KsLb5DAhv15o2j\","
                  "\"update\":{\"sessionUpdate\":\"tool_call\",\"toolName\":\"bash\",\"title\":"
                  "\"echo hi > output/hello.txt\",\"kind\":\"execute\"}}");
    assert_subset(json_array_get(ev, 1),
                  "{\"update\":{\"sessionUpdate\":\"tool_call_update\",\"status\":\"completed\","
                  "\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":"
                  "\"(no output)\"}}],\"rawOutput\":{\"status\":\"completed\",\"output\":"
                  "\"(no output)\",\"metadata\":{\"exit\":0,\"truncated\":false},\"time\":{"
                  "\"start\":1796011592423}}}}");
    cr_assert_null(json_object_get(json_object_get(json_object_get(json_array_get(ev, 1), "update"),
                                                   "rawOutput"),
                                   "input"),
                   "the input is already the call's rawInput");
    cr_assert_eq(json_array_size(usage), 2);
    assert_subset(json_array_get(usage, 0),
                  "{\"messageId\":\"msg_22aa20179001KsLb5DAhv15o2j\",\"extra\":{\"reason\":"
                  "\"tool-calls\"},\"update\":{\"scope\":\"call\",\"usage\":{\"promptTokens\":2451,"
                  "\"completionTokens\":40,\"cachedTokens\":0,\"costUsd\":0,\"extra\":{\"total\":"
                  "2491,\"reasoning\":0,\"cache\":{\"write\":0,\"read\":0}}}}}");
    json_decref(usage);
    json_decref(ev);
}

Test(hns_opencode, prompt_tokens_include_both_cache_shares)
{
    const char *line =
        "{\"type\":\"step_finish\",\"sessionID\":\"s\",\"part\":{\"messageID\":\"m\","
        "\"reason\":\"stop\",\"cost\":0.0123,\"tokens\":{\"input\":1200,\"output\":"
        "40,\"reasoning\":10,\"cache\":{\"read\":800,\"write\":5}}}}";
    json_t *ev = ac_feed("opencode", &line, 1);

    cr_assert_eq(json_array_size(ev), 1);
    assert_subset(json_array_get(ev, 0),
                  "{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"call\",\"usage\":{"
                  "\"promptTokens\":2005,\"completionTokens\":40,\"cachedTokens\":800,\"costUsd\":"
                  "0.0123}}}");
    cr_assert_null(json_object_get(json_array_get(ev, 0), "timestamp"), "no timestamp, none made");
    json_decref(ev);
}

Test(hns_opencode, failed_tool_output_is_verbatim_and_non_string_output_is_js_json)
{
    const char *lines[] = {
        "{\"type\":\"tool_use\",\"part\":{\"callID\":\"c\",\"tool\":\"Bash\",\"state\":{\"status\":"
        "\"error\",\"input\":{\"command\":\"x\"},\"error\":\"```boom```\"}}}",
        "{\"type\":\"tool_use\",\"part\":{\"callID\":\"d\",\"tool\":\"mcp_x\",\"state\":{"
        "\"status\":"
        "\"completed\",\"output\":{\"b\":1.0,\"a\":\"\\u00e9/\\n\",\"2\":1e21,\"1\":null}}}}",
    };
    json_t *ev = ac_feed("opencode", lines, 2);

    cr_assert_eq(json_array_size(ev), 4);
    assert_subset(json_array_get(ev, 1),
                  "{\"update\":{\"status\":\"failed\",\"content\":[{\"content\":{\"text\":"
                  "\"```boom```\"}}]}}");
    assert_subset(json_array_get(ev, 0),
                  "{\"update\":{\"toolName\":\"Bash\",\"kind\":\"execute\"}}");
    assert_subset(
        json_array_get(ev, 3),
        "{\"update\":{\"status\":\"completed\",\"content\":[{\"content\":{\"text\":"
        "\"{\\\"1\\\":null,\\\"2\\\":1e+21,\\\"b\\\":1,\\\"a\\\":\\\"\u00e9/\\\\n\\\"}\"}}]}}");
    json_decref(ev);
}

static int argv_index(const struct hns_command *c, const char *arg)
{
    int i;

    for (i = 0; c->argv[i]; i++)
        if (!strcmp(c->argv[i], arg))
            return i;
    return -1;
}

static const char *env_of(const struct hns_command *c, const char *name)
{
    size_t i, n = strlen(name);

    for (i = 0; c->env && c->env[i]; i++)
        if (!strncmp(c->env[i], name, n) && c->env[i][n] == '=')
            return c->env[i] + n + 1;
    return NULL;
}

static const struct hns_file *file_of(const struct hns_command *c, const char *path)
{
    size_t i;

    for (i = 0; i < c->files_count; i++)
        if (!strcmp(c->files[i].path, path))
            return &c->files[i];
    return NULL;
}

Test(hns_opencode, command_is_offline_ready_and_passes_the_prompt_verbatim)
{
    const char *prompt = "say \"hi\" to $USER, it's `now` \\ ok\nline 'two' $(id)";
    struct hns_run_spec spec = {.prompt = prompt,
                                .api_key = "sk-test",
                                .model = "fake-model",
                                .base_url = "http://127.0.0.1:9/v1",
                                .home = "/home/user",
                                .offline = true};
    struct hns_command c;
    const struct hns_file *f;
    json_t *cfg;
    int i;

    cr_assert_eq(hns_agent_find("opencode")->build_command(&c, &spec), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_str_eq(c.argv[0], "opencode");
    cr_assert_str_eq(c.argv[1], "run");
    for (i = 0; c.argv[i + 1]; i++)
        ;
    cr_assert_str_eq(c.argv[i], prompt, "the prompt is the last argument, unchanged");
    cr_assert_lt(argv_index(&c, "--continue"), 0);
    cr_assert_lt(argv_index(&c, "--variant"), 0, "no variant unless asked, for a custom model");
    cr_assert_str_eq(c.argv[argv_index(&c, "--model") + 1], "evolve/fake-model");
    cr_assert_str_eq(env_of(&c, "OPENCODE_EVOLVE_API_KEY"), "sk-test");
    cr_assert_str_eq(env_of(&c, "OPENCODE_DISABLE_AUTOUPDATE"), "1");
    cr_assert_str_eq(env_of(&c, "XDG_CONFIG_HOME"), "/home/user/.config");
    cr_assert_str_eq(env_of(&c, "XDG_DATA_HOME"), "/home/user/.local/share");
    cr_assert_null(c.stdin_data);
    f = file_of(&c, ".config/opencode/opencode.json");
    cr_assert_not_null(f);
    cr_assert_null(strstr(f->content, "sk-test"), "the key stays out of the config file");
    cfg = json_loadb(f->content, f->len, 0, NULL);
    cr_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_object_get(json_object_get(cfg, "provider"), "evolve"), "options"),
            "baseURL")),
        "http://127.0.0.1:9/v1");
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(cfg, "permission"), "webfetch")), "deny");
    json_decref(cfg);
    cr_assert_not_null(file_of(&c, ".config/opencode/package-lock.json"));
    cr_assert_not_null(file_of(&c, ".config/opencode/package.json"));
    cr_assert_not_null(file_of(&c, ".config/opencode/node_modules/.evolve-seeded"),
                       "node_modules exists, so no plugin install");
    hns_command_dispose(&c);
}

Test(hns_opencode, resume_variant_and_dash_prompt)
{
    struct hns_run_spec spec = {.prompt = "-x do it", .resume = true, .reasoning = "xhigh"};
    struct hns_command c;
    int i;

    cr_assert_eq(hns_agent_find("opencode")->build_command(&c, &spec), 0);
    cr_assert_geq(argv_index(&c, "--continue"), 0);
    cr_assert_str_eq(c.argv[argv_index(&c, "--variant") + 1], "max");
    cr_assert_geq(argv_index(&c, "--thinking"), 0);
    cr_assert_str_eq(c.argv[argv_index(&c, "--model") + 1],
                     "openrouter/anthropic/claude-sonnet-4.6");
    for (i = 0; c.argv[i + 1]; i++)
        ;
    cr_assert_str_eq(c.argv[i], "-x do it");
    cr_assert_str_eq(c.argv[i - 1], "--", "a message starting with '-' is not an option");
    hns_command_dispose(&c);
    cr_assert_str_eq(hns_agent_find("opencode")->instruction_file, "AGENTS.md");
}
