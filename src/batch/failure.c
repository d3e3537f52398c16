/* failure.c — classifying a finished task into the batch failure classes. Threads: any. */
#include "batch/failure.h"

#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    bool infra, retry;
} table[BAT_FAILURE_COUNT] = {
#define BAT_FAILURE_ROW(e, n, i, r) [BAT_FAILURE_##e] = {n, i, r},
    BAT_FAILURE_MAP(BAT_FAILURE_ROW)
#undef BAT_FAILURE_ROW
};

const char *bat_failure_name(enum bat_failure f)
{
    return (unsigned)f < BAT_FAILURE_COUNT ? table[f].name : "internal";
}

enum bat_failure bat_failure_from_name(const char *name)
{
    int i;

    for (i = 0; name && i < BAT_FAILURE_COUNT; i++)
        if (!strcmp(table[i].name, name))
            return (enum bat_failure)i;
    return BAT_FAILURE_COUNT;
}

bool bat_failure_is_infrastructure(enum bat_failure f)
{
    return (unsigned)f < BAT_FAILURE_COUNT && table[f].infra;
}

bool bat_failure_is_retryable(enum bat_failure f, bool retry_agent_failures)
{
    if ((unsigned)f >= BAT_FAILURE_COUNT)
        return false;
    if (table[f].retry)
        return true;
    return retry_agent_failures &&
           (f == BAT_FAILURE_AGENT_CRASH || f == BAT_FAILURE_AGENT_TIMEOUT ||
            f == BAT_FAILURE_SCHEMA_INVALID);
}

static bool mentions_rate_limit(const char *text)
{
    static const char *const needles[] = {"rate limit",        "rate_limit", "ratelimit", "429",
                                          "too many requests", "overloaded", NULL};
    size_t i;

    if (!text)
        return false;
    for (i = 0; needles[i]; i++)
        if (strcasestr(text, needles[i]))
            return true;
    return false;
}

enum bat_failure bat_failure_classify(const struct bat_run_outcome *o)
{
    if (o->interrupted)
        return BAT_FAILURE_INTERRUPTED;
    if (o->internal_error)
        return BAT_FAILURE_INTERNAL;
    if (o->create_failed) {
        /* 429 and 503 mean "not now": capacity; other refusals are the provider rejecting us. */
        if (o->create_http_status == 429 || o->create_http_status == 503 ||
            mentions_rate_limit(o->error_text))
            return BAT_FAILURE_CAPACITY;
        return BAT_FAILURE_CREATE_REJECTED;
    }
    if (o->sandbox_lost)
        return BAT_FAILURE_SANDBOX_LOST;
    if (o->timed_out)
        return BAT_FAILURE_AGENT_TIMEOUT;
    if (o->exit_code != 0)
        return mentions_rate_limit(o->error_text) ? BAT_FAILURE_MODEL_RATE_LIMIT
                                                  : BAT_FAILURE_AGENT_CRASH;
    if (o->schema_invalid)
        return BAT_FAILURE_SCHEMA_INVALID;
    return BAT_FAILURE_NONE;
}
