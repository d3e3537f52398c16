/* clock.c — time sources and the one ISO 8601 formatter every module uses. Threads: any. */
#include "core/clock.h"

#include <stdio.h>
#include <time.h>

int64_t core_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t core_mono_ms(void)
{
    return core_mono_ns() / 1000000u;
}

uint64_t core_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *core_iso8601(char *buf, int64_t wall_ms)
{
    time_t secs = (time_t)(wall_ms / 1000);
    unsigned ms = (unsigned)(wall_ms % 1000);
    struct tm tm;
    size_t n;

    gmtime_r(&secs, &tm);
    n = strftime(buf, CORE_ISO8601_SIZE, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, CORE_ISO8601_SIZE - n, ".%03uZ", ms % 1000u);
    return buf;
}
