/* core/sessionlog.h — the local JSONL session log of seed 002 ("Observability"). */
#ifndef EVOLVE_CORE_SESSIONLOG_H
#define EVOLVE_CORE_SESSIONLOG_H

#include <stddef.h>
#include <stdint.h>

struct core_sessionlog;

struct core_sessionlog_meta {
    const char *dir; /* NULL: $EVOLVE_SESSION_LOG_DIR, else ~/.evolve-sdk/observability/sessions */
    const char *tag; /* "<prefix>-<16 hex>" */
    const char *provider; /* "local", "e2b", ... */
    const char *sandbox_id;
    const char *agent;
    const char *model;          /* may be NULL: omitted from _meta */
    const char *const *secrets; /* NULL-terminated exact values never to be written; may be NULL */
};

/* Creates <dir>/<tag>_<provider>_<sandboxId>_<agent>_<ts>.jsonl (ts = creation time, ISO 8601 with
 * ':' and '.' replaced by '-'), writing nothing until the first line, which is preceded by the
 * single _meta line. Returns 0, EVOLVE_EIO naming the path, or EVOLVE_ENOMEM. */
int core_sessionlog_open(struct core_sessionlog **out, const struct core_sessionlog_meta *meta);

/* {"_prompt":{"text":...}}. */
int core_sessionlog_prompt(struct core_sessionlog *log, const char *text);

/* One raw agent stdout line, verbatim (no LF in `line`); blank lines are skipped; any configured
 * secret value inside is replaced by [REDACTED]. */
int core_sessionlog_line(struct core_sessionlog *log, const char *line, size_t len);

/* Pushes buffered lines to the kernel (the writes are buffered so appending never costs a
 * syscall per line); fsync when `durable`. */
int core_sessionlog_flush(struct core_sessionlog *log, int durable);

/* Writes {"_sessionEnd":{"timestamp":...}}, flushes and closes. Later calls are ignored. */
int core_sessionlog_end(struct core_sessionlog *log);

/* The file's path (borrowed, valid until _free). */
const char *core_sessionlog_path(const struct core_sessionlog *log);

/* Closes without _sessionEnd (a run that continues later keeps its file open). NULL is a no-op. */
void core_sessionlog_free(struct core_sessionlog *log);

/* Writes "<prefix|evolve>-<16 lowercase hex>" from the kernel's random source into buf.
 * Returns 0 or EVOLVE_EINVAL when buf is too small. */
int core_session_tag_new(char *buf, size_t size, const char *prefix);

#endif
