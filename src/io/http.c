/* http.c — asynchronous HTTP requests on the reactor: one CURLM per reactor driven by
 * curl_multi_socket_action, a per-host admission queue above curl, and retries.
 *
 * Owns: the CURLM (created on first use, freed by the reactor's stop hook), per-host queues, each
 *       request's easy handle and copies of its inputs.
 * Does not own: the reactor loop (io/reactor.c), the retry arithmetic (io/retry.c).
 * Threads: all of it on the reactor thread, including every user callback; the entry points
 *       other threads call (start/cancel/release/limit) are in io/http_api.c and post here.
 * Ordering: per request, on_headers (at most once) -> on_chunk* -> on_done (exactly once).
 *       Requests to one host are admitted in the order their start reached the reactor.
 * Size: ~700 lines, over the ~600 aim, because it is one request state machine (posted, queued,
 *       active, backoff, done); split further, its transitions would be spread over files. */
#include "io/http.h"
#include "io/http_int.h"

#include <assert.h>
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>

#include "core/error.h"
#include "core/log.h"
#include "evolve/common.h"

struct http_host {
    struct http_host *next;
    char *key; /* "host:port" */
    unsigned inflight;
    bool has_limit;
    unsigned limit;                /* 0 = unlimited */
    struct io_http *qhead, *qtail; /* waiting for admission, FIFO */
};

struct http_ctx {
    struct io_reactor *r;
    CURLM *multi;
    struct io_timer *timer; /* curl's single timeout */
    struct http_host *hosts;
    unsigned default_limit;
    struct io_http *all; /* every request started on the reactor and not yet done */
};

/* ---- request memory -------------------------------------------------------------------------- */

static void clear_headers(struct io_http *h)
{
    size_t i;

    for (i = 0; i < h->nhdrs; i++)
        free((char *)h->hdrs[i].name); /* name and value share one allocation */
    h->nhdrs = 0;
}

void io_http_free_request(struct io_http *h)
{
    clear_headers(h);
    free(h->hdrs);
    free(h->method);
    free(h->url);
    free(h->display);
    free(h->host_key);
    free(h->body);
    curl_slist_free_all(h->headers);
    free(h);
}

void io_http_unref(struct io_http *h)
{
    /* acq_rel: the last owner must see every write the others made before dropping theirs. */
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1)
        io_http_free_request(h);
}

/* ---- the per-reactor context ----------------------------------------------------------------- */

static void check_done(struct http_ctx *ctx);
static void admit_next(struct http_ctx *ctx, struct http_host *host);

static void on_socket_ready(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct http_ctx *ctx = arg;
    int flags = 0, running;

    (void)r;
    if (revents & EPOLLIN)
        flags |= CURL_CSELECT_IN;
    if (revents & EPOLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (revents & (EPOLLERR | EPOLLHUP))
        flags |= CURL_CSELECT_ERR;
    curl_multi_socket_action(ctx->multi, io_watch_fd(w), flags, &running);
    check_done(ctx);
}

/* CURLMOPT_SOCKETFUNCTION: curl tells us which sockets to watch for what. */
static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct http_ctx *ctx = userp;
    struct io_watch *w = socketp;
    uint32_t events = 0;

    (void)e;
    if (what == CURL_POLL_REMOVE) {
        io_reactor_unwatch(ctx->r, w);
        return 0;
    }
    if (what & CURL_POLL_IN)
        events |= EPOLLIN;
    if (what & CURL_POLL_OUT)
        events |= EPOLLOUT;
    if (!w) {
        w = io_reactor_watch(ctx->r, s, events, IO_STAGE_CURL, on_socket_ready, ctx);
        if (!w)
            return -1; /* curl fails the transfers on this socket */
        curl_multi_assign(ctx->multi, s, w);
        return 0;
    }
    return io_reactor_watch_set(ctx->r, w, events) < 0 ? -1 : 0;
}

static void on_curl_timeout(struct io_reactor *r, void *arg)
{
    struct http_ctx *ctx = arg;
    int running;

    (void)r;
    ctx->timer = NULL; /* fired: the handle is gone; curl may set a new one below */
    curl_multi_socket_action(ctx->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(ctx);
}

/* CURLMOPT_TIMERFUNCTION: one timeout for the whole multi; -1 deletes it. */
static int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
    struct http_ctx *ctx = userp;

    (void)m;
    io_reactor_timer_cancel(ctx->r, ctx->timer);
    ctx->timer = NULL;
    if (timeout_ms < 0)
        return 0;
    ctx->timer = io_reactor_timer(ctx->r, (uint64_t)timeout_ms, on_curl_timeout, ctx);
    return ctx->timer ? 0 : -1;
}

static void http_stop(struct io_reactor *r, void *arg);

static struct http_ctx *get_ctx(struct io_reactor *r)
{
    void **slot = io_reactor_slot(r, IO_SLOT_HTTP);
    struct http_ctx *ctx = *slot;

    if (ctx)
        return ctx;
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return NULL;
    ctx->r = r;
    ctx->default_limit = IO_HTTP_DEFAULT_HOST_LIMIT;
    ctx->multi = curl_multi_init();
    if (!ctx->multi || io_reactor_on_stop(r, http_stop, ctx) < 0) {
        curl_multi_cleanup(ctx->multi);
        free(ctx);
        return NULL;
    }
    curl_multi_setopt(ctx->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(ctx->multi, CURLMOPT_SOCKETDATA, ctx);
    curl_multi_setopt(ctx->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(ctx->multi, CURLMOPT_TIMERDATA, ctx);
    curl_multi_setopt(ctx->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    /* curl's default cache holds 4 x the transfers currently added; whenever the in-flight count
     * dips it closes idle connections that are wanted again a moment later (bench/http measured
     * up to 173 connections opened for 1,000 requests at 50 in flight; 50 with this). */
    curl_multi_setopt(ctx->multi, CURLMOPT_MAXCONNECTS, 1000L);
    *slot = ctx;
    return ctx;
}

static struct http_host *get_host(struct http_ctx *ctx, const char *key)
{
    struct http_host *host;

    for (host = ctx->hosts; host; host = host->next)
        if (!strcmp(host->key, key))
            return host;
    host = calloc(1, sizeof(*host));
    if (!host)
        return NULL;
    host->key = strdup(key);
    if (!host->key) {
        free(host);
        return NULL;
    }
    host->next = ctx->hosts;
    ctx->hosts = host;
    return host;
}

static unsigned host_limit(const struct http_ctx *ctx, const struct http_host *host)
{
    return host->has_limit ? host->limit : ctx->default_limit;
}

/* ---- completion ------------------------------------------------------------------------------ */

static void all_unlink(struct http_ctx *ctx, struct io_http *h)
{
    if (h->aprev)
        h->aprev->anext = h->anext;
    else if (ctx->all == h)
        ctx->all = h->anext;
    if (h->anext)
        h->anext->aprev = h->aprev;
    h->aprev = h->anext = NULL;
}

static void queue_unlink(struct http_host *host, struct io_http *h)
{
    if (h->qprev)
        h->qprev->qnext = h->qnext;
    else
        host->qhead = h->qnext;
    if (h->qnext)
        h->qnext->qprev = h->qprev;
    else
        host->qtail = h->qprev;
    h->qprev = h->qnext = NULL;
}

/* Removes the attempt in flight from curl (never called from inside a curl callback). */
static void drop_easy(struct http_ctx *ctx, struct io_http *h)
{
    long n = 0;

    if (!h->easy)
        return;
    if (curl_easy_getinfo(h->easy, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK)
        h->connects += n;
    curl_multi_remove_handle(ctx->multi, h->easy);
    curl_easy_cleanup(h->easy);
    h->easy = NULL;
    if (h->host && h->host->inflight)
        h->host->inflight--;
}

/* Delivers on_done exactly once and drops the reactor's reference. `detail` is appended to the
 * message when code != 0. */
static void finish(struct http_ctx *ctx, struct io_http *h, int code, const char *detail)
{
    struct io_http_result res = {0};

    assert(h->state != H_DONE);
    h->state = H_DONE;
    if (ctx)
        all_unlink(ctx, h);
    if (code) {
        if (h->attempts > 1)
            snprintf(h->msg, sizeof(h->msg), "%s %s: %s (attempt %u)", h->method, h->display,
                     detail, h->attempts);
        else
            snprintf(h->msg, sizeof(h->msg), "%s %s: %s", h->method, h->display, detail);
    } else {
        h->msg[0] = '\0';
    }
    res.code = code;
    res.message = h->msg;
    res.status = h->status;
    res.headers = h->hdrs;
    res.nheaders = h->nhdrs;
    res.body_bytes = h->bytes;
    res.retry_after_ms = h->retry_after_ms;
    res.attempts = h->attempts;
    res.connects = h->connects;
    core_log_debug("http: %s %s: code %d status %ld after %u attempt(s)", h->method, h->display,
                   code, h->status, h->attempts);
    h->cbs.on_done(&res, h->payload);
    io_http_unref(h);
}

static int map_curl(const struct io_http *h, CURLcode rc, bool *connect_failed)
{
    *connect_failed = false;
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return EVOLVE_ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
        *connect_failed = true;
        return EVOLVE_EIO;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        return EVOLVE_EIO;
    case CURLE_WRITE_ERROR:
        return h->too_large ? EVOLVE_EPROTO : EVOLVE_ERROR;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_READ_ERROR:
        return h->reader_failed ? EVOLVE_EUSER : EVOLVE_EIO;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return EVOLVE_EINVAL;
    case CURLE_OUT_OF_MEMORY:
        return EVOLVE_ENOMEM;
    default:
        return EVOLVE_ERROR;
    }
}

static bool body_replayable(const struct io_http *h)
{
    return !h->has_reader || !h->body_read || h->reader.rewind;
}

static bool retry_after_ok(const struct io_http *h)
{
    uint32_t max = h->opt.retry.retry_after_max_ms ? h->opt.retry.retry_after_max_ms : 120000;

    return h->retry_after_ms < 0 || (uint64_t)h->retry_after_ms <= max;
}

static bool attempts_left(const struct io_http *h)
{
    return h->attempts < h->opt.retry.max_attempts;
}

static void admit(struct http_ctx *ctx, struct io_http *h);

static void on_backoff_done(struct io_reactor *r, void *arg)
{
    struct io_http *h = arg;

    h->backoff = NULL;
    admit(get_ctx(r), h);
}

/* A transfer ended: retry it after a backoff, or deliver on_done. */
static void transfer_done(struct http_ctx *ctx, struct io_http *h, CURLcode rc)
{
    bool connect_failed;
    int code = map_curl(h, rc, &connect_failed);
    struct http_host *host = h->host;
    char detail[CURL_ERROR_SIZE + 64];

    drop_easy(ctx, h);
    if (code == EVOLVE_EPROTO)
        snprintf(detail, sizeof(detail), "response body exceeds max_response_bytes (%llu)",
                 (unsigned long long)h->opt.max_response_bytes);
    else if (code == EVOLVE_EUSER)
        snprintf(detail, sizeof(detail), "the request body reader failed");
    else
        snprintf(detail, sizeof(detail), "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
    if (attempts_left(h) && !h->headers_delivered && body_replayable(h) && retry_after_ok(h) &&
        io_retry_wanted(code, h->status, h->opt.idempotent, connect_failed)) {
        bool honour = code == 0 && (h->status == 429 || h->status == 503);
        uint64_t delay = io_retry_delay_ms(
            &h->opt.retry, h->attempts, honour ? h->retry_after_ms : -1, io_reactor_random(ctx->r));

        if (h->has_reader && h->body_read && h->reader.rewind(h->reader.payload) < 0) {
            finish(ctx, h, EVOLVE_EUSER, "the request body reader could not rewind");
        } else {
            core_log_debug("http: %s %s: retrying in %llu ms (attempt %u: code %d status %ld)",
                           h->method, h->display, (unsigned long long)delay, h->attempts, code,
                           h->status);
            h->state = H_BACKOFF;
            h->backoff = io_reactor_timer(ctx->r, delay, on_backoff_done, h);
            if (!h->backoff)
                finish(ctx, h, EVOLVE_ENOMEM, "out of memory scheduling a retry");
        }
    } else {
        finish(ctx, h, code, detail);
    }
    admit_next(ctx, host);
}

static void check_done(struct http_ctx *ctx)
{
    CURLMsg *m;
    int left;

    while ((m = curl_multi_info_read(ctx->multi, &left))) {
        struct io_http *h = NULL;

        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        transfer_done(ctx, h, m->data.result);
    }
}

/* ---- curl's per-transfer callbacks (no curl_multi_* calls allowed in here) ------------------- */

static void headers_complete(struct io_http *h)
{
    size_t i;

    for (i = 0; i < h->nhdrs; i++)
        if (!strcasecmp(h->hdrs[i].name, "Retry-After"))
            h->retry_after_ms = io_retry_after_parse(h->hdrs[i].value, (int64_t)time(NULL));
    h->suppress = attempts_left(h) && body_replayable(h) && retry_after_ok(h) &&
                  io_retry_wanted(0, h->status, h->opt.idempotent, false);
    if (h->suppress)
        return;
    h->headers_delivered = true;
    if (h->cbs.on_headers)
        h->cbs.on_headers(h->status, h->hdrs, h->nhdrs, h->payload);
}

static size_t on_curl_header(char *buf, size_t size, size_t n, void *ud)
{
    struct io_http *h = ud;
    size_t len = size * n, nlen;
    const char *colon, *v, *vend;
    char *copy;

    if (len >= 5 && !memcmp(buf, "HTTP/", 5)) { /* a new response (after 1xx, or the first) */
        const char *p = memchr(buf, ' ', len), *end = buf + len;

        h->headers_done = false;
        clear_headers(h);
        h->retry_after_ms = -1;
        h->status = 0;
        for (p = p ? p + 1 : end; p < end && *p >= '0' && *p <= '9' && h->status < 1000; p++)
            h->status = h->status * 10 + (*p - '0'); /* the line is not NUL-terminated */
        return len;
    }
    if (h->headers_done)
        return len; /* trailers after a chunked body: not headers of the response */
    vend = buf + len;
    while (vend > buf && (vend[-1] == '\r' || vend[-1] == '\n'))
        vend--;
    if (vend == buf) { /* the blank line ending a header block */
        if (h->status >= 200) {
            h->headers_done = true;
            headers_complete(h);
        }
        return len;
    }
    colon = memchr(buf, ':', (size_t)(vend - buf));
    if (!colon)
        return len;
    nlen = (size_t)(colon - buf);
    v = colon + 1;
    while (v < vend && (*v == ' ' || *v == '\t'))
        v++;
    if (h->nhdrs == h->caphdrs) {
        size_t cap = h->caphdrs ? h->caphdrs * 2 : 16;
        struct io_http_header *nh = realloc(h->hdrs, cap * sizeof(*nh));

        if (!nh)
            return 0;
        h->hdrs = nh;
        h->caphdrs = cap;
    }
    copy = malloc(nlen + 1 + (size_t)(vend - v) + 1);
    if (!copy)
        return 0;
    memcpy(copy, buf, nlen);
    copy[nlen] = '\0';
    memcpy(copy + nlen + 1, v, (size_t)(vend - v));
    copy[nlen + 1 + (size_t)(vend - v)] = '\0';
    h->hdrs[h->nhdrs].name = copy;
    h->hdrs[h->nhdrs].value = copy + nlen + 1;
    h->nhdrs++;
    return len;
}

static size_t on_curl_write(char *data, size_t size, size_t n, void *ud)
{
    struct io_http *h = ud;
    size_t len = size * n;

    h->bytes += len;
    if (h->opt.max_response_bytes && h->bytes > h->opt.max_response_bytes) {
        h->too_large = true;
        return 0; /* CURLE_WRITE_ERROR */
    }
    if (!h->suppress && h->cbs.on_chunk && len)
        h->cbs.on_chunk(data, len, h->payload);
    return len;
}

static size_t on_curl_read(char *buf, size_t size, size_t n, void *ud)
{
    struct io_http *h = ud;
    long got;

    h->body_read = true;
    got = h->reader.read(buf, size * n, h->reader.payload);
    if (got < 0 || (size_t)got > size * n) {
        h->reader_failed = true;
        return CURL_READFUNC_ABORT;
    }
    return (size_t)got;
}

/* ---- starting attempts ----------------------------------------------------------------------- */

static bool is_loopback_url(const char *host_key)
{
    return !strncmp(host_key, "127.", 4) || !strncmp(host_key, "localhost:", 10) ||
           !strncmp(host_key, "[::1]:", 6);
}

static int start_attempt(struct http_ctx *ctx, struct io_http *h)
{
    CURL *e = curl_easy_init();
    const struct io_http_request *o = &h->opt;

    if (!e)
        return EVOLVE_ENOMEM;
    h->status = 0;
    clear_headers(h);
    h->retry_after_ms = -1;
    h->bytes = 0;
    h->suppress = h->too_large = h->reader_failed = h->headers_done = false;
    h->errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, h->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)h);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_curl_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_curl_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(o->connect_timeout_ms ? o->connect_timeout_ms : 30000));
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     o->http1_only ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    if (!o->http1_only && !strncmp(h->url, "https:", 6))
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L); /* prefer multiplexing over a new connection */
    if (is_loopback_url(h->host_key))
        curl_easy_setopt(e, CURLOPT_NOPROXY, "*"); /* a proxy is never right for loopback */
    if (h->has_body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, h->body);
    } else if (h->has_reader) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->reader.size);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_curl_read);
        curl_easy_setopt(e, CURLOPT_READDATA, h);
    }
    if (!strcmp(h->method, "HEAD"))
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(h->method, (h->has_body || h->has_reader) ? "POST" : "GET"))
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, h->method);
    if (curl_multi_add_handle(ctx->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        return EVOLVE_ERROR;
    }
    h->easy = e;
    h->attempts++;
    h->host->inflight++;
    h->state = H_ACTIVE;
    return 0;
}

static void admit_next(struct http_ctx *ctx, struct http_host *host)
{
    while (host->qhead) {
        unsigned limit = host_limit(ctx, host);
        struct io_http *h = host->qhead;
        int rc;

        if (limit && host->inflight >= limit)
            return;
        queue_unlink(host, h);
        rc = start_attempt(ctx, h);
        if (rc < 0)
            finish(ctx, h, rc, "could not start the transfer");
    }
}

/* Queues h behind its host's waiting requests, then admits what the limit allows. */
static void admit(struct http_ctx *ctx, struct io_http *h)
{
    struct http_host *host = h->host;

    h->state = H_QUEUED;
    h->qnext = NULL;
    h->qprev = host->qtail;
    if (host->qtail)
        host->qtail->qnext = h;
    else
        host->qhead = h;
    host->qtail = h;
    admit_next(ctx, host);
}

/* Ends a request that has not finished: from the queue, from curl, or from its backoff. */
static void abort_request(struct http_ctx *ctx, struct io_http *h, int code, const char *why)
{
    struct http_host *host = h->host;

    switch (h->state) {
    case H_QUEUED:
        queue_unlink(host, h);
        break;
    case H_ACTIVE:
        drop_easy(ctx, h);
        break;
    case H_BACKOFF:
        io_reactor_timer_cancel(ctx->r, h->backoff);
        h->backoff = NULL;
        break;
    case H_POSTED:
    case H_DONE:
        all_unlink(ctx, h); /* never linked in these states; keeps http_stop's loop finite */
        return;
    }
    finish(ctx, h, code, why);
    if (!io_reactor_stopping(ctx->r))
        admit_next(ctx, host);
}

/* ---- posted from other threads --------------------------------------------------------------- */

void io_http_on_start(struct io_reactor *r, void *arg)
{
    struct io_http *h = arg;
    struct http_ctx *ctx;

    if (io_reactor_stopping(r)) {
        finish(NULL, h, EVOLVE_ESHUTDOWN, "the reactor is shutting down");
        return;
    }
    ctx = get_ctx(r);
    h->host = ctx ? get_host(ctx, h->host_key) : NULL;
    if (!h->host) {
        finish(NULL, h, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    if (h->cancel_pending) { /* cancelled before it reached the reactor */
        finish(NULL, h, EVOLVE_ECANCELED, "cancelled");
        return;
    }
    h->anext = ctx->all;
    if (ctx->all)
        ctx->all->aprev = h;
    ctx->all = h;
    admit(ctx, h);
}

void io_http_on_cancel(struct io_reactor *r, void *arg)
{
    struct io_http *h = arg;
    void **slot = io_reactor_slot(r, IO_SLOT_HTTP);

    if (h->state == H_POSTED)
        h->cancel_pending = true;
    else if (h->state != H_DONE && *slot)
        abort_request(*slot, h, EVOLVE_ECANCELED, "cancelled");
    io_http_unref(h);
}

/* The reactor's stop hook: every request still known ends with EVOLVE_ESHUTDOWN, then curl. */
static void http_stop(struct io_reactor *r, void *arg)
{
    struct http_ctx *ctx = arg;

    while (ctx->all)
        abort_request(ctx, ctx->all, EVOLVE_ESHUTDOWN, "the reactor is shutting down");
    curl_multi_cleanup(ctx->multi); /* may call on_curl_socket/on_curl_timer one last time */
    io_reactor_timer_cancel(r, ctx->timer);
    while (ctx->hosts) {
        struct http_host *next = ctx->hosts->next;

        free(ctx->hosts->key);
        free(ctx->hosts);
        ctx->hosts = next;
    }
    *io_reactor_slot(r, IO_SLOT_HTTP) = NULL;
    free(ctx);
}

void io_http_on_limit(struct io_reactor *r, void *arg)
{
    struct io_http_limit_msg *m = arg;
    struct http_ctx *ctx = io_reactor_stopping(r) ? NULL : get_ctx(r);
    struct http_host *host;

    if (ctx && !m->host) {
        ctx->default_limit = m->limit;
        for (host = ctx->hosts; host; host = host->next)
            admit_next(ctx, host);
    } else if (ctx && (host = get_host(ctx, m->host))) {
        host->has_limit = true;
        host->limit = m->limit;
        admit_next(ctx, host);
    }
    free(m->host);
    free(m);
}
