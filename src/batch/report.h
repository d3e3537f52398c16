/* batch/report.h — summary.json and report.html of a batch, computed from its results. */
#ifndef EVOLVE_BATCH_REPORT_H
#define EVOLVE_BATCH_REPORT_H

#include <jansson.h>

/* Builds summary.json from an array of task results (the objects of results.jsonl, one per task):
 * {total, byStatus{}, byFailureClass{}, durationMs{p50,p90,p99,max,mean}, tokens{prompt,
 * completion, cached}, costUsd (null when any finished task is unpriced, with unpricedTasks),
 * byAgentModel[{agent, model, tasks, prompt, completion, costUsd}], generatedAt}.
 * New reference, NULL on OOM. */
json_t *bat_summary_build(const json_t *results);

/* Writes a self-contained report.html (no network: inline CSS and SVG) with the status
 * breakdown, a duration histogram, cost per task and a table linking each task to
 * events/<id>.jsonl and outputs/<id>/. Written to a temp file and renamed, so a reader never
 * sees half a page. Returns 0, EVOLVE_EIO naming the path, or EVOLVE_ENOMEM. */
int bat_report_write_html(const char *path, const json_t *results, const json_t *summary,
                          const char *title);

/* Writes `value` as pretty JSON to `path` atomically (temp + fsync + rename). */
int bat_write_json_atomic(const char *path, const json_t *value);

#endif
