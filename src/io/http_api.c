/* http_api.c — the io_http entry points other threads call: io_http_start validates and copies
 * a request and posts it; cancel, release and limit post or drop references. Nothing here touches
 * curl transfers: that is io/http.c, on the reactor thread.
 * Threads: any. */
#include "io/http.h"
#include "io/http_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "evolve/common.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    /* Never paired with curl_global_cleanup: libcurl stays initialised for the process. */
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void io_http_release(struct io_http *h)
{
    if (h)
        io_http_unref(h);
}

void io_http_cancel(struct io_http *h)
{
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed); /* we already hold one */
    if (io_reactor_post(h->r, io_http_on_cancel, h) < 0)
        io_http_unref(h); /* shutting down: the stop hook ends it with EVOLVE_ESHUTDOWN */
}

int io_http_limit(struct io_reactor *r, const char *host, unsigned max_in_flight)
{
    struct io_http_limit_msg *m = calloc(1, sizeof(*m));
    int rc;

    if (!m || (host && !(m->host = strdup(host)))) {
        free(m);
        return core_error_oom();
    }
    m->limit = max_in_flight;
    rc = io_reactor_post(r, io_http_on_limit, m);
    if (rc < 0) {
        free(m->host);
        free(m);
    }
    return rc;
}

/* ---- io_http_start: validate and copy on the caller's thread --------------------------------- */

static int parse_url(struct io_http *h)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    int rc = 0;
    size_t n;

    if (!u)
        return core_error_oom();
    if (curl_url_set(u, CURLUPART_URL, h->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        /* Shown up to its query string, which may carry keys. */
        rc = core_error_set(EVOLVE_EINVAL, "io_http: not a valid URL (%.*s)",
                            (int)(strcspn(h->url, "?#") < 80 ? strcspn(h->url, "?#") : 80), h->url);
        goto out;
    }
    if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
        rc = core_error_set(EVOLVE_EINVAL, "io_http: scheme \"%s\" is not http or https", scheme);
        goto out;
    }
    n = strlen(host) + strlen(port) + 2;
    h->host_key = malloc(n);
    n += strlen(scheme) + 3 + strlen(path);
    h->display = malloc(n);
    if (!h->host_key || !h->display) {
        rc = core_error_oom();
        goto out;
    }
    snprintf(h->host_key, strlen(host) + strlen(port) + 2, "%s:%s", host, port);
    snprintf(h->display, n, "%s://%s:%s%s", scheme, host, port, path); /* no query: may hold keys */
out:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return rc;
}

int io_http_start(struct io_http **out, struct io_reactor *r, const struct io_http_request *req,
                  const struct io_http_callbacks *cbs, void *payload)
{
    struct io_http *h;
    const char *const *hp;
    int rc;

    if (out)
        *out = NULL;
    if (!req || !req->url || !cbs || !cbs->on_done)
        return core_error_set(EVOLVE_EINVAL, "io_http_start: request, URL and on_done required");
    if (req->body && req->reader)
        return core_error_set(EVOLVE_EINVAL, "io_http_start %s: both a body and a reader",
                              req->method ? req->method : "GET");
    if (req->reader && !req->reader->read)
        return core_error_set(EVOLVE_EINVAL, "io_http_start: body reader without read()");
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc < 0)
        return core_error_set(EVOLVE_ERROR, "io_http_start: curl_global_init failed");
    h = calloc(1, sizeof(*h));
    if (!h)
        return core_error_oom();
    h->r = r;
    h->opt = *req;
    h->opt.method = h->opt.url = NULL;
    h->opt.headers = NULL;
    h->opt.body = NULL;
    h->opt.reader = NULL;
    h->cbs = *cbs;
    h->payload = payload;
    h->has_body = req->body != NULL;
    h->has_reader = req->reader != NULL;
    h->retry_after_ms = -1;
    if (h->has_reader)
        h->reader = *req->reader;
    h->method = strdup(req->method ? req->method : (req->body || req->reader) ? "POST" : "GET");
    h->url = strdup(req->url);
    if (!h->method || !h->url)
        goto oom;
    rc = parse_url(h);
    if (rc < 0)
        goto fail;
    if (h->has_body) {
        h->body = malloc(req->body_len ? req->body_len : 1);
        if (!h->body)
            goto oom;
        memcpy(h->body, req->body, req->body_len);
        h->body_len = req->body_len;
    }
    for (hp = req->headers; hp && *hp; hp++) {
        struct curl_slist *l = curl_slist_append(h->headers, *hp);

        if (!l)
            goto oom;
        h->headers = l;
    }
    {
        /* No "Expect: 100-continue" round trip; chunked upload when the size is unknown. */
        struct curl_slist *l = curl_slist_append(h->headers, "Expect:");

        if (!l)
            goto oom;
        h->headers = l;
        if (h->has_reader && h->reader.size < 0) {
            l = curl_slist_append(h->headers, "Transfer-Encoding: chunked");
            if (!l)
                goto oom;
            h->headers = l;
        }
    }
    atomic_init(&h->refs, out ? 2 : 1);
    h->state = H_POSTED;
    rc = io_reactor_post(r, io_http_on_start, h);
    if (rc < 0)
        goto fail;
    if (out)
        *out = h;
    return 0;
oom:
    rc = core_error_oom();
fail:
    io_http_free_request(h);
    return rc;
}
