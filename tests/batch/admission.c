/* Failure classes and the AIMD create-rate bucket. */
#include <criterion/criterion.h>

#include "batch/admission.h"
#include "batch/failure.h"

TestSuite(bat_admission, .timeout = 10);

Test(bat_admission, classify_outcomes)
{
    struct bat_run_outcome o = {0};

    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_NONE);
    o.exit_code = 1;
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_AGENT_CRASH);
    o.error_text = "API Error: 429 Too Many Requests";
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_MODEL_RATE_LIMIT);
    o.timed_out = true;
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_AGENT_TIMEOUT);
    o.sandbox_lost = true;
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_SANDBOX_LOST);
    o.interrupted = true;
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_INTERRUPTED);
    o = (struct bat_run_outcome){.create_failed = true, .create_http_status = 400, .exit_code = -1};
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_CREATE_REJECTED);
    o.create_http_status = 429;
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_CAPACITY);
    o = (struct bat_run_outcome){.schema_invalid = true};
    cr_assert_eq(bat_failure_classify(&o), BAT_FAILURE_SCHEMA_INVALID);
}

Test(bat_admission, retryability_by_class)
{
    cr_assert(bat_failure_is_retryable(BAT_FAILURE_CAPACITY, false));
    cr_assert(bat_failure_is_retryable(BAT_FAILURE_SANDBOX_LOST, false));
    cr_assert(bat_failure_is_retryable(BAT_FAILURE_MODEL_RATE_LIMIT, false));
    cr_assert(!bat_failure_is_retryable(BAT_FAILURE_AGENT_CRASH, false));
    cr_assert(bat_failure_is_retryable(BAT_FAILURE_AGENT_CRASH, true));
    cr_assert(bat_failure_is_retryable(BAT_FAILURE_SCHEMA_INVALID, true));
    cr_assert(!bat_failure_is_retryable(BAT_FAILURE_INTERRUPTED, true));
    cr_assert(!bat_failure_is_retryable(BAT_FAILURE_INTERNAL, true));
    cr_assert(!bat_failure_is_retryable(BAT_FAILURE_NONE, true));
    cr_assert_str_eq(bat_failure_name(BAT_FAILURE_MODEL_RATE_LIMIT), "model-rate-limit");
    cr_assert_eq(bat_failure_from_name("agent-timeout"), BAT_FAILURE_AGENT_TIMEOUT);
    cr_assert_eq(bat_failure_from_name("bogus"), BAT_FAILURE_COUNT);
}

Test(bat_admission, bucket_paces_to_the_rate)
{
    struct bat_bucket b;
    int64_t now = 1000, granted = 0, wait;

    bat_bucket_init(&b, 5.0, 5.0, 42, now);
    /* Simulate 10 s of a caller that retries exactly when told: about 5/s get through. */
    while (now < 11000) {
        wait = bat_bucket_take(&b, now);
        if (wait == 0) {
            granted++;
            continue;
        }
        cr_assert_gt(wait, 0);
        now += wait;
    }
    cr_assert(granted >= 40 && granted <= 52, "granted %lld in 10 s at 5/s", (long long)granted);
}

Test(bat_admission, throttle_halves_and_honours_retry_after_then_recovers)
{
    struct bat_bucket b;
    int64_t now = 0;
    int i;

    bat_bucket_init(&b, 8.0, 4.0, 7, now);
    bat_bucket_throttled(&b, 2000, now);
    cr_assert_float_eq(b.rate, 4.0, 1e-9);
    cr_assert_geq(bat_bucket_take(&b, now + 10), 1990, "Retry-After respected");
    bat_bucket_throttled(&b, 0, now);
    cr_assert_float_eq(b.rate, 2.0, 1e-9);
    for (i = 0; i < 40; i++)
        bat_bucket_throttled(&b, 0, now);
    cr_assert_float_eq(b.rate, 8.0 / 64, 1e-9, "floored");
    for (i = 0; i < 4 * 200; i++)
        bat_bucket_succeeded(&b);
    cr_assert_float_eq(b.rate, 8.0, 1e-9, "recovered additively to the configured rate");
}
