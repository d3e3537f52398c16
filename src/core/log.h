/* core/log.h — leveled logging to stderr with secrets redacted at this layer. */
#ifndef EVOLVE_CORE_LOG_H
#define EVOLVE_CORE_LOG_H

#include <stddef.h>

enum core_log_level { CORE_LOG_DEBUG = 0, CORE_LOG_INFO = 1, CORE_LOG_WARN = 2, CORE_LOG_OFF = 3 };

/* Writes "evolve: <level>: <message>\n" to stderr when `level` is at or above EVOLVE_LOG
 * (debug|info|warn|off, default warn). Secrets are redacted first (core_log_redact).
 * @thread any (one write(2) per line, so lines never interleave) */
void core_log(enum core_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define core_log_debug(...) core_log(CORE_LOG_DEBUG, __VA_ARGS__)
#define core_log_info(...)  core_log(CORE_LOG_INFO, __VA_ARGS__)
#define core_log_warn(...)  core_log(CORE_LOG_WARN, __VA_ARGS__)

/* True when `level` would be printed; lets callers skip building costly messages. */
int core_log_enabled(enum core_log_level level);

/* Redacts in place, within `len` bytes of `text`: the value after any of the header or key
 * names that carry credentials (Authorization, X-API-Key, X-Access-Token, api_key, apiKey,
 * token, *_API_KEY=) and anything shaped like a provider key (sk-..., e2b_..., dtn_...).
 * Each secret becomes "[REDACTED]" truncated to its own length. Returns `text`. */
char *core_log_redact(char *text, size_t len);

#endif
