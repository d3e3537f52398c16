/* schema.c — a JSON Schema validator for structured agent output (draft 2020-12 core subset).
 * Owns: keyword semantics and error messages that name the failing JSON pointer. Does not own:
 * reading result.json (core/output) or fetching remote schemas (never: only local "#..." refs).
 * Threads: any; all state lives on the stack of one call. Recursion depth is capped, so a
 * self-referencing schema fails cleanly instead of overflowing the stack. */
#include "core/schema.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define SCHEMA_MAX_DEPTH 64

struct vctx {
    const json_t *root; /* the whole schema, for $ref resolution */
    char ptr[1024];     /* JSON pointer of the instance location being checked */
    size_t ptr_len;
    int depth;
};

static int fail(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct vctx *c, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return core_error_set(EVOLVE_EINVAL, "%s: %s", c->ptr_len ? c->ptr : "/", msg);
}

/* Appends "/<token>" to the pointer, escaping ~ and / as RFC 6901 says; returns the old length. */
static size_t ptr_push(struct vctx *c, const char *token)
{
    size_t old = c->ptr_len, n = old;
    const char *s;

    if (n + 1 < sizeof(c->ptr))
        c->ptr[n++] = '/';
    for (s = token; *s && n + 2 < sizeof(c->ptr); s++) {
        if (*s == '~' || *s == '/') {
            c->ptr[n++] = '~';
            c->ptr[n++] = *s == '~' ? '0' : '1';
        } else {
            c->ptr[n++] = *s;
        }
    }
    c->ptr[n] = '\0';
    c->ptr_len = n;
    return old;
}

static size_t ptr_push_index(struct vctx *c, size_t i)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%zu", i);
    return ptr_push(c, buf);
}

static void ptr_pop(struct vctx *c, size_t old)
{
    c->ptr_len = old;
    c->ptr[old] = '\0';
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

static int is_integral(const json_t *v)
{
    return json_is_integer(v) ||
           (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
            isfinite(json_real_value(v)));
}

static int type_matches(const char *t, const json_t *v)
{
    if (!strcmp(t, "integer"))
        return is_integral(v);
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    return !strcmp(t, type_name(v));
}

/* Numbers compare by value (1 == 1.0); everything else structurally. */
static int json_value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return 0;
    if (json_is_array(a)) {
        size_t i;

        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!json_value_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    if (json_is_object(a)) {
        const char *k;
        json_t *v;

        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *o = json_object_get(b, k);
            if (!o || !json_value_equal(v, o))
                return 0;
        }
        return 1;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

static size_t utf8_length(const char *s, size_t bytes)
{
    size_t i, n = 0;

    for (i = 0; i < bytes; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            n++;
    return n;
}

/* Translates ECMA-262 shorthand classes to POSIX ERE; other syntax passes through. */
static int regex_translate(const char *in, char *out, size_t size)
{
    size_t n = 0;
    const char *s;

    for (s = in; *s; s++) {
        const char *rep = NULL;
        char one[3] = {0};

        if (*s == '\\' && s[1]) {
            switch (s[1]) {
            case 'd':
                rep = "[0-9]";
                break;
            case 'D':
                rep = "[^0-9]";
                break;
            case 'w':
                rep = "[A-Za-z0-9_]";
                break;
            case 'W':
                rep = "[^A-Za-z0-9_]";
                break;
            case 's':
                rep = "[[:space:]]";
                break;
            case 'S':
                rep = "[^[:space:]]";
                break;
            default:
                one[0] = s[0];
                one[1] = s[1];
                rep = one;
                break;
            }
            s++;
        } else {
            one[0] = *s;
            rep = one;
        }
        if (n + strlen(rep) + 1 > size)
            return -1;
        memcpy(out + n, rep, strlen(rep));
        n += strlen(rep);
    }
    out[n] = '\0';
    return 0;
}

static int check_pattern(struct vctx *c, const char *pattern, const char *text)
{
    char ere[1024];
    regex_t re;
    int rc;

    if (regex_translate(pattern, ere, sizeof(ere)) < 0 ||
        regcomp(&re, ere, REG_EXTENDED | REG_NOSUB))
        return core_error_set(EVOLVE_EINVAL, "schema: invalid pattern \"%s\"", pattern);
    rc = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    if (rc != 0)
        return fail(c, "string does not match pattern \"%s\"", pattern);
    return 0;
}

/* Resolves "#", "#/a/b~1c" against the root schema. */
static const json_t *resolve_ref(const json_t *root, const char *ref)
{
    const json_t *cur = root;
    char token[256];
    const char *p;

    if (ref[0] != '#')
        return NULL;
    p = ref + 1;
    while (*p == '/') {
        size_t n = 0;

        p++;
        while (*p && *p != '/' && n + 1 < sizeof(token)) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1')) {
                token[n++] = p[1] == '0' ? '~' : '/';
                p += 2;
            } else {
                token[n++] = *p++;
            }
        }
        token[n] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, token);
        } else if (json_is_array(cur)) {
            char *end;
            long idx = strtol(token, &end, 10);
            cur = (*end || idx < 0) ? NULL : json_array_get(cur, (size_t)idx);
        } else {
            cur = NULL;
        }
        if (!cur)
            return NULL;
    }
    return *p ? NULL : cur;
}

static int validate(struct vctx *c, const json_t *schema, const json_t *v);

/* Runs validate() without leaving an error behind when the caller only wants a yes/no. A
 * malformed-schema error is still reported (returned as < -1000 sentinel is not needed: we
 * re-run the failing branch for the message). */
static int try_validate(struct vctx *c, const json_t *schema, const json_t *v)
{
    size_t old = c->ptr_len;
    int rc = validate(c, schema, v);

    ptr_pop(c, old);
    return rc;
}

static int check_object(struct vctx *c, const json_t *s, const json_t *v)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *addl = json_object_get(s, "additionalProperties"), *x;
    const char *key;
    json_t *val;
    size_t i;
    int rc;

    json_array_foreach((json_t *)req, i, x)
    {
        if (json_is_string(x) && !json_object_get(v, json_string_value(x)))
            return fail(c, "missing required property \"%s\"", json_string_value(x));
    }
    if ((x = json_object_get(s, "minProperties")) && json_object_size(v) < json_number_value(x))
        return fail(c, "object has %zu properties, fewer than minProperties %g",
                    json_object_size(v), json_number_value(x));
    if ((x = json_object_get(s, "maxProperties")) && json_object_size(v) > json_number_value(x))
        return fail(c, "object has %zu properties, more than maxProperties %g", json_object_size(v),
                    json_number_value(x));
    json_object_foreach((json_t *)v, key, val)
    {
        const json_t *ps = props ? json_object_get(props, key) : NULL;
        size_t old;

        if (!ps && !addl)
            continue;
        if (!ps && json_is_false(addl)) {
            old = ptr_push(c, key);
            rc = fail(c, "additional property not allowed");
            ptr_pop(c, old);
            return rc;
        }
        old = ptr_push(c, key);
        rc = validate(c, ps ? ps : addl, val);
        if (rc < 0)
            return rc;
        ptr_pop(c, old);
    }
    return 0;
}

static int check_array(struct vctx *c, const json_t *s, const json_t *v)
{
    const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    const json_t *x;
    size_t i, j, n = json_array_size(v), nprefix = json_array_size(prefix);
    int rc;

    if ((x = json_object_get(s, "minItems")) && n < json_number_value(x))
        return fail(c, "array has %zu items, fewer than minItems %g", n, json_number_value(x));
    if ((x = json_object_get(s, "maxItems")) && n > json_number_value(x))
        return fail(c, "array has %zu items, more than maxItems %g", n, json_number_value(x));
    for (i = 0; i < n; i++) {
        const json_t *is = i < nprefix ? json_array_get(prefix, i) : items;
        size_t old;

        if (!is)
            continue;
        old = ptr_push_index(c, i);
        rc = validate(c, is, json_array_get(v, i));
        if (rc < 0)
            return rc;
        ptr_pop(c, old);
    }
    if (json_is_true(json_object_get(s, "uniqueItems"))) {
        for (i = 0; i < n; i++)
            for (j = i + 1; j < n; j++)
                if (json_value_equal(json_array_get(v, i), json_array_get(v, j)))
                    return fail(c, "items %zu and %zu are equal but uniqueItems is true", i, j);
    }
    return 0;
}

static int check_number(struct vctx *c, const json_t *s, const json_t *v)
{
    double d = json_number_value(v);
    const json_t *x;

    if ((x = json_object_get(s, "minimum")) && json_is_number(x) && d < json_number_value(x))
        return fail(c, "%g is less than minimum %g", d, json_number_value(x));
    if ((x = json_object_get(s, "maximum")) && json_is_number(x) && d > json_number_value(x))
        return fail(c, "%g is greater than maximum %g", d, json_number_value(x));
    if ((x = json_object_get(s, "exclusiveMinimum")) && json_is_number(x) &&
        d <= json_number_value(x))
        return fail(c, "%g is not greater than exclusiveMinimum %g", d, json_number_value(x));
    if ((x = json_object_get(s, "exclusiveMaximum")) && json_is_number(x) &&
        d >= json_number_value(x))
        return fail(c, "%g is not less than exclusiveMaximum %g", d, json_number_value(x));
    if ((x = json_object_get(s, "multipleOf")) && json_is_number(x) && json_number_value(x) > 0) {
        double q = d / json_number_value(x);
        if (fabs(q - round(q)) > 1e-9)
            return fail(c, "%g is not a multiple of %g", d, json_number_value(x));
    }
    return 0;
}

static int check_string(struct vctx *c, const json_t *s, const json_t *v)
{
    size_t len = utf8_length(json_string_value(v), json_string_length(v));
    const json_t *x;

    if ((x = json_object_get(s, "minLength")) && len < json_number_value(x))
        return fail(c, "string of length %zu is shorter than minLength %g", len,
                    json_number_value(x));
    if ((x = json_object_get(s, "maxLength")) && len > json_number_value(x))
        return fail(c, "string of length %zu is longer than maxLength %g", len,
                    json_number_value(x));
    if ((x = json_object_get(s, "pattern")) && json_is_string(x))
        return check_pattern(c, json_string_value(x), json_string_value(v));
    return 0;
}

static int check_combinators(struct vctx *c, const json_t *s, const json_t *v)
{
    const json_t *x, *sub;
    size_t i, matched;
    int rc;

    if ((x = json_object_get(s, "allOf")))
        json_array_foreach((json_t *)x, i, sub)
        {
            rc = validate(c, sub, v);
            if (rc < 0)
                return rc;
        }
    if ((x = json_object_get(s, "anyOf"))) {
        matched = 0;
        json_array_foreach((json_t *)x, i, sub)
        {
            rc = try_validate(c, sub, v);
            if (rc == EVOLVE_ENOMEM)
                return rc;
            if (rc == 0) {
                matched = 1;
                break;
            }
        }
        if (!matched)
            return fail(c, "value matches none of anyOf's %zu schemas", json_array_size(x));
    }
    if ((x = json_object_get(s, "oneOf"))) {
        matched = 0;
        json_array_foreach((json_t *)x, i, sub)
        {
            rc = try_validate(c, sub, v);
            if (rc == EVOLVE_ENOMEM)
                return rc;
            matched += rc == 0;
        }
        if (matched != 1)
            return fail(c, "value matches %zu of oneOf's schemas, not exactly one", matched);
    }
    if ((x = json_object_get(s, "not"))) {
        rc = try_validate(c, x, v);
        if (rc == EVOLVE_ENOMEM)
            return rc;
        if (rc == 0)
            return fail(c, "value matches the schema under \"not\"");
    }
    return 0;
}

static int validate(struct vctx *c, const json_t *s, const json_t *v)
{
    const json_t *x;
    int rc;

    if (json_is_true(s))
        return 0;
    if (json_is_false(s))
        return fail(c, "no value is allowed here (schema false)");
    if (!json_is_object(s))
        return core_error_set(EVOLVE_EINVAL, "schema: expected an object or boolean at %s",
                              c->ptr_len ? c->ptr : "/");
    if (++c->depth > SCHEMA_MAX_DEPTH) {
        c->depth--;
        return core_error_set(EVOLVE_EINVAL, "schema: nesting or $ref recursion deeper than %d",
                              SCHEMA_MAX_DEPTH);
    }
    rc = 0;
    if ((x = json_object_get(s, "$ref")) && json_is_string(x)) {
        const json_t *target = resolve_ref(c->root, json_string_value(x));

        if (!target)
            rc = core_error_set(EVOLVE_EINVAL, "schema: cannot resolve $ref \"%s\"",
                                json_string_value(x));
        else
            rc = validate(c, target, v);
        if (rc < 0)
            goto out;
    }
    if ((x = json_object_get(s, "type"))) {
        int ok = 0;
        size_t i;
        json_t *t;

        if (json_is_string(x))
            ok = type_matches(json_string_value(x), v);
        json_array_foreach((json_t *)x, i, t)
        {
            if (json_is_string(t) && type_matches(json_string_value(t), v))
                ok = 1;
        }
        if (!ok) {
            char *want = json_is_string(x) ? NULL : json_dumps(x, JSON_COMPACT);
            rc = fail(c, "expected %s, got %s", want ? want : json_string_value(x), type_name(v));
            free(want);
            goto out;
        }
    }
    if ((x = json_object_get(s, "enum")) && json_is_array(x)) {
        size_t i;
        json_t *e;
        int found = 0;

        json_array_foreach((json_t *)x, i, e)
        {
            if (json_value_equal(e, v))
                found = 1;
        }
        if (!found) {
            rc = fail(c, "value is not one of the %zu allowed by enum", json_array_size(x));
            goto out;
        }
    }
    if ((x = json_object_get(s, "const")) && !json_value_equal(x, v)) {
        rc = fail(c, "value is not the required const");
        goto out;
    }
    if (json_is_object(v))
        rc = check_object(c, s, v);
    else if (json_is_array(v))
        rc = check_array(c, s, v);
    else if (json_is_number(v))
        rc = check_number(c, s, v);
    else if (json_is_string(v))
        rc = check_string(c, s, v);
    if (rc < 0)
        goto out;
    rc = check_combinators(c, s, v);
out:
    c->depth--;
    return rc;
}

int core_schema_validate(const json_t *schema, const json_t *instance)
{
    struct vctx c;

    if (!schema || !instance)
        return core_error_set(EVOLVE_EINVAL, "schema validation needs a schema and a value");
    memset(&c, 0, sizeof(c));
    c.root = schema;
    return validate(&c, schema, instance);
}
