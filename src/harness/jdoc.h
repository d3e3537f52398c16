/* harness/jdoc.h — a zero-copy JSON tokenizer for the parsers' hot path.
 * One line of agent output is validated (RFC 8259, UTF-8 inside strings) and split into a flat
 * token array; a parser then looks up only the fields an event needs, borrows strings straight
 * from the line (decoding escapes into a per-line arena only when a string has any), and turns
 * only the subtrees it keeps (rawInput, rawOutput, extra) into jansson values. This avoids
 * building a full jansson tree per line (bench/README.md has the numbers).
 * Ownership: a document is the caller's (hns_jdoc_init/_dispose); it borrows the parsed text,
 * which must outlive every lookup until the next hns_jdoc_parse. Returned strings are borrowed
 * from the text or the arena and valid until the next parse. Threads: one thread at a time. */
#ifndef EVOLVE_HARNESS_JDOC_H
#define EVOLVE_HARNESS_JDOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hns_jtype {
    HNS_J_NONE = 0, /* an absent value (index < 0) */
    HNS_J_OBJECT,
    HNS_J_ARRAY,
    HNS_J_STRING,
    HNS_J_NUMBER,
    HNS_J_TRUE,
    HNS_J_FALSE,
    HNS_J_NULL
};

struct hns_jtok {
    uint32_t start; /* strings: first byte after the quote; others: first byte */
    uint32_t end;   /* strings: the closing quote; others: one past the last byte */
    uint32_t next;  /* index of the token after this value's subtree */
    uint32_t size;  /* arrays: elements; objects: members; 0 otherwise */
    uint32_t dec;   /* strings with escapes: arena offset of the decoded text, or UINT32_MAX */
    uint32_t declen;
    uint8_t type; /* enum hns_jtype */
    uint8_t esc;  /* strings: contains a backslash escape */
};

struct hns_jdoc {
    const char *src;
    size_t len;
    struct hns_jtok *t;
    uint32_t n, cap;
    char *arena; /* decoded strings; never larger than the text */
    size_t arena_len, arena_cap;
    bool arena_reserved; /* the arena holds the current line's length */
    const char *err;     /* static reason of the last failed parse */
    int depth;
};

void hns_jdoc_init(struct hns_jdoc *d);
void hns_jdoc_dispose(struct hns_jdoc *d);

/* Parses `len` bytes (surrounding whitespace allowed). Returns 0, -1 when the text is not one
 * valid JSON value (d->err says why), or EVOLVE_ENOMEM. The root is index 0. */
int hns_jdoc_parse(struct hns_jdoc *d, const char *s, size_t len);

/* Token type of index `i`; HNS_J_NONE for i < 0. */
static inline enum hns_jtype hns_jtype(const struct hns_jdoc *d, int i)
{
    return i < 0 ? HNS_J_NONE : (enum hns_jtype)d->t[i].type;
}

/* The member `key` of object `obj` (the last one when repeated, as JSON.parse), or -1. */
int hns_jget(struct hns_jdoc *d, int obj, const char *key);

/* Array iteration: first element (or -1), and the element after `i` within array `arr`. */
int hns_jfirst(const struct hns_jdoc *d, int arr);
int hns_jnext(const struct hns_jdoc *d, int arr, int i);

/* A string's text (decoded), or NULL when `i` is not a string. The text is not NUL-terminated
 * and may contain NUL bytes; *len receives its length. */
const char *hns_jstr(struct hns_jdoc *d, int i, size_t *len);

/* True when `i` is a string equal to the NUL-terminated `lit`. */
bool hns_jstreq(struct hns_jdoc *d, int i, const char *lit);

/* JS truthiness of the value (absent, null, false, 0, NaN, "" are false). */
bool hns_jtruthy(struct hns_jdoc *d, int i);

/* Number value of a number token; false (and *out = 0) for other types. */
bool hns_jnum(const struct hns_jdoc *d, int i, double *out);

/* The subtree as a new jansson value (strings copied, integers as json_integer when they fit),
 * or NULL when i < 0 or on OOM. */
json_t *hns_jjson(struct hns_jdoc *d, int i);

/* Copies every member of object `obj` whose key is not in the NULL-terminated `skip` list into
 * `dst` (a jansson object). Returns 0 or EVOLVE_ENOMEM. */
int hns_jcopy_members(struct hns_jdoc *d, int obj, const char *const *skip, json_t *dst);

/* A new jansson string of the token's text (NULL if not a string or OOM). */
json_t *hns_jstring(struct hns_jdoc *d, int i);

#endif
