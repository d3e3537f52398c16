/* Helpers shared by the harness parsers (src/harness/fields.c): ISO timestamps from epoch ms,
 * usage arithmetic, the event envelope's optional fields, and unknown-line reasons. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

TestSuite(hns_fields, .timeout = 10);

static void check_time(json_t *ms, const char *want)
{
    json_t *s = hns_iso_time_ms(ms);

    if (!want)
        cr_assert_null(s, "no timestamp for an out-of-range or non-numeric value");
    else {
        cr_assert_not_null(s);
        cr_assert_str_eq(json_string_value(s), want);
    }
    json_decref(s);
    json_decref(ms);
}

Test(hns_fields, epoch_ms_prints_like_javascript_to_iso_string)
{
    /* expectations from Node's new Date(ms).toISOString() */
    check_time(json_integer(1796011594427), "2026-11-30T04:06:34.427Z");
    check_time(json_integer(0), "1970-01-01T00:00:00.000Z");
    check_time(json_integer(-1), "1969-12-31T23:59:59.999Z");
    check_time(json_real(951782400000.9), "2000-02-29T00:00:00.000Z");
    check_time(json_integer(-62198755200000), "-000001-01-01T00:00:00.000Z");
    check_time(json_integer(253402300800000), "+010000-01-01T00:00:00.000Z");
    check_time(json_integer(8640000000000001), NULL);
    check_time(json_string("1796011594427"), NULL);
}

Test(hns_fields, number_sum_keeps_integers_and_skips_absent_operands)
{
    json_t *a = json_integer(2), *b = json_integer(3), *r = json_real(0.5), *s;

    s = hns_number_sum(a, NULL, b);
    cr_assert(json_is_integer(s));
    cr_assert_eq(json_integer_value(s), 5);
    json_decref(s);
    s = hns_number_sum(a, r, b);
    cr_assert(json_is_real(s));
    cr_assert_float_eq(json_real_value(s), 5.5, 1e-12);
    json_decref(s);
    cr_assert_null(hns_number_sum(NULL, NULL, NULL), "nothing printed: absent, never 0");
    json_decref(a);
    json_decref(b);
    json_decref(r);
}

static void collect(void *payload, evolve_update_type_t type, json_t *event)
{
    (void)type;
    json_array_append_new(payload, event);
}

Test(hns_fields, envelope_sets_only_the_fields_the_line_carried)
{
    struct hns_parser *p;
    json_t *out = json_array(), *sid = json_string("s"), *empty = json_object();
    struct hns_meta m = {.session_id = sid, .extra = empty};
    const json_t *ev;

    cr_assert_eq(hns_parser_new(&p, "qwen", collect, out), 0);
    cr_assert_eq(
        hns_emit_update(p, &m,
                        hns_usage_update("run", json_integer(1), NULL, NULL, NULL, json_object())),
        0);
    cr_assert_eq(hns_emit_update(p, NULL, NULL), EVOLVE_ENOMEM, "a failed build is an OOM");
    ev = json_array_get(out, 0);
    cr_assert_eq(json_object_size(ev), 2, "sessionId and update only: an empty extra is omitted");
    cr_assert_str_eq(json_string_value(json_object_get(ev, "sessionId")), "s");
    cr_assert_eq(json_object_size(json_object_get(json_object_get(ev, "update"), "usage")), 1,
                 "promptTokens only; the empty usage extra is omitted");
    hns_parser_free(p);
    json_decref(out);
    json_decref(sid);
    json_decref(empty);
}

Test(hns_fields, unknown_reason_names_the_json_error_or_the_json_type)
{
    struct hns_parser *p;
    json_t *out = json_array();
    int rc;

    cr_assert_eq(hns_parser_new(&p, "kimi", collect, out), 0);
    cr_assert_null(hns_parse_object(p, "{\"a\":", 5, &rc));
    cr_assert_eq(rc, 0);
    cr_assert_null(hns_parse_object(p, "\"s\"", 3, &rc));
    cr_assert_not_null(strstr(json_string_value(json_object_get(
                                  json_object_get(json_array_get(out, 0), "update"), "reason")),
                              "not JSON"));
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_array_get(out, 1), "update"), "reason")),
                     "JSON string, not an object");
    hns_parser_free(p);
    json_decref(out);
}

Test(hns_fields, unknown_raw_replaces_bytes_that_are_not_utf8_like_node)
{
    static const char line[] = "a\xff\xe2\x82"
                               "b\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xaf\xe2\x82";
    struct hns_parser *p;
    json_t *out = json_array();
    char *dump;

    cr_assert_eq(hns_parser_new(&p, "opencode", collect, out), 0);
    cr_assert_eq(hns_parser_feed(p, line, sizeof(line) - 1), 0);
    cr_assert_eq(json_array_size(out), 1);
    /* what Buffer.toString("utf8") gives: one U+FFFD per maximal invalid subpart */
    cr_assert_str_eq(json_string_value(
                         json_object_get(json_object_get(json_array_get(out, 0), "update"), "raw")),
                     "a\xef\xbf\xbd\xef\xbf\xbd"
                     "b\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    dump = json_dumps(json_array_get(out, 0), JSON_COMPACT);
    cr_assert_not_null(dump, "the event serialises");
    free(dump);
    /* jansson quotes the bad bytes in its error text: the reason must stay UTF-8 too */
    cr_assert_eq(hns_parser_feed(p, "{\"a\":\"\\\xe0\xb4\x8c\xa3\xdd\x82}", 14), 0);
    cr_assert_eq(json_array_size(out), 2);
    dump = json_dumps(json_array_get(out, 1), JSON_COMPACT);
    cr_assert_not_null(dump, "the event serialises");
    free(dump);
    hns_parser_free(p);
    json_decref(out);
}
