/* hvec.h — runs a whole vector file against a parser, with the deliberate differences from the
 * reference stated per case (DESIGN §10): which of our added update types to skip, or a
 * replacement expectation (JSON text) with the reason. */
#ifndef EVOLVE_TEST_HVEC_H
#define EVOLVE_TEST_HVEC_H

#include <stddef.h>

struct hvec_diff {
    const char *name;   /* case name */
    unsigned ignore;    /* VEC_IGNORE_* of our events skipped before matching */
    const char *expect; /* NULL, or the JSON array expected instead of the case's `expect` */
    const char *why;    /* the deliberate difference, in words */
};

/* Checks every case of tests/data/vectors/<rel> with parser `agent`; a case named in `diffs`
 * (terminated by a NULL name) uses its ignore/expect. Fails the current Criterion test with the
 * case name and reason on the first mismatch. Returns the number of cases checked. */
size_t hvec_check_file(const char *agent, const char *rel, const struct hvec_diff *diffs);

/* As hvec_check_file, with `all` (VEC_IGNORE_*) skipped in every case for the reason `why`
 * (e.g. claude's call usage on every assistant line), in addition to each case's own. */
size_t hvec_check_file_all(const char *agent, const char *rel, unsigned all, const char *why,
                           const struct hvec_diff *diffs);

#include <jansson.h>

/* Runs every line of a file (path relative to tests/data) through a fresh parser of `agent`,
 * splitting on LF and keeping a last line without LF; returns all events (dies on error). */
json_t *hvec_run_file(const char *agent, const char *rel);

/* Runs the given lines (NULL-terminated) through a fresh parser; returns all events. */
json_t *hvec_run_lines(const char *agent, const char *const *lines);

/* Checks a trace's events: no `unknown`, and every tool_call is followed by a tool_call_update
 * (or a repeated tool_call, codex web_search/file_change) with the same id and a final status.
 * Returns the number of tool calls seen. */
size_t hvec_check_trace(const char *rel, const json_t *events);

/* Number of events whose update.sessionUpdate is `type`; *first receives the first (borrowed). */
size_t hvec_count(const json_t *events, const char *type, json_t **first);

#endif
