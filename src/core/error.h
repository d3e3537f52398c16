/* core/error.h — setting the thread-local last error from inside the library. */
#ifndef EVOLVE_CORE_ERROR_H
#define EVOLVE_CORE_ERROR_H

#include "evolve/common.h"

/* Records `code` and a one-line message for evolve_error_last() and returns `code`, so callers
 * write `return core_error_set(EVOLVE_EINVAL, "%s:%zu: ...", ...)`. Never allocates.
 * @thread any */
int core_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The out-of-memory error: a static message, so reporting it allocates nothing. Returns
 * EVOLVE_ENOMEM. @thread any */
int core_error_oom(void);

/* Appends ": <current message>" context in front: "manifest.jsonl:3: " + previous message.
 * Returns the current code. @thread any */
int core_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
