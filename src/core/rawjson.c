/* rawjson.c — the JSON text of a raw output event, {"stream":"stdout","data":"..."}, written
 * directly: one pass over the bytes that validates UTF-8 and escapes, instead of building a
 * jansson object (which validates the bytes) and dumping it (which walks and escapes them again).
 * Every agent stdout line becomes one such event, so this is on the hottest path of a run.
 * The output is byte for byte what json_dumps(JSON_COMPACT) gives for the same object (checked by
 * tests/core/rawjson.c); bytes that are not UTF-8 give the data "(non-UTF-8 output)", as before.
 * Threads: any (pure function). */
#include "core/rawjson.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 when invalid: the rules of
 * RFC 3629 (no overlongs, no surrogates, nothing above U+10FFFF), as jansson's. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t need, i;
    unsigned char lo = 0x80, hi = 0xBF;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3;
    else
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (n < need + 1)
        return 0;
    for (i = 1; i <= need; i++) {
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF))
            return 0;
    }
    return need + 1;
}

char *core_raw_event_json(const char *stream, const char *data, size_t len, size_t *out_len)
{
    static const char hex[] = "0123456789ABCDEF"; /* as jansson */
    const unsigned char *s = (const unsigned char *)data;
    size_t slen = strlen(stream), cap = 32 + slen + len * 6, n = 0, i = 0;
    char *out = malloc(cap);

    if (!out)
        return NULL;
    memcpy(out, "{\"stream\":\"", 11);
    n = 11;
    memcpy(out + n, stream, slen);
    n += slen;
    memcpy(out + n, "\",\"data\":\"", 10);
    n += 10;
    while (i < len) {
        unsigned char c = s[i];
        size_t k;

        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            out[n++] = (char)c;
            i++;
            continue;
        }
        if (c >= 0x80) {
            k = utf8_seq(s + i, len - i);
            if (!k) {
                free(out);
                return core_raw_event_json(stream, "(non-UTF-8 output)", 18, out_len);
            }
            memcpy(out + n, s + i, k);
            n += k;
            i += k;
            continue;
        }
        out[n++] = '\\';
        switch (c) {
        case '"':
            out[n++] = '"';
            break;
        case '\\':
            out[n++] = '\\';
            break;
        case '\b':
            out[n++] = 'b';
            break;
        case '\f':
            out[n++] = 'f';
            break;
        case '\n':
            out[n++] = 'n';
            break;
        case '\r':
            out[n++] = 'r';
            break;
        case '\t':
            out[n++] = 't';
            break;
        default:
            memcpy(out + n, "u00", 3);
            n += 3;
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
            break;
        }
        i++;
    }
    memcpy(out + n, "\"}", 3);
    n += 2;
    *out_len = n;
    return out;
}
