/* JSON Schema validation of structured output: each keyword both ways, messages name the pointer.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/schema.h"
#include "evolve/evolve.h"

TestSuite(core_schema, .timeout = 10);

static int check(const char *schema, const char *value)
{
    json_error_t e;
    json_t *s = json_loads(schema, JSON_DECODE_ANY, &e),
           *v = json_loads(value, JSON_DECODE_ANY, &e);
    int rc;

    cr_assert_not_null(s, "bad test schema %s", schema);
    cr_assert_not_null(v, "bad test value %s", value);
    rc = core_schema_validate(s, v);
    json_decref(s);
    json_decref(v);
    return rc;
}

static void pass(const char *schema, const char *value)
{
    cr_assert_eq(check(schema, value), 0, "%s should accept %s: %s", schema, value,
                 evolve_error_last()->message);
}

static void reject(const char *schema, const char *value, const char *fragment)
{
    cr_assert_eq(check(schema, value), EVOLVE_EINVAL, "%s should reject %s", schema, value);
    cr_assert_not_null(strstr(evolve_error_last()->message, fragment),
                       "message \"%s\" lacks \"%s\"", evolve_error_last()->message, fragment);
}

Test(core_schema, types)
{
    pass("{\"type\":\"integer\"}", "3");
    pass("{\"type\":\"integer\"}", "3.0");
    reject("{\"type\":\"integer\"}", "3.5", "/: expected integer, got number");
    pass("{\"type\":[\"string\",\"null\"]}", "null");
    reject("{\"type\":[\"string\",\"null\"]}", "1", "expected [\"string\",\"null\"]");
    pass("{\"type\":\"boolean\"}", "false");
}

Test(core_schema, object_keywords_name_the_pointer)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                    "\"units\":{\"type\":\"number\"}},\"required\":[\"name\"],"
                    "\"additionalProperties\":false}";

    pass(s, "{\"name\":\"a\",\"units\":3}");
    reject(s, "{\"units\":3}", "missing required property \"name\"");
    reject(s, "{\"name\":1}", "/name: expected string, got integer");
    reject(s, "{\"name\":\"a\",\"x\":1}", "/x: additional property not allowed");
    pass("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"a\":1}");
    reject("{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"a/b\":\"x\"}", "/a~1b:");
    reject("{\"minProperties\":2}", "{\"a\":1}", "fewer than minProperties");
}

Test(core_schema, arrays)
{
    pass("{\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}", "[1,2]");
    reject("{\"items\":{\"type\":\"integer\"}}", "[1,\"x\"]", "/1: expected integer");
    reject("{\"minItems\":1}", "[]", "fewer than minItems");
    reject("{\"maxItems\":1}", "[1,2]", "more than maxItems");
    pass("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"integer\"}}",
         "[\"a\",1,2]");
    reject("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":false}", "[\"a\",1]",
           "/1: no value");
    reject("{\"uniqueItems\":true}", "[1,{\"a\":1},1.0]", "items 0 and 2 are equal");
    pass("{\"uniqueItems\":true}", "[1,\"1\",[1]]");
}

Test(core_schema, numbers_strings_enum_const)
{
    pass("{\"minimum\":0,\"maximum\":1}", "1");
    reject("{\"minimum\":0}", "-1", "less than minimum");
    reject("{\"exclusiveMaximum\":1}", "1", "not less than exclusiveMaximum");
    reject("{\"exclusiveMinimum\":1}", "1", "not greater than exclusiveMinimum");
    reject("{\"multipleOf\":0.5}", "1.25", "not a multiple");
    pass("{\"minLength\":2,\"maxLength\":2}", "\"\\u00e9\\u00e9\"");
    reject("{\"maxLength\":1}", "\"ab\"", "longer than maxLength");
    pass("{\"pattern\":\"^\\\\d{3}-\\\\w+$\"}", "\"123-abc\"");
    reject("{\"pattern\":\"^\\\\d+$\"}", "\"12a\"", "does not match pattern");
    pass("{\"enum\":[\"a\",1]}", "1.0");
    reject("{\"enum\":[\"a\",1]}", "\"b\"", "enum");
    reject("{\"const\":{\"a\":[1]}}", "{\"a\":[2]}", "const");
}

Test(core_schema, combinators)
{
    pass("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3");
    reject("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "null", "none of anyOf");
    reject("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3", "2 of oneOf");
    pass("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3.5");
    reject("{\"not\":{\"type\":\"null\"}}", "null", "under \"not\"");
    reject("{\"allOf\":[{\"minimum\":1},{\"maximum\":2}]}", "3", "greater than maximum");
}

Test(core_schema, refs_to_defs)
{
    const char *s = "{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1}},"
                    "\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/pos\"}}";

    pass(s, "[1,2]");
    reject(s, "[1,0]", "/1: 0 is less than minimum 1");
    reject("{\"$ref\":\"#/$defs/missing\"}", "1", "schema: cannot resolve $ref");
    reject("{\"$ref\":\"#\"}", "1", "schema: nesting or $ref recursion deeper");
}

Test(core_schema, malformed_schema_and_boolean_schemas)
{
    reject("{\"pattern\":\"(\"}", "\"x\"", "schema: invalid pattern");
    reject("false", "1", "schema false");
    pass("true", "{\"anything\":[1]}");
    reject("{\"properties\":{\"a\":3}}", "{\"a\":1}", "schema: expected an object or boolean");
}
