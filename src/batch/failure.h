/* batch/failure.h — the closed set of task failure classes and what may be retried. */
#ifndef EVOLVE_BATCH_FAILURE_H
#define EVOLVE_BATCH_FAILURE_H

#include <stdbool.h>

#define BAT_FAILURE_MAP(X)                                                                         \
    X(NONE, "none", false, false)                                                                  \
    X(CREATE_REJECTED, "create-rejected", true, true)                                              \
    X(CAPACITY, "capacity", true, true)                                                            \
    X(SANDBOX_LOST, "sandbox-lost", true, true)                                                    \
    X(AGENT_CRASH, "agent-crash", false, false)                                                    \
    X(AGENT_TIMEOUT, "agent-timeout", false, false)                                                \
    X(MODEL_RATE_LIMIT, "model-rate-limit", true, true)                                            \
    X(SCHEMA_INVALID, "schema-invalid", false, false)                                              \
    X(INTERRUPTED, "interrupted", false, false)                                                    \
    X(INTERNAL, "internal", true, false)

/* X(enum suffix, wire name, infrastructure?, retried by default?) */
enum bat_failure {
#define BAT_FAILURE_ENUM(e, name, infra, retry) BAT_FAILURE_##e,
    BAT_FAILURE_MAP(BAT_FAILURE_ENUM)
#undef BAT_FAILURE_ENUM
        BAT_FAILURE_COUNT
};

const char *bat_failure_name(enum bat_failure f);

/* BAT_FAILURE_COUNT for an unknown name. */
enum bat_failure bat_failure_from_name(const char *name);

/* Infrastructure failures are the sandbox's or the provider's fault, not the agent's. */
bool bat_failure_is_infrastructure(enum bat_failure f);

/* Whether a task that failed this way may run again: infrastructure failures that are transient
 * always (create-rejected, capacity, sandbox-lost, model-rate-limit); agent failures (crash,
 * timeout, schema-invalid) only when `retry_agent_failures`; never interrupted or none.
 * `internal` (an evolve bug or local I/O error) is never retried: it would fail the same way. */
bool bat_failure_is_retryable(enum bat_failure f, bool retry_agent_failures);

/* What the run looked like, for classification. */
struct bat_run_outcome {
    int exit_code;          /* the agent's; -1 when it never ran or timed out */
    bool timed_out;         /* the run hit its timeoutMs */
    bool interrupted;       /* interrupt(), a signal to evolve, or exit 130 */
    bool sandbox_lost;      /* the sandbox vanished or stopped answering mid-run */
    bool create_failed;     /* sandbox creation failed */
    int create_http_status; /* provider's HTTP status for a failed create, 0 if none */
    bool schema_invalid;    /* result.json missing, unparsable or failing the schema */
    const char *error_text; /* stderr tail and error-update messages, for rate-limit sniffing */
    bool internal_error;    /* evolve itself failed (local I/O, OOM) */
};

/* Maps an outcome to its class. Order matters: an interrupt wins over everything, then
 * infrastructure (create, lost), then timeout, then model rate limits seen in the agent's own
 * errors, then the exit code, then the schema. */
enum bat_failure bat_failure_classify(const struct bat_run_outcome *o);

#endif
