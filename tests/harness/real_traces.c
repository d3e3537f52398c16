/* Parsers over the raw stdout of the real agent CLIs (tests/data/traces/real): the files from
 * direct runs (tests/e2e/mockllm_real_clis.sh) and the evolve-<agent>-<scenario> files recorded
 * through `evolve run --raw` in the local sandbox (tests/e2e/run_real_agents.sh). Every line is
 * understood (no `unknown`), every tool call has its update, and the tool scenario's shell call
 * carries the CLI's own tool name. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "support/agentcheck.h"

static const char *const agents[] = {"claude", "codex", "gemini", "qwen", "opencode", NULL};
static const char *const shell_tool[] = {
    "Bash", "command_execution", "run_shell_command", "run_shell_command", "bash", NULL};

TestSuite(hns_real_traces, .timeout = 30);

/* No `unknown`; every tool_call either ends in its own status (codex reports a finished
 * file_change as one completed tool_call) or gets a tool_call_update with its id later. */
static void assert_clean(const json_t *ev, const char *rel)
{
    size_t i, j;

    for (i = 0; i < json_array_size(ev); i++) {
        const json_t *up = json_object_get(json_array_get(ev, i), "update");
        const char *type = json_string_value(json_object_get(up, "sessionUpdate"));
        const char *id = json_string_value(json_object_get(up, "toolCallId"));
        const char *st = json_string_value(json_object_get(up, "status"));
        bool done = st && (!strcmp(st, "completed") || !strcmp(st, "failed"));

        cr_assert_str_neq(type, "unknown", "%s: event %zu is unknown: %s", rel, i,
                          json_string_value(json_object_get(up, "raw")));
        if (strcmp(type, "tool_call") || done)
            continue;
        for (j = i + 1; j < json_array_size(ev); j++) {
            const json_t *u = json_object_get(json_array_get(ev, j), "update");

            if (!strcmp(json_string_value(json_object_get(u, "sessionUpdate")),
                        "tool_call_update") &&
                !strcmp(json_string_value(json_object_get(u, "toolCallId")), id))
                break;
        }
        cr_assert_lt(j, json_array_size(ev), "%s: tool call %s has no update", rel, id);
    }
}

static void check(const char *agent, const char *rel, const char *tool)
{
    json_t *ev = ac_feed_file(agent, rel), *calls;

    cr_assert_not_null(ev, "%s: the parser failed", rel);
    cr_assert_gt(json_array_size(ev), 0, "%s: no events", rel);
    assert_clean(ev, rel);
    if (tool) {
        calls = ac_of_type(ev, "tool_call");
        cr_assert_gt(json_array_size(calls), 0, "%s: no tool_call", rel);
        cr_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_array_get(calls, 0), "update"), "toolName")),
                         tool, "%s", rel);
        json_decref(calls);
    }
    json_decref(ev);
}

Test(hns_real_traces, evolve_recorded_traces_parse_cleanly)
{
    char rel[256];
    size_t i;

    for (i = 0; agents[i]; i++) {
        snprintf(rel, sizeof(rel), "traces/real/evolve-%s-hello.stdout.jsonl", agents[i]);
        check(agents[i], rel, NULL);
        snprintf(rel, sizeof(rel), "traces/real/evolve-%s-tool.stdout.jsonl", agents[i]);
        check(agents[i], rel, shell_tool[i]);
    }
}

Test(hns_real_traces, direct_run_traces_parse_cleanly)
{
    static const char *const scen[] = {"hello", "tool", "edit", "multi-tool", NULL};
    char rel[256];
    size_t i, j;

    for (i = 0; agents[i]; i++)
        for (j = 0; scen[j]; j++) {
            snprintf(rel, sizeof(rel), "traces/real/%s-%s.stdout.jsonl", agents[i], scen[j]);
            check(agents[i], rel, !strcmp(scen[j], "tool") ? shell_tool[i] : NULL);
        }
}
