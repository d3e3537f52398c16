/* codex parser: reference vectors (with our stated differences), the project-sable error
 * delta, long traces, real traces, usage and the command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_codex, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"errors_dropped_in_v0_0_55", VEC_IGNORE_ERROR, NULL,
     "error, turn.failed and error items are `error` updates (project-sable behaviour)"},
    {"ignored_and_malformed", VEC_IGNORE_UNKNOWN, NULL,
     "non-JSON, item events without an item, the unknown item type collab_tool_call and the "
     "unknown line type session.created are `unknown`"},
    {"real_trace_codex_hello", VEC_IGNORE_ERROR, NULL,
     "the \"Model metadata ... not found\" error item is a non-fatal `error` update"},
    {"real_trace_codex_tool", VEC_IGNORE_ERROR, NULL,
     "the \"Model metadata ... not found\" error item is a non-fatal `error` update"},
    {NULL, 0, NULL, NULL},
};

Test(hns_codex, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("codex", "codex.jsonl", VEC_IGNORE_USAGE,
                                     "turn.completed gives a run `usage`", diffs),
                 0);
}

Test(hns_codex, project_sable_error_delta)
{
    cr_assert_gt(hvec_check_file("codex", "project-sable-delta/codex.jsonl", NULL), 0);
}

static const struct hvec_diff long_diffs[] = {
    {"bench_codex_lines_1076_1090", VEC_IGNORE_ERROR, NULL,
     "the top-level error line is an `error` update"},
    {NULL, 0, NULL, NULL},
};

Test(hns_codex, long_trace_vectors)
{
    cr_assert_gt(hvec_check_file_all("codex", "long/codex-200k-head200.jsonl", VEC_IGNORE_USAGE,
                                     "turn.completed gives a run `usage`", long_diffs),
                 0);
}
