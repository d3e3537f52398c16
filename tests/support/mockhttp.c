/* mockhttp.c — libcurl client and SSE splitter for the mock-llm tests (see mockhttp.h). */
#include "support/mockhttp.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "evolve/common.h"
#include "support/support.h"

struct mock_server *ts_mock_start(const char *scenario, const char *log_path, int log_bodies)
{
    struct mock_config cfg = {0};
    struct mock_server *srv;
    char dir[512], path[600];
    int rc;

    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.log_path = log_path;
    cfg.log_bodies = log_bodies;
    if (scenario[0] == '{') {
        ts_mkdtemp(dir, sizeof(dir), "mockscn");
        snprintf(path, sizeof(path), "%s/scenario.json", dir);
        ts_write_file(path, scenario, strlen(scenario));
        cfg.scenario = path;
        rc = mock_server_start(&srv, &cfg);
        ts_rmtree(dir);
    } else {
        cfg.scenario = scenario;
        rc = mock_server_start(&srv, &cfg);
    }
    if (rc != 0)
        ts_die("mock_server_start: %s", evolve_error_last()->message);
    return srv;
}

struct sink {
    struct ts_http *r;
    uint64_t t0;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct sink *s = ud;
    struct ts_http *r = s->r;
    size_t len = sz * n;
    char *b;

    if (r->len == 0 && len > 0)
        r->first_byte_ms = ts_now_ms() - s->t0;
    if (!(b = realloc(r->body, r->len + len + 1)))
        return 0;
    r->body = b;
    memcpy(r->body + r->len, p, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct ts_http *r = ((struct sink *)ud)->r;
    size_t len = sz * n, k;
    char *dst = NULL;
    size_t cap = 0, skip = 0;

    if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
        dst = r->retry_after;
        cap = sizeof(r->retry_after);
        skip = 12;
    } else if (len > 13 && !strncasecmp(p, "Content-Type:", 13)) {
        dst = r->content_type;
        cap = sizeof(r->content_type);
        skip = 13;
    }
    if (dst) {
        while (skip < len && p[skip] == ' ')
            skip++;
        for (k = 0; skip + k < len && k + 1 < cap && p[skip + k] != '\r' && p[skip + k] != '\n';
             k++)
            dst[k] = p[skip + k];
        dst[k] = '\0';
    }
    return len;
}

static void perform(struct ts_http *out, uint16_t port, const char *method, const char *path,
                    const char *body, const char *const *headers)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    struct sink s = {out, 0};
    char url[1024];
    CURLcode cc;

    memset(out, 0, sizeof(*out));
    if (!c)
        ts_die("curl_easy_init");
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &s);
    hl = curl_slist_append(hl, "Content-Type: application/json");
    for (; headers && *headers; headers++)
        hl = curl_slist_append(hl, *headers);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    } else if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    }
    s.t0 = ts_now_ms();
    cc = curl_easy_perform(c);
    out->total_ms = ts_now_ms() - s.t0;
    if (cc != CURLE_OK)
        ts_die("%s %s: %s", method, url, curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    if (!out->body)
        out->body = calloc(1, 1);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
}

void ts_http_post(struct ts_http *out, uint16_t port, const char *path, const char *body,
                  const char *const *headers)
{
    perform(out, port, "POST", path, body, headers);
}

void ts_http_req(struct ts_http *out, uint16_t port, const char *method, const char *path)
{
    perform(out, port, method, path, NULL, NULL);
}

void ts_http_free(struct ts_http *r)
{
    free(r->body);
    r->body = NULL;
}

size_t ts_sse_parse(const char *body, struct ts_sse **out)
{
    size_t n = 0, cap = 16;
    struct ts_sse *v = calloc(cap, sizeof(*v));
    const char *p = body;

    while (*p) {
        const char *end = strstr(p, "\n\n"), *line = p;
        struct ts_sse ev;

        if (!end)
            end = p + strlen(p);
        memset(&ev, 0, sizeof(ev));
        while (line < end) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);

            if (ll > 7 && !strncmp(line, "event: ", 7))
                snprintf(ev.event, sizeof(ev.event), "%.*s", (int)(ll - 7), line + 7);
            else if (ll > 6 && !strncmp(line, "data: ", 6)) {
                if (ll == 12 && !strncmp(line + 6, "[DONE]", 6)) {
                    ev.done = 1;
                } else {
                    json_error_t je;

                    ev.data = json_loadb(line + 6, ll - 6, 0, &je);
                    if (!ev.data)
                        ts_die("SSE data line is not JSON (%s): %.*s", je.text, (int)ll, line);
                }
            }
            line += ll + 1;
        }
        if (ev.event[0] || ev.data || ev.done) {
            if (n == cap)
                v = realloc(v, (cap *= 2) * sizeof(*v));
            v[n++] = ev;
        }
        p = *end ? end + 2 : end;
    }
    *out = v;
    return n;
}

void ts_sse_free(struct ts_sse *ev, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        json_decref(ev[i].data);
    free(ev);
}
