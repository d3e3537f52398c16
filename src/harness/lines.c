/* lines.c — the stdout line splitter of lines.h.
 * Threads: the thread owning the splitter (a sandbox actor, or the CLI's main thread). */
#include "harness/lines.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void hns_lines_init(struct hns_lines *s)
{
    memset(s, 0, sizeof(*s));
}

void hns_lines_dispose(struct hns_lines *s)
{
    free(s->buf);
    memset(s, 0, sizeof(*s));
}

static int append(struct hns_lines *s, const char *p, size_t n)
{
    if (s->len + n > s->cap) {
        size_t ncap = s->cap ? s->cap : 4096;
        char *nb;

        while (ncap < s->len + n)
            ncap *= 2;
        nb = realloc(s->buf, ncap);
        if (!nb)
            return core_error_oom();
        s->buf = nb;
        s->cap = ncap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    return 0;
}

/* After a long line, give a big buffer back so memory stays flat. */
static void shrink(struct hns_lines *s)
{
    if (s->cap > (1u << 20)) {
        free(s->buf);
        s->buf = NULL;
        s->cap = 0;
    }
}

int hns_lines_feed(struct hns_lines *s, const char *chunk, size_t n, hns_line_fn fn, void *arg)
{
    const char *p = chunk, *end = chunk + n;
    int rc;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        if (!nl)
            return append(s, p, (size_t)(end - p));
        if (s->len) {
            size_t len;

            if ((rc = append(s, p, (size_t)(nl - p))) < 0)
                return rc;
            len = s->len;
            s->len = 0;
            rc = fn(arg, s->buf, len);
            shrink(s);
        } else {
            rc = fn(arg, p, (size_t)(nl - p));
        }
        if (rc < 0)
            return rc;
        p = nl + 1;
    }
    return 0;
}

int hns_lines_finish(struct hns_lines *s, hns_line_fn fn, void *arg)
{
    int rc = 0;

    if (s->len) {
        size_t len = s->len;

        s->len = 0;
        rc = fn(arg, s->buf, len);
    }
    shrink(s);
    return rc;
}
