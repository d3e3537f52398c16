/* Usage and cost accounting: last call-usage per messageId, run totals apart, table pricing only
 * when the agent did not price, never a guessed 0. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/ledger.h"
#include "evolve/evolve.h"

static json_t *pricing;
static struct core_ledger *ledger;

static void setup(void)
{
    pricing = json_pack("{s:{s:{s:f, s:f, s:f}}}", "models", "claude-sonnet-4", "input", 3.0,
                        "output", 15.0, "cacheRead", 0.3);
    cr_assert_eq(core_ledger_new(&ledger, pricing), 0);
}

static void teardown(void)
{
    core_ledger_free(ledger);
    json_decref(pricing);
}

TestSuite(core_ledger, .init = setup, .fini = teardown, .timeout = 10);

static void add(const char *event_json)
{
    json_error_t e;
    json_t *ev = json_loads(event_json, 0, &e);

    cr_assert_not_null(ev, "%s", e.text);
    cr_assert_eq(core_ledger_add(ledger, ev), 0);
    json_decref(ev);
}

#define CALL(mid, p, c, cached)                                                                    \
    "{\"messageId\":\"" mid "\",\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"call\","       \
    "\"usage\":{\"promptTokens\":" #p ",\"completionTokens\":" #c ",\"cachedTokens\":" #cached     \
    "}}}"

Test(core_ledger, last_call_usage_per_message_is_summed)
{
    json_t *rc;

    core_ledger_run_begin(ledger, "run-1", "claude-sonnet-4-5-20250929");
    add(CALL("m1", 100, 5, 0));
    add(CALL("m1", 100, 20, 0)); /* same message, later line: replaces */
    add(CALL("m2", 1000, 10, 800));
    add("{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\","
        "\"text\":\"hi\"}}}");
    core_ledger_run_end(ledger, true);
    rc = core_ledger_run_cost(ledger, "run-1", 0);
    cr_assert_not_null(rc);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(rc, "tokens"), "prompt")),
                 1100);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(rc, "tokens"), "completion")),
                 30);
    cr_assert_eq(json_integer_value(json_object_get(rc, "requests")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(rc, "priced")), "table");
    /* (1100-800)*3 + 800*0.3 + 30*15 per million */
    cr_assert_float_eq(json_number_value(json_object_get(rc, "cost")),
                       (300 * 3.0 + 800 * 0.3 + 30 * 15.0) / 1e6, 1e-12);
    cr_assert(json_is_true(json_object_get(rc, "isComplete")));
    json_decref(rc);
}

Test(core_ledger, run_scope_totals_and_agent_cost_win)
{
    json_t *rc;

    core_ledger_run_begin(ledger, "r", "claude-sonnet-4");
    add(CALL("m1", 10, 10, 0));
    add("{\"update\":{\"sessionUpdate\":\"usage\",\"scope\":\"run\",\"usage\":{\"promptTokens\":"
        "9512,\"completionTokens\":88,\"cachedTokens\":9000,\"costUsd\":0.0421}}}");
    core_ledger_run_end(ledger, true);
    rc = core_ledger_run_cost(ledger, NULL, 1);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(rc, "tokens"), "prompt")),
                 9512);
    cr_assert_float_eq(json_number_value(json_object_get(rc, "cost")), 0.0421, 1e-12);
    cr_assert_str_eq(json_string_value(json_object_get(rc, "priced")), "agent");
    json_decref(rc);
}

Test(core_ledger, unpriced_model_has_null_cost_not_zero)
{
    json_t *rc, *sc;

    core_ledger_run_begin(ledger, "r1", "mystery-model");
    add(CALL("m", 10, 1, 0));
    core_ledger_run_end(ledger, true);
    rc = core_ledger_run_cost(ledger, NULL, -1);
    cr_assert(json_is_null(json_object_get(rc, "cost")));
    cr_assert(json_is_null(json_object_get(rc, "priced")));
    sc = core_ledger_session_cost(ledger, "evolve-0123456789abcdef");
    cr_assert(json_is_null(json_object_get(sc, "totalCost")));
    cr_assert_str_eq(json_string_value(json_object_get(sc, "sessionTag")),
                     "evolve-0123456789abcdef");
    json_decref(rc);
    json_decref(sc);
}

Test(core_ledger, session_sums_runs_and_index_errors_match_the_seed)
{
    json_t *sc;

    core_ledger_run_begin(ledger, "a", "claude-sonnet-4");
    add(CALL("m", 1000000, 0, 0));
    core_ledger_run_end(ledger, true);
    core_ledger_run_begin(ledger, "b", "claude-sonnet-4");
    add(CALL("m", 0, 1000000, 0));
    core_ledger_run_end(ledger, false);
    sc = core_ledger_session_cost(ledger, "t");
    cr_assert_float_eq(json_number_value(json_object_get(sc, "totalCost")), 18.0, 1e-9);
    cr_assert_eq(json_array_size(json_object_get(sc, "runs")), 2);
    cr_assert(json_is_false(json_object_get(sc, "isComplete")));
    json_decref(sc);
    cr_assert_null(core_ledger_run_cost(ledger, NULL, 0));
    cr_assert_eq(evolve_error_last()->code, EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message,
                     "Run index 0 out of range. Session has 2 run(s).");
    cr_assert_null(core_ledger_run_cost(ledger, NULL, -3));
    cr_assert_null(core_ledger_run_cost(ledger, "nope", 0));
}

Test(core_ledger, shipped_pricing_table_loads_and_bad_file_is_named)
{
    json_t *p = NULL;

    cr_assert_eq(core_pricing_load(&p, NULL), 0, "%s", evolve_error_last()->message);
    cr_assert(json_is_object(json_object_get(json_object_get(p, "models"), "gpt-5")));
    json_decref(p);
    cr_assert_eq(core_pricing_load(&p, "/nonexistent/pricing.json"), EVOLVE_EIO);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/nonexistent/pricing.json"));
}
