/* Tests of the incremental decoders (io/decode.h): each must give the same output whatever the
 * chunking, checked at every split point (and byte by byte), plus their error cases. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/common.h"
#include "io/decode.h"

/* A growing text log of what a decoder produced. */
struct out {
    char buf[16384];
    size_t len;
    int stop_after; /* callbacks return EVOLVE_EUSER once this many were seen (0 = never) */
    int seen;
};

static void out_add(struct out *o, const char *s, size_t n)
{
    cr_assert_lt(o->len + n, sizeof(o->buf), "test log overflow");
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static int on_line(const char *line, size_t len, void *payload)
{
    struct out *o = payload;

    out_add(o, "[", 1);
    out_add(o, line, len);
    out_add(o, "]", 1);
    return o->stop_after && ++o->seen >= o->stop_after ? EVOLVE_EUSER : 0;
}

static void lines_run(const char *in, size_t len, size_t split1, size_t split2, struct out *o,
                      size_t max)
{
    struct io_lines l;

    memset(o, 0, sizeof(*o));
    io_lines_init(&l, max);
    cr_assert_eq(io_lines_feed(&l, in, split1, on_line, o), 0);
    cr_assert_eq(io_lines_feed(&l, in + split1, split2 - split1, on_line, o), 0);
    cr_assert_eq(io_lines_feed(&l, in + split2, len - split2, on_line, o), 0);
    cr_assert_eq(io_lines_finish(&l, on_line, o), 0);
    io_lines_dispose(&l);
}

TestSuite(io_decode, .timeout = 30);

Test(io_decode, lines_same_output_at_every_split_point)
{
    static const char in[] = "alpha\nbeta\r\n\n{\"x\":1}\nlast without newline";
    size_t len = sizeof(in) - 1, i, j;
    struct out whole, parts;

    lines_run(in, len, len, len, &whole, 0);
    cr_assert_str_eq(whole.buf, "[alpha][beta\r][][{\"x\":1}][last without newline]");
    for (i = 0; i <= len; i++)
        for (j = i; j <= len; j++) {
            lines_run(in, len, i, j, &parts, 0);
            cr_assert_str_eq(parts.buf, whole.buf, "splits at %zu and %zu", i, j);
        }
}

Test(io_decode, lines_over_long_line_dropped_and_reported_then_next_line_delivered)
{
    struct io_lines l;
    struct out o = {0};
    size_t i;
    static const char in[] = "ok\n0123456789ABCDEF\nnext\n";

    /* Whole, then byte by byte: the long line is reported once, the rest survives. */
    io_lines_init(&l, 8);
    cr_assert_eq(io_lines_feed(&l, in, sizeof(in) - 1, on_line, &o), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "line 2 exceeds 8 bytes"), "%s",
                       evolve_error_last()->message);
    cr_assert_str_eq(o.buf, "[ok][next]");
    io_lines_dispose(&l);

    memset(&o, 0, sizeof(o));
    io_lines_init(&l, 8);
    {
        int errors = 0;

        for (i = 0; i < sizeof(in) - 1; i++)
            errors += io_lines_feed(&l, in + i, 1, on_line, &o) == EVOLVE_EINVAL;
        cr_assert_eq(errors, 1, "reported %d times", errors);
    }
    cr_assert_str_eq(o.buf, "[ok][next]");
    io_lines_dispose(&l);
}

Test(io_decode, lines_callback_error_stops_feed_with_its_code)
{
    struct io_lines l;
    struct out o = {0};

    o.stop_after = 2;
    io_lines_init(&l, 0);
    cr_assert_eq(io_lines_feed(&l, "a\nb\nc\n", 6, on_line, &o), EVOLVE_EUSER);
    cr_assert_str_eq(o.buf, "[a][b]");
    io_lines_dispose(&l);
}

/* ---- SSE ------------------------------------------------------------------------------------- */

static int on_sse(const struct io_sse_event *ev, void *payload)
{
    struct out *o = payload;
    char line[1024];
    int n = snprintf(line, sizeof(line), "{%s|%s|%s|%lld}", ev->event, ev->data, ev->id,
                     (long long)ev->retry_ms);

    cr_assert_eq(strlen(ev->data), ev->data_len);
    out_add(o, line, (size_t)n);
    return 0;
}

static void sse_run(const char *in, size_t len, size_t split1, size_t split2, struct out *o)
{
    struct io_sse d;

    memset(o, 0, sizeof(*o));
    io_sse_init(&d, 0);
    cr_assert_eq(io_sse_feed(&d, in, split1, on_sse, o), 0);
    cr_assert_eq(io_sse_feed(&d, in + split1, split2 - split1, on_sse, o), 0);
    cr_assert_eq(io_sse_feed(&d, in + split2, len - split2, on_sse, o), 0);
    io_sse_finish(&d);
    io_sse_dispose(&d);
}

Test(io_decode, sse_fields_multiline_data_and_line_endings_at_every_split_point)
{
    static const char in[] = "\xEF\xBB\xBF: a comment\r\n"
                             "event: message_start\r\n"
                             "data: {\"a\":1}\r\n\r\n"
                             "data: line one\n"
                             "data:line two\n"
                             "id: 42\n"
                             "retry: 1500\n\n"
                             "event: ping\rdata\r\r"
                             "retry: soon\n"
                             "data: after bad retry\n\n"
                             "event: ignored-no-data\n\n"
                             "data: unterminated";
    size_t len = sizeof(in) - 1, i, j;
    struct out whole, parts;

    sse_run(in, len, len, len, &whole);
    cr_assert_str_eq(whole.buf, "{message_start|{\"a\":1}||-1}"
                                "{message|line one\nline two|42|1500}"
                                "{ping||42|1500}"
                                "{message|after bad retry|42|1500}");
    for (i = 0; i <= len; i++)
        for (j = i; j <= len; j++) {
            sse_run(in, len, i, j, &parts);
            cr_assert_str_eq(parts.buf, whole.buf, "splits at %zu and %zu", i, j);
        }
}

Test(io_decode, sse_event_larger_than_cap_fails_naming_the_cap)
{
    struct io_sse d;
    struct out o = {0};
    static const char in[] = "data: 0123456789\ndata: 0123456789\n\n";

    io_sse_init(&d, 16);
    cr_assert_eq(io_sse_feed(&d, in, sizeof(in) - 1, on_sse, &o), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "16 bytes"), "%s",
                       evolve_error_last()->message);
    io_sse_dispose(&d);
}

/* ---- Connect envelopes ----------------------------------------------------------------------- */

static int on_msg(const struct io_connect_msg *m, void *payload)
{
    struct out *o = payload;
    char line[512];
    int n = snprintf(line, sizeof(line), "<%02x:%.*s%s%s%s%s>", m->flags, (int)m->len, m->data,
                     m->end_stream ? "|end" : "", m->error_code ? "|" : "",
                     m->error_code ? m->error_code : "", m->error_message ? m->error_message : "");

    out_add(o, line, (size_t)n);
    return 0;
}

static size_t envelope(char *out, uint8_t flags, const char *msg)
{
    size_t n = strlen(msg);

    io_connect_header((uint8_t *)out, flags, (uint32_t)n);
    memcpy(out + 5, msg, n);
    return 5 + n;
}

static size_t stream_with_error(char *buf)
{
    size_t len = 0;

    len += envelope(buf + len, 0, "{\"text\":\"hello\"}");
    len += envelope(buf + len, 0, "");
    len += envelope(buf + len, 0, "{\"text\":\"world\"}");
    len += envelope(buf + len, IO_CONNECT_FLAG_END_STREAM,
                    "{\"error\":{\"code\":\"resource_exhausted\",\"message\":\"slow down\"}}");
    return len;
}

Test(io_decode, connect_envelopes_same_output_at_every_split_point)
{
    char in[512];
    size_t len = stream_with_error(in), i, j;
    struct out whole, parts;
    struct io_connect d;

    memset(&whole, 0, sizeof(whole));
    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &whole), 0);
    cr_assert_eq(io_connect_finish(&d), 0);
    io_connect_dispose(&d);
    cr_assert_str_eq(whole.buf, "<00:{\"text\":\"hello\"}><00:><00:{\"text\":\"world\"}>"
                                "<02:{\"error\":{\"code\":\"resource_exhausted\",\"message\":"
                                "\"slow down\"}}|end|resource_exhaustedslow down>");
    for (i = 0; i <= len; i++)
        for (j = i; j <= len; j++) {
            memset(&parts, 0, sizeof(parts));
            io_connect_init(&d, 0);
            cr_assert_eq(io_connect_feed(&d, in, i, on_msg, &parts), 0);
            cr_assert_eq(io_connect_feed(&d, in + i, j - i, on_msg, &parts), 0);
            cr_assert_eq(io_connect_feed(&d, in + j, len - j, on_msg, &parts), 0);
            cr_assert_eq(io_connect_finish(&d), 0);
            io_connect_dispose(&d);
            cr_assert_str_eq(parts.buf, whole.buf, "splits at %zu and %zu", i, j);
        }
}

Test(io_decode, connect_clean_end_of_stream_has_no_error)
{
    char in[64];
    size_t len = envelope(in, IO_CONNECT_FLAG_END_STREAM, "{}");
    struct out o = {0};
    struct io_connect d;

    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), 0);
    cr_assert_eq(io_connect_finish(&d), 0);
    cr_assert_str_eq(o.buf, "<02:{}|end>");
    io_connect_dispose(&d);
}

Test(io_decode, connect_truncated_stream_and_missing_end_are_protocol_errors)
{
    char in[128];
    size_t len = envelope(in, 0, "{\"text\":\"hello\"}");
    struct out o = {0};
    struct io_connect d;

    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len - 3, on_msg, &o), 0);
    cr_assert_eq(io_connect_finish(&d), EVOLVE_EPROTO);
    cr_assert_not_null(strstr(evolve_error_last()->message, "cut inside an envelope (18 of 21"),
                       "%s", evolve_error_last()->message);
    io_connect_dispose(&d);

    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), 0);
    cr_assert_eq(io_connect_finish(&d), EVOLVE_EPROTO);
    cr_assert_not_null(strstr(evolve_error_last()->message, "without end-of-stream"));
    io_connect_dispose(&d);
}

Test(io_decode, connect_rejects_compressed_oversized_and_trailing_bytes)
{
    char in[128];
    size_t len;
    struct out o = {0};
    struct io_connect d;

    len = envelope(in, IO_CONNECT_FLAG_COMPRESSED, "xx");
    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), EVOLVE_EUNSUPPORTED);
    io_connect_dispose(&d);

    len = envelope(in, 0, "0123456789");
    io_connect_init(&d, 4);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "10 bytes exceeds 4"));
    io_connect_dispose(&d);

    len = envelope(in, IO_CONNECT_FLAG_END_STREAM, "{}");
    len += envelope(in + len, 0, "late");
    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), EVOLVE_EPROTO);
    io_connect_dispose(&d);

    len = envelope(in, IO_CONNECT_FLAG_END_STREAM, "[1]");
    io_connect_init(&d, 0);
    cr_assert_eq(io_connect_feed(&d, in, len, on_msg, &o), EVOLVE_EPROTO);
    io_connect_dispose(&d);
}
