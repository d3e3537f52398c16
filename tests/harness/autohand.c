/* Autohand harness: hook notifications -> events, seed-003 validation boundaries on both sides,
 * unknown updates that keep method and params with their JSON type, the typed C decoder, the
 * permission reply line and the command builder. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "harness/autohand.h"
#include "harness/harness.h"
#include "support/vectors.h"


TestSuite(hns_autohand, .timeout = 20);

static void collect(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    json_array_append_new(payload, event);
}

/* Every event the parser emits for `lines` (a new array). */
static json_t *run_lines(const char *const *lines, size_t n)
{
    struct hns_parser *p = NULL;
    json_t *events = json_array();
    size_t i;

    cr_assert_eq(hns_parser_new(&p, "autohand", collect, events), 0, "%s",
                 evolve_error_last()->message);
    for (i = 0; i < n; i++)
        cr_assert_eq(hns_parser_feed(p, lines[i], strlen(lines[i])), 0, "%s",
                     evolve_error_last()->message);
    cr_assert_eq(hns_parser_finish(p), 0);
    hns_parser_free(p);
    return events;
}

/* The one event of one line (lossless: exactly one per non-blank line). */
static json_t *one(const char *line)
{
    json_t *events = run_lines(&line, 1), *ev;

    cr_assert_eq(json_array_size(events), 1, "line %s gave %zu events", line,
                 json_array_size(events));
    ev = json_incref(json_array_get(events, 0));
    json_decref(events);
    return ev;
}

static char *notif(const char *method, const char *params)
{
    size_t n = strlen(method) + strlen(params) + 64;
    char *s = malloc(n);

    snprintf(s, n, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":%s}", method, params);
    return s;
}

static const char *update_type(const json_t *ev)
{
    return json_string_value(json_object_get(json_object_get(ev, "update"), "sessionUpdate"));
}

/* The event of a valid hook must match `expect` (a JSON text, subset comparison). */
static json_t *expect_event(const char *method, const char *params, const char *expect)
{
    char *line = notif(method, params), path[256] = "";
    json_t *ev = one(line), *want = json_loads(expect, 0, NULL);

    cr_assert_not_null(want, "bad expectation %s", expect);
    cr_assert(vec_subset(want, ev, path, sizeof(path)), "%s: mismatch at %s: got %s", method, path,
              json_dumps(ev, JSON_COMPACT));
    json_decref(want);
    free(line);
    return ev;
}

/* The line must give an `unknown` update keeping the exact method and params with its type. */
static void expect_unknown(const char *method, const char *params)
{
    char *line = notif(method, params);
    json_t *ev = one(line), *u = json_object_get(ev, "update");
    json_t *got = json_object_get(u, "params"), *raw = json_object_get(u, "paramsRaw");

    cr_assert_str_eq(update_type(ev), "unknown", "%s %s was accepted: %s", method, params,
                     json_dumps(ev, JSON_COMPACT));
    cr_assert_str_eq(json_string_value(json_object_get(u, "method")), method);
    cr_assert_str_eq(json_string_value(json_object_get(u, "raw")), line);
    cr_assert_not_null(json_string_value(json_object_get(u, "reason")));
    if (raw) {
        /* a number jansson cannot hold exactly: the params text is kept verbatim instead */
        cr_assert_str_eq(json_string_value(raw), params);
        cr_assert_null(got);
    } else {
        json_t *want = json_loads(params, JSON_DECODE_ANY, NULL);

        cr_assert_not_null(got, "params missing for %s", params);
        cr_assert_eq(json_typeof(got), json_typeof(want), "params type changed for %s", params);
        cr_assert(json_equal(got, want), "params changed: %s", json_dumps(got, JSON_ENCODE_ANY));
        json_decref(want);
    }
    json_decref(ev);
    free(line);
}

static void expect_valid(const char *method, const char *params)
{
    char *line = notif(method, params);
    json_t *ev = one(line);

    cr_assert_str_neq(update_type(ev), "unknown", "%s %s was rejected: %s", method, params,
                      json_dumps(ev, JSON_COMPACT));
    json_decref(ev);
    free(line);
}

/* ---- every hook maps to its event ---------------------------------------------------------- */

Test(hns_autohand, pre_tool_is_a_tool_call)
{
    json_t *ev = expect_event(
        "autohand.hook.preTool",
        "{\"toolId\":\"tool-1\",\"toolName\":\"read_file\",\"args\":{\"path\":\"README.md\"},"
        "\"timestamp\":\"t1\"}",
        "{\"timestamp\":\"t1\",\"extra\":{\"autohand\":\"preTool\"},\"update\":{\"sessionUpdate\":"
        "\"tool_call\",\"toolCallId\":\"tool-1\",\"title\":\"read_file\",\"toolName\":"
        "\"read_file\",\"kind\":\"read\",\"status\":\"in_progress\",\"rawInput\":{\"path\":"
        "\"README.md\"},\"locations\":[{\"path\":\"README.md\"}]}}");
    json_decref(ev);
}

Test(hns_autohand, post_tool_is_a_tool_call_update_with_output)
{
    json_t *ev = expect_event(
        "autohand.hook.postTool",
        "{\"toolId\":\"tool-1\",\"toolName\":\"run_command\",\"success\":false,\"duration\":12.5,"
        "\"output\":\"boom\",\"timestamp\":\"t2\"}",
        "{\"timestamp\":\"t2\",\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":"
        "\"tool-1\",\"status\":\"failed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":"
        "\"text\",\"text\":\"boom\"}}],\"rawOutput\":{\"success\":false,\"duration\":12.5}}}");
    json_decref(ev);
    /* output is optional; success -> completed; no content when absent */
    ev = expect_event("autohand.hook.postTool",
                      "{\"toolId\":\"t\",\"toolName\":\"x\",\"success\":true,\"duration\":0,"
                      "\"timestamp\":\"t\"}",
                      "{\"update\":{\"status\":\"completed\"}}");
    cr_assert_null(json_object_get(json_object_get(ev, "update"), "content"));
    json_decref(ev);
}

Test(hns_autohand, file_modified_is_an_update_with_location)
{
    json_t *ev = expect_event(
        "autohand.hook.fileModified",
        "{\"filePath\":\"src/a.c\",\"changeType\":\"delete\",\"toolId\":\"tool-9\","
        "\"timestamp\":\"t\"}",
        "{\"extra\":{\"autohand\":\"fileModified\",\"changeType\":\"delete\"},\"update\":{"
        "\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"tool-9\",\"locations\":[{"
        "\"path\":\"src/a.c\"}]}}");
    cr_assert_null(json_object_get(json_object_get(ev, "update"), "status"));
    json_decref(ev);
}

Test(hns_autohand, pre_prompt_is_a_user_message)
{
    json_t *ev = expect_event(
        "autohand.hook.prePrompt",
        "{\"instruction\":\"Review\",\"mentionedFiles\":[\"a.c\",\"b.c\"],\"timestamp\":\"t\"}",
        "{\"extra\":{\"mentionedFiles\":[\"a.c\",\"b.c\"]},\"update\":{\"sessionUpdate\":"
        "\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"Review\"}}}");
    json_decref(ev);
}

Test(hns_autohand, post_response_is_call_usage_and_stop_is_run_usage)
{
    json_t *ev = expect_event(
        "autohand.hook.postResponse",
        "{\"tokensUsed\":42,\"tokensUsageStatus\":\"actual\",\"toolCallsCount\":2,"
        "\"duration\":125,\"timestamp\":\"t\"}",
        "{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"call\",\"usage\":{\"extra\":{"
        "\"tokensUsed\":42,\"tokensUsageStatus\":\"actual\",\"toolCallsCount\":2,"
        "\"duration\":125}}}}");
    json_t *usage = json_object_get(json_object_get(ev, "update"), "usage");

    /* tokensUsed is a total: no prompt/completion split is guessed */
    cr_assert_null(json_object_get(usage, "promptTokens"));
    cr_assert_null(json_object_get(usage, "completionTokens"));
    cr_assert(!evolve_update_is_agent_work(EVOLVE_UPDATE_USAGE));
    json_decref(ev);
    ev =
        expect_event("autohand.hook.stop",
                     "{\"tokensUsed\":7,\"toolCallsCount\":0,\"duration\":1.5,\"timestamp\":\"t\"}",
                     "{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"run\",\"usage\":{"
                     "\"extra\":{\"tokensUsed\":7,\"toolCallsCount\":0,\"duration\":1.5}}}}");
    usage = json_object_get(json_object_get(json_object_get(ev, "update"), "usage"), "extra");
    cr_assert_null(json_object_get(usage, "tokensUsageStatus"), "absent status stays absent");
    json_decref(ev);
}

Test(hns_autohand, session_error_is_a_non_fatal_error)
{
    json_t *ev = expect_event(
        "autohand.hook.sessionError",
        "{\"error\":\"provider failed\",\"code\":\"PROVIDER_ERROR\",\"context\":{\"retryable\":"
        "true},\"timestamp\":\"t\"}",
        "{\"extra\":{\"code\":\"PROVIDER_ERROR\",\"context\":{\"retryable\":true}},\"update\":{"
        "\"sessionUpdate\":\"error\",\"message\":\"provider failed\",\"fatal\":false}}");
    json_decref(ev);
}

Test(hns_autohand, session_start_and_end_are_run_notices)
{
    json_t *ev = expect_event("autohand.hook.sessionStart",
                              "{\"sessionType\":\"resume\",\"timestamp\":\"t\"}",
                              "{\"extra\":{\"autohand\":\"sessionStart\"},\"update\":{"
                              "\"sessionUpdate\":\"usage\",\"scope\":\"run\",\"usage\":{\"extra\":"
                              "{\"sessionType\":\"resume\"}}}}");
    json_decref(ev);
    ev = expect_event("autohand.hook.sessionEnd",
                      "{\"reason\":\"quit\",\"duration\":250,\"timestamp\":\"t\"}",
                      "{\"extra\":{\"autohand\":\"sessionEnd\"},\"update\":{\"sessionUpdate\":"
                      "\"usage\",\"scope\":\"run\",\"usage\":{\"extra\":{\"reason\":\"quit\","
                      "\"duration\":250}}}}");
    json_decref(ev);
}

Test(hns_autohand, subagent_stop_updates_the_subagent_call)
{
    json_t *ev = expect_event(
        "autohand.hook.subagentStop",
        "{\"subagentId\":\"sub-1\",\"subagentName\":\"reviewer\",\"subagentType\":\"worker\","
        "\"success\":false,\"duration\":75,\"error\":\"crashed\",\"timestamp\":\"t\"}",
        "{\"extra\":{\"subagentType\":\"worker\"},\"update\":{\"sessionUpdate\":"
        "\"tool_call_update\",\"toolCallId\":\"sub-1\",\"title\":\"reviewer\",\"status\":"
        "\"failed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":"
        "\"crashed\"}}]}}");
    json_decref(ev);
}

Test(hns_autohand, permission_hook_is_a_pending_tool_call)
{
    const char *lines[2] = {"", NULL};
    char *line = notif("autohand.hook.permissionRequest",
                       "{\"tool\":\"write_file\",\"path\":\"sdk.go\",\"command\":\"write\","
                       "\"args\":{\"force\":false},\"timestamp\":\"t\"}");
    json_t *events, *u;

    lines[1] = line; /* line 2: the hook carries no id, the line number names it */
    events = run_lines(lines, 2);
    cr_assert_eq(json_array_size(events), 1);
    u = json_object_get(json_array_get(events, 0), "update");
    cr_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "tool_call");
    cr_assert_str_eq(json_string_value(json_object_get(u, "status")), "pending");
    cr_assert_str_eq(json_string_value(json_object_get(u, "toolCallId")), "permission:2");
    cr_assert_str_eq(json_string_value(json_object_get(u, "kind")), "edit");
    cr_assert_str_eq(json_string_value(json_object_get(u, "toolName")), "write_file");
    json_decref(events);
    free(line);
}

Test(hns_autohand, permission_request_carries_the_id_to_answer)
{
    json_t *ev = expect_event(
        "autohand.permissionRequest",
        "{\"requestId\":\"req-7\",\"tool\":\"run_command\",\"description\":\"Run git status\","
        "\"context\":{\"command\":\"git status\"},\"options\":[\"allow_once\",\"deny_once\"],"
        "\"timestamp\":\"t\"}",
        "{\"extra\":{\"autohand\":\"permissionPrompt\",\"requestId\":\"req-7\",\"permission\":true}"
        ","
        "\"update\":{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"req-7\",\"title\":"
        "\"Run git status\",\"kind\":\"execute\",\"status\":\"pending\"}}");
    json_decref(ev);
}

Test(hns_autohand, notification_and_context_hooks_are_call_notices)
{
    json_t *ev;

    ev =
        expect_event("autohand.hook.notification",
                     "{\"notificationType\":\"info\",\"message\":\"Finished\",\"timestamp\":\"t\"}",
                     "{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"call\",\"usage\":{"
                     "\"extra\":{\"notificationType\":\"info\",\"message\":\"Finished\"}}}}");
    json_decref(ev);
    ev = expect_event(
        "autohand.hook.contextCompacted",
        "{\"croppedCount\":3,\"summary\":\"Earlier turns\",\"usagePercent\":0.6125,"
        "\"reason\":\"threshold\",\"timestamp\":\"t\"}",
        "{\"extra\":{\"autohand\":\"contextCompacted\"},\"update\":{\"usage\":{\"extra\":"
        "{\"croppedCount\":3,\"summary\":\"Earlier turns\",\"usagePercent\":0.6125,"
        "\"reason\":\"threshold\"}}}}");
    json_decref(ev);
    ev = expect_event("autohand.hook.contextOverflow",
                      "{\"tokensBefore\":12000,\"tokensAfter\":8000,\"croppedCount\":4,"
                      "\"usagePercent\":1.05,\"timestamp\":\"t\"}",
                      "{\"update\":{\"usage\":{\"extra\":{\"tokensBefore\":12000,\"tokensAfter\":"
                      "8000,\"croppedCount\":4,\"usagePercent\":1.05}}}}");
    json_decref(ev);
    ev = expect_event(
        "autohand.hook.contextWarning",
        "{\"usagePercent\":0.805,\"remainingTokens\":4096,\"timestamp\":\"t\"}",
        "{\"extra\":{\"autohand\":\"contextWarning\"},\"update\":{\"usage\":{\"extra\":{"
        "\"usagePercent\":0.805,\"remainingTokens\":4096}}}}");
    json_decref(ev);
    ev = expect_event(
        "autohand.hook.contextCritical",
        "{\"usagePercent\":0.9575,\"remainingTokens\":1024,\"timestamp\":\"t\"}",
        "{\"extra\":{\"autohand\":\"contextCritical\"},\"update\":{\"usage\":{\"extra\":"
        "{\"usagePercent\":0.9575,\"remainingTokens\":1024}}}}");
    json_decref(ev);
}

/* ---- validation boundaries, both sides ----------------------------------------------------- */

static void stop_with_tokens(const char *tokens, bool ok)
{
    char params[256];

    snprintf(params, sizeof(params),
             "{\"tokensUsed\":%s,\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}", tokens);
    if (ok) {
        expect_valid("autohand.hook.stop", params);
        expect_valid("autohand.hook.postResponse", params);
    } else {
        expect_unknown("autohand.hook.stop", params);
        expect_unknown("autohand.hook.postResponse", params);
    }
}

Test(hns_autohand, tokens_used_is_integral_within_int64)
{
    stop_with_tokens("9223372036854775807", true);
    stop_with_tokens("-9223372036854775808", true);
    stop_with_tokens("0", true);
    stop_with_tokens("-1", true); /* the seed bounds tokensUsed by range only */
    stop_with_tokens("9223372036854775808", false);
    stop_with_tokens("-9223372036854775809", false);
    stop_with_tokens("18446744073709551616", false);
    stop_with_tokens("1.5", false);
    stop_with_tokens("1.0", false); /* integral means an integer literal, as in the seed's SDK */
    stop_with_tokens("1e3", false);
    stop_with_tokens("1e400", false);
    stop_with_tokens("\"42\"", false);
    stop_with_tokens("null", false);
}

Test(hns_autohand, int64_max_is_kept_exactly)
{
    json_t *ev = expect_event("autohand.hook.stop",
                              "{\"tokensUsed\":9223372036854775807,\"toolCallsCount\":2147483647,"
                              "\"duration\":1,\"timestamp\":\"t\"}",
                              "{\"update\":{\"sessionUpdate\":\"usage\"}}");
    json_t *x = json_object_get(
        json_object_get(json_object_get(json_object_get(ev, "update"), "usage"), "extra"),
        "tokensUsed");

    cr_assert(json_is_integer(x));
    cr_assert_eq(json_integer_value(x), INT64_MAX);
    json_decref(ev);
}

static void stop_with_calls(const char *calls, bool ok)
{
    char params[256];

    snprintf(params, sizeof(params),
             "{\"tokensUsed\":1,\"toolCallsCount\":%s,\"duration\":1,\"timestamp\":\"t\"}", calls);
    if (ok)
        expect_valid("autohand.hook.postResponse", params);
    else
        expect_unknown("autohand.hook.postResponse", params);
}

Test(hns_autohand, tool_calls_count_is_integral_within_int32)
{
    stop_with_calls("2147483647", true);
    stop_with_calls("-2147483648", true);
    stop_with_calls("2147483648", false);
    stop_with_calls("-2147483649", false);
    stop_with_calls("2.5", false);
    stop_with_calls("true", false);
}

static void overflow_with(const char *key, const char *value, bool ok)
{
    char params[512];

    snprintf(params, sizeof(params),
             "{\"tokensBefore\":1,\"tokensAfter\":1,\"croppedCount\":1,"
             "\"usagePercent\":1.05,\"timestamp\":\"t\",\"%s\":%s}",
             key, value);
    /* the later duplicate key wins, as in jansson and the seed's SDK */
    if (ok)
        expect_valid("autohand.hook.contextOverflow", params);
    else
        expect_unknown("autohand.hook.contextOverflow", params);
}

Test(hns_autohand, context_counts_are_non_negative_int64)
{
    static const char *const keys[] = {"tokensBefore", "tokensAfter", "croppedCount"};
    size_t i;

    for (i = 0; i < 3; i++) {
        overflow_with(keys[i], "0", true);
        overflow_with(keys[i], "9223372036854775807", true);
        overflow_with(keys[i], "-1", false);
        overflow_with(keys[i], "0.5", false);
        overflow_with(keys[i], "12000.5", false);
        overflow_with(keys[i], "\"12000\"", false);
        overflow_with(keys[i], "9223372036854775808", false);
    }
    expect_unknown("autohand.hook.contextWarning",
                   "{\"usagePercent\":0.8,\"remainingTokens\":-1,\"timestamp\":\"t\"}");
    expect_unknown("autohand.hook.contextCritical",
                   "{\"usagePercent\":0.8,\"remainingTokens\":1024.5,\"timestamp\":\"t\"}");
    expect_unknown(
        "autohand.hook.contextCompacted",
        "{\"croppedCount\":-1,\"usagePercent\":0.6,\"reason\":\"r\",\"timestamp\":\"t\"}");
    expect_valid("autohand.hook.contextWarning",
                 "{\"usagePercent\":0.8,\"remainingTokens\":0,\"timestamp\":\"t\"}");
}

static void warning_with_percent(const char *pct, bool ok)
{
    char params[512];

    snprintf(params, sizeof(params),
             "{\"usagePercent\":%s,\"remainingTokens\":5,\"timestamp\":\"t\"}", pct);
    if (ok)
        expect_valid("autohand.hook.contextWarning", params);
    else
        expect_unknown("autohand.hook.contextWarning", params);
}

Test(hns_autohand, usage_percent_is_finite_non_negative_and_not_capped)
{
    warning_with_percent("1.5", true); /* overflow can report more than 100% */
    warning_with_percent("1", true);
    warning_with_percent("0", true);
    warning_with_percent("-0.0", true);
    warning_with_percent("1e308", true);
    warning_with_percent("99999999999999999999", true); /* integral past int64: finite double */
    warning_with_percent("-0.1", false);
    warning_with_percent("-1e-300", false);
    warning_with_percent("1e400", false); /* JSON has no Infinity; this is as close as it gets */
    warning_with_percent("-1e400", false);
    warning_with_percent("\"0.5\"", false);
    warning_with_percent("null", false);
    expect_unknown("autohand.hook.contextWarning",
                   "{\"usagePercent\":-0.1,\"remainingTokens\":4096,\"timestamp\":\"t\"}");
}

Test(hns_autohand, token_usage_status_is_actual_unavailable_or_absent)
{
    expect_valid("autohand.hook.stop", "{\"tokensUsed\":1,\"tokensUsageStatus\":\"unavailable\","
                                       "\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}");
    expect_valid("autohand.hook.stop", "{\"tokensUsed\":1,\"tokensUsageStatus\":null,"
                                       "\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}");
    expect_unknown("autohand.hook.stop",
                   "{\"tokensUsed\":1,\"tokensUsageStatus\":\"estimated\","
                   "\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}");
    expect_unknown("autohand.hook.stop",
                   "{\"tokensUsed\":1,\"tokensUsageStatus\":\"ACTUAL\","
                   "\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}");
    expect_unknown("autohand.hook.postResponse",
                   "{\"tokensUsed\":1,\"tokensUsageStatus\":1,\"toolCallsCount\":1,\"duration\":1,"
                   "\"timestamp\":\"t\"}");
}

Test(hns_autohand, every_hook_rejects_a_malformed_payload)
{
    static const char *const bad[][2] = {
        {"autohand.hook.preTool", "{\"toolId\":\"t\",\"toolName\":\"r\",\"args\":\"x\","
                                  "\"timestamp\":\"t\"}"},
        {"autohand.hook.postTool", "{\"toolId\":\"t\",\"toolName\":\"r\",\"success\":true,"
                                   "\"duration\":\"fast\",\"timestamp\":\"t\"}"},
        {"autohand.hook.postTool", "{\"toolId\":\"t\",\"toolName\":\"r\",\"success\":true,"
                                   "\"duration\":1e400,\"timestamp\":\"t\"}"},
        {"autohand.hook.fileModified", "{\"filePath\":\"a\",\"changeType\":\"rename\","
                                       "\"toolId\":\"t\",\"timestamp\":\"t\"}"},
        {"autohand.hook.prePrompt", "{\"instruction\":\"R\",\"mentionedFiles\":[42],"
                                    "\"timestamp\":\"t\"}"},
        {"autohand.hook.sessionError", "{\"error\":{\"message\":\"x\"},\"timestamp\":\"t\"}"},
        {"autohand.hook.sessionStart", "{\"sessionType\":\"fork\",\"timestamp\":\"t\"}"},
        {"autohand.hook.sessionEnd", "{\"reason\":\"timeout\",\"duration\":1,\"timestamp\":\"t\"}"},
        {"autohand.hook.subagentStop", "{\"subagentId\":\"s\",\"subagentName\":\"n\","
                                       "\"subagentType\":\"w\",\"success\":\"yes\","
                                       "\"duration\":1,\"timestamp\":\"t\"}"},
        {"autohand.hook.permissionRequest", "{\"tool\":\"w\",\"args\":\"force\","
                                            "\"timestamp\":\"t\"}"},
        {"autohand.hook.notification", "{\"notificationType\":7,\"message\":\"m\","
                                       "\"timestamp\":\"t\"}"},
        {"autohand.hook.contextCompacted", "{\"croppedCount\":\"3\",\"usagePercent\":0.6,"
                                           "\"reason\":\"r\",\"timestamp\":\"t\"}"},
        {"autohand.hook.contextCritical", "{\"usagePercent\":0.9,\"remainingTokens\":\"1\","
                                          "\"timestamp\":\"t\"}"},
        /* timestamp is required on every hook */
        {"autohand.hook.sessionStart", "{\"sessionType\":\"startup\"}"},
        {"autohand.hook.sessionStart", "{\"sessionType\":\"startup\",\"timestamp\":5}"},
        {"autohand.permissionRequest", "{\"tool\":\"w\",\"timestamp\":\"t\"}"},
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_unknown(bad[i][0], bad[i][1]);
}

/* ---- unknown keeps method and params with their type --------------------------------------- */

Test(hns_autohand, unknown_method_keeps_params_of_each_json_type)
{
    static const char *const params[] = {"{\"a\":[1,{\"b\":null}]}",
                                         "[1,\"two\",3.5]",
                                         "null",
                                         "\"text\"",
                                         "42",
                                         "-1.25",
                                         "true",
                                         "false"};
    size_t i;

    for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        expect_unknown("autohand.hook.future", params[i]);
        expect_unknown("autohand.messageUpdate", params[i]);
        /* a known hook whose params are not an object fails its checks the same way */
        expect_unknown("autohand.hook.stop", params[i]);
    }
}

Test(hns_autohand, unknown_without_params_has_none)
{
    json_t *ev = one("{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.stop\"}");
    json_t *u = json_object_get(ev, "update");

    cr_assert_str_eq(update_type(ev), "unknown");
    cr_assert_str_eq(json_string_value(json_object_get(u, "method")), "autohand.hook.stop");
    cr_assert_null(json_object_get(u, "params"));
    json_decref(ev);
}

Test(hns_autohand, unrepresentable_numbers_keep_params_verbatim)
{
    const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.x\",\"params\": 1e400 }";
    json_t *ev = one(line), *u = json_object_get(ev, "update");

    cr_assert_str_eq(update_type(ev), "unknown");
    cr_assert_str_eq(json_string_value(json_object_get(u, "paramsRaw")), "1e400");
    cr_assert_null(json_object_get(u, "params"));
    json_decref(ev);
    line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.stop\",\"params\":{\"tokensUsed\":"
           "9223372036854775808,\"toolCallsCount\":1,\"duration\":1,\"timestamp\":\"t\"}}";
    ev = one(line);
    u = json_object_get(ev, "update");
    cr_assert_str_eq(update_type(ev), "unknown");
    cr_assert_str_eq(json_string_value(json_object_get(u, "paramsRaw")),
                     "{\"tokensUsed\":9223372036854775808,\"toolCallsCount\":1,\"duration\":1,"
                     "\"timestamp\":\"t\"}");
    cr_assert_not_null(strstr(json_string_value(json_object_get(u, "reason")), "tokensUsed"));
    json_decref(ev);
}

Test(hns_autohand, huge_number_outside_checked_fields_keeps_the_hook)
{
    json_t *ev = expect_event("autohand.hook.preTool",
                              "{\"toolId\":\"t\",\"toolName\":\"x\",\"args\":{\"n\":1e400,\"m\":"
                              "123456789012345678901234567890},\"timestamp\":\"t\"}",
                              "{\"extra\":{\"inexactNumbers\":true},\"update\":{\"sessionUpdate\":"
                              "\"tool_call\",\"toolCallId\":\"t\"}}");
    json_decref(ev);
}

Test(hns_autohand, non_json_and_non_json_rpc_lines_are_unknown)
{
    static const char *const lines[] = {
        "Autohand v1.2 starting...",
        "{\"jsonrpc\":\"2.0\",\"method\":",
        "[1,2,3]",
        "{\"method\":\"autohand.hook.stop\",\"params\":{}}",
        "{\"jsonrpc\":\"1.0\",\"method\":\"autohand.hook.stop\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"success\":true}}",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"autohand.hook.stop\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":5,\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.stop\\u0000\",\"params\":{}}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"AUTOHAND.HOOK.STOP\",\"params\":{}}",
    };
    json_t *events = run_lines(lines, sizeof(lines) / sizeof(lines[0]));
    size_t i;

    cr_assert_eq(json_array_size(events), sizeof(lines) / sizeof(lines[0]));
    for (i = 0; i < json_array_size(events); i++) {
        json_t *u = json_object_get(json_array_get(events, i), "update");

        cr_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "unknown",
                         "line %zu", i);
        cr_assert_str_eq(json_string_value(json_object_get(u, "raw")), lines[i]);
        cr_assert_not_null(json_string_value(json_object_get(u, "reason")));
    }
    /* a method that is present is kept even when the envelope is wrong */
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(events, 3), "update"), "method")),
                     "autohand.hook.stop");
    cr_assert_eq(json_string_length(json_object_get(
                     json_object_get(json_array_get(events, 9), "update"), "method")),
                 19);
    json_decref(events);
}

/* ---- the typed decoder for C callers ------------------------------------------------------- */

Test(hns_autohand, typed_decode_gives_the_fields)
{
    const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.postResponse\",\"params\":"
                       "{\"tokensUsed\":-9223372036854775808,\"tokensUsageStatus\":\"unavailable\","
                       "\"toolCallsCount\":-2147483648,\"duration\":2.5,\"timestamp\":\"ts\"}}\r";
    struct hns_autohand_hook h;

    cr_assert_eq(hns_autohand_decode(&h, line, strlen(line)), 0);
    cr_assert_eq(h.kind, HNS_AUTOHAND_POST_RESPONSE);
    cr_assert_str_eq(h.timestamp, "ts");
    cr_assert_eq(h.u.turn_usage.tokens_used, INT64_MIN);
    cr_assert_eq(h.u.turn_usage.tool_calls_count, INT32_MIN);
    cr_assert_eq(h.u.turn_usage.tokens_usage_status, HNS_AUTOHAND_TOKENS_UNAVAILABLE);
    cr_assert_eq(h.u.turn_usage.duration, 2.5);
    cr_assert_str_eq(hns_autohand_kind_method(h.kind), "autohand.hook.postResponse");
    hns_autohand_dispose(&h);
    hns_autohand_dispose(&h); /* idempotent */

    line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.fileModified\",\"params\":{"
           "\"filePath\":\"a\",\"changeType\":\"create\",\"toolId\":\"t\",\"timestamp\":\"x\"}}";
    cr_assert_eq(hns_autohand_decode(&h, line, strlen(line)), 0);
    cr_assert_eq(h.kind, HNS_AUTOHAND_FILE_MODIFIED);
    cr_assert_eq(h.u.file_modified.change_type, HNS_AUTOHAND_CREATE);
    cr_assert_str_eq(h.u.file_modified.file_path, "a");
    hns_autohand_dispose(&h);

    line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.hook.contextWarning\",\"params\":[1]}";
    cr_assert_eq(hns_autohand_decode(&h, line, strlen(line)), 0);
    cr_assert_eq(h.kind, HNS_AUTOHAND_UNKNOWN);
    cr_assert_eq(h.u.unknown.params_type, HNS_AUTOHAND_PARAMS_ARRAY);
    cr_assert_str_eq(h.method, "autohand.hook.contextWarning");
    cr_assert_not_null(strstr(h.u.unknown.reason, "not an object"));
    hns_autohand_dispose(&h);

    line = "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":-123456789012345678901234}";
    cr_assert_eq(hns_autohand_decode(&h, line, strlen(line)), 0);
    cr_assert_eq(h.kind, HNS_AUTOHAND_UNKNOWN);
    cr_assert_eq(h.u.unknown.params_type, HNS_AUTOHAND_PARAMS_NUMBER);
    cr_assert_str_eq(h.u.unknown.params_raw, "-123456789012345678901234");
    hns_autohand_dispose(&h);
}

/* ---- permission replies -------------------------------------------------------------------- */

Test(hns_autohand, permission_reply_is_a_json_rpc_request_line)
{
    static const struct {
        evolve_permission_decision_t d;
        const char *name;
        bool allowed;
    } cases[] = {
        {EVOLVE_PERMISSION_ALLOW_ONCE, "allow_once", true},
        {EVOLVE_PERMISSION_ALLOW_SESSION, "allow_session", true},
        {EVOLVE_PERMISSION_ALLOW_ALWAYS, "allow_always_project", true},
        {EVOLVE_PERMISSION_DENY, "deny_once", false},
        {EVOLVE_PERMISSION_DENY_ALWAYS, "deny_always_project", false},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *line = NULL;
        json_t *j, *params;
        size_t n;

        cr_assert_eq(evolve_autohand_permission_reply(&line, "req \"7\"\n", cases[i].d), 0, "%s",
                     evolve_error_last()->message);
        n = strlen(line);
        cr_assert(n > 1 && line[n - 1] == '\n' && !memchr(line, '\n', n - 1), "one line");
        j = json_loads(line, 0, NULL);
        cr_assert_not_null(j);
        cr_assert_str_eq(json_string_value(json_object_get(j, "jsonrpc")), "2.0");
        cr_assert_str_eq(json_string_value(json_object_get(j, "method")),
                         "autohand.permissionResponse");
        cr_assert_str_eq(json_string_value(json_object_get(j, "id")),
                         "evolve-permission-req \"7\"\n");
        params = json_object_get(j, "params");
        cr_assert_str_eq(json_string_value(json_object_get(params, "requestId")), "req \"7\"\n");
        cr_assert_str_eq(json_string_value(json_object_get(params, "decision")), cases[i].name);
        cr_assert_eq(json_is_true(json_object_get(params, "allowed")), cases[i].allowed);
        cr_assert_str_eq(evolve_permission_decision_name(cases[i].d), cases[i].name);
        json_decref(j);
        evolve_autohand_reply_free(line);
    }
}

Test(hns_autohand, permission_reply_rejects_bad_input)
{
    char *line = (char *)"untouched";

    cr_assert_eq(evolve_autohand_permission_reply(&line, "", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL);
    cr_assert_null(line);
    cr_assert_not_null(strstr(evolve_error_last()->message, "request id"));
    cr_assert_eq(evolve_autohand_permission_reply(&line, NULL, EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL);
    cr_assert_eq(evolve_autohand_permission_reply(&line, "r", EVOLVE_PERMISSION_DECISION_COUNT),
                 EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "decision"));
    cr_assert_eq(evolve_autohand_permission_reply(&line, "\xff\xfe", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "UTF-8"));
    cr_assert_eq(evolve_autohand_permission_reply(&line, "\xed\xa0\x80", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL, "a UTF-16 surrogate is not UTF-8");
    cr_assert_eq(evolve_autohand_permission_reply(&line, "\xc0\xaf", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL, "overlong");
    cr_assert_eq(evolve_autohand_permission_reply(&line, "r\xc3", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL, "truncated");
    cr_assert_eq(evolve_autohand_permission_reply(&line, "r\xc3\xa9\xf0\x9f\x98\x80",
                                                  EVOLVE_PERMISSION_DENY),
                 0);
    evolve_autohand_reply_free(line);
    cr_assert_eq(evolve_autohand_permission_reply(NULL, "r", EVOLVE_PERMISSION_DENY),
                 EVOLVE_EINVAL);
    cr_assert_null(evolve_permission_decision_name((evolve_permission_decision_t)-1));
    evolve_autohand_reply_free(NULL);
}

/* ---- command ------------------------------------------------------------------------------- */

static bool has_arg(char **argv, const char *a)
{
    for (; *argv; argv++)
        if (!strcmp(*argv, a))
            return true;
    return false;
}

static const char *env_of(char **env, const char *name)
{
    size_t n = strlen(name);

    for (; env && *env; env++)
        if (!strncmp(*env, name, n) && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

Test(hns_autohand, command_sends_the_prompt_byte_for_byte_on_stdin)
{
    const struct hns_agent *a = hns_agent_find("autohand");
    const char *prompt = "say \"hi\" $HOME `id` \\ back\\slash\nnew line\ttab é";
    struct hns_run_spec spec = {.prompt = prompt,
                                .model = "fantail",
                                .api_key = "sk-test",
                                .base_url = "http://127.0.0.1:9",
                                .resume = true};
    struct hns_command cmd = {0};
    json_t *req;

    cr_assert_not_null(a);
    cr_assert_str_eq(a->instruction_file, "AGENTS.md");
    cr_assert_eq(a->build_command(&cmd, &spec), 0, "%s", evolve_error_last()->message);
    cr_assert_str_eq(cmd.argv[0], "autohand");
    cr_assert_str_eq(cmd.argv[1], "--mode");
    cr_assert_str_eq(cmd.argv[2], "rpc");
    cr_assert(has_arg(cmd.argv, "--continue"));
    cr_assert(has_arg(cmd.argv, "fantail"));
    cr_assert(!has_arg(cmd.argv, prompt), "the prompt never goes on argv");
    cr_assert_str_eq(env_of(cmd.env, "AUTOHAND_AI_API_KEY"), "sk-test");
    cr_assert_str_eq(env_of(cmd.env, "AUTOHAND_AI_BASE_URL"), "http://127.0.0.1:9");
    cr_assert_eq(cmd.stdin_data[cmd.stdin_len - 1], '\n');
    cr_assert_eq(memchr(cmd.stdin_data, '\n', cmd.stdin_len - 1), NULL, "one JSON line");
    req = json_loadb(cmd.stdin_data, cmd.stdin_len, 0, NULL);
    cr_assert_not_null(req);
    cr_assert_str_eq(json_string_value(json_object_get(req, "method")), "autohand.prompt");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(req, "params"), "message")),
                     prompt);
    json_decref(req);
    hns_command_dispose(&cmd);

    spec.resume = false;
    spec.model = NULL;
    spec.api_key = NULL;
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert(!has_arg(cmd.argv, "--continue"));
    cr_assert(!has_arg(cmd.argv, "--model"));
    cr_assert_null(env_of(cmd.env, "AUTOHAND_AI_API_KEY"));
    hns_command_dispose(&cmd);
}

Test(hns_autohand, command_rejects_missing_prompt_and_unknown_reasoning)
{
    const struct hns_agent *a = hns_agent_find("autohand");
    struct hns_run_spec spec = {.prompt = NULL};
    struct hns_command cmd = {0};

    cr_assert_eq(a->build_command(&cmd, &spec), EVOLVE_EINVAL);
    spec.prompt = "p";
    spec.reasoning = "ultra";
    cr_assert_eq(a->build_command(&cmd, &spec), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "ultra"));
    spec.reasoning = "extended";
    cr_assert_eq(a->build_command(&cmd, &spec), 0);
    cr_assert_not_null(strstr(cmd.stdin_data, "\"thinkingLevel\":\"extended\""));
    hns_command_dispose(&cmd);
}

/* ---- the non-hook notifications that carry the agent's text and errors ---------------------- */

Test(hns_autohand, message_update_is_a_message_chunk)
{
    json_t *ev = expect_event("autohand.messageUpdate",
                              "{\"messageId\":\"m1\",\"delta\":\"Hel\",\"timestamp\":\"t\"}",
                              "{\"messageId\":\"m1\",\"timestamp\":\"t\",\"update\":{"
                              "\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":"
                              "\"text\",\"text\":\"Hel\"}}}");
    json_decref(ev);
    expect_unknown("autohand.messageUpdate", "{\"delta\":5,\"timestamp\":\"t\"}");
}

Test(hns_autohand, message_update_with_thought_gives_thought_then_text)
{
    const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.messageUpdate\",\"params\":{"
                       "\"delta\":\"ok\",\"thought\":\"hmm\",\"timestamp\":\"t\"}}";
    const char *only = "{\"jsonrpc\":\"2.0\",\"method\":\"autohand.messageUpdate\",\"params\":{"
                       "\"delta\":\"\",\"thought\":\"hmm\",\"timestamp\":\"t\"}}";
    json_t *events = run_lines(&line, 1);

    cr_assert_eq(json_array_size(events), 2);
    cr_assert_str_eq(update_type(json_array_get(events, 0)), "agent_thought_chunk");
    cr_assert_str_eq(update_type(json_array_get(events, 1)), "agent_message_chunk");
    json_decref(events);
    events = run_lines(&only, 1);
    cr_assert_eq(json_array_size(events), 1, "an empty delta beside a thought is not a chunk");
    cr_assert_str_eq(update_type(json_array_get(events, 0)), "agent_thought_chunk");
    json_decref(events);
}

Test(hns_autohand, cli_error_is_an_error_update)
{
    json_t *ev =
        expect_event("autohand.error",
                     "{\"code\":-32000,\"message\":\"rate limited\",\"recoverable\":false,"
                     "\"timestamp\":\"t\"}",
                     "{\"extra\":{\"code\":-32000},\"update\":{\"sessionUpdate\":\"error\","
                     "\"message\":\"rate limited\",\"fatal\":true}}");
    json_decref(ev);
    ev = expect_event("autohand.error",
                      "{\"message\":\"retrying\",\"recoverable\":true,\"timestamp\":\"t\"}",
                      "{\"update\":{\"sessionUpdate\":\"error\",\"fatal\":false}}");
    json_decref(ev);
    expect_unknown("autohand.error", "{\"message\":\"x\",\"timestamp\":\"t\"}");
    expect_unknown(
        "autohand.error",
        "{\"code\":2147483648,\"message\":\"x\",\"recoverable\":true,\"timestamp\":\"t\"}");
}

/* ---- a whole session ---------------------------------------------------------------------- */

Test(hns_autohand, synthetic_session_pairs_tools_and_only_responses_are_unknown)
{
    char path[1024];
    FILE *f;
    char *line = NULL;
    size_t cap = 0, i, unknown = 0, calls = 0, paired = 0, usage_run = 0;
    ssize_t n;
    struct hns_parser *p = NULL;
    json_t *events = json_array();

    snprintf(path, sizeof(path), "%s/autohand/session-synthetic.jsonl", EVOLVE_TEST_DATA);
    f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(hns_parser_new(&p, "autohand", collect, events), 0);
    while ((n = getline(&line, &cap, f)) > 0)
        cr_assert_eq(hns_parser_feed(p, line, (size_t)(line[n - 1] == '\n' ? n - 1 : n)), 0);
    free(line);
    fclose(f);
    hns_parser_free(p);
    for (i = 0; i < json_array_size(events); i++) {
        json_t *u = json_object_get(json_array_get(events, i), "update");
        const char *t = json_string_value(json_object_get(u, "sessionUpdate"));

        if (!strcmp(t, "unknown")) {
            unknown++;
            cr_assert_not_null(
                strstr(json_string_value(json_object_get(u, "reason")), "JSON-RPC response"));
        } else if (!strcmp(t, "tool_call") &&
                   !strcmp(json_string_value(json_object_get(u, "status")), "in_progress")) {
            const char *id = json_string_value(json_object_get(u, "toolCallId"));
            size_t j;

            calls++;
            for (j = i + 1; j < json_array_size(events); j++) {
                json_t *v = json_object_get(json_array_get(events, j), "update");

                if (!strcmp(json_string_value(json_object_get(v, "sessionUpdate")),
                            "tool_call_update") &&
                    !strcmp(json_string_value(json_object_get(v, "toolCallId")), id) &&
                    json_object_get(v, "status")) {
                    paired++;
                    break;
                }
            }
        } else if (!strcmp(t, "usage") &&
                   !strcmp(json_string_value(json_object_get(u, "scope")), "run") &&
                   json_object_get(json_object_get(json_object_get(u, "usage"), "extra"),
                                   "tokensUsed")) {
            usage_run++;
        }
    }
    cr_assert_eq(unknown, 2);
    cr_assert_eq(calls, 2);
    cr_assert_eq(paired, 2, "every tool call has its result");
    cr_assert_eq(usage_run, 1, "one run total (the stop hook)");
    json_decref(events);
}

Test(hns_autohand, long_multibyte_tool_name_is_kept_whole)
{
    char params[1024], name[600] = "";
    size_t i;
    json_t *ev;
    char *line;

    for (i = 0; i < 100; i++)
        strcat(name, "é"); /* 200 bytes of 2-byte characters */
    snprintf(params, sizeof(params), "{\"tool\":\"%s\",\"timestamp\":\"t\"}", name);
    line = notif("autohand.hook.permissionRequest", params);
    ev = one(line);
    cr_assert_str_eq(update_type(ev), "tool_call");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "update"), "toolName")),
                     name);
    json_decref(ev);
    free(line);
}

Test(hns_autohand, reason_quoting_broken_input_is_still_valid_utf8)
{
    /* jansson's error text quotes the offending bytes: half a character must not break the event */
    const char *line = "{\"jsonrpc\":\"\xd0\x94thook.con\\u\xd0\x94thook\"}";
    json_t *ev = one(line);

    cr_assert_str_eq(update_type(ev), "unknown");
    cr_assert_not_null(json_string_value(json_object_get(json_object_get(ev, "update"), "reason")));
    json_decref(ev);
}
