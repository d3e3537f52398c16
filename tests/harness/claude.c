/* claude parser: reference vectors (with our stated differences), real traces, envelope
 * fields, usage arithmetic, and the command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_claude, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"ignored_lines", VEC_IGNORE_UNKNOWN | VEC_IGNORE_ERROR, NULL,
     "non-JSON and the unknown `rate_limit_event` type become `unknown` (never dropped); the "
     "is_error result becomes a fatal `error`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_claude, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("claude", "claude.jsonl", VEC_IGNORE_USAGE,
                                     "every assistant line carries a call `usage` and result "
                                     "lines a run `usage`, which the reference dropped",
                                     diffs),
                 0);
}

Test(hns_claude, long_session_vector)
{
    cr_assert_gt(hvec_check_file_all("claude", "long/claude-session-200.jsonl", VEC_IGNORE_USAGE,
                                     "call and run `usage` updates", NULL),
                 0);
}
