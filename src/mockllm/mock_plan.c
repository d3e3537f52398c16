/* mock_plan.c — turns a scenario and a dialect-neutral request view into a reply plan: which
 * turn answers (the number of assistant responses already in the conversation, so concurrent
 * sessions each walk the whole script and a retried request gets the same turn), its thinking,
 * text and tool calls resolved against the advertised tools, an injected failure, usage and
 * pacing. Also the small helpers the dialect files share.
 * Threads: any connection thread; the only shared state is the error counter table (mutex). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "mockllm/mock_impl.h"

/* ---- helpers shared by the dialects ---- */

void mock_add_tool(struct mock_view *v, const char *name, const char *desc, json_t *schema,
                   enum mock_tool_kind kind)
{
    if (!name || v->ntools >= MOCK_MAX_TOOLS)
        return;
    v->tools[v->ntools].name = name;
    v->tools[v->ntools].description = desc ? desc : "";
    v->tools[v->ntools].schema = json_is_object(schema) ? schema : NULL;
    v->tools[v->ntools].kind = kind;
    v->ntools++;
}

void mock_collect_runs(struct mock_view *v, const json_t *items,
                       int (*classify)(const json_t *item, const char **text))
{
    int prev = 0, cur;
    size_t i;
    json_t *it;

    v->nruns = 0;
    json_array_foreach((json_t *)items, i, it)
    {
        const char *text = NULL;

        cur = classify(it, &text);
        if (cur && !prev && v->nruns < MOCK_MAX_RUNS) {
            v->runs[v->nruns].has_call = 0;
            v->runs[v->nruns].text = NULL;
            v->nruns++;
        }
        if (cur && v->nruns > 0) {
            struct mock_run *r = &v->runs[v->nruns - 1];

            r->has_call |= cur == 2;
            if (!r->text && text && *text)
                r->text = text;
        }
        prev = cur;
    }
}

/* True when `text` (an assistant text from the history) is one this scenario says. */
static int scenario_says(const struct mock_scenario *sc, const char *text)
{
    size_t i;

    if (strstr(sc->final_text, text) || strstr(text, sc->final_text) ||
        strstr(sc->side_text, text) || strstr(text, sc->side_text) ||
        !strncmp(text, "mock-llm: ", 10))
        return 1;
    for (i = 0; i < sc->nturns; i++) {
        const char *t = sc->turns[i].text;

        if (t && (strstr(t, text) || strstr(text, t)))
            return 1;
    }
    return 0;
}

void mock_select_turn(struct mock_view *v, const struct mock_scenario *sc)
{
    unsigned i;

    v->turn = 0;
    for (i = 0; i < v->nruns; i++)
        if (v->runs[i].has_call || !v->runs[i].text || scenario_says(sc, v->runs[i].text))
            v->turn++;
}

uint64_t mock_fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

const char *mock_first_text(const json_t *content)
{
    size_t i;
    json_t *p;

    if (json_is_string(content))
        return json_string_value(content);
    json_array_foreach((json_t *)content, i, p)
    {
        const char *t = json_string_value(json_object_get(p, "text"));

        if (t)
            return t;
    }
    return NULL;
}

const char *mock_error_text(int status)
{
    switch (status) {
    case 429:
        return "mock-llm: rate limited (scripted)";
    case 529:
        return "mock-llm: overloaded (scripted)";
    case 500:
        return "mock-llm: internal server error (scripted)";
    default:
        return "mock-llm: scripted failure";
    }
}

/* ---- error_times counters ---- */

#define ERRCOUNT_SLOTS 4096

struct errcount_slot {
    uint64_t key; /* 0: free */
    unsigned count;
};

struct mock_errcount {
    pthread_mutex_t lock;
    struct errcount_slot slot[ERRCOUNT_SLOTS];
};

struct mock_errcount *mock_errcount_new(void)
{
    struct mock_errcount *c = calloc(1, sizeof(*c));

    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

void mock_errcount_free(struct mock_errcount *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Increments and returns the number of requests seen for `key` (before this one). When the
 * table is full (4096 conversation-turns) a new key counts as already failed enough, so the
 * request is served: a scripted failure is never made permanent by running out of slots. */
static unsigned errcount_bump(struct mock_errcount *c, uint64_t key, unsigned limit)
{
    size_t i, at;
    unsigned seen = limit;

    if (key == 0)
        key = 1;
    pthread_mutex_lock(&c->lock);
    for (i = 0; i < ERRCOUNT_SLOTS; i++) {
        at = (size_t)((key + i) % ERRCOUNT_SLOTS);
        if (c->slot[at].key == key || c->slot[at].key == 0) {
            c->slot[at].key = key;
            seen = c->slot[at].count++;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return seen;
}

/* ---- the plan ---- */

void mock_reply_clear(struct mock_reply *r)
{
    size_t i;

    for (i = 0; i < r->nblocks; i++) {
        free(r->blocks[i].text);
        free(r->blocks[i].tool_name);
        free(r->blocks[i].input);
        free(r->blocks[i].args_json);
        json_decref(r->blocks[i].args);
    }
    json_decref(r->json_value);
    memset(r, 0, sizeof(*r));
}

static int add_text(struct mock_reply *r, enum mock_block_kind kind, const char *text)
{
    struct mock_block *b = &r->blocks[r->nblocks];

    if (r->nblocks >= MOCK_MAX_BLOCKS)
        return 0;
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    if (!(b->text = strdup(text)))
        return core_error_oom();
    r->nblocks++;
    r->completion_tokens += mock_tokens(strlen(text));
    return 0;
}

int mock_plan(struct mock_reply *r, const struct mock_scenario *sc, const struct mock_view *view,
              struct mock_errcount *counters, uint64_t seq)
{
    const struct mock_turn *t = view->turn < sc->nturns ? &sc->turns[view->turn] : NULL;
    size_t i;
    int rc, side = 0;

    memset(r, 0, sizeof(*r));
    r->turn = view->turn;
    r->prompt_tokens = view->prompt_tokens;
    r->cache_read_tokens = (unsigned)(view->prompt_tokens * sc->cache_read_fraction);
    r->cache_write_tokens = (unsigned)(view->prompt_tokens * sc->cache_write_fraction);
    r->pacing = t && t->has_pacing ? t->pacing : sc->pacing;
    snprintf(r->id, sizeof(r->id), "mock%016llx%04x", (unsigned long long)(view->conv_key ^ seq),
             view->turn & 0xffff);

    if (t && t->error_status) {
        uint64_t key = mock_fnv(view->conv_key, sc->name) + view->turn * 0x9E3779B97F4A7C15ULL;

        if (!t->error_times || !counters ||
            errcount_bump(counters, key, t->error_times) < t->error_times) {
            r->error_status = t->error_status;
            r->retry_after_s = t->retry_after_s;
            r->error_message =
                t->error_message ? t->error_message : mock_error_text(r->error_status);
            return 0;
        }
    }
    if (view->json_mode) {
        /* A structured-output side call (gemini's model router, next-speaker check): answer
         * with a value that satisfies its schema, not with the script. */
        r->json_value = mock_fill_schema(view->out_schema);
        return r->json_value ? 0 : core_error_oom();
    }
    if (!t) {
        rc = add_text(r, MOCK_BLOCK_TEXT, sc->final_text);
        return rc;
    }
    /* A side request (title generation, summaries) advertises no tools: it gets side_text and
     * never a call, so the main conversation's script is not disturbed. */
    if (t->ncalls && view->ntools == 0)
        side = 1;
    if (t->thinking && !side && (rc = add_text(r, MOCK_BLOCK_THINKING, t->thinking)))
        return rc;
    if (side)
        return add_text(r, MOCK_BLOCK_TEXT, sc->side_text);
    if (t->text && (rc = add_text(r, MOCK_BLOCK_TEXT, t->text)))
        return rc;
    for (i = 0; i < t->ncalls && r->nblocks < MOCK_MAX_BLOCKS; i++) {
        struct mock_block *b = &r->blocks[r->nblocks];

        memset(b, 0, sizeof(*b));
        rc = mock_resolve_call(b, &t->calls[i], view);
        if (rc == EVOLVE_ENOTFOUND) {
            /* the request has tools but none that can do this: say so in text */
            char msg[160];

            snprintf(msg, sizeof(msg),
                     "mock-llm: turn %u wants a %s call but no such tool is "
                     "advertised.",
                     view->turn, t->calls[i].kind == MOCK_CALL_SHELL ? "shell" : "file-write");
            if ((rc = add_text(r, MOCK_BLOCK_TEXT, msg)))
                return rc;
            continue;
        }
        if (rc) {
            free(b->tool_name);
            free(b->input);
            free(b->args_json);
            json_decref(b->args);
            memset(b, 0, sizeof(*b));
            return rc;
        }
        snprintf(b->id, sizeof(b->id), "call_%016llx_%u_%zu",
                 (unsigned long long)(view->conv_key ^ seq), view->turn, i);
        r->nblocks++;
        r->has_calls = 1;
        r->completion_tokens += mock_tokens(strlen(b->args_json) + strlen(b->tool_name));
    }
    if (r->nblocks == 0)
        return add_text(r, MOCK_BLOCK_TEXT, sc->final_text);
    return 0;
}
