/* hns_js_stringify: byte-for-byte JavaScript JSON.stringify of parsed JSON (spec harness-wire
 * §1.6). Every expectation below was printed by Node 20's JSON.stringify(JSON.parse(input)). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

TestSuite(hns_jsstringify, .timeout = 10);

/* Parses like the parsers do: integers beyond 64 bits are read as reals, U+0000 allowed. */
static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);

    if (!v && json_error_code(&err) == json_error_numeric_overflow)
        v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
    cr_assert_not_null(v, "bad test JSON %s: %s", text, err.text);
    return v;
}

static void check(const char *input, const char *want)
{
    json_t *v = parse(input);
    char *got = hns_js_stringify(v);

    cr_assert_not_null(got);
    cr_assert_str_eq(got, want, "input %s", input);
    free(got);
    json_decref(v);
}

Test(hns_jsstringify, integer_like_keys_come_first_in_ascending_order)
{
    check("{\"b\":1,\"a\":[true,false,null],\"10\":\"x\",\"2\":\"y\",\"01\":\"z\",\"4294967295\":1,"
          "\"4294967294\":2,\"-1\":3,\"1.5\":4}",
          "{\"2\":\"y\",\"10\":\"x\",\"4294967294\":2,\"b\":1,\"a\":[true,false,null],\"01\":\"z\","
          "\"4294967295\":1,\"-1\":3,\"1.5\":4}");
}

Test(hns_jsstringify, duplicate_key_keeps_first_position_and_last_value)
{
    check("{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":3,\"b\":2}");
}

Test(hns_jsstringify, strings_escape_only_quote_backslash_and_controls)
{
    /* U+2028, U+007F, '/', and non-ASCII stay raw; controls use the short forms or \u00xx */
    check("\"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\\"\\\\/\xc3\xa9\\u2028\xf0\x9f\x98\x80\\u007f\"",
          "\"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\\"\\\\/"
          "\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\x7f\"");
}

Test(hns_jsstringify, numbers_print_in_shortest_round_trip_form)
{
    check("[1.0,1e21,1e-7,0.1,-0.0,123456789012345678901234,1.5e300,5e-324,100,1e20,0.000001,"
          "-12.5e-3]",
          "[1,1e+21,1e-7,0.1,0,1.2345678901234569e+23,1.5e+300,5e-324,100,100000000000000000000,"
          "0.000001,-0.0125]");
    /* a 64-bit integer beyond 2^53 prints as the double JS would have read */
    check("[9007199254740993,-9007199254740993,9007199254740992,42,-7]",
          "[9007199254740992,-9007199254740992,9007199254740992,42,-7]");
}

Test(hns_jsstringify, nesting_and_empty_containers_are_compact)
{
    check("{\"x\":{},\"y\":[],\"z\":[{}],\"w\":{\"k\":[[]]}}",
          "{\"x\":{},\"y\":[],\"z\":[{}],\"w\":{\"k\":[[]]}}");
    check("  \"plain\" ", "\"plain\"");
}

Test(hns_jsstringify, absent_value_prints_null)
{
    char *s = hns_js_stringify(NULL);

    cr_assert_str_eq(s, "null");
    free(s);
}
