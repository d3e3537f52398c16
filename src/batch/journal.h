/* batch/journal.h — OUTDIR/results.jsonl: the append-only, fsync'd record of every finished task,
 * and what a rerun reads to skip work already done. */
#ifndef EVOLVE_BATCH_JOURNAL_H
#define EVOLVE_BATCH_JOURNAL_H

#include <jansson.h>
#include <stddef.h>

struct bat_journal;

/* Opens (creating) <outdir>/results.jsonl. *done receives a new object id -> the LAST result
 * recorded for that id (later lines win, so `--rerun-failed` appends and supersedes). A trailing
 * line without its LF (a crash in the middle of an append) is cut off and reported through
 * *torn_out (1 when it happened); a complete line that is not a JSON object with a string "id"
 * is skipped and counted in *bad_lines_out. Returns 0, EVOLVE_EIO naming the file, or ENOMEM. */
int bat_journal_open(struct bat_journal **out, const char *outdir, json_t **done, int *torn_out,
                     size_t *bad_lines_out);

/* Appends one result as one line with ONE write(2), then fdatasync, so a result is either wholly
 * on disk or (after a crash) a torn tail the next open removes. Returns 0 or EVOLVE_EIO.
 * @thread one writer at a time (the scheduler actor). */
int bat_journal_append(struct bat_journal *j, const json_t *result);

/* Group commit: appends `count` results as consecutive lines with one write(2) and one
 * fdatasync (the scheduler flushes every result that arrived while the previous sync ran).
 * Returns 0 or EVOLVE_EIO / EVOLVE_ENOMEM (then none of them is known to be on disk). */
int bat_journal_append_many(struct bat_journal *j, json_t *const *results, size_t count);

void bat_journal_free(struct bat_journal *j);

#endif
