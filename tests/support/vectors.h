/* vectors.h — runs the harness test vectors (tests/data/vectors, from spec/vectors) through a
 * parser and compares the events with the reference's, as DESIGN.md §10 prescribes: expected
 * events must appear in order in ours, each expected field present with an equal value (objects
 * compared as subsets, arrays element by element, numbers numerically). Our deliberate additions
 * (usage, error and unknown updates the reference never emitted) are skipped only when the test
 * says so with `ignore`. */
#ifndef EVOLVE_TEST_VECTORS_H
#define EVOLVE_TEST_VECTORS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Loads every case of tests/data/vectors/<rel> (one JSON object per line). Dies on error. */
json_t *vec_load(const char *rel);

/* The case named `name` in `cases` (borrowed), or NULL. */
json_t *vec_case(json_t *cases, const char *name);

/* Runs the case's input lines through a fresh parser of `agent` and returns every emitted event
 * in order (a new array), or NULL with evolve_error_last() set. */
json_t *vec_run(const char *agent, const json_t *vcase);

/* Bit set of update types to skip among OUR events before matching. */
#define VEC_IGNORE_USAGE   1u
#define VEC_IGNORE_ERROR   2u
#define VEC_IGNORE_UNKNOWN 4u

/* Compares `expect` (the case's expect array, or an edited copy) with `actual`. Returns true on a
 * match; otherwise writes a one-line reason naming the event index and JSON path into why. */
bool vec_match(const json_t *expect, const json_t *actual, unsigned ignore, char *why,
               size_t why_size);

/* Subset equality of one value (exposed for tests that check single events). */
bool vec_subset(const json_t *expect, const json_t *actual, char *path, size_t path_size);

#endif
