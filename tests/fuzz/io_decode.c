/* libFuzzer target for the io decoders: any input, split at a point the input chooses, must give
 * the same events and the same first error as one whole feed, and never crash or leak.
 * Build: make fuzz (clang). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/common.h"
#include "io/decode.h"

struct digest {
    uint64_t h;
    unsigned n;
};

static void mix(struct digest *d, const void *p, size_t len)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < len; i++)
        d->h = (d->h ^ b[i]) * 0x100000001b3ULL;
    d->h = (d->h ^ 0xff) * 0x100000001b3ULL; /* field separator */
    d->n++;
}

static int on_line(const char *line, size_t len, void *payload)
{
    mix(payload, line, len);
    return 0;
}

static int on_sse(const struct io_sse_event *ev, void *payload)
{
    mix(payload, ev->event, strlen(ev->event));
    mix(payload, ev->data, ev->data_len);
    mix(payload, ev->id, strlen(ev->id));
    mix(payload, &ev->retry_ms, sizeof(ev->retry_ms));
    return 0;
}

static int on_msg(const struct io_connect_msg *m, void *payload)
{
    mix(payload, &m->flags, 1);
    mix(payload, m->data, m->len);
    if (m->error_code)
        mix(payload, m->error_code, strlen(m->error_code));
    if (m->error_message)
        mix(payload, m->error_message, strlen(m->error_message));
    return 0;
}

/* Feeds data in two pieces (split == size: one piece); returns the digest and first error. */
static int run(int which, const char *data, size_t size, size_t split, struct digest *d)
{
    struct io_lines l;
    struct io_sse s;
    struct io_connect c;
    int rc = 0, rc2;

    d->h = 0xcbf29ce484222325ULL;
    d->n = 0;
    switch (which) {
    case 0: /* lines keep going after an over-long line: compare the union of errors */
        io_lines_init(&l, 64);
        rc = io_lines_feed(&l, data, split, on_line, d);
        rc2 = io_lines_feed(&l, data + split, size - split, on_line, d);
        rc = rc ? rc : rc2;
        rc2 = io_lines_finish(&l, on_line, d);
        io_lines_dispose(&l);
        return rc ? rc : rc2;
    case 1:
        io_sse_init(&s, 128);
        rc = io_sse_feed(&s, data, split, on_sse, d);
        if (!rc)
            rc = io_sse_feed(&s, data + split, size - split, on_sse, d);
        io_sse_finish(&s);
        io_sse_dispose(&s);
        return rc;
    default:
        io_connect_init(&c, 256);
        rc = io_connect_feed(&c, data, split, on_msg, d);
        if (!rc)
            rc = io_connect_feed(&c, data + split, size - split, on_msg, d);
        if (!rc)
            rc = io_connect_finish(&c);
        io_connect_dispose(&c);
        return rc;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t split;
    int which;

    if (size < 2)
        return 0;
    which = data[0] % 3;
    split = (size_t)data[1] * (size - 2) / 255;
    data += 2;
    size -= 2;
    {
        struct digest whole, parts;
        int rw = run(which, (const char *)data, size, size, &whole);
        int rp = run(which, (const char *)data, size, split, &parts);

        if (rw != rp || whole.h != parts.h || whole.n != parts.n)
            abort(); /* chunking changed the output */
    }
    return 0;
}
