/* autohand_raw.c — the raw-text side of Autohand lines: numbers jansson refuses, and the verbatim
 * text of the params member. jansson rejects a whole line over one integer past int64 or real
 * past double, yet the seed says such a line is a (possibly valid) hook whose params must stay
 * observable; these helpers let autohand_decode.c read it anyway and keep params verbatim.
 * Owns: a lexical number scan outside strings and a top-level member scan of a JSON object.
 * Threads: any; pure functions. */
#include "harness/autohand.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t skip_string(const char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

static int is_num_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Classifies one number literal: 0 = jansson reads it, 1 = integer past int64 but a finite double
 * (append ".0"), 2 = beyond double range (becomes null). -1 on OOM. */
static int number_fix(const char *tok, size_t n)
{
    char small[64], *buf = small;
    int is_int = 1, fix = 0;
    size_t i;
    double d;

    for (i = 0; i < n; i++)
        if (tok[i] == '.' || tok[i] == 'e' || tok[i] == 'E')
            is_int = 0;
    if (n >= sizeof(small)) {
        buf = malloc(n + 1);
        if (!buf)
            return -1;
    }
    memcpy(buf, tok, n);
    buf[n] = '\0';
    if (is_int) {
        errno = 0;
        (void)strtoll(buf, NULL, 10);
        if (errno == ERANGE)
            fix = 1;
    }
    if (fix || !is_int) {
        d = strtod(buf, NULL);
        if (isinf(d))
            fix = 2;
    }
    if (buf != small)
        free(buf);
    return fix;
}

/* A copy of line where every literal jansson would refuse is made readable. *changed tells
 * whether any was. NULL on OOM. Output is at most 2*len bytes: a fixed literal is >= 19 chars
 * (gains 2) or >= 4 chars ("1e400" -> "null"). */
char *hns_autohand_fix_numbers(const char *line, size_t len, size_t *out_len, bool *changed)
{
    char *out = malloc(2 * len + 16);
    size_t i = 0, o = 0;

    if (!out)
        return NULL;
    *changed = false;
    while (i < len) {
        if (line[i] == '"') {
            size_t e = skip_string(line, i, len);

            memcpy(out + o, line + i, e - i);
            o += e - i;
            i = e;
        } else if (line[i] == '-' || (line[i] >= '0' && line[i] <= '9')) {
            size_t e = i;
            int fix;

            while (e < len && is_num_char(line[e]))
                e++;
            fix = number_fix(line + i, e - i);
            if (fix < 0) {
                free(out);
                return NULL;
            }
            if (fix == 2) {
                memcpy(out + o, "null", 4);
                o += 4;
            } else {
                memcpy(out + o, line + i, e - i);
                o += e - i;
                if (fix == 1) {
                    memcpy(out + o, ".0", 2);
                    o += 2;
                }
            }
            if (fix)
                *changed = true;
            i = e;
        } else {
            out[o++] = line[i++];
        }
    }
    *out_len = o;
    return out;
}

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

static size_t skip_value(const char *s, size_t i, size_t n)
{
    int depth = 0;

    if (i < n && s[i] == '"')
        return skip_string(s, i, n);
    if (i < n && (s[i] == '{' || s[i] == '[')) {
        while (i < n) {
            if (s[i] == '"') {
                i = skip_string(s, i, n);
                continue;
            }
            if (s[i] == '{' || s[i] == '[')
                depth++;
            else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
           s[i] != '\r' && s[i] != '\n')
        i++;
    return i;
}

/* True when the quoted key at s[a..b) (quotes included) decodes to "params". */
static bool key_is_params(const char *s, size_t a, size_t b)
{
    json_t *k;
    bool eq;

    if (b - a == 8 && !memcmp(s + a, "\"params\"", 8))
        return true;
    if (!memchr(s + a, '\\', b - a))
        return false;
    k = json_loadb(s + a, b - a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    eq = k && json_string_length(k) == 6 && !memcmp(json_string_value(k), "params", 6);
    json_decref(k);
    return eq;
}

/* Finds the text of the top-level "params" member (the last one, as jansson keeps the last) of
 * a line known to be a JSON object. */
bool hns_autohand_params_span(const char *s, size_t n, size_t *start, size_t *end)
{
    size_t i = skip_ws(s, 0, n);
    bool found = false;

    if (i >= n || s[i] != '{')
        return false;
    i++;
    for (;;) {
        size_t ka, kb, va, vb;

        i = skip_ws(s, i, n);
        if (i >= n || s[i] != '"')
            break;
        ka = i;
        kb = skip_string(s, i, n);
        i = skip_ws(s, kb, n);
        if (i >= n || s[i] != ':')
            break;
        va = skip_ws(s, i + 1, n);
        vb = skip_value(s, va, n);
        if (key_is_params(s, ka, kb)) {
            *start = va;
            *end = vb;
            found = true;
        }
        i = skip_ws(s, vb, n);
        if (i >= n || s[i] != ',')
            break;
        i++;
    }
    return found;
}
