/* evolve/batch.h — a batch: many independent agent tasks, each run in its own sandbox with a fresh
 * conversation, under a concurrency cap and a sandbox-creation rate, with failures classified and
 * infrastructure failures retried, and every finished task recorded (fsync'd) in
 * OUTDIR/results.jsonl before its sandbox is released. The engine behind `evolve batch`.
 *
 * Output directory: results.jsonl (one JSON object per finished task; the last line of an id
 * wins), events/<id>.jsonl (the task's events), outputs/<id>/ (its output files, result.json
 * validated when a schema is given), sessions/ (session logs), summary.json and report.html
 * (written when the batch completes). Adding a task whose id already has a success (or an agent
 * failure, unless rerun_failed) in results.jsonl skips it: rerunning a batch resumes it.
 *
 * Ownership: evolve_batch_new() hands the caller the batch, released by evolve_batch_free()
 * (which cancels what still runs and waits for it). Strings passed in are copied. The JSON
 * strings handed to callbacks are borrowed for the call.
 * Threads: the API may be called from any thread that is not a runtime worker. Callbacks run on
 * runtime worker threads, one at a time per task, and must be short; they must not call the
 * blocking evolve_batch_* functions (wait, cancel, free). */
#ifndef EVOLVE_BATCH_H
#define EVOLVE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evolve/common.h"
#include "evolve/session.h"

EVOLVE_BEGIN_DECL

typedef struct evolve_batch evolve_batch_t;

/** A task reached its terminal result (already fsync'd in results.jsonl). `result_json` is the
 *  line written: {id, status, failureClass, error, attempts, agent, model, sandboxId, exitCode,
 *  durationMs, startedAt, finishedAt, tokens{prompt,completion,cached}, costUsd, tags, outputs,
 *  data, checkpoint (CheckpointInfo or null)}. */
typedef void (*evolve_batch_result_cb)(const char *task_id, const char *result_json, void *payload);
/** One live event of a task (see evolve_event_json); `attempt` is 1-based. */
typedef void (*evolve_batch_event_cb)(const char *task_id, unsigned int attempt,
                                      const evolve_event_t *event, void *payload);

typedef struct evolve_batch_options {
    unsigned int version;      /**< EVOLVE_BATCH_OPTIONS_VERSION */
    const char *outdir;        /**< required; created when missing */
    unsigned int concurrency;  /**< sandboxes alive at once; 0: 4 */
    const char *provider;      /**< NULL: "local" */
    double create_rate;        /**< sandbox creations per second (token bucket); 0: 20 */
    unsigned int retries;      /**< extra attempts after a retryable failure; default 0 */
    bool retry_agent_failures; /**< also retry agent-crash, agent-timeout, schema-invalid */
    bool rerun_failed;         /**< rerun tasks whose recorded result is a failure */
    uint64_t retry_base_ms;    /**< backoff base (doubling, full jitter, cap 60 s); 0: 1000 */
    /* Defaults for fields a task leaves out. */
    const char *agent; /**< NULL: "claude" */
    const char *model;
    const char *system_prompt;
    const char *schema_path; /**< JSON Schema file for tasks without their own schema */
    uint64_t timeout_ms;     /**< per run; 0: 3,600,000 */
    const char *const *env;  /**< extra "NAME=value" for every sandbox; NULL-terminated */
    bool checkpoint;         /**< checkpoint each successful task into the store (content
                                  identical across tasks is stored once): result "checkpoint" */
    const char *store_root;  /**< checkpoint store; NULL: $EVOLVE_HOME/store */
    bool reuse_sandboxes;    /**< run successive tasks with the same session options in one
                                  sandbox (workspace emptied, resume:false) */
    evolve_batch_result_cb on_result;
    evolve_batch_event_cb on_event;
    void *payload; /**< handed to both callbacks */
} evolve_batch_options_t;

#define EVOLVE_BATCH_OPTIONS_VERSION 1
#define EVOLVE_BATCH_OPTIONS_INIT                                                                  \
    {                                                                                              \
        .version = EVOLVE_BATCH_OPTIONS_VERSION                                                    \
    }

/** Opens OUTDIR (reading results.jsonl so finished tasks are skipped) and, on the local provider,
 *  removes sandboxes orphaned by an earlier process that died. Nothing runs before
 *  evolve_batch_start(). @return 0, EVOLVE_EINVAL (options),
 *  EVOLVE_EIO (OUTDIR), EVOLVE_ENOMEM. */
EVOLVE_API int evolve_batch_new(evolve_batch_t **out, evolve_runtime_t *rt,
                                const evolve_batch_options_t *opts);

/** Adds one task given as a manifest line (JSON object; see README "Batch manifest").
 *  @return 0, 1 when the task is skipped (already finished in results.jsonl), EVOLVE_EINVAL
 *          (bad task, duplicate id), EVOLVE_ECANCELED (after cancel). */
EVOLVE_API int evolve_batch_add_task(evolve_batch_t *b, const char *task_json);

/** Adds every task of a JSONL manifest that belongs to shard `shard_index` of `shard_count`
 *  (1-based; 0/0 = all). A manifest with bad lines adds nothing and returns EVOLVE_EINVAL unless
 *  `skip_invalid`; either way `*problems_out` (may be NULL) receives "file:line: reason" lines
 *  (caller frees; NULL when none). `*added_out` / `*skipped_out` (may be NULL) count tasks. */
EVOLVE_API int evolve_batch_add_manifest(evolve_batch_t *b, const char *path,
                                         unsigned int shard_index, unsigned int shard_count,
                                         bool skip_invalid, char **problems_out, size_t *added_out,
                                         size_t *skipped_out);

/** Starts admitting tasks (tasks added later are admitted too). @return 0 or EVOLVE_ECANCELED. */
EVOLVE_API int evolve_batch_start(evolve_batch_t *b);

/** Counters for a progress display; a consistent snapshot. */
typedef struct evolve_batch_progress {
    unsigned int version;                  /**< EVOLVE_BATCH_PROGRESS_VERSION */
    size_t total;                          /**< tasks added (skipped ones included) */
    size_t skipped;                        /**< already finished in results.jsonl */
    size_t succeeded, failed, interrupted; /**< finished in this run */
    size_t running, queued;                /**< queued includes tasks waiting for a retry */
    size_t retries;                        /**< attempts started after a failed one */
    size_t max_running;                    /**< highest number of sandboxes alive at once */
    uint64_t tokens_prompt, tokens_completion;
    double cost_usd;      /**< priced tasks only */
    size_t unpriced;      /**< finished tasks without a price */
    uint64_t events;      /**< events written to events/ */
    char slowest_id[128]; /**< the running task that started first ("" when none) */
    uint64_t slowest_ms;  /**< how long it has run */
} evolve_batch_progress_t;
#define EVOLVE_BATCH_PROGRESS_VERSION 1

EVOLVE_API int evolve_batch_progress(evolve_batch_t *b, evolve_batch_progress_t *out);

/** Waits until every added task is finished (or, after a cancel, until every running task has
 *  been recorded and released), then writes summary.json and report.html.
 *  @return 0, EVOLVE_ETIMEDOUT (timeout_ms elapsed first; 0 = wait forever), EVOLVE_EIO
 *          (results or report could not be written). */
EVOLVE_API int evolve_batch_wait(evolve_batch_t *b, uint64_t timeout_ms);

/** Stops admitting, interrupts the running agents (they are recorded as interrupted and their
 *  sandboxes killed); queued tasks stay unrecorded so a rerun runs them. Returns at once. */
EVOLVE_API int evolve_batch_cancel(evolve_batch_t *b);

/** Cancels what still runs, waits for it and frees. NULL is a no-op. */
EVOLVE_API void evolve_batch_free(evolve_batch_t *b);

/** Merges the results of several output directories (e.g. one per shard) into `outdir`: the
 *  union by id (for an id in several, a success wins, else the last directory's), written as
 *  results.jsonl with a fresh summary.json and report.html. @return 0, EVOLVE_EIO naming the
 *  file, EVOLVE_EINVAL (no inputs), EVOLVE_ENOMEM. */
EVOLVE_API int evolve_batch_merge(const char *outdir, const char *const *dirs, size_t count);

EVOLVE_END_DECL

#endif
