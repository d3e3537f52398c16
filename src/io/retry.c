/* retry.c — the retry arithmetic shared by io/http.c and by callers that drive their own retries:
 * which outcomes are retryable, the backoff delay (exponential, full jitter, Retry-After), and
 * Retry-After parsing. Pure functions; any thread. */
#include "io/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/common.h"

bool io_retry_wanted(int code, long status, bool idempotent, bool connect_failed)
{
    if (code == 0) {
        if (status == 429)
            return true; /* the server did not process it: safe for any method */
        return idempotent && status >= 500 && status <= 599 && status != 501 && status != 505;
    }
    if (connect_failed)
        return true; /* the request never left this host */
    return idempotent && (code == EVOLVE_EIO || code == EVOLVE_ETIMEDOUT);
}

uint64_t io_retry_delay_ms(const struct io_retry_policy *p, unsigned attempt,
                           int64_t retry_after_ms, uint64_t rnd)
{
    uint64_t base = p->base_ms ? p->base_ms : 200, cap = p->cap_ms ? p->cap_ms : 30000;
    uint64_t ceiling = base, delay;
    unsigned i;

    for (i = 1; i < attempt && ceiling < cap; i++)
        ceiling *= 2;
    if (ceiling > cap)
        ceiling = cap;
    delay = rnd % (ceiling + 1); /* full jitter: uniform in [0, ceiling] */
    if (retry_after_ms >= 0 && (uint64_t)retry_after_ms > delay)
        delay = (uint64_t)retry_after_ms;
    return delay;
}

int64_t io_retry_after_parse(const char *value, int64_t now_unix)
{
    const char *p = value;
    char *end;
    long long secs;
    time_t when;

    if (!value)
        return -1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p >= '0' && *p <= '9') {
        errno = 0;
        secs = strtoll(p, &end, 10);
        while (*end == ' ' || *end == '\t')
            end++;
        if (errno || *end || secs < 0 || secs > 86400LL * 365)
            return -1;
        return (int64_t)secs * 1000;
    }
    when = curl_getdate(p, NULL); /* RFC 7231 HTTP-date (and the obsolete forms) */
    if (when == (time_t)-1)
        return -1;
    if ((int64_t)when <= now_unix)
        return 0;
    return ((int64_t)when - now_unix) * 1000;
}
