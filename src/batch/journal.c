/* journal.c — the batch results journal: atomic line appends and crash-tolerant reading.
 * Owns: results.jsonl's format on disk (one compact JSON object per line) and its recovery
 * rules. Does not own: what a result contains (the scheduler builds it).
 * Threads: one writer (the scheduler actor). */
#include "batch/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

struct bat_journal {
    int fd;
    char *path;
};

/* Reads the whole file; returns its bytes (malloc'd, NUL-terminated) and size. */
static int read_all(int fd, char **buf, size_t *len)
{
    struct stat st;
    size_t off = 0;

    if (fstat(fd, &st) < 0)
        return -1;
    *buf = malloc((size_t)st.st_size + 1);
    if (!*buf)
        return core_error_oom();
    while (off < (size_t)st.st_size) {
        ssize_t n = pread(fd, *buf + off, (size_t)st.st_size - off, (off_t)off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    (*buf)[off] = '\0';
    *len = off;
    return 0;
}

int bat_journal_open(struct bat_journal **out, const char *outdir, json_t **done, int *torn_out,
                     size_t *bad_lines_out)
{
    struct bat_journal *j = calloc(1, sizeof(*j));
    char *buf = NULL, *p, *end;
    size_t len = 0, bad = 0, n;
    int rc;

    *torn_out = 0;
    *bad_lines_out = 0;
    *done = json_object();
    if (!j || !*done) {
        free(j);
        json_decref(*done);
        *done = NULL;
        return core_error_oom();
    }
    n = strlen(outdir) + sizeof("/results.jsonl");
    j->path = malloc(n);
    if (!j->path) {
        rc = core_error_oom();
        goto fail;
    }
    snprintf(j->path, n, "%s/results.jsonl", outdir);
    j->fd = open(j->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        rc = core_error_set(EVOLVE_EIO, "%s: %s", j->path, strerror(errno));
        goto fail;
    }
    rc = read_all(j->fd, &buf, &len);
    if (rc < 0) {
        if (rc != EVOLVE_ENOMEM)
            rc = core_error_set(EVOLVE_EIO, "%s: %s", j->path, strerror(errno));
        goto fail;
    }
    end = buf + len;
    for (p = buf; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        json_error_t err;
        json_t *obj;
        const json_t *id;

        if (!nl) {
            /* A torn tail: the process died inside an append. Cut it so the next append starts
             * on a line boundary; the task it described reruns. */
            if (ftruncate(j->fd, (off_t)(p - buf)) < 0) {
                rc = core_error_set(EVOLVE_EIO, "%s: cannot cut torn line: %s", j->path,
                                    strerror(errno));
                goto fail;
            }
            *torn_out = 1;
            break;
        }
        obj = json_loadb(p, (size_t)(nl - p), 0, &err);
        id = json_object_get(obj, "id");
        if (json_is_string(id)) {
            if (json_object_set(*done, json_string_value(id), obj) < 0) {
                json_decref(obj);
                rc = core_error_oom();
                goto fail;
            }
        } else if (nl > p) {
            bad++;
        }
        json_decref(obj);
        p = nl + 1;
    }
    free(buf);
    *bad_lines_out = bad;
    *out = j;
    return 0;
fail:
    free(buf);
    json_decref(*done);
    *done = NULL;
    bat_journal_free(j);
    return rc;
}

int bat_journal_append_many(struct bat_journal *j, json_t *const *results, size_t count)
{
    char *buf = NULL;
    size_t len = 0, cap = 0, off = 0, i;

    for (i = 0; i < count; i++) {
        char *line = json_dumps(results[i], JSON_COMPACT);
        size_t n;

        if (!line) {
            free(buf);
            return core_error_oom();
        }
        n = strlen(line);
        if (len + n + 1 > cap) {
            size_t ncap = (len + n + 1) * 2;
            char *nb = realloc(buf, ncap);

            if (!nb) {
                free(line);
                free(buf);
                return core_error_oom();
            }
            buf = nb;
            cap = ncap;
        }
        memcpy(buf + len, line, n);
        len += n;
        buf[len++] = '\n';
        free(line);
    }
    /* One write(2) for the group, then one fdatasync: after a crash the file ends with whole
     * lines, or with a torn tail that the next open cuts (those tasks rerun). */
    while (off < len) {
        ssize_t n = write(j->fd, buf + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return core_error_set(EVOLVE_EIO, "%s: %s", j->path, strerror(errno));
        }
        off += (size_t)n;
    }
    free(buf);
    if (fdatasync(j->fd) < 0)
        return core_error_set(EVOLVE_EIO, "%s: fdatasync: %s", j->path, strerror(errno));
    return 0;
}

int bat_journal_append(struct bat_journal *j, const json_t *result)
{
    json_t *one = (json_t *)result;

    return bat_journal_append_many(j, &one, 1);
}

void bat_journal_free(struct bat_journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    free(j->path);
    free(j);
}
