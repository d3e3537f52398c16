/* hline.c — shared building blocks of the jdoc-based parsers (see hline.h): event envelope,
 * constructors, JS-flavoured string builder, tool-id map, usage updates, markdownEscape.
 * Threads: called by the thread running a parser; no global state. */
#include "harness/hline.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void hns_line_begin(struct hns_line *l, struct hns_parser *p, struct hns_jdoc *d)
{
    l->p = p;
    l->d = d;
    l->session_id = l->timestamp = l->model = l->message_id = l->parent = -1;
    l->session_text = NULL;
    l->model_text = NULL;
    l->extra = NULL;
    l->emitted = 0;
}

int hns_line_open(struct hns_line *l, struct hns_parser *p, struct hns_jdoc *d, const char *line,
                  size_t len, const char *agent)
{
    int rc = hns_jdoc_parse(d, line, len);
    char why[128];

    hns_line_begin(l, p, d);
    if (rc == -1) {
        snprintf(why, sizeof(why), "%s: not JSON (%s)", agent, d->err);
        return hns_line_unknown(l, why);
    }
    if (rc < 0)
        return rc;
    if (hns_jtype(d, 0) != HNS_J_OBJECT) {
        snprintf(why, sizeof(why), "%s: line is not a JSON object", agent);
        return hns_line_unknown(l, why);
    }
    if (hns_jtruthy(d, hns_jget(d, 0, "_meta")) || hns_jtruthy(d, hns_jget(d, 0, "_prompt")) ||
        hns_jget(d, 0, "_sessionEnd") >= 0)
        return 0; /* our own session-log metadata */
    return 1;
}

void hns_line_end(struct hns_line *l)
{
    json_decref(l->extra);
    l->extra = NULL;
}

int hns_line_extra(struct hns_line *l, const char *key, json_t *value)
{
    if (!value)
        return 0;
    if (!l->extra && !(l->extra = json_object())) {
        json_decref(value);
        return core_error_oom();
    }
    if (json_object_set_new_nocheck(l->extra, key, value) < 0)
        return core_error_oom();
    return 0;
}

static int put_tok(struct hns_line *l, json_t *ev, const char *key, int tok)
{
    json_t *v;

    if (tok < 0)
        return 0;
    v = hns_jjson(l->d, tok);
    if (!v || json_object_set_new_nocheck(ev, key, v) < 0)
        return -1;
    return 0;
}

int hns_line_emit(struct hns_line *l, json_t *update)
{
    json_t *ev;

    if (!update)
        return core_error_oom();
    ev = json_object();
    if (!ev) {
        json_decref(update);
        return core_error_oom();
    }
    /* Keys in the order of DESIGN §4: sessionId, update, then the rest. Until `update` is
     * inside ev it must be released separately. */
    if (put_tok(l, ev, "sessionId", l->session_id) < 0 ||
        (l->session_id < 0 && l->session_text &&
         json_object_set_new_nocheck(ev, "sessionId", json_string_nocheck(l->session_text)) < 0)) {
        json_decref(update);
        json_decref(ev);
        return core_error_oom();
    }
    if (json_object_set_new_nocheck(ev, "update", update) < 0 ||
        put_tok(l, ev, "timestamp", l->timestamp) < 0 || put_tok(l, ev, "model", l->model) < 0 ||
        (l->model < 0 && l->model_text &&
         json_object_set_new_nocheck(ev, "model", json_string_nocheck(l->model_text)) < 0) ||
        put_tok(l, ev, "messageId", l->message_id) < 0 ||
        put_tok(l, ev, "parentToolCallId", l->parent) < 0 ||
        (l->extra && json_object_size(l->extra) &&
         json_object_set_nocheck(ev, "extra", l->extra) < 0)) {
        json_decref(ev);
        return core_error_oom();
    }
    l->emitted++;
    return hns_emit(l->p, ev);
}

/* The line as a JSON string; bytes that are not UTF-8 become U+FFFD so the event can always be
 * serialised (the session log keeps the raw bytes). */
static json_t *lossy_string(const char *s, size_t n)
{
    struct hns_buf b = {0};
    size_t i = 0, run = 0;
    json_t *j;

    for (;;) {
        size_t k;

        for (k = i; k < n && (unsigned char)s[k] < 0x80; k++)
            ;
        if (k == n) {
            if (run == 0)
                return json_stringn_nocheck(s, n);
            hns_buf_add(&b, s + run, n - run);
            break;
        }
        i = k;
        {
            unsigned char c = (unsigned char)s[i];
            size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                         : c >= 0xE0 && c <= 0xEF ? 3
                         : c >= 0xF0 && c <= 0xF4 ? 4
                                                  : 0;
            bool ok = len && i + len <= n;
            uint32_t cp = ok ? (uint32_t)(c & (0xFF >> (len + 1))) : 0;

            for (k = 1; ok && k < len; k++) {
                ok = ((unsigned char)s[i + k] & 0xC0) == 0x80;
                cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
            }
            if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
                       (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))))
                ok = false;
            if (ok) {
                i += len;
                continue;
            }
            hns_buf_add(&b, s + run, i - run);
            hns_buf_addz(&b, "\xEF\xBF\xBD");
            i++;
            run = i;
        }
    }
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

int hns_line_unknown(struct hns_line *l, const char *reason)
{
    json_t *u = hns_upd("unknown");

    u = hns_put(u, "raw", lossy_string(l->d->src, l->d->len));
    u = hns_put(u, "reason", lossy_string(reason, strlen(reason)));
    l->emitted++;
    if (!u)
        return core_error_oom();
    return hns_emit(l->p, hns_event_new(NULL, u));
}

json_t *hns_put(json_t *o, const char *key, json_t *v)
{
    if (!o) {
        json_decref(v);
        return NULL;
    }
    if (!v || json_object_set_new_nocheck(o, key, v) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *hns_put_tok(json_t *o, const char *key, struct hns_jdoc *d, int tok)
{
    return tok < 0 ? o : hns_put(o, key, hns_jjson(d, tok));
}

json_t *hns_put_opt(json_t *o, const char *key, json_t *v)
{
    return v ? hns_put(o, key, v) : o;
}

json_t *hns_upd(const char *type)
{
    return hns_put(json_object(), "sessionUpdate", json_string_nocheck(type));
}

json_t *hns_text(const char *s, size_t n)
{
    json_t *o = hns_put(json_object(), "type", json_string_nocheck("text"));

    return hns_put(o, "text", json_stringn_nocheck(s, n));
}

json_t *hns_content(json_t *block)
{
    json_t *o = hns_put(json_object(), "type", json_string_nocheck("content"));

    return hns_put(o, "content", block);
}

void hns_buf_add(struct hns_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = (b->len + n + 1) * 2;
        char *np = realloc(b->p, ncap < 64 ? 64 : ncap);

        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = ncap < 64 ? 64 : ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void hns_buf_addz(struct hns_buf *b, const char *s)
{
    hns_buf_add(b, s, strlen(s));
}

void hns_buf_add_js(struct hns_buf *b, struct hns_jdoc *d, int i)
{
    size_t n;
    const char *s;
    double v;
    char num[40];

    switch (hns_jtype(d, i)) {
    case HNS_J_STRING:
        s = hns_jstr(d, i, &n);
        if (s)
            hns_buf_add(b, s, n);
        else
            b->oom = true;
        return;
    case HNS_J_NUMBER:
        hns_jnum(d, i, &v);
        hns_buf_addz(b, hns_js_number(v, num, sizeof(num)));
        return;
    case HNS_J_NONE:
        hns_buf_addz(b, "undefined");
        return;
    default: {
        json_t *j = hns_jjson(d, i);
        char *t = j ? hns_js_string(j) : NULL;

        json_decref(j);
        if (!t) {
            b->oom = true;
            return;
        }
        hns_buf_addz(b, t);
        free(t);
    }
    }
}

json_t *hns_buf_json(struct hns_buf *b)
{
    json_t *j = b->oom ? NULL : json_stringn_nocheck(b->p ? b->p : "", b->len);

    b->len = 0;
    b->oom = false;
    return j;
}

void hns_buf_free(struct hns_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* ---- string map: open addressing, FNV-1a, tombstones ------------------------------------- */

struct hns_smap_slot {
    char *key; /* key bytes, NUL, value bytes, NUL; NULL = empty; (char *)1 = tombstone */
    size_t klen;
    uint64_t hash;
};

#define SMAP_TOMB ((char *)1)

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

void hns_smap_init(struct hns_smap *m)
{
    memset(m, 0, sizeof(*m));
}

void hns_smap_free(struct hns_smap *m)
{
    size_t i;

    for (i = 0; i < m->cap; i++)
        if (m->slots[i].key && m->slots[i].key != SMAP_TOMB)
            free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static int smap_grow(struct hns_smap *m)
{
    /* mostly tombstones: rehash at the same size instead of doubling */
    size_t ncap = !m->cap ? 16 : m->live * 4 < m->cap ? m->cap : m->cap * 2, i;
    struct hns_smap_slot *ns = calloc(ncap, sizeof(*ns));

    if (!ns)
        return core_error_oom();
    for (i = 0; i < m->cap; i++) {
        struct hns_smap_slot *s = &m->slots[i];
        size_t j;

        if (!s->key || s->key == SMAP_TOMB)
            continue;
        for (j = s->hash & (ncap - 1); ns[j].key; j = (j + 1) & (ncap - 1))
            ;
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->used = m->live;
    return 0;
}

int hns_smap_put(struct hns_smap *m, const char *key, size_t klen, const char *val, size_t vlen)
{
    uint64_t h = fnv(key, klen);
    size_t j;
    char *k;

    if ((m->used + 1) * 4 > m->cap * 3 && smap_grow(m) < 0)
        return EVOLVE_ENOMEM;
    for (j = h & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        struct hns_smap_slot *s = &m->slots[j];
        if (s->key != SMAP_TOMB && s->hash == h && s->klen == klen && !memcmp(s->key, key, klen)) {
            char *nk = malloc(klen + vlen + 2);
            if (!nk)
                return core_error_oom();
            memcpy(nk, key, klen);
            nk[klen] = '\0';
            memcpy(nk + klen + 1, val, vlen);
            nk[klen + 1 + vlen] = '\0';
            free(s->key);
            s->key = nk;
            return 0;
        }
    }
    k = malloc(klen + vlen + 2);
    if (!k)
        return core_error_oom();
    memcpy(k, key, klen);
    k[klen] = '\0';
    memcpy(k + klen + 1, val, vlen);
    k[klen + 1 + vlen] = '\0';
    m->slots[j].key = k;
    m->slots[j].klen = klen;
    m->slots[j].hash = h;
    m->used++;
    m->live++;
    return 0;
}

bool hns_smap_take(struct hns_smap *m, const char *key, size_t klen, char *out, size_t size)
{
    uint64_t h;
    size_t j;

    if (!m->cap)
        return false;
    h = fnv(key, klen);
    for (j = h & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        struct hns_smap_slot *s = &m->slots[j];
        if (s->key != SMAP_TOMB && s->hash == h && s->klen == klen && !memcmp(s->key, key, klen)) {
            size_t vl = strlen(s->key + klen + 1);
            if (size) {
                if (vl >= size)
                    vl = size - 1;
                memcpy(out, s->key + klen + 1, vl);
                out[vl] = '\0';
            }
            free(s->key);
            s->key = SMAP_TOMB;
            m->live--;
            return true;
        }
    }
    return false;
}

/* ---- text helpers ------------------------------------------------------------------------ */

json_t *hns_fence_json(const char *s, size_t n)
{
    struct hns_buf b = {0};
    json_t *j;

    hns_buf_add(&b, "```\n", 4);
    hns_buf_add(&b, s, n);
    hns_buf_add(&b, "\n```", 4);
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

/* Length of a line terminator ending at or before s[i-1] that JS's /^/m honours: LF, CR,
 * U+2028, U+2029. Returns true when position i starts a line. */
static bool line_start(const char *s, size_t i)
{
    if (i == 0)
        return true;
    if (s[i - 1] == '\n' || s[i - 1] == '\r')
        return true;
    return i >= 3 && (unsigned char)s[i - 3] == 0xE2 && (unsigned char)s[i - 2] == 0x80 &&
           ((unsigned char)s[i - 1] == 0xA8 || (unsigned char)s[i - 1] == 0xA9);
}

json_t *hns_markdown_escape(const char *s, size_t n)
{
    size_t i = 0, longest = 0, fence, k;
    struct hns_buf b = {0};
    json_t *j;

    while (i < n) {
        if (s[i] == '`' && line_start(s, i)) {
            size_t run = 0;
            while (i + run < n && s[i + run] == '`')
                run++;
            if (run >= 3 && run > longest)
                longest = run;
            i += run;
        } else {
            i++;
        }
    }
    fence = longest >= 3 ? longest + 1 : 3;
    for (k = 0; k < fence; k++)
        hns_buf_add(&b, "`", 1);
    hns_buf_add(&b, "\n", 1);
    hns_buf_add(&b, s, n);
    if (!(n && s[n - 1] == '\n'))
        hns_buf_add(&b, "\n", 1);
    for (k = 0; k < fence; k++)
        hns_buf_add(&b, "`", 1);
    j = hns_buf_json(&b);
    hns_buf_free(&b);
    return j;
}

static json_t *num_json(double v)
{
    if (v > -9e15 && v < 9e15 && (double)(json_int_t)v == v)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *hns_line_usage_update(const char *scope, struct hns_usage *u)
{
    json_t *usage = json_object(), *up;

    if (u->prompt >= 0)
        usage = hns_put(usage, "promptTokens", num_json(u->prompt));
    if (u->completion >= 0)
        usage = hns_put(usage, "completionTokens", num_json(u->completion));
    if (u->cached >= 0)
        usage = hns_put(usage, "cachedTokens", num_json(u->cached));
    if (u->cost >= 0)
        usage = hns_put(usage, "costUsd", json_real(u->cost));
    if (u->extra && json_object_size(u->extra))
        usage = hns_put(usage, "extra", u->extra);
    else
        json_decref(u->extra);
    u->extra = NULL;
    up = hns_put(hns_upd("usage"), "scope", json_string_nocheck(scope));
    return hns_put(up, "usage", usage);
}

double hns_jnum_at(struct hns_jdoc *d, int obj, const char *key)
{
    double v;

    if (!hns_jnum(d, hns_jget(d, obj, key), &v) || !(v >= 0))
        return -1;
    return v;
}

void hns_buf_add_compact(struct hns_buf *b, struct hns_jdoc *d, int i)
{
    const char *s, *e, *run;
    bool in_str = false;

    if (i < 0) {
        hns_buf_addz(b, "undefined");
        return;
    }
    s = d->src + d->t[i].start - (d->t[i].type == HNS_J_STRING);
    e = d->src + d->t[i].end + (d->t[i].type == HNS_J_STRING);
    for (run = s; s < e; s++) {
        if (in_str) {
            if (*s == '\\')
                s++;
            else if (*s == '"')
                in_str = false;
        } else if (*s == '"') {
            in_str = true;
        } else if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
            hns_buf_add(b, run, (size_t)(s - run));
            run = s + 1;
        }
    }
    hns_buf_add(b, run, (size_t)(e - run));
}
