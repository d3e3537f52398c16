/* core/ledger.h — token and cost accounting per run and per session from `usage` events. */
#ifndef EVOLVE_CORE_LEDGER_H
#define EVOLVE_CORE_LEDGER_H

#include <jansson.h>
#include <stdbool.h>

struct core_ledger;

/* Loads the pricing table: `path` if given, else $EVOLVE_PRICING, else the installed
 * data/pricing.json (source tree copy in builds). Returns 0, EVOLVE_EIO or EVOLVE_EINVAL naming
 * the file. *out is a new reference. */
int core_pricing_load(json_t **out, const char *path);

/* `pricing` may be NULL (nothing is priced unless the agent priced it). Borrowed: it must outlive
 * the ledger (the runtime's table does); not refcounted, as it is shared across threads. */
int core_ledger_new(struct core_ledger **out, json_t *pricing);
void core_ledger_free(struct core_ledger *l);

/* Opens a run; later usage events count towards it until core_ledger_run_end. */
int core_ledger_run_begin(struct core_ledger *l, const char *run_id, const char *model);

/* Accounts one OutputEvent (any type; only `usage` updates count). Rules (DESIGN §4): `call`
 * usage repeats per content line of one message, so the last per messageId wins and messages
 * are summed; `run` usage is the harness's terminal total and, when present, is the run's
 * figure. The event's `model` (when present) names the run's model. Returns 0 or ENOMEM. */
int core_ledger_add(struct core_ledger *l, const json_t *event);

/* Closes the current run. `complete` = the run ended (its totals will not change). */
void core_ledger_run_end(struct core_ledger *l, bool complete);

/* RunCost of seed 002: {runId, index, cost, tokens:{prompt, completion}, model, requests, asOf,
 * isComplete, truncated}, plus {cachedTokens, priced:"agent"|"table"|null}. `cost` is null when
 * neither the agent nor the table priced it (never a guessed 0). index is 1-based; negative
 * counts from the end. Returns NULL with EVOLVE_ENOTFOUND "Run index <i> out of range. Session has
 * <n> run(s)." or EVOLVE_ENOTFOUND for an unknown runId. New reference. */
json_t *core_ledger_run_cost(const struct core_ledger *l, const char *run_id, int index);

/* SessionCost of seed 002: {sessionTag, totalCost, totalTokens:{prompt, completion}, runs[],
 * asOf, isComplete, truncated}. totalCost is null when any run is unpriced. New reference. */
json_t *core_ledger_session_cost(const struct core_ledger *l, const char *session_tag);

#endif
