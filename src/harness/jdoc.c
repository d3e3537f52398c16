/* jdoc.c — the zero-copy JSON tokenizer of jdoc.h: strict validation, flat tokens with subtree
 * skips, lazy string decoding, and conversion of chosen subtrees to jansson.
 * Threads: a document belongs to the one thread parsing with it (a sandbox actor's parser). */
#include "harness/jdoc.h"

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define JDOC_MAX_DEPTH 1000

/* Byte classes inside a string: 0 = plain ASCII, 1 = quote, 2 = backslash, 3 = control,
 * 4 = non-ASCII (validated as UTF-8). */
static const uint8_t str_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

void hns_jdoc_init(struct hns_jdoc *d)
{
    memset(d, 0, sizeof(*d));
}

void hns_jdoc_dispose(struct hns_jdoc *d)
{
    free(d->t);
    free(d->arena);
    memset(d, 0, sizeof(*d));
}

struct cursor {
    struct hns_jdoc *d;
    const unsigned char *s;
    size_t pos, len;
};

static int fail(struct cursor *c, const char *why)
{
    c->d->err = why;
    return -1;
}

static int new_tok(struct cursor *c, uint8_t type, uint32_t start)
{
    struct hns_jdoc *d = c->d;
    struct hns_jtok *t;

    if (d->n == d->cap) {
        uint32_t ncap = d->cap ? d->cap * 2 : 64;
        struct hns_jtok *nt = realloc(d->t, (size_t)ncap * sizeof(*nt));

        if (!nt)
            return core_error_oom();
        d->t = nt;
        d->cap = ncap;
    }
    t = &d->t[d->n];
    t->start = start;
    t->end = start;
    t->next = d->n + 1;
    t->size = 0;
    t->dec = UINT32_MAX;
    t->declen = 0;
    t->type = type;
    t->esc = 0;
    return (int)d->n++;
}

static void skip_ws(struct cursor *c)
{
    while (c->pos < c->len) {
        unsigned char ch = c->s[c->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        c->pos++;
    }
}

static int hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Validates one UTF-8 sequence at s[pos]; returns its length or 0. */
static size_t utf8_len(const unsigned char *s, size_t pos, size_t len)
{
    unsigned char b = s[pos];
    size_t n, i;
    uint32_t cp;

    if (b >= 0xC2 && b <= 0xDF) {
        n = 2;
        cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        n = 3;
        cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        n = 4;
        cp = b & 0x07;
    } else {
        return 0;
    }
    if (pos + n > len)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[pos + i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[pos + i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static int parse_string(struct cursor *c)
{
    int ti = new_tok(c, HNS_J_STRING, (uint32_t)(c->pos + 1));
    const unsigned char *s = c->s;
    size_t pos = c->pos + 1, len = c->len;
    uint8_t esc = 0;

    if (ti < 0)
        return ti;
    for (;;) {
        while (pos < len && str_class[s[pos]] == 0)
            pos++;
        if (pos >= len)
            return fail(c, "unterminated string");
        switch (str_class[s[pos]]) {
        case 1:
            c->d->t[ti].end = (uint32_t)pos;
            c->d->t[ti].esc = esc;
            c->pos = pos + 1;
            return ti;
        case 2:
            esc = 1;
            if (pos + 1 >= len)
                return fail(c, "unterminated string");
            switch (s[pos + 1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                pos += 2;
                break;
            case 'u':
                if (pos + 6 > len || hexval(s[pos + 2]) < 0 || hexval(s[pos + 3]) < 0 ||
                    hexval(s[pos + 4]) < 0 || hexval(s[pos + 5]) < 0)
                    return fail(c, "invalid \\u escape");
                pos += 6;
                break;
            default:
                return fail(c, "invalid escape in string");
            }
            break;
        case 3:
            return fail(c, "control character in string");
        default: {
            size_t n = utf8_len(s, pos, len);
            if (!n)
                return fail(c, "invalid UTF-8 in string");
            pos += n;
        }
        }
    }
}

static int parse_number(struct cursor *c)
{
    const unsigned char *s = c->s;
    size_t pos = c->pos, len = c->len;
    int ti;

    if (pos < len && s[pos] == '-')
        pos++;
    if (pos >= len)
        return fail(c, "invalid number");
    if (s[pos] == '0') {
        pos++;
    } else if (s[pos] >= '1' && s[pos] <= '9') {
        while (pos < len && s[pos] >= '0' && s[pos] <= '9')
            pos++;
    } else {
        return fail(c, "invalid number");
    }
    if (pos < len && s[pos] == '.') {
        pos++;
        if (pos >= len || s[pos] < '0' || s[pos] > '9')
            return fail(c, "invalid number");
        while (pos < len && s[pos] >= '0' && s[pos] <= '9')
            pos++;
    }
    if (pos < len && (s[pos] == 'e' || s[pos] == 'E')) {
        pos++;
        if (pos < len && (s[pos] == '+' || s[pos] == '-'))
            pos++;
        if (pos >= len || s[pos] < '0' || s[pos] > '9')
            return fail(c, "invalid number");
        while (pos < len && s[pos] >= '0' && s[pos] <= '9')
            pos++;
    }
    ti = new_tok(c, HNS_J_NUMBER, (uint32_t)c->pos);
    if (ti < 0)
        return ti;
    c->d->t[ti].end = (uint32_t)pos;
    c->pos = pos;
    return ti;
}

static int parse_literal(struct cursor *c, const char *lit, uint8_t type)
{
    size_t n = strlen(lit);
    int ti;

    if (c->pos + n > c->len || memcmp(c->s + c->pos, lit, n) != 0)
        return fail(c, "invalid literal");
    ti = new_tok(c, type, (uint32_t)c->pos);
    if (ti < 0)
        return ti;
    c->pos += n;
    c->d->t[ti].end = (uint32_t)c->pos;
    return ti;
}

static int parse_value(struct cursor *c);

static int parse_container(struct cursor *c, int is_obj)
{
    char close = is_obj ? '}' : ']';
    int ti = new_tok(c, is_obj ? HNS_J_OBJECT : HNS_J_ARRAY, (uint32_t)c->pos);
    uint32_t count = 0;
    int rc;

    if (ti < 0)
        return ti;
    if (++c->d->depth > JDOC_MAX_DEPTH)
        return fail(c, "nesting too deep");
    c->pos++;
    skip_ws(c);
    if (c->pos < c->len && c->s[c->pos] == (unsigned char)close) {
        c->pos++;
        goto done;
    }
    for (;;) {
        if (is_obj) {
            skip_ws(c);
            if (c->pos >= c->len || c->s[c->pos] != '"')
                return fail(c, "expected a member name");
            if ((rc = parse_string(c)) < 0)
                return rc;
            skip_ws(c);
            if (c->pos >= c->len || c->s[c->pos] != ':')
                return fail(c, "expected ':'");
            c->pos++;
        }
        if ((rc = parse_value(c)) < 0)
            return rc;
        count++;
        skip_ws(c);
        if (c->pos >= c->len)
            return fail(c, is_obj ? "unterminated object" : "unterminated array");
        if (c->s[c->pos] == ',') {
            c->pos++;
            continue;
        }
        if (c->s[c->pos] == (unsigned char)close) {
            c->pos++;
            break;
        }
        return fail(c, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
done:
    c->d->depth--;
    c->d->t[ti].size = count;
    c->d->t[ti].end = (uint32_t)c->pos;
    c->d->t[ti].next = c->d->n;
    return ti;
}

static int parse_value(struct cursor *c)
{
    skip_ws(c);
    if (c->pos >= c->len)
        return fail(c, "unexpected end of input");
    switch (c->s[c->pos]) {
    case '{':
        return parse_container(c, 1);
    case '[':
        return parse_container(c, 0);
    case '"':
        return parse_string(c);
    case 't':
        return parse_literal(c, "true", HNS_J_TRUE);
    case 'f':
        return parse_literal(c, "false", HNS_J_FALSE);
    case 'n':
        return parse_literal(c, "null", HNS_J_NULL);
    default:
        return parse_number(c);
    }
}

int hns_jdoc_parse(struct hns_jdoc *d, const char *s, size_t len)
{
    struct cursor c = {d, (const unsigned char *)s, 0, len};
    int rc;

    /* Keep memory flat: a buffer grown by one huge line is released when lines are small. */
    if (d->arena_cap > (4u << 20) && len < d->arena_cap / 8) {
        free(d->arena);
        d->arena = NULL;
        d->arena_cap = 0;
    }
    if (d->cap > 65536 && len < d->cap) {
        free(d->t);
        d->t = NULL;
        d->cap = 0;
    }
    d->src = s;
    d->len = len;
    d->n = 0;
    d->depth = 0;
    d->arena_len = 0;
    d->arena_reserved = false;
    d->err = NULL;
    if (len >= UINT32_MAX - 8)
        return fail(&c, "line too long");
    rc = parse_value(&c);
    if (rc < 0)
        return rc == -1 ? -1 : rc;
    skip_ws(&c);
    if (c.pos != len)
        return fail(&c, "trailing characters after the JSON value");
    return 0;
}

int hns_jget(struct hns_jdoc *d, int obj, const char *key)
{
    size_t klen;
    uint32_t i, k, n;
    int found = -1;

    if (obj < 0 || d->t[obj].type != HNS_J_OBJECT)
        return -1;
    klen = strlen(key);
    n = d->t[obj].size;
    i = (uint32_t)obj + 1;
    for (k = 0; k < n; k++) {
        const struct hns_jtok *kt = &d->t[i];
        uint32_t v = i + 1;

        if (!kt->esc) {
            if (kt->end - kt->start == klen && !memcmp(d->src + kt->start, key, klen))
                found = (int)v;
        } else {
            size_t l;
            const char *ks = hns_jstr(d, (int)i, &l);
            if (ks && l == klen && !memcmp(ks, key, klen))
                found = (int)v;
        }
        i = d->t[v].next;
    }
    return found;
}

int hns_jfirst(const struct hns_jdoc *d, int arr)
{
    if (arr < 0 || d->t[arr].type != HNS_J_ARRAY || d->t[arr].size == 0)
        return -1;
    return arr + 1;
}

int hns_jnext(const struct hns_jdoc *d, int arr, int i)
{
    uint32_t nx = d->t[i].next;

    return nx < d->t[arr].next ? (int)nx : -1;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static uint32_t hex4(const char *p)
{
    return (uint32_t)(hexval((unsigned char)p[0]) << 12 | hexval((unsigned char)p[1]) << 8 |
                      hexval((unsigned char)p[2]) << 4 | hexval((unsigned char)p[3]));
}

/* Decodes the escapes of a validated string into the arena. A lone surrogate (which JSON.parse
 * keeps but UTF-8 cannot carry) becomes U+FFFD. */
static int decode(struct hns_jdoc *d, struct hns_jtok *t)
{
    const char *s = d->src + t->start, *e = d->src + t->end;
    size_t need = d->arena_len + (size_t)(t->end - t->start);
    char *o;

    /* Every string decodes at most once per line into at most its raw size, so the first
     * decode of a line reserves the line's length: the arena then never moves while strings
     * handed out earlier in the same line are still in use. */
    if (!d->arena_reserved) {
        if (d->arena_cap < d->len + 16) {
            char *na = malloc(d->len + 16);

            if (!na)
                return core_error_oom();
            free(d->arena);
            d->arena = na;
            d->arena_cap = d->len + 16;
        }
        d->arena_reserved = true;
    }
    if (need > d->arena_cap)
        return core_error_set(EVOLVE_ERROR, "jdoc: decode arena overflow");
    o = d->arena + d->arena_len;
    t->dec = (uint32_t)d->arena_len;
    while (s < e) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        s++;
        switch (*s++) {
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u': {
            uint32_t cp = hex4(s);

            s += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && e - s >= 6 && s[0] == '\\' && s[1] == 'u') {
                uint32_t lo = hex4(s + 2);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    s += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD;
            o += put_utf8(o, cp);
            break;
        }
        default: /* '"', '\\', '/' */
            *o++ = s[-1];
        }
    }
    t->declen = (uint32_t)(o - (d->arena + t->dec));
    d->arena_len += t->declen;
    return 0;
}

const char *hns_jstr(struct hns_jdoc *d, int i, size_t *len)
{
    struct hns_jtok *t;

    if (i < 0 || d->t[i].type != HNS_J_STRING) {
        *len = 0;
        return NULL;
    }
    t = &d->t[i];
    if (!t->esc) {
        *len = t->end - t->start;
        return d->src + t->start;
    }
    if (t->dec == UINT32_MAX && decode(d, t) < 0) {
        *len = 0;
        return NULL;
    }
    *len = t->declen;
    return d->arena + t->dec;
}

bool hns_jstreq(struct hns_jdoc *d, int i, const char *lit)
{
    size_t l, n = strlen(lit);
    const char *s = hns_jstr(d, i, &l);

    return s && l == n && !memcmp(s, lit, n);
}

/* strtod follows LC_NUMERIC, which an embedding program may have changed: JSON numbers are
 * always read in the C locale. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static double c_strtod(const char *s)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? strtod_l(s, NULL, c_locale) : strtod(s, NULL);
}

bool hns_jnum(const struct hns_jdoc *d, int i, double *out)
{
    char buf[64], *heap = NULL, *p = buf;
    size_t n;

    *out = 0;
    if (i < 0 || d->t[i].type != HNS_J_NUMBER)
        return false;
    n = d->t[i].end - d->t[i].start;
    if (n >= sizeof(buf)) {
        heap = malloc(n + 1);
        if (!heap)
            return false;
        p = heap;
    }
    memcpy(p, d->src + d->t[i].start, n);
    p[n] = '\0';
    *out = c_strtod(p);
    free(heap);
    return true;
}

bool hns_jtruthy(struct hns_jdoc *d, int i)
{
    double v;

    switch (hns_jtype(d, i)) {
    case HNS_J_NONE:
    case HNS_J_NULL:
    case HNS_J_FALSE:
        return false;
    case HNS_J_STRING: {
        size_t l;
        return hns_jstr(d, i, &l) && l > 0;
    }
    case HNS_J_NUMBER:
        hns_jnum(d, i, &v);
        return v != 0 && v == v;
    default:
        return true;
    }
}

json_t *hns_jstring(struct hns_jdoc *d, int i)
{
    size_t l;
    const char *s = hns_jstr(d, i, &l);

    return s ? json_stringn_nocheck(s, l) : NULL;
}

static json_t *number_json(const struct hns_jdoc *d, int i)
{
    const char *s = d->src + d->t[i].start;
    size_t n = d->t[i].end - d->t[i].start, k;
    int neg = s[0] == '-';
    json_int_t v = 0;
    double r;

    for (k = (size_t)neg; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            break;
    if (k == n && n - (size_t)neg <= 18) {
        for (k = (size_t)neg; k < n; k++)
            v = v * 10 + (s[k] - '0');
        return json_integer(neg ? -v : v);
    }
    hns_jnum(d, i, &r);
    return json_real(r);
}

json_t *hns_jjson(struct hns_jdoc *d, int i)
{
    json_t *out;

    switch (hns_jtype(d, i)) {
    case HNS_J_NONE:
        return NULL;
    case HNS_J_NULL:
        return json_null();
    case HNS_J_TRUE:
        return json_true();
    case HNS_J_FALSE:
        return json_false();
    case HNS_J_NUMBER:
        return number_json(d, i);
    case HNS_J_STRING:
        return hns_jstring(d, i);
    case HNS_J_ARRAY: {
        int e;

        out = json_array();
        if (!out)
            return NULL;
        for (e = hns_jfirst(d, i); e >= 0; e = hns_jnext(d, i, e))
            if (json_array_append_new(out, hns_jjson(d, e)) < 0) {
                json_decref(out);
                return NULL;
            }
        return out;
    }
    case HNS_J_OBJECT:
        out = json_object();
        if (!out || hns_jcopy_members(d, i, NULL, out) < 0) {
            json_decref(out);
            return NULL;
        }
        return out;
    }
    return NULL;
}

static bool skipped(const char *k, size_t kl, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strlen(*skip) == kl && !memcmp(*skip, k, kl))
            return true;
    return false;
}

int hns_jcopy_members(struct hns_jdoc *d, int obj, const char *const *skip, json_t *dst)
{
    uint32_t i, k, n;

    if (obj < 0 || d->t[obj].type != HNS_J_OBJECT)
        return 0;
    n = d->t[obj].size;
    i = (uint32_t)obj + 1;
    for (k = 0; k < n; k++) {
        uint32_t v = i + 1;
        size_t kl;
        const char *ks = hns_jstr(d, (int)i, &kl);

        if (!ks)
            return core_error_oom();
        if (!skipped(ks, kl, skip)) {
            json_t *val = hns_jjson(d, (int)v);

            if (!val || json_object_setn_new_nocheck(dst, ks, kl, val) < 0)
                return core_error_oom();
        }
        i = d->t[v].next;
    }
    return 0;
}
