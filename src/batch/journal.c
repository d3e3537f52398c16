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

int bat_journal_append(struct bat_journal *j, const json_t *result)
{
    char *line = json_dumps(result, JSON_COMPACT);
    size_t len, off = 0;

    if (!line)
        return core_error_oom();
    len = strlen(line);
    line[len++] = '\n'; /* json_dumps left room: its NUL becomes the LF, and we write len bytes */
    while (off < len) {
        ssize_t n = write(j->fd, line + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(line);
            return core_error_set(EVOLVE_EIO, "%s: %s", j->path, strerror(errno));
        }
        off += (size_t)n;
    }
    free(line);
    if (fdatasync(j->fd) < 0)
        return core_error_set(EVOLVE_EIO, "%s: fdatasync: %s", j->path, strerror(errno));
    return 0;
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
