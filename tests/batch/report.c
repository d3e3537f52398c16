/* summary.json figures and the self-contained HTML report. */
#include <criterion/criterion.h>
#include <string.h>

#include "batch/report.h"
#include "evolve/evolve.h"
#include "support/support.h"

TestSuite(bat_report, .timeout = 10);

static json_t *results(void)
{
    return json_pack(
        "[{s:s, s:s, s:s, s:s, s:s, s:i, s:{s:i, s:i, s:i}, s:f},"
        " {s:s, s:s, s:s, s:s, s:s, s:i, s:{s:i, s:i, s:i}, s:f},"
        " {s:s, s:s, s:s, s:s, s:s, s:i, s:{s:i, s:i, s:i}, s:n},"
        " {s:s, s:s, s:s, s:s, s:s, s:i}]",
        "id", "a", "status", "success", "failureClass", "none", "agent", "claude", "model", "opus",
        "durationMs", 1000, "tokens", "prompt", 100, "completion", 10, "cached", 50, "costUsd", 0.5,
        "id", "b<script>", "status", "failed", "failureClass", "agent-timeout", "agent", "claude",
        "model", "opus", "durationMs", 3000, "tokens", "prompt", 200, "completion", 20, "cached", 0,
        "costUsd", 0.25, "id", "c d", "status", "success", "failureClass", "none", "agent", "codex",
        "model", "gpt-5", "durationMs", 2000, "tokens", "prompt", 1, "completion", 2, "cached", 0,
        "costUsd", "id", "e", "status", "failed", "failureClass", "create-rejected", "agent",
        "codex", "model", "gpt-5", "durationMs", 4000);
}

Test(bat_report, summary_counts_percentiles_and_costs)
{
    json_t *r = results(), *s = bat_summary_build(r), *am;

    cr_assert_not_null(s);
    cr_assert_eq(json_integer_value(json_object_get(s, "total")), 4);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(s, "byStatus"), "success")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(s, "byStatus"), "failed")), 2);
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(s, "byFailureClass"), "agent-timeout")),
        1);
    cr_assert_null(json_object_get(json_object_get(s, "byFailureClass"), "none"));
    cr_assert_float_eq(json_number_value(json_object_get(json_object_get(s, "durationMs"), "p50")),
                       2000, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(json_object_get(s, "durationMs"), "max")),
                       4000, 1e-9);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(s, "tokens"), "prompt")), 301);
    cr_assert(json_is_null(json_object_get(s, "costUsd")), "one task ran unpriced");
    cr_assert_eq(json_integer_value(json_object_get(s, "unpricedTasks")), 1);
    am = json_object_get(s, "byAgentModel");
    cr_assert_eq(json_array_size(am), 2);
    cr_assert_float_eq(json_number_value(json_object_get(json_array_get(am, 0), "costUsd")), 0.75,
                       1e-9);
    cr_assert(json_is_null(json_object_get(json_array_get(am, 1), "costUsd")));
    json_decref(s);
    json_decref(r);
}

Test(bat_report, html_is_self_contained_escaped_and_linked)
{
    char dir[512], path[600], *html;
    json_t *r = results(), *s = bat_summary_build(r);

    ts_mkdtemp(dir, sizeof(dir), "report");
    snprintf(path, sizeof(path), "%s/report.html", dir);
    cr_assert_eq(bat_report_write_html(path, r, s, "demo & co"), 0, "%s",
                 evolve_error_last()->message);
    html = ts_read_file(path, NULL);
    cr_assert_not_null(html);
    cr_assert_not_null(strstr(html, "<title>demo &amp; co</title>"));
    cr_assert_null(strstr(html, "<script>"), "task ids are escaped");
    cr_assert_not_null(strstr(html, "b&lt;script&gt;"));
    cr_assert_not_null(strstr(html, "href=\"events/c%20d.jsonl\""));
    cr_assert_not_null(strstr(html, "href=\"outputs/a/\""));
    cr_assert_null(strstr(html, "http://"), "no network references");
    cr_assert_null(strstr(html, "https://"), "no network references");
    cr_assert_not_null(strstr(html, "aria-label=\"duration histogram\""));
    free(html);
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    cr_assert_eq(bat_write_json_atomic(path, s), 0);
    html = ts_read_file(path, NULL);
    cr_assert_not_null(strstr(html, "\"total\": 4"));
    free(html);
    cr_assert_eq(bat_write_json_atomic("/nonexistent/x/summary.json", s), EVOLVE_EIO);
    json_decref(s);
    json_decref(r);
    ts_rmtree(dir);
}
