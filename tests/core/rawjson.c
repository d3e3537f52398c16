/* core_raw_event_json writes exactly what jansson's compact dump of {"stream", "data"} gives, in
 * one pass: for fixed edge cases (escapes, every control byte, UTF-8 boundaries, each kind of
 * invalid UTF-8) and for seeded random byte strings. Invalid UTF-8 gives the placeholder. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rawjson.h"

TestSuite(core_rawjson, .timeout = 30);

/* What jansson writes for the same event (the placeholder when `data` is not UTF-8). */
static char *reference(const char *stream, const char *data, size_t len)
{
    json_t *s = json_stringn(data, len);
    json_t *o;
    char *out;

    if (!s)
        s = json_string("(non-UTF-8 output)");
    o = json_pack("{s:s, s:o}", "stream", stream, "data", s);
    out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return out;
}

static void same(const char *stream, const char *data, size_t len, const char *what)
{
    size_t n = 0;
    char *got = core_raw_event_json(stream, data, len, &n);
    char *want = reference(stream, data, len);

    cr_assert_not_null(got);
    cr_assert_eq(n, strlen(got), "%s: length", what);
    cr_assert_str_eq(got, want, "%s", what);
    free(got);
    free(want);
}

Test(core_rawjson, escapes_and_control_bytes_match_jansson)
{
    char all[0x21];
    int c;

    same("stdout", "{\"type\":\"x\",\"path\":\"a\\\\b/c\"}\n", 29, "quotes, backslash, slash");
    same("stderr", "", 0, "empty");
    for (c = 0; c <= 0x20; c++)
        all[c] = (char)c;
    same("stdout", all, sizeof(all), "every control byte, NUL included");
    same("stdout", "\x7f tab\there", 10, "DEL is not escaped");
}

Test(core_rawjson, utf8_boundaries_pass_through)
{
    static const char *const ok[] = {"\xc2\x80",
                                     "\xdf\xbf",
                                     "\xe0\xa0\x80",
                                     "\xef\xbf\xbf",
                                     "\xed\x9f\xbf",
                                     "\xee\x80\x80",
                                     "\xf0\x90\x80\x80",
                                     "\xf4\x8f\xbf\xbf",
                                     "h\xc3\xa9llo \xe2\x9c\x93",
                                     NULL};
    size_t i;

    for (i = 0; ok[i]; i++)
        same("stdout", ok[i], strlen(ok[i]), ok[i]);
}

Test(core_rawjson, invalid_utf8_gives_the_placeholder)
{
    static const char *const bad[] = {"\x80",             /* lone continuation */
                                      "\xc0\x80",         /* overlong NUL */
                                      "\xc1\xbf",         /* overlong */
                                      "\xe0\x80\x80",     /* overlong 3-byte */
                                      "\xed\xa0\x80",     /* surrogate */
                                      "\xf0\x80\x80\x80", /* overlong 4-byte */
                                      "\xf4\x90\x80\x80", /* above U+10FFFF */
                                      "\xf5\x80\x80\x80", /* lead byte out of range */
                                      "ok \xe2\x9c",      /* truncated at the end */
                                      "\xe2\x28\xa1",     /* bad continuation */
                                      NULL};
    size_t i, n;
    char *got;

    for (i = 0; bad[i]; i++) {
        same("stdout", bad[i], strlen(bad[i]), bad[i]);
        got = core_raw_event_json("stdout", bad[i], strlen(bad[i]), &n);
        cr_assert_not_null(strstr(got, "(non-UTF-8 output)"), "%s", got);
        free(got);
    }
}

Test(core_rawjson, random_bytes_match_jansson)
{
    uint64_t x = 0x9e3779b97f4a7c15ull; /* fixed seed */
    char buf[64], what[32];
    int round, i;

    printf("seed 0x9e3779b97f4a7c15\n");
    for (round = 0; round < 20000; round++) {
        int len = (int)(x % sizeof(buf));

        for (i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* mostly ASCII, some UTF-8 lead/continuation bytes and controls */
            buf[i] = (char)(x % 4 == 0   ? 0x80 + (x >> 8) % 0x78
                            : x % 4 == 1 ? (x >> 8) % 0x20
                                         : 0x20 + (x >> 8) % 0x60);
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        snprintf(what, sizeof(what), "random case %d", round);
        same(round % 2 ? "stdout" : "stderr", buf, (size_t)len, what);
    }
}
