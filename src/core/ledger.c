/* ledger.c — per-run and per-session token and cost totals from `usage` events.
 * Owns: the accounting rules of DESIGN §4 (last call-usage per messageId, run totals apart),
 * pricing by table when the agent did not price a run, and the RunCost/SessionCost shapes of
 * seed 002. Does not own: where usage comes from (the harness parsers).
 * Threads: a ledger belongs to its session actor; no locking. Costs: run lookup by id is O(runs),
 * fine for the hundreds of runs a session has. */
#include "core/ledger.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"

struct usage_totals {
    json_int_t prompt, completion, cached;
    double cost;    /* sum of agent-priced costUsd */
    bool has_cost;  /* at least one costUsd seen */
    bool has_usage; /* at least one usage seen */
};

struct run {
    char *id;
    char *model;
    json_t *calls;          /* messageId -> last call usage object (borrowed update.usage copy) */
    size_t anonymous_calls; /* call usage without messageId: each counts once */
    struct usage_totals anon;
    struct usage_totals run_scope;
    bool complete;
    int64_t ended_ms;
};

struct core_ledger {
    json_t *pricing;
    struct run *runs;
    size_t count, cap;
    bool open;
};

static const char *default_pricing_paths[] = {EVOLVE_SOURCE_DATADIR "/pricing.json",
                                              EVOLVE_DATADIR "/pricing.json", NULL};

int core_pricing_load(json_t **out, const char *path)
{
    json_error_t err;
    const char *p = path ? path : getenv("EVOLVE_PRICING");
    size_t i;

    if (!p || !*p) {
        for (i = 0; default_pricing_paths[i]; i++) {
            *out = json_load_file(default_pricing_paths[i], 0, &err);
            if (*out)
                return 0;
        }
        return core_error_set(EVOLVE_EIO, "no pricing table found (set EVOLVE_PRICING)");
    }
    *out = json_load_file(p, 0, &err);
    if (!*out)
        return core_error_set(err.line > 0 ? EVOLVE_EINVAL : EVOLVE_EIO, "pricing table %s:%d: %s",
                              p, err.line, err.text);
    if (!json_is_object(json_object_get(*out, "models"))) {
        json_decref(*out);
        *out = NULL;
        return core_error_set(EVOLVE_EINVAL, "pricing table %s: missing \"models\" object", p);
    }
    return 0;
}

int core_ledger_new(struct core_ledger **out, json_t *pricing)
{
    struct core_ledger *l = calloc(1, sizeof(*l));

    if (!l)
        return core_error_oom();
    l->pricing = pricing; /* borrowed: shared by every session; refcounting it from many
                             threads is a data race (jansson reads the count unsynchronised) */
    *out = l;
    return 0;
}

void core_ledger_free(struct core_ledger *l)
{
    size_t i;

    if (!l)
        return;
    for (i = 0; i < l->count; i++) {
        free(l->runs[i].id);
        free(l->runs[i].model);
        json_decref(l->runs[i].calls);
    }
    free(l->runs);
    free(l);
}

int core_ledger_run_begin(struct core_ledger *l, const char *run_id, const char *model)
{
    struct run *r;

    if (l->open)
        core_ledger_run_end(l, false);
    if (l->count == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8;
        struct run *n = realloc(l->runs, ncap * sizeof(*n));

        if (!n)
            return core_error_oom();
        l->runs = n;
        l->cap = ncap;
    }
    r = &l->runs[l->count];
    memset(r, 0, sizeof(*r));
    r->id = strdup(run_id ? run_id : "");
    r->model = model ? strdup(model) : NULL;
    r->calls = json_object();
    if (!r->id || (model && !r->model) || !r->calls) {
        free(r->id);
        free(r->model);
        json_decref(r->calls);
        return core_error_oom();
    }
    l->count++;
    l->open = true;
    return 0;
}

static void totals_add(struct usage_totals *t, const json_t *usage)
{
    const json_t *v;

    t->has_usage = true;
    t->prompt += json_integer_value(json_object_get(usage, "promptTokens"));
    t->completion += json_integer_value(json_object_get(usage, "completionTokens"));
    t->cached += json_integer_value(json_object_get(usage, "cachedTokens"));
    v = json_object_get(usage, "costUsd");
    if (json_is_number(v)) {
        t->cost += json_number_value(v);
        t->has_cost = true;
    }
}

int core_ledger_add(struct core_ledger *l, const json_t *event)
{
    const json_t *update = json_object_get(event, "update"), *usage, *mid, *model;
    const char *scope;
    struct run *r;

    if (!l->open || !json_is_object(update))
        return 0;
    scope = json_string_value(json_object_get(update, "sessionUpdate"));
    if (!scope || strcmp(scope, "usage"))
        return 0;
    r = &l->runs[l->count - 1];
    usage = json_object_get(update, "usage");
    if (!json_is_object(usage))
        return 0;
    model = json_object_get(event, "model");
    if (json_is_string(model) && (!r->model || strcmp(r->model, json_string_value(model)))) {
        char *m = strdup(json_string_value(model));

        if (!m)
            return core_error_oom();
        free(r->model);
        r->model = m;
    }
    scope = json_string_value(json_object_get(update, "scope"));
    if (scope && !strcmp(scope, "run")) {
        /* A harness prints its terminal totals once; should it print them twice, the last wins. */
        memset(&r->run_scope, 0, sizeof(r->run_scope));
        totals_add(&r->run_scope, usage);
        return 0;
    }
    mid = json_object_get(event, "messageId");
    if (json_is_string(mid)) {
        if (json_object_set_new(r->calls, json_string_value(mid), json_deep_copy(usage)) < 0)
            return core_error_oom();
    } else {
        r->anonymous_calls++;
        totals_add(&r->anon, usage);
    }
    return 0;
}

void core_ledger_run_end(struct core_ledger *l, bool complete)
{
    if (!l->open)
        return;
    l->runs[l->count - 1].complete = complete;
    l->runs[l->count - 1].ended_ms = core_wall_ms();
    l->open = false;
}

/* The price entry for `model`: exact name, else the longest key that prefixes it. */
static const json_t *price_for(const json_t *pricing, const char *model)
{
    const json_t *models = json_object_get(pricing, "models"), *best = NULL, *v;
    const char *key;
    size_t best_len = 0;

    if (!model || !models)
        return NULL;
    v = json_object_get(models, model);
    if (v)
        return v;
    json_object_foreach((json_t *)models, key, v)
    {
        size_t n = strlen(key);

        if (n > best_len && !strncmp(model, key, n)) {
            best = v;
            best_len = n;
        }
    }
    return best;
}

/* The run's figures: run-scope totals when the harness printed them, else summed call usage. */
static void run_totals(const struct run *r, struct usage_totals *out)
{
    const char *key;
    json_t *u;

    if (r->run_scope.has_usage) {
        *out = r->run_scope;
        return;
    }
    *out = r->anon;
    json_object_foreach(r->calls, key, u)
    {
        totals_add(out, u);
    }
}

static json_t *run_json(const struct core_ledger *l, size_t i)
{
    const struct run *r = &l->runs[i];
    struct usage_totals t;
    const json_t *price;
    json_t *cost = NULL;
    const char *priced = NULL;
    char ts[CORE_ISO8601_SIZE];

    run_totals(r, &t);
    if (t.has_cost) {
        cost = json_real(t.cost);
        priced = "agent";
    } else if (t.has_usage && (price = price_for(l->pricing, r->model))) {
        double in = json_number_value(json_object_get(price, "input"));
        double outp = json_number_value(json_object_get(price, "output"));
        const json_t *cr = json_object_get(price, "cacheRead");
        double cache_read = cr ? json_number_value(cr) : in;

        /* promptTokens includes the cached share, which is billed at the cache-read price. */
        cost = json_real(((double)(t.prompt - t.cached) * in + (double)t.cached * cache_read +
                          (double)t.completion * outp) /
                         1e6);
        priced = "table";
    }
    return json_pack("{s:s, s:I, s:o, s:{s:I, s:I}, s:I, s:o, s:I, s:s, s:b, s:b, s:o}", "runId",
                     r->id, "index", (json_int_t)(i + 1), "cost", cost ? cost : json_null(),
                     "tokens", "prompt", t.prompt, "completion", t.completion, "cachedTokens",
                     t.cached, "model", r->model ? json_string(r->model) : json_null(), "requests",
                     (json_int_t)(json_object_size(r->calls) + r->anonymous_calls), "asOf",
                     core_iso8601(ts, r->ended_ms ? r->ended_ms : core_wall_ms()), "isComplete",
                     r->complete, "truncated", 0, "priced",
                     priced ? json_string(priced) : json_null());
}

json_t *core_ledger_run_cost(const struct core_ledger *l, const char *run_id, int index)
{
    size_t i;
    long idx;

    if (run_id) {
        for (i = 0; i < l->count; i++)
            if (!strcmp(l->runs[i].id, run_id))
                return run_json(l, i);
        core_error_set(EVOLVE_ENOTFOUND, "Run %s not found in this session.", run_id);
        return NULL;
    }
    idx = index > 0 ? (long)index - 1 : (long)l->count + index;
    if (idx < 0 || (size_t)idx >= l->count) {
        core_error_set(EVOLVE_ENOTFOUND, "Run index %d out of range. Session has %zu run(s).",
                       index, l->count);
        return NULL;
    }
    return run_json(l, (size_t)idx);
}

json_t *core_ledger_session_cost(const struct core_ledger *l, const char *session_tag)
{
    json_t *runs = json_array(), *out;
    json_int_t prompt = 0, completion = 0;
    double total = 0;
    bool priced = true, complete = true;
    char ts[CORE_ISO8601_SIZE];
    size_t i;

    if (!runs)
        return NULL;
    for (i = 0; i < l->count; i++) {
        json_t *r = run_json(l, i);
        const json_t *c;

        if (!r || json_array_append_new(runs, r) < 0) {
            json_decref(runs);
            return NULL;
        }
        c = json_object_get(r, "cost");
        if (json_is_number(c))
            total += json_number_value(c);
        else
            priced = false;
        prompt += json_integer_value(json_object_get(json_object_get(r, "tokens"), "prompt"));
        completion +=
            json_integer_value(json_object_get(json_object_get(r, "tokens"), "completion"));
        complete = complete && l->runs[i].complete;
    }
    out = json_pack("{s:s?, s:o, s:{s:I, s:I}, s:o, s:s, s:b, s:b}", "sessionTag", session_tag,
                    "totalCost", priced ? json_real(total) : json_null(), "totalTokens", "prompt",
                    prompt, "completion", completion, "runs", runs, "asOf",
                    core_iso8601(ts, core_wall_ms()), "isComplete", complete, "truncated", 0);
    return out;
}
