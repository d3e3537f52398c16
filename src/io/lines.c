/* lines.c — the LF line splitter (io/decode.h): lines wholly inside a chunk are handed out
 * without copying; only a partial last line is buffered. Pure; one thread at a time. */
#include "io/decode.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "evolve/common.h"

void io_lines_init(struct io_lines *l, size_t max_line)
{
    memset(l, 0, sizeof(*l));
    l->max = max_line ? max_line : (size_t)1 << 20;
}

void io_lines_dispose(struct io_lines *l)
{
    free(l->buf);
    memset(l, 0, sizeof(*l));
}

static int append(struct io_lines *l, const char *p, size_t n)
{
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        char *nb;

        while (cap < l->len + n)
            cap *= 2;
        nb = realloc(l->buf, cap);
        if (!nb)
            return core_error_oom();
        l->buf = nb;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, p, n);
    l->len += n;
    return 0;
}

static int too_long(struct io_lines *l)
{
    return core_error_set(EVOLVE_EINVAL, "line %llu exceeds %zu bytes; dropped",
                          (unsigned long long)l->lineno + 1, l->max);
}

int io_lines_feed(struct io_lines *l, const char *data, size_t len, io_line_fn fn, void *payload)
{
    const char *p = data, *end = data + len;
    int rc = 0, cb;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

        if (l->skipping) { /* the rest of an over-long line, already reported */
            if (!nl)
                return rc;
            l->skipping = false;
            l->lineno++;
            p = nl + 1;
            continue;
        }
        if (l->len + n > l->max) {
            if (!rc)
                rc = too_long(l);
            l->len = 0;
            l->skipping = true;
            continue; /* the skipping branch consumes up to the LF */
        }
        if (!nl)
            return append(l, p, n) < 0 ? EVOLVE_ENOMEM : rc;
        if (l->len) { /* completes the buffered partial line */
            if (append(l, p, n) < 0)
                return EVOLVE_ENOMEM;
            cb = fn(l->buf, l->len, payload);
            l->len = 0;
        } else {
            cb = fn(p, n, payload);
        }
        l->lineno++;
        if (cb < 0)
            return cb;
        p = nl + 1;
    }
    return rc;
}

int io_lines_finish(struct io_lines *l, io_line_fn fn, void *payload)
{
    int cb = 0;

    if (l->len && !l->skipping) {
        cb = fn(l->buf, l->len, payload);
        l->lineno++;
    }
    l->len = 0;
    l->skipping = false;
    return cb < 0 ? cb : 0;
}
