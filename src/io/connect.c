/* connect.c — the Connect-protocol streaming envelope decoder (io/decode.h): 1 flag byte, a
 * 4-byte big-endian length, the message; flag 0x02 marks the end-of-stream message, a JSON object
 * with an optional "error" {code, message}. Messages wholly inside a chunk are handed out without
 * copying. Pure; one thread at a time. */
#include "io/decode.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "evolve/common.h"

void io_connect_init(struct io_connect *d, size_t max_message)
{
    memset(d, 0, sizeof(*d));
    d->max = max_message ? max_message : (size_t)16 << 20;
}

void io_connect_dispose(struct io_connect *d)
{
    free(d->buf);
    memset(d, 0, sizeof(*d));
}

void io_connect_header(uint8_t out[5], uint8_t flags, uint32_t len)
{
    out[0] = flags;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

static int deliver(struct io_connect *d, const char *data, size_t len, io_connect_fn fn,
                   void *payload)
{
    struct io_connect_msg m = {0};
    json_t *root = NULL, *err;
    json_error_t jerr;
    int rc;

    m.flags = d->hdr[0];
    m.data = data;
    m.len = len;
    m.end_stream = (m.flags & IO_CONNECT_FLAG_END_STREAM) != 0;
    if (m.end_stream) {
        d->ended = true;
        root = json_loadb(data, len, 0, &jerr);
        if (!json_is_object(root)) {
            json_decref(root);
            return core_error_set(EVOLVE_EPROTO,
                                  "connect stream: end-of-stream message is not a JSON object (%s)",
                                  root ? "not an object" : jerr.text);
        }
        err = json_object_get(root, "error");
        if (json_is_object(err)) {
            m.error_code = json_string_value(json_object_get(err, "code"));
            m.error_message = json_string_value(json_object_get(err, "message"));
            if (!m.error_code)
                m.error_code = "unknown"; /* an error object always means failure */
        }
    }
    rc = fn(&m, payload);
    json_decref(root);
    return rc;
}

int io_connect_feed(struct io_connect *d, const char *data, size_t len, io_connect_fn fn,
                    void *payload)
{
    const char *p = data, *end = data + len;
    int rc;

    while (p < end) {
        size_t take;

        if (d->ended)
            return core_error_set(EVOLVE_EPROTO, "connect stream: %zu bytes after end-of-stream",
                                  (size_t)(end - p));
        if (d->hdr_have < 5) {
            take = 5 - d->hdr_have;
            if (take > (size_t)(end - p))
                take = (size_t)(end - p);
            memcpy(d->hdr + d->hdr_have, p, take);
            d->hdr_have += take;
            p += take;
            if (d->hdr_have < 5)
                return 0;
            d->need = (size_t)d->hdr[1] << 24 | (size_t)d->hdr[2] << 16 | (size_t)d->hdr[3] << 8 |
                      (size_t)d->hdr[4];
            d->have = 0;
            if (d->hdr[0] & IO_CONNECT_FLAG_COMPRESSED)
                return core_error_set(EVOLVE_EUNSUPPORTED,
                                      "connect stream: compressed message (flags 0x%02x)",
                                      d->hdr[0]);
            if (d->need > d->max)
                return core_error_set(EVOLVE_EINVAL,
                                      "connect stream: message of %zu bytes exceeds %zu", d->need,
                                      d->max);
        }
        take = d->need - d->have;
        if (take > (size_t)(end - p))
            take = (size_t)(end - p);
        if (!d->have && take == d->need) { /* whole message in this chunk */
            d->hdr_have = 0;
            rc = deliver(d, p, take, fn, payload);
            p += take;
            if (rc < 0)
                return rc;
            continue;
        }
        if (d->cap < d->need) {
            char *nb = realloc(d->buf, d->need);

            if (!nb)
                return core_error_oom();
            d->buf = nb;
            d->cap = d->need;
        }
        memcpy(d->buf + d->have, p, take);
        d->have += take;
        p += take;
        if (d->have == d->need) {
            d->hdr_have = 0;
            rc = deliver(d, d->buf, d->need, fn, payload);
            if (rc < 0)
                return rc;
        }
    }
    /* A header for an empty message can complete exactly at the end of a chunk. */
    if (d->hdr_have == 5 && d->need == 0 && !d->ended) {
        d->hdr_have = 0;
        return deliver(d, "", 0, fn, payload);
    }
    return 0;
}

int io_connect_finish(struct io_connect *d)
{
    if (d->hdr_have)
        return core_error_set(
            EVOLVE_EPROTO, "connect stream: cut inside an envelope (%zu of %zu bytes)",
            d->hdr_have < 5 ? d->hdr_have : 5 + d->have, d->hdr_have < 5 ? (size_t)5 : 5 + d->need);
    if (!d->ended)
        return core_error_set(EVOLVE_EPROTO, "connect stream: ended without end-of-stream message");
    return 0;
}
