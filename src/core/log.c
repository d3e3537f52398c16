/* log.c — stderr logging with levels from EVOLVE_LOG and redaction of credentials.
 * Owns: the level (read once from the environment) and the redaction rules; every log line in
 * the library goes through core_log so no caller can forget to redact.
 * Threads: any. */
#include "core/log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static atomic_int log_level = -1; /* -1: not read yet */

static int level_from_env(void)
{
    const char *v = getenv("EVOLVE_LOG");

    if (!v || !*v)
        return CORE_LOG_WARN;
    if (!strcasecmp(v, "debug"))
        return CORE_LOG_DEBUG;
    if (!strcasecmp(v, "info"))
        return CORE_LOG_INFO;
    if (!strcasecmp(v, "off") || !strcasecmp(v, "none"))
        return CORE_LOG_OFF;
    return CORE_LOG_WARN;
}

int core_log_enabled(enum core_log_level level)
{
    /* relaxed: the level is a hint; two threads reading the env at once agree on the answer. */
    int cur = atomic_load_explicit(&log_level, memory_order_relaxed);

    if (cur < 0) {
        cur = level_from_env();
        atomic_store_explicit(&log_level, cur, memory_order_relaxed);
    }
    return (int)level >= cur && level != CORE_LOG_OFF;
}

static const char *const secret_keys[] = {
    "authorization", "x-api-key", "x-access-token", "api_key", "apikey", "api-key",
    "access_token",  "password",  "secret",         "_token",  "bearer",
};

static const char *const secret_prefixes[] = {"sk-", "e2b_", "dtn_", "ghp_", "AIza"};

static void mask(char *p, size_t n)
{
    static const char tag[] = "[REDACTED]";
    size_t i;

    for (i = 0; i < n; i++)
        p[i] = i < sizeof(tag) - 1 ? tag[i] : '*';
}

/* Length of the value that follows a key at `p`: skips separators (": =\"'" and "Bearer "),
 * then runs to whitespace, quote, comma or brace. Returns the offset of the value in *skip. */
static size_t value_span(const char *p, const char *end, size_t *skip)
{
    const char *s = p, *v;

    while (s < end && (*s == ':' || *s == '=' || *s == ' ' || *s == '"' || *s == '\''))
        s++;
    if (end - s > 7 && !strncasecmp(s, "bearer ", 7))
        s += 7;
    v = s;
    while (v < end && !isspace((unsigned char)*v) && *v != '"' && *v != '\'' && *v != ',' &&
           *v != '}' && *v != '&')
        v++;
    *skip = (size_t)(s - p);
    return (size_t)(v - s);
}

char *core_log_redact(char *text, size_t len)
{
    const char *end = text + len;
    size_t i, k;

    for (i = 0; i < len; i++) {
        char *p = text + i;

        for (k = 0; k < sizeof(secret_keys) / sizeof(secret_keys[0]); k++) {
            size_t kl = strlen(secret_keys[k]), skip, n;

            if ((size_t)(end - p) <= kl || strncasecmp(p, secret_keys[k], kl))
                continue;
            /* only when a separator follows the key: "token_count" is not a secret. */
            if (p[kl] != ':' && p[kl] != '=' && p[kl] != '"' && p[kl] != ' ' && p[kl] != '\'')
                continue;
            n = value_span(p + kl, end, &skip);
            if (n > 0)
                mask(p + kl + skip, n);
            i += kl + skip + n;
            break;
        }
        if (i >= len)
            break;
        p = text + i;
        for (k = 0; k < sizeof(secret_prefixes) / sizeof(secret_prefixes[0]); k++) {
            size_t pl = strlen(secret_prefixes[k]), n = 0;

            if ((size_t)(end - p) <= pl || strncmp(p, secret_prefixes[k], pl))
                continue;
            if (i > 0 && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '-'))
                continue;
            while (p + pl + n < end &&
                   (isalnum((unsigned char)p[pl + n]) || p[pl + n] == '-' || p[pl + n] == '_'))
                n++;
            if (n >= 8) {
                mask(p, pl + n);
                i += pl + n;
            }
            break;
        }
    }
    return text;
}

void core_log(enum core_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "off"};
    char line[2048];
    int head, n;
    va_list ap;

    if (!core_log_enabled(level))
        return;
    head = snprintf(line, sizeof(line), "evolve: %s: ", names[level]);
    va_start(ap, fmt);
    n = vsnprintf(line + head, sizeof(line) - (size_t)head - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    n += head;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    core_log_redact(line + head, (size_t)n - (size_t)head);
    line[n++] = '\n';
    /* one write per line; a short write to stderr is not worth retrying. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}
