/* error.c — the per-thread last error behind evolve_error_last(), and evolve_strerror().
 * Owns: one fixed buffer per thread; nothing here allocates, so OOM can always be reported.
 * Threads: any; each thread sees only its own error. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local struct {
    evolve_error_t err;
    char buf[512];
} tls_last = {{EVOLVE_OK, "no error"}, {0}};

const evolve_error_t *evolve_error_last(void)
{
    return &tls_last.err;
}

void evolve_error_clear(void)
{
    tls_last.err.code = EVOLVE_OK;
    tls_last.err.message = "no error";
}

int core_error_set(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(tls_last.buf, sizeof(tls_last.buf), fmt, ap);
    va_end(ap);
    tls_last.err.code = code;
    tls_last.err.message = tls_last.buf;
    return code;
}

int core_error_oom(void)
{
    tls_last.err.code = EVOLVE_ENOMEM;
    tls_last.err.message = "out of memory";
    return EVOLVE_ENOMEM;
}

int core_error_prefix(const char *fmt, ...)
{
    char prev[sizeof(tls_last.buf)];
    size_t n;
    va_list ap;

    snprintf(prev, sizeof(prev), "%s", tls_last.err.message);
    va_start(ap, fmt);
    vsnprintf(tls_last.buf, sizeof(tls_last.buf), fmt, ap);
    va_end(ap);
    n = strlen(tls_last.buf);
    snprintf(tls_last.buf + n, sizeof(tls_last.buf) - n, "%s", prev);
    tls_last.err.message = tls_last.buf;
    return tls_last.err.code;
}

const char *evolve_strerror(int code)
{
    switch (code) {
    case EVOLVE_OK:
        return "success";
#define EVOLVE_ERRNO_CASE(name, value, text)                                                       \
    case EVOLVE_##name:                                                                            \
        return text;
        EVOLVE_ERRNO_MAP(EVOLVE_ERRNO_CASE)
#undef EVOLVE_ERRNO_CASE
    default:
        return "unknown error";
    }
}

const char *evolve_version(void)
{
    return EVOLVE_VERSION_STRING;
}
