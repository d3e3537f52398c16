/* agentcheck.h — runs a harness over vector files and recorded traces and checks the result,
 * for the per-agent parser tests (tests/harness/<agent>.c). No Criterion here (tests/support is
 * also linked into the plain-main concurrency tests): functions report, callers assert. */
#ifndef EVOLVE_TEST_AGENTCHECK_H
#define EVOLVE_TEST_AGENTCHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A vector case where our output deliberately differs from the reference (DESIGN.md §4). */
struct ac_diff {
    const char *name;             /* the case */
    unsigned ignore;              /* VEC_IGNORE_* among our events */
    void (*edit)(json_t *expect); /* rewrites the case's expect array in place; may be NULL */
    const char *why;              /* the difference, stated */
};

/* Runs every case of tests/data/vectors/<file> through `agent`, applying the diff (a table
 * ended by a {NULL} entry) named after each case. Returns the number of failing cases, with the
 * first failure (case name, why and the mismatch) in msg. A diff naming no case is a failure. */
int ac_run_vectors(const char *agent, const char *file, const struct ac_diff *diffs, char *msg,
                   size_t size);

/* Feeds `n` lines (NUL-terminated, no LF) to a fresh parser; returns the events (new array),
 * or NULL on a parser error. */
json_t *ac_feed(const char *agent, const char *const *lines, size_t n);

/* Same for a file under tests/data (e.g. "traces/qwen-tool.stdout.jsonl"), split on LF. */
json_t *ac_feed_file(const char *agent, const char *rel);

/* True when no event is `unknown` and every tool_call id has a tool_call_update with the same
 * id after it (and no update lacks its call). Otherwise false with the reason in msg. */
bool ac_trace_clean(const json_t *events, char *msg, size_t size);

/* The events whose update.sessionUpdate is `type` (a new array of shared references). */
json_t *ac_of_type(const json_t *events, const char *type);

/* Edit helper: every string "```\nX\n```" anywhere in v becomes "X" (we do not fence tool
 * error text: DESIGN §4 keeps the harness's text verbatim). */
void ac_unfence(json_t *v);

#endif
