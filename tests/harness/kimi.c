/* Kimi Code harness: stream parser against the reference vectors, the fields kimi never prints,
 * todo suppression, unknown lines, and the command line (no double escaping). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"
#include "support/agentcheck.h"
#include "support/vectors.h"

TestSuite(hns_kimi, .timeout = 20);

static const struct ac_diff diffs[] = {
    {"wire_envelope", VEC_IGNORE_UNKNOWN, NULL,
     "the StatusUpdate envelope is not mapped: we keep it as `unknown` where the reference "
     "dropped it"},
    {NULL, 0, NULL, NULL},
};

Test(hns_kimi, every_reference_vector_matches_except_stated_differences)
{
    char msg[8192];

    cr_assert_eq(ac_run_vectors("kimi", "kimi.jsonl", diffs, msg, sizeof(msg)), 0, "%s", msg);
}

static json_t *feed(const char *const *lines, size_t n)
{
    json_t *ev = ac_feed("kimi", lines, n);

    cr_assert_not_null(ev, "%s", evolve_error_last()->message);
    return ev;
}

static const char *update_str(const json_t *events, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(events, i), "update"), key));
}

Test(hns_kimi, events_carry_no_invented_session_time_model_or_usage)
{
    static const char *const lines[] = {
        "{\"role\":\"assistant\",\"content\":\"hi\",\"tool_calls\":[{\"id\":\"t1\",\"function\":"
        "{\"name\":\"Shell\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}",
        "{\"role\":\"tool\",\"tool_call_id\":\"t1\",\"content\":\"a.txt\"}",
    };
    json_t *ev = feed(lines, 2);
    size_t i;

    cr_assert_eq(json_array_size(ev), 3);
    for (i = 0; i < 3; i++) {
        const json_t *e = json_array_get(ev, i);

        cr_assert_eq(json_object_size(e), 1, "only `update`: kimi prints no session, time, model");
        cr_assert_str_neq(update_str(ev, i, "sessionUpdate"), "usage");
    }
    cr_assert_str_eq(update_str(ev, 1, "toolName"), "Shell");
    cr_assert_str_eq(update_str(ev, 2, "status"), "completed");
    json_decref(ev);
}

Test(hns_kimi, todo_list_result_is_swallowed_once_then_reported)
{
    static const char *const lines[] = {
        "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"td\",\"function\":{\"name\":"
        "\"SetTodoList\",\"arguments\":\"{\\\"todos\\\":[{\\\"title\\\":\\\"a\\\",\\\"status\\\":"
        "\\\"done\\\"},{\\\"title\\\":\\\"b\\\",\\\"status\\\":\\\"in_progress\\\"},{\\\"title\\\":"
        "\\\"\\\"}]}\"}}]}",
        "{\"role\":\"tool\",\"tool_call_id\":\"td\",\"content\":\"ok\"}",
        "{\"role\":\"tool\",\"tool_call_id\":\"td\",\"content\":\"again\"}",
    };
    json_t *ev = feed(lines, 3);
    json_t *entries;

    cr_assert_eq(json_array_size(ev), 2, "plan, then only the second result");
    cr_assert_str_eq(update_str(ev, 0, "sessionUpdate"), "plan");
    entries = json_object_get(json_object_get(json_array_get(ev, 0), "update"), "entries");
    cr_assert_eq(json_array_size(entries), 2, "an entry without a title is dropped");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(entries, 0), "status")),
                     "completed");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(entries, 1), "status")),
                     "in_progress");
    cr_assert_str_eq(update_str(ev, 1, "toolCallId"), "td");
    json_decref(ev);
}

Test(hns_kimi, shapes_the_reference_drops_become_unknown_and_meta_is_skipped)
{
    static const char *const lines[] = {
        "Traceback (most recent call last):",
        "{\"role\":\"user\",\"content\":\"hello\"}",
        "{\"role\":\"tool\",\"content\":\"no id\"}",
        "{\"role\":\"meta\",\"content\":\"resume with kimi -r\"}",
        "{\"_meta\":{\"agent\":\"kimi\"}}",
        "3",
    };
    json_t *ev = feed(lines, 6);
    size_t i;

    cr_assert_eq(json_array_size(ev), 4);
    for (i = 0; i < 4; i++)
        cr_assert_str_eq(update_str(ev, i, "sessionUpdate"), "unknown");
    cr_assert_str_eq(update_str(ev, 1, "raw"), lines[1]);
    json_decref(ev);
}

Test(hns_kimi, error_markers_fail_the_tool_and_keep_text_verbatim)
{
    static const char *const lines[] = {
        "{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"<SYSTEM> \\t error: nope\"}",
        "{\"role\":\"tool\",\"tool_call_id\":\"y\",\"content\":\"fine <systemx>ERROR:\"}",
    };
    json_t *ev = feed(lines, 2);

    cr_assert_str_eq(update_str(ev, 0, "status"), "failed");
    cr_assert_str_eq(update_str(ev, 1, "status"), "completed");
    json_decref(ev);
}

static const char *env_of(const struct hns_command *c, const char *name)
{
    size_t i, n = strlen(name);

    for (i = 0; c->env && c->env[i]; i++)
        if (!strncmp(c->env[i], name, n) && c->env[i][n] == '=')
            return c->env[i] + n + 1;
    return NULL;
}

static int argv_index(const struct hns_command *c, const char *arg)
{
    int i;

    for (i = 0; c->argv[i]; i++)
        if (!strcmp(c->argv[i], arg))
            return i;
    return -1;
}

Test(hns_kimi, prompt_reaches_argv_byte_for_byte_without_double_escaping)
{
    const char *prompt = "say \"hi\" to $USER, it's `now` \\ ok\n-second line 'q' $(x)";
    struct hns_run_spec spec = {.prompt = prompt, .api_key = "k", .reasoning = "high"};
    struct hns_command c;
    int i;

    cr_assert_eq(hns_agent_find("kimi")->build_command(&c, &spec), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_str_eq(c.argv[0], "kimi");
    i = argv_index(&c, "-p");
    cr_assert_geq(i, 0);
    cr_assert_str_eq(c.argv[i + 1], prompt, "the prompt is the very next element, unchanged");
    cr_assert_lt(argv_index(&c, "--continue"), 0);
    cr_assert_geq(argv_index(&c, "stream-json"), 0);
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_NAME"), "kimi-k2.6");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_API_KEY"), "k");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_THINKING_MODE"), "on");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_THINKING_EFFORT"), "high");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_BASE_URL"), "https://api.moonshot.ai/v1");
    cr_assert_eq(c.files_count, 0, "no config file, so no key on disk");
    hns_command_dispose(&c);
}

Test(hns_kimi, resume_and_no_thinking)
{
    struct hns_run_spec spec = {.prompt = "p",
                                .resume = true,
                                .reasoning = "off",
                                .model = "kimi-x",
                                .base_url = "http://127.0.0.1:1/v1"};
    struct hns_command c;

    cr_assert_eq(hns_agent_find("kimi")->build_command(&c, &spec), 0);
    cr_assert_geq(argv_index(&c, "--continue"), 0);
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_NAME"), "kimi-x");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_DEFAULT_THINKING"), "false");
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_THINKING_MODE"), "off");
    cr_assert_null(env_of(&c, "KIMI_MODEL_THINKING_EFFORT"));
    cr_assert_str_eq(env_of(&c, "KIMI_MODEL_BASE_URL"), "http://127.0.0.1:1/v1");
    hns_command_dispose(&c);
    cr_assert_str_eq(hns_agent_find("kimi")->instruction_file, "AGENTS.md");
    cr_assert_str_eq(hns_agent_find("kimi")->state_dirs[0], ".kimi-code");
}

Test(hns_kimi, inputs_that_crash_the_reference_are_survived)
{
    /* spec §2.1: a tool call without id whose function.name is not a string */
    static const char *const lines[] = {
        "{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":{\"x\":1},\"arguments\":"
        "\"{}\"}},{\"function\":{\"name\":12}}]}",
    };
    json_t *ev = feed(lines, 1);

    cr_assert_eq(json_array_size(ev), 2);
    cr_assert_str_eq(update_str(ev, 0, "toolCallId"), "kimi__object_Object__1");
    cr_assert_str_eq(update_str(ev, 1, "toolCallId"), "kimi_12_2");
    cr_assert_str_eq(update_str(ev, 1, "title"), "12");
    json_decref(ev);
}
