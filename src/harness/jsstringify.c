/* jsstringify.c — JavaScript's JSON.stringify(v) for a jansson value, byte for byte (spec
 * harness-wire §1.6): compact; object keys in parse order except that integer-like keys ("7",
 * canonical array indices below 2^32-1) come first in ascending numeric order, as JS objects
 * order them; strings escape only `"`, `\` and U+0000-U+001F (\b \f \n \r \t, else lowercase
 * \u00xx), leaving `/` and non-ASCII raw; numbers in JS shortest round-trip form (integers beyond
 * 2^53 are printed as the double JS would have read). Droid's tool content and OpenCode's
 * non-string outputs are produced with it.
 * Jansson keeps object members in insertion order and a duplicated key keeps its first position
 * with its last value, which is what JSON.parse does too.
 * Threads: pure; any thread. */
#include "harness/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct buf {
    char *s;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *ns;

        while (cap < b->len + n + 1)
            cap *= 2;
        ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void put_string(struct buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, run = 0;

    put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7];
        size_t el = 2;

        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(b, s + run, i - run);
        run = i + 1;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        put(b, esc, el);
    }
    put(b, s + run, n - run);
    put(b, "\"", 1);
}

/* A canonical array index: "0" or [1-9][0-9]* below 2^32 - 1. Returns its value or -1. */
static long long array_index(const char *k)
{
    long long v = 0;
    const char *p;

    if (!*k || (k[0] == '0' && k[1]))
        return -1;
    for (p = k; *p; p++) {
        if (*p < '0' || *p > '9' || p - k >= 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < 4294967295LL ? v : -1;
}

struct idx_key {
    long long idx;
    const char *key;
    json_t *val;
};

static int cmp_idx(const void *a, const void *b)
{
    long long x = ((const struct idx_key *)a)->idx, y = ((const struct idx_key *)b)->idx;

    return (x > y) - (x < y);
}

static void put_value(struct buf *b, const json_t *v, int depth);

static void put_member(struct buf *b, int *first, const char *key, const json_t *v, int depth)
{
    if (!*first)
        put(b, ",", 1);
    *first = 0;
    put_string(b, key, strlen(key));
    put(b, ":", 1);
    put_value(b, v, depth + 1);
}

static void put_object(struct buf *b, const json_t *o, int depth)
{
    struct idx_key *ints = NULL;
    size_t nints = 0, i;
    const char *key;
    json_t *v;
    int first = 1;

    json_object_foreach((json_t *)o, key, v)
    {
        if (array_index(key) >= 0)
            nints++;
    }
    if (nints) {
        ints = malloc(nints * sizeof(*ints));
        if (!ints) {
            b->oom = 1;
            return;
        }
        nints = 0;
        json_object_foreach((json_t *)o, key, v)
        {
            long long idx = array_index(key);

            if (idx >= 0)
                ints[nints++] = (struct idx_key){idx, key, v};
        }
        qsort(ints, nints, sizeof(*ints), cmp_idx);
    }
    put(b, "{", 1);
    for (i = 0; i < nints; i++)
        put_member(b, &first, ints[i].key, ints[i].val, depth);
    json_object_foreach((json_t *)o, key, v)
    {
        if (array_index(key) < 0)
            put_member(b, &first, key, v, depth);
    }
    put(b, "}", 1);
    free(ints);
}

static void put_value(struct buf *b, const json_t *v, int depth)
{
    char num[40];

    if (depth > 2048) { /* deeper than any parsed line can be; keeps the stack bounded */
        put(b, "null", 4);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(b, v, depth);
        break;
    case JSON_ARRAY: {
        size_t i;

        put(b, "[", 1);
        for (i = 0; i < json_array_size(v); i++) {
            if (i)
                put(b, ",", 1);
            put_value(b, json_array_get(v, i), depth + 1);
        }
        put(b, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);

        /* beyond 2^53 JS holds the nearest double and prints that */
        if (i > 9007199254740992LL || i < -9007199254740992LL)
            hns_js_number((double)i, num, sizeof(num));
        else
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, i);
        put(b, num, strlen(num));
        break;
    }
    case JSON_REAL: {
        double d = json_real_value(v);

        if (!isfinite(d)) /* JSON.stringify(NaN) and (Infinity) are "null" */
            put(b, "null", 4);
        else {
            hns_js_number(d, num, sizeof(num));
            put(b, num, strlen(num));
        }
        break;
    }
    case JSON_TRUE:
        put(b, "true", 4);
        break;
    case JSON_FALSE:
        put(b, "false", 5);
        break;
    case JSON_NULL:
        put(b, "null", 4);
        break;
    }
}

char *hns_js_stringify(const json_t *v)
{
    struct buf b = {0};

    if (!v) {
        put(&b, "null", 4);
    } else
        put_value(&b, v, 0);
    if (b.oom || !b.s) {
        free(b.s);
        core_error_oom();
        return NULL;
    }
    return b.s;
}
