/* sessionlog.c — the local JSONL session log: _meta, _prompt, raw lines, _sessionEnd.
 * Owns: the file name and line formats of seed 002 and secret masking of the written bytes.
 * Does not own: when lines arrive (a session-log subscriber on the event bus feeds it, so the
 * agent's stream never waits for the disk). Threads: one writer at a time (its subscriber). */
#include "core/sessionlog.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

struct core_sessionlog {
    FILE *f;
    char *path;
    json_t *meta;   /* written before the first line, then NULL */
    char **secrets; /* NULL-terminated copies */
    int ended;
};

static int mkdir_p(const char *path)
{
    char tmp[4096];
    size_t i, n = strlen(path);

    if (n >= sizeof(tmp))
        return -1;
    memcpy(tmp, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];

            tmp[i] = '\0';
            if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                return -1;
            tmp[i] = c;
        }
    }
    return 0;
}

int core_session_tag_new(char *buf, size_t size, const char *prefix)
{
    unsigned char rnd[8];
    size_t i, off = 0;
    int n;

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        /* getrandom only fails before the pool is seeded; fall back to time-derived bytes. */
        uint64_t t = core_mono_ns() ^ (uint64_t)getpid() << 32;
        memcpy(rnd, &t, sizeof(rnd));
    }
    n = snprintf(buf, size, "%s-", prefix && *prefix ? prefix : "evolve");
    if (n < 0 || (size_t)n + 17 > size)
        return core_error_set(EVOLVE_EINVAL, "session tag buffer too small");
    off = (size_t)n;
    for (i = 0; i < sizeof(rnd); i++)
        off += (size_t)snprintf(buf + off, size - off, "%02x", rnd[i]);
    return 0;
}

static void safe_component(char *s)
{
    for (; *s; s++)
        if (*s == '/' || *s == '\0')
            *s = '_';
}

int core_sessionlog_open(struct core_sessionlog **out, const struct core_sessionlog_meta *m)
{
    struct core_sessionlog *log = calloc(1, sizeof(*log));
    char dirbuf[2048], ts[CORE_ISO8601_SIZE], fname[1024], *c;
    const char *dir = m->dir;
    int64_t now = core_wall_ms();
    size_t i, nsec = 0;
    int rc = 0;

    if (!log)
        return core_error_oom();
    if (!dir)
        dir = getenv("EVOLVE_SESSION_LOG_DIR");
    if (!dir || !*dir) {
        const char *home = getenv("HOME");
        snprintf(dirbuf, sizeof(dirbuf), "%s/.evolve-sdk/observability/sessions",
                 home && *home ? home : ".");
        dir = dirbuf;
    }
    core_iso8601(ts, now);
    log->meta = json_pack("{s:{s:s, s:s, s:s, s:s?, s:s, s:s}}", "_meta", "tag", m->tag, "provider",
                          m->provider, "agent", m->agent, "model", m->model, "sandbox_id",
                          m->sandbox_id, "timestamp", ts);
    for (c = ts; *c; c++)
        if (*c == ':' || *c == '.')
            *c = '-';
    snprintf(fname, sizeof(fname), "%s_%s_%s_%s_%s.jsonl", m->tag, m->provider, m->sandbox_id,
             m->agent, ts);
    safe_component(fname);
    log->path = malloc(strlen(dir) + strlen(fname) + 2);
    while (m->secrets && m->secrets[nsec])
        nsec++;
    log->secrets = calloc(nsec + 1, sizeof(char *));
    if (!log->meta || !log->path || !log->secrets) {
        rc = core_error_oom();
        goto fail;
    }
    for (i = 0; i < nsec; i++)
        if (*m->secrets[i] && !(log->secrets[i] = strdup(m->secrets[i]))) {
            rc = core_error_oom();
            goto fail;
        }
    snprintf(log->path, strlen(dir) + strlen(fname) + 2, "%s/%s", dir, fname);
    if (mkdir_p(dir) < 0 || !(log->f = fopen(log->path, "a"))) {
        rc = core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
        goto fail;
    }
    /* 64 KiB buffer: a burst of agent lines becomes one write(2). */
    setvbuf(log->f, NULL, _IOFBF, 1 << 16);
    *out = log;
    return 0;
fail:
    core_sessionlog_free(log);
    return rc;
}

static int write_meta(struct core_sessionlog *log)
{
    if (!log->meta)
        return 0;
    if (json_dumpf(log->meta, log->f, JSON_COMPACT) < 0 || fputc('\n', log->f) == EOF)
        return core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
    json_decref(log->meta);
    log->meta = NULL;
    return 0;
}

static int write_json_line(struct core_sessionlog *log, json_t *obj)
{
    int rc;

    if (!obj)
        return core_error_oom();
    rc = write_meta(log);
    if (rc == 0 && (json_dumpf(obj, log->f, JSON_COMPACT) < 0 || fputc('\n', log->f) == EOF))
        rc = core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
    json_decref(obj);
    return rc;
}

int core_sessionlog_prompt(struct core_sessionlog *log, const char *text)
{
    if (log->ended)
        return 0;
    return write_json_line(log, json_pack("{s:{s:s}}", "_prompt", "text", text ? text : ""));
}

/* Writes line[0..len) replacing every occurrence of a secret value. */
static int write_masked(struct core_sessionlog *log, const char *line, size_t len)
{
    size_t i = 0, k;

    while (i < len) {
        size_t best = 0;

        for (k = 0; log->secrets[k]; k++) {
            size_t sl = strlen(log->secrets[k]);
            if (sl && sl <= len - i && !memcmp(line + i, log->secrets[k], sl) && sl > best)
                best = sl;
        }
        if (best) {
            fputs("[REDACTED]", log->f);
            i += best;
        } else {
            fputc(line[i++], log->f);
        }
    }
    return 0;
}

int core_sessionlog_line(struct core_sessionlog *log, const char *line, size_t len)
{
    size_t i;
    int rc;

    if (log->ended)
        return 0;
    for (i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            break;
    if (i == len)
        return 0;
    rc = write_meta(log);
    if (rc < 0)
        return rc;
    if (log->secrets[0])
        write_masked(log, line, len);
    else if (fwrite(line, 1, len, log->f) != len)
        return core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
    if (fputc('\n', log->f) == EOF)
        return core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
    return 0;
}

int core_sessionlog_flush(struct core_sessionlog *log, int durable)
{
    if (!log->f)
        return 0;
    if (fflush(log->f) != 0 || (durable && fsync(fileno(log->f)) != 0))
        return core_error_set(EVOLVE_EIO, "session log %s: %s", log->path, strerror(errno));
    return 0;
}

int core_sessionlog_end(struct core_sessionlog *log)
{
    char ts[CORE_ISO8601_SIZE];
    int rc;

    if (log->ended)
        return 0;
    rc = write_json_line(
        log, json_pack("{s:{s:s}}", "_sessionEnd", "timestamp", core_iso8601(ts, core_wall_ms())));
    log->ended = 1;
    if (rc == 0)
        rc = core_sessionlog_flush(log, 1);
    return rc;
}

const char *core_sessionlog_path(const struct core_sessionlog *log)
{
    return log->path;
}

void core_sessionlog_free(struct core_sessionlog *log)
{
    size_t i;

    if (!log)
        return;
    if (log->f)
        fclose(log->f);
    free(log->path);
    json_decref(log->meta);
    for (i = 0; log->secrets && log->secrets[i]; i++)
        free(log->secrets[i]);
    free(log->secrets);
    free(log);
}
