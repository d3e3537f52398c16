/* batch/admission.h — per-provider sandbox-creation rate: a token bucket that halves its rate on
 * "rate limited" answers and recovers additively (AIMD), with jitter so a ramp-up of hundreds
 * of creates does not arrive at the provider in lockstep. */
#ifndef EVOLVE_BATCH_ADMISSION_H
#define EVOLVE_BATCH_ADMISSION_H

#include <stdint.h>

struct bat_bucket {
    double rate;     /* current tokens per second */
    double max_rate; /* configured rate (the provider's published limit, or the user's) */
    double min_rate; /* floor: max_rate / 64 */
    double burst;    /* bucket size */
    double tokens;
    int64_t last_ms;          /* last refill */
    int64_t blocked_until_ms; /* Retry-After: nothing before this */
    uint64_t rng;             /* xorshift state for jitter */
    uint32_t successes;       /* since the last rate change */
};

/* rate > 0 per second; burst >= 1. seed makes the jitter reproducible in tests. */
void bat_bucket_init(struct bat_bucket *b, double rate, double burst, uint64_t seed,
                     int64_t now_ms);

/* Takes one token. Returns 0 when the caller may create a sandbox now, else the number of
 * milliseconds to wait before asking again (including a random jitter of up to one token's
 * interval). */
int64_t bat_bucket_take(struct bat_bucket *b, int64_t now_ms);

/* The provider said "rate limited" (429, or its own words): halve the rate (not below the floor),
 * empty the bucket, and honour `retry_after_ms` (0 when the provider gave none). */
void bat_bucket_throttled(struct bat_bucket *b, int64_t retry_after_ms, int64_t now_ms);

/* A create succeeded: after `burst` successes in a row at this rate, add max_rate/16 back (up to
 * max_rate): additive recovery. */
void bat_bucket_succeeded(struct bat_bucket *b);

#endif
