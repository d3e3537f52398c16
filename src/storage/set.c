/* set.c — a small open-addressing set of strings, each with a one-byte value (blob ids in gc and
 * verify, archive paths in extraction). Owns: its keys. Threads: one at a time. */
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct sto_set {
    char **keys;
    char *vals;
    size_t n, cap;
};

static size_t hash(const char *k)
{
    size_t h = 1469598103934665603ull;

    while (*k)
        h = (h ^ (unsigned char)*k++) * 1099511628211ull;
    return h;
}

int sto_set_new(struct sto_set **out)
{
    struct sto_set *s = calloc(1, sizeof(*s));

    if (!s)
        return core_error_oom();
    *out = s;
    return 0;
}

static size_t slot(const struct sto_set *s, const char *key)
{
    size_t i = hash(key) & (s->cap - 1);

    while (s->keys[i] && strcmp(s->keys[i], key))
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(struct sto_set *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 1024, i;
    struct sto_set ns = {.cap = ncap};

    ns.keys = calloc(ncap, sizeof(*ns.keys));
    ns.vals = calloc(ncap, 1);
    if (!ns.keys || !ns.vals) {
        free(ns.keys);
        free(ns.vals);
        return core_error_oom();
    }
    for (i = 0; i < s->cap; i++) {
        if (s->keys[i]) {
            size_t j = slot(&ns, s->keys[i]);
            ns.keys[j] = s->keys[i];
            ns.vals[j] = s->vals[i];
        }
    }
    free(s->keys);
    free(s->vals);
    s->keys = ns.keys;
    s->vals = ns.vals;
    s->cap = ncap;
    return 0;
}

int sto_set_add(struct sto_set *s, const char *key, char v)
{
    size_t i;

    if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
        return EVOLVE_ENOMEM;
    i = slot(s, key);
    if (s->keys[i])
        return 0;
    s->keys[i] = strdup(key);
    if (!s->keys[i])
        return core_error_oom();
    s->vals[i] = v;
    s->n++;
    return 1;
}

char sto_set_get(const struct sto_set *s, const char *key)
{
    size_t i;

    if (!s->cap)
        return 0;
    i = slot(s, key);
    return s->keys[i] ? s->vals[i] : 0;
}

size_t sto_set_count(const struct sto_set *s)
{
    return s->n;
}

void sto_set_free(struct sto_set *s)
{
    size_t i;

    if (!s)
        return;
    for (i = 0; i < s->cap; i++)
        free(s->keys[i]);
    free(s->keys);
    free(s->vals);
    free(s);
}
