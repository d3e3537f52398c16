/* core/clock.h — wall-clock timestamps (ISO 8601, UTC, milliseconds) and monotonic time. */
#ifndef EVOLVE_CORE_CLOCK_H
#define EVOLVE_CORE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define CORE_ISO8601_SIZE 32

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t core_wall_ms(void);

/* Monotonic milliseconds (CLOCK_MONOTONIC), for durations and deadlines. */
uint64_t core_mono_ms(void);

/* Monotonic nanoseconds, for latency measurements. */
uint64_t core_mono_ns(void);

/* Formats `wall_ms` as "2025-10-26T20:15:17.984Z" into buf (>= CORE_ISO8601_SIZE). Returns buf. */
char *core_iso8601(char *buf, int64_t wall_ms);

#endif
