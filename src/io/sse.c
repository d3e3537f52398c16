/* sse.c — the text/event-stream decoder (io/decode.h), after the WHATWG HTML "event stream
 * interpretation": CRLF/LF/CR line ends (a CRLF split across chunks counts once), a leading BOM
 * skipped, "event"/"data"/"id"/"retry" fields, ':' comments, blank line = dispatch.
 * Pure; one thread at a time. */
#include "io/decode.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "evolve/common.h"

void io_sse_init(struct io_sse *d, size_t max_bytes)
{
    memset(d, 0, sizeof(*d));
    d->max = max_bytes ? max_bytes : (size_t)4 << 20;
    d->retry_ms = -1;
}

void io_sse_dispose(struct io_sse *d)
{
    free(d->line);
    free(d->data);
    free(d->event);
    free(d->id);
    memset(d, 0, sizeof(*d));
}

/* Makes room for n more bytes plus a NUL in *buf. */
static int reserve(char **buf, size_t *cap, size_t len, size_t n)
{
    if (len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 128;
        char *nb;

        while (c < len + n + 1)
            c *= 2;
        nb = realloc(*buf, c);
        if (!nb)
            return core_error_oom();
        *buf = nb;
        *cap = c;
    }
    return 0;
}

static int set_str(char **dst, size_t *dst_len, const char *v, size_t n)
{
    char *s = malloc(n + 1);

    if (!s)
        return core_error_oom();
    memcpy(s, v, n);
    s[n] = '\0';
    free(*dst);
    *dst = s;
    *dst_len = n;
    return 0;
}

static int dispatch(struct io_sse *d, io_sse_fn fn, void *payload)
{
    struct io_sse_event ev;
    int rc = 0;

    if (d->data_len) {
        d->data[--d->data_len] = '\0'; /* the LF after the last data line */
        ev.event = d->has_event && d->event_len ? d->event : "message";
        ev.data = d->data;
        ev.data_len = d->data_len;
        ev.id = d->id ? d->id : "";
        ev.retry_ms = d->retry_ms;
        rc = fn(&ev, payload);
    }
    d->data_len = 0;
    d->has_event = false;
    return rc;
}

static int field(struct io_sse *d, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len), *v;
    size_t nlen = colon ? (size_t)(colon - line) : len, vlen;
    size_t data_cap;

    v = colon ? colon + 1 : line + len;
    vlen = (size_t)(line + len - v);
    if (vlen && *v == ' ') {
        v++;
        vlen--;
    }
    if (nlen == 4 && !memcmp(line, "data", 4)) {
        if (d->data_len + vlen + 1 > d->max)
            return core_error_set(EVOLVE_EINVAL, "event stream: event data exceeds %zu bytes",
                                  d->max);
        data_cap = d->data_cap;
        if (reserve(&d->data, &data_cap, d->data_len, vlen + 1) < 0)
            return EVOLVE_ENOMEM;
        d->data_cap = data_cap;
        memcpy(d->data + d->data_len, v, vlen);
        d->data_len += vlen;
        d->data[d->data_len++] = '\n';
        d->data[d->data_len] = '\0';
    } else if (nlen == 5 && !memcmp(line, "event", 5)) {
        d->has_event = true;
        return set_str(&d->event, &d->event_len, v, vlen);
    } else if (nlen == 2 && !memcmp(line, "id", 2)) {
        if (!memchr(v, '\0', vlen))
            return set_str(&d->id, &d->id_len, v, vlen);
    } else if (nlen == 5 && !memcmp(line, "retry", 5)) {
        size_t i;
        int64_t ms = 0;

        for (i = 0; i < vlen && v[i] >= '0' && v[i] <= '9' && ms < INT64_MAX / 10 - 9; i++)
            ms = ms * 10 + (v[i] - '0');
        if (vlen && i == vlen)
            d->retry_ms = ms;
    }
    return 0;
}

static int line_done(struct io_sse *d, const char *line, size_t len, io_sse_fn fn, void *payload)
{
    if (!d->started) {
        d->started = true;
        if (len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
            line += 3;
            len -= 3;
        }
    }
    if (!len)
        return dispatch(d, fn, payload);
    if (line[0] == ':')
        return 0;
    return field(d, line, len);
}

int io_sse_feed(struct io_sse *d, const char *data, size_t len, io_sse_fn fn, void *payload)
{
    const char *p = data, *end = data + len;
    int rc;

    if (!len)
        return 0; /* keeps after_cr for the next chunk */
    if (d->after_cr && *p == '\n')
        p++; /* the LF of a CRLF split across chunks */
    d->after_cr = false;
    while (p < end) {
        const char *e = p;
        size_t n;

        while (e < end && *e != '\n' && *e != '\r')
            e++;
        n = (size_t)(e - p);
        if (d->line_len + n > d->max)
            return core_error_set(EVOLVE_EINVAL, "event stream: line exceeds %zu bytes", d->max);
        if (e == end) { /* partial line: keep it */
            if (reserve(&d->line, &d->line_cap, d->line_len, n) < 0)
                return EVOLVE_ENOMEM;
            memcpy(d->line + d->line_len, p, n);
            d->line_len += n;
            return 0;
        }
        if (d->line_len) {
            size_t total;

            if (reserve(&d->line, &d->line_cap, d->line_len, n) < 0)
                return EVOLVE_ENOMEM;
            total = d->line_len + n;

            memcpy(d->line + d->line_len, p, n);
            d->line_len = 0;
            rc = line_done(d, d->line, total, fn, payload);
        } else {
            rc = line_done(d, p, n, fn, payload);
        }
        if (rc < 0)
            return rc;
        if (*e == '\r') {
            if (e + 1 == end) {
                d->after_cr = true;
                return 0;
            }
            if (e[1] == '\n')
                e++;
        }
        p = e + 1;
    }
    return 0;
}

void io_sse_finish(struct io_sse *d)
{
    d->line_len = 0;
    d->data_len = 0;
    d->has_event = false;
    d->after_cr = false;
}
