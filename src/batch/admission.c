/* admission.c — the AIMD token bucket behind per-provider create admission.
 * Threads: one owner (the scheduler actor); no locking. */
#include "batch/admission.h"

static uint64_t next_random(struct bat_bucket *b)
{
    /* xorshift64*: enough for jitter, and deterministic per seed. */
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * 2685821657736338717ull;
}

void bat_bucket_init(struct bat_bucket *b, double rate, double burst, uint64_t seed, int64_t now_ms)
{
    b->rate = b->max_rate = rate > 0 ? rate : 1;
    b->min_rate = b->max_rate / 64;
    b->burst = burst >= 1 ? burst : 1;
    /* Start with one token, not a full bucket: a cold start ramps up instead of bursting. */
    b->tokens = 1;
    b->last_ms = now_ms;
    b->blocked_until_ms = 0;
    b->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
    b->successes = 0;
}

static void refill(struct bat_bucket *b, int64_t now_ms)
{
    if (now_ms > b->last_ms) {
        b->tokens += (double)(now_ms - b->last_ms) * b->rate / 1000.0;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_ms = now_ms;
    }
}

int64_t bat_bucket_take(struct bat_bucket *b, int64_t now_ms)
{
    double interval_ms = 1000.0 / b->rate;
    int64_t jitter = (int64_t)((double)(next_random(b) >> 11) / 9007199254740992.0 * interval_ms);

    if (now_ms < b->blocked_until_ms)
        return b->blocked_until_ms - now_ms + jitter;
    refill(b, now_ms);
    if (b->tokens >= 1) {
        b->tokens -= 1;
        return 0;
    }
    return (int64_t)((1 - b->tokens) * interval_ms) + 1 + jitter;
}

void bat_bucket_throttled(struct bat_bucket *b, int64_t retry_after_ms, int64_t now_ms)
{
    b->rate /= 2;
    if (b->rate < b->min_rate)
        b->rate = b->min_rate;
    b->tokens = 0;
    b->last_ms = now_ms;
    b->successes = 0;
    if (retry_after_ms > 0 && now_ms + retry_after_ms > b->blocked_until_ms)
        b->blocked_until_ms = now_ms + retry_after_ms;
}

void bat_bucket_succeeded(struct bat_bucket *b)
{
    if (b->rate >= b->max_rate)
        return;
    if (++b->successes >= (uint32_t)b->burst) {
        b->rate += b->max_rate / 16;
        if (b->rate > b->max_rate)
            b->rate = b->max_rate;
        b->successes = 0;
    }
}
