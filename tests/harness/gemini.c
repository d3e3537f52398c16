/* gemini parser: reference vectors (with our stated differences), real traces, envelope
 * fields, usage and the command line. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/harness.h"
#include "support/hvec.h"
#include "support/vectors.h"

TestSuite(hns_gemini, .timeout = 60);

static const struct hvec_diff diffs[] = {
    {"ignored_and_malformed", VEC_IGNORE_UNKNOWN, NULL,
     "non-JSON, the unknown `thought` type and a truncated line are `unknown`"},
    {NULL, 0, NULL, NULL},
};

Test(hns_gemini, reference_vectors)
{
    cr_assert_gt(hvec_check_file_all("gemini", "gemini.jsonl", VEC_IGNORE_USAGE,
                                     "result stats give a run `usage`", diffs),
                 0);
}
