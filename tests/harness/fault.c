/* Allocation failures while building events (R20, through jansson's allocator hook): for every
 * n, the n-th jansson allocation fails; each feed must return 0 or EVOLVE_ENOMEM, never crash,
 * and leak nothing (LSan checks at exit). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "harness/harness.h"
#include "support/support.h"

TestSuite(hns_fault, .timeout = 120);

static long countdown = -1; /* allocations left before failing; < 0: never fail */

static void *failing_malloc(size_t n)
{
    if (countdown == 0)
        return NULL;
    if (countdown > 0)
        countdown--;
    return malloc(n);
}

static void drop(void *payload, evolve_update_type_t type, json_t *ev)
{
    (void)type;
    ++*(size_t *)payload;
    json_decref(ev);
}

static void run_with_failures(const char *agent, const char *rel)
{
    char path[1024];
    size_t len, ok_runs = 0;
    char *data = ts_read_file(ts_data_path(path, sizeof(path), rel), &len);
    long n;

    cr_assert_not_null(data);
    json_set_alloc_funcs(failing_malloc, free);
    for (n = 0; n < 4000; n++) {
        struct hns_parser *p;
        size_t events = 0, start = 0, i;
        bool failed = false;

        cr_assert_eq(hns_parser_new(&p, agent, drop, &events), 0);
        countdown = n;
        for (i = 0; i < len; i++) {
            if (data[i] != '\n')
                continue;
            int rc = hns_parser_feed(p, data + start, i - start);

            cr_assert(rc == 0 || rc == EVOLVE_ENOMEM, "%s: n=%ld: rc %d", agent, n, rc);
            failed |= rc == EVOLVE_ENOMEM;
            start = i + 1;
        }
        countdown = -1;
        hns_parser_free(p);
        if (!failed) {
            ok_runs++;
            break; /* n exceeds the allocations one pass needs: done */
        }
    }
    json_set_alloc_funcs(malloc, free);
    cr_assert_eq(ok_runs, 1, "%s: a pass without failures was reached", agent);
    free(data);
}

Test(hns_fault, claude_survives_every_allocation_failure)
{
    run_with_failures("claude", "traces/claude-tool.stdout.jsonl");
}

Test(hns_fault, codex_survives_every_allocation_failure)
{
    run_with_failures("codex", "traces/codex-tool.stdout.jsonl");
}

Test(hns_fault, gemini_survives_every_allocation_failure)
{
    run_with_failures("gemini", "traces/gemini-tool.stdout.jsonl");
}
