/* JS value semantics shared by the parsers (spec harness-wire §1.6). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

TestSuite(hns_jsvalue, .timeout = 10);

static void check_number(double d, const char *want)
{
    char buf[40];

    cr_assert_str_eq(hns_js_number(d, buf, sizeof(buf)), want, "%.17g", d);
}

Test(hns_jsvalue, numbers_print_like_javascript)
{
    check_number(1.0, "1");
    check_number(0.1, "0.1");
    check_number(-2.5, "-2.5");
    check_number(1e21, "1e+21");
    check_number(1e20, "100000000000000000000");
    check_number(1.5e-7, "1.5e-7");
    check_number(0.000001, "0.000001");
    check_number(123456.789, "123456.789");
    check_number(0.30000000000000004, "0.30000000000000004");
}

Test(hns_jsvalue, truthiness)
{
    json_t *vals[] = {json_null(), json_false(), json_integer(0), json_real(0.0), json_string("")};
    json_t *yes[] = {json_object(), json_array(), json_string("0"), json_integer(-1), json_true()};
    size_t i;

    cr_assert(!hns_js_truthy(NULL));
    for (i = 0; i < 5; i++) {
        cr_assert(!hns_js_truthy(vals[i]), "falsy case %zu", i);
        cr_assert(hns_js_truthy(yes[i]), "truthy case %zu", i);
        json_decref(vals[i]);
        json_decref(yes[i]);
    }
}

Test(hns_jsvalue, string_coercion)
{
    json_t *arr = json_pack("[i, s, n, [i, i]]", 1, "a", 2, 3);
    json_t *obj = json_object();
    char *s;

    s = hns_js_string(arr);
    cr_assert_str_eq(s, "1,a,,2,3");
    free(s);
    s = hns_js_string(obj);
    cr_assert_str_eq(s, "[object Object]");
    free(s);
    s = hns_js_string(NULL);
    cr_assert_str_eq(s, "undefined");
    free(s);
    json_decref(arr);
    json_decref(obj);
}

Test(hns_jsvalue, fence_wraps_without_escaping)
{
    char *s = hns_fence("a ``` b");

    cr_assert_str_eq(s, "```\na ``` b\n```");
    free(s);
}
