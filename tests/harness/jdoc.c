/* The zero-copy tokenizer: accepts exactly what a strict JSON parser accepts (checked against
 * jansson), decodes escapes (lone surrogates as U+FFFD), keeps JSON.parse's last-duplicate
 * rule, converts subtrees faithfully, and keeps earlier decoded strings valid within a line
 * whatever the previous lines were. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness/jdoc.h"

TestSuite(hns_jdoc, .timeout = 30);

Test(hns_jdoc, accepts_and_rejects_like_a_strict_parser)
{
    static const char *const inputs[] = {
        "{}", "[]", "0", "-0", "1.5e+3", " {\"a\" : [1, 2, {\"b\": null}]} \r", "\"\\u00e9\\n\"",
        "true", "false", "null", "\"\xc3\xa9\"",
        /* invalid */
        "", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "1e", "tru", "nul",
        "{\"a\" 1}", "{1:2}", "[1 2]", "\"abc", "\"\\x\"", "\"\\u12\"", "\"a\tb\"", "\"\xc3\"",
        "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xc0\xaf\"", "{} {}", "[1]]", "NaN",
        "Infinity"};
    struct hns_jdoc d;
    size_t i;

    hns_jdoc_init(&d);
    for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        const char *s = inputs[i];
        json_t *ref = json_loadb(s, strlen(s), JSON_DECODE_ANY, NULL);
        int rc = hns_jdoc_parse(&d, s, strlen(s));

        cr_assert_eq(rc == 0, ref != NULL, "input %zu <%s>: jdoc %d, jansson %s", i, s, rc,
                     ref ? "ok" : "error");
        json_decref(ref);
    }
    hns_jdoc_dispose(&d);
}

Test(hns_jdoc, lookups_strings_and_conversion)
{
    static const char line[] =
        "{\"a\":1,\"s\":\"x\\\"y\\u00e9\\ud83d\\ude00\\ud800z\",\"a\":[true,{\"k\":-12.5e1}],"
        "\"big\":12345678901234567890,\"e\\u0073c\":\"k\"}";
    struct hns_jdoc d;
    size_t n;
    const char *s;
    json_t *j, *ref;
    int a;

    hns_jdoc_init(&d);
    cr_assert_eq(hns_jdoc_parse(&d, line, sizeof(line) - 1), 0);
    a = hns_jget(&d, 0, "a");
    cr_assert_eq(hns_jtype(&d, a), HNS_J_ARRAY, "the last duplicate wins, as JSON.parse");
    s = hns_jstr(&d, hns_jget(&d, 0, "s"), &n);
    cr_assert_eq(n, strlen("x\"y\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdz"));
    cr_assert(!memcmp(s, "x\"y\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdz", n));
    cr_assert(hns_jstreq(&d, hns_jget(&d, 0, "esc"), "k"), "escaped member names match");
    cr_assert(hns_jtruthy(&d, hns_jfirst(&d, a)));
    cr_assert_eq(hns_jget(&d, 0, "missing"), -1);
    j = hns_jjson(&d, 0);
    ref = json_loads("{\"a\":[true,{\"k\":-125.0}],\"s\":\"x\\\"y\\u00e9\\ud83d\\ude00\\ufffdz\","
                     "\"big\":1.2345678901234567e19,\"esc\":\"k\"}",
                     0, NULL);
    cr_assert(json_equal(j, ref), "%s", json_dumps(j, JSON_COMPACT));
    json_decref(j);
    json_decref(ref);
    hns_jdoc_dispose(&d);
}

Test(hns_jdoc, decoded_strings_stay_valid_after_a_shorter_line)
{
    struct hns_jdoc d;
    const char *a, *b, *c;
    size_t na, nb, nc;
    char long_line[600];

    hns_jdoc_init(&d);
    cr_assert_eq(hns_jdoc_parse(&d, "[\"\\n\"]", 6), 0);
    a = hns_jstr(&d, 1, &na);
    cr_assert_eq(na, 1);
    snprintf(long_line, sizeof(long_line), "[\"%s\\n\",\"%s\\t\",\"%s\\r\"]",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
             "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
    cr_assert_eq(hns_jdoc_parse(&d, long_line, strlen(long_line)), 0);
    a = hns_jstr(&d, 1, &na);
    b = hns_jstr(&d, 2, &nb);
    c = hns_jstr(&d, 3, &nc);
    cr_assert(a && b && c);
    cr_assert_eq(a[na - 1], '\n');
    cr_assert_eq(b[nb - 1], '\t');
    cr_assert_eq(c[nc - 1], '\r');
    cr_assert_eq(a[0], 'a', "the first string was not moved by the later decodes");
    hns_jdoc_dispose(&d);
}

Test(hns_jdoc, deep_nesting_is_refused_not_overflowed)
{
    static char deep[20001];
    struct hns_jdoc d;

    memset(deep, '[', sizeof(deep) - 1);
    hns_jdoc_init(&d);
    cr_assert_eq(hns_jdoc_parse(&d, deep, sizeof(deep) - 1), -1);
    cr_assert_str_eq(d.err, "nesting too deep");
    hns_jdoc_dispose(&d);
}
