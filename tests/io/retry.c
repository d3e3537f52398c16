/* Tests of the retry arithmetic (io/http.h): what is retryable, the full-jitter backoff bounds,
 * and Retry-After parsing (delta-seconds and HTTP-date). */
#include <criterion/criterion.h>

#include "evolve/common.h"
#include "io/http.h"

TestSuite(io_retry, .timeout = 10);

Test(io_retry, retry_after_seconds_and_http_date)
{
    /* Sun, 06 Nov 1994 08:49:37 GMT is 784111777 (RFC 7231's example). */
    cr_assert_eq(io_retry_after_parse("2", 0), 2000);
    cr_assert_eq(io_retry_after_parse(" 0 ", 0), 0);
    cr_assert_eq(io_retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", 784111770), 7000);
    cr_assert_eq(io_retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", 784111800), 0,
                 "a date in the past means now");
    cr_assert_eq(io_retry_after_parse("soon", 0), -1);
    cr_assert_eq(io_retry_after_parse("-5", 0), -1);
    cr_assert_eq(io_retry_after_parse("12abc", 0), -1);
    cr_assert_eq(io_retry_after_parse(NULL, 0), -1);
}

Test(io_retry, full_jitter_stays_within_the_exponential_ceiling)
{
    struct io_retry_policy p = {.max_attempts = 10, .base_ms = 100, .cap_ms = 1000};
    uint64_t rnd, d;
    unsigned attempt;
    bool saw_low = false, saw_high = false;

    for (attempt = 1; attempt <= 8; attempt++) {
        uint64_t ceiling = attempt >= 5 ? 1000 : 100u << (attempt - 1);

        for (rnd = 0; rnd < 5000; rnd += 7) {
            d = io_retry_delay_ms(&p, attempt, -1, rnd * 2654435761u);
            cr_assert_leq(d, ceiling, "attempt %u delay %llu", attempt, (unsigned long long)d);
            saw_low |= attempt == 8 && d < 100;
            saw_high |= attempt == 8 && d > 900;
        }
    }
    cr_assert(saw_low && saw_high, "jitter must spread over [0, cap]");
}

Test(io_retry, retry_after_replaces_a_shorter_backoff)
{
    struct io_retry_policy p = {.max_attempts = 3, .base_ms = 10, .cap_ms = 20};

    cr_assert_eq(io_retry_delay_ms(&p, 1, 1500, 12345), 1500);
    cr_assert_leq(io_retry_delay_ms(&p, 1, 0, 12345), 10);
}

Test(io_retry, what_is_retryable)
{
    cr_assert(io_retry_wanted(0, 429, false, false), "429 is always retryable");
    cr_assert(!io_retry_wanted(0, 503, false, false), "503 only when idempotent");
    cr_assert(io_retry_wanted(0, 503, true, false));
    cr_assert(io_retry_wanted(0, 500, true, false));
    cr_assert(!io_retry_wanted(0, 501, true, false), "not implemented will not change");
    cr_assert(!io_retry_wanted(0, 404, true, false));
    cr_assert(!io_retry_wanted(0, 200, true, false));
    cr_assert(io_retry_wanted(EVOLVE_EIO, 0, false, true), "never connected: safe to resend");
    cr_assert(!io_retry_wanted(EVOLVE_EIO, 0, false, false), "reset after sending: not safe");
    cr_assert(io_retry_wanted(EVOLVE_EIO, 0, true, false));
    cr_assert(io_retry_wanted(EVOLVE_ETIMEDOUT, 0, true, false));
    cr_assert(!io_retry_wanted(EVOLVE_ECANCELED, 0, true, false));
    cr_assert(!io_retry_wanted(EVOLVE_EPROTO, 0, true, false));
}
