/* mock_server.c — the HTTP side of evolve mock-llm: a libmicrohttpd daemon on loopback (one
 * thread per connection, so a paced stream may sleep without holding up others), request
 * bodies gathered (and gunzipped), routed to a dialect or to the small start-up endpoints
 * (HEAD /, GET models, count_tokens), replies written chunk by chunk when each is due, and
 * one JSONL log line per request with credentials redacted.
 * Threads: mock_server_start/stop on the caller's thread; everything else on libmicrohttpd's
 * connection threads. Shared state: the log (its own mutex), the named-scenario cache and the
 * stopping flag (lock + cond, which also wakes paced streams at stop), the request counter
 * (atomic), the error counters (their own mutex). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#include "core/error.h"
#include "core/log.h"
#include "mockllm/mock_impl.h"
#include "mockllm/mockllm.h"

#define MAX_BODY  (64u << 20)
#define MAX_NAMED 32

struct mock_server {
    struct MHD_Daemon *daemon;
    uint16_t port;
    struct mock_scenario *scenario;
    struct mock_scenario *named[MAX_NAMED]; /* loaded on demand by /s/<name>/ (lock) */
    size_t nnamed;
    char *scenario_dir;
    struct mock_errcount *errs;
    struct mock_log log;
    int log_bodies;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled once, when stopping is set */
    int stopping;
    atomic_uint_fast64_t seq; /* relaxed: a counter, orders nothing */
};

struct req {
    char *buf;
    size_t len, cap;
    int too_big;
};

struct paced {
    struct mock_server *srv;
    struct mock_stream s;
    size_t idx, off;
    uint64_t t0_ms;
};

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Sleeps until monotonic `due` ms or until the server stops. Returns -1 when stopping. */
static int wait_due(struct mock_server *srv, uint64_t due)
{
    struct timespec ts;
    int stopping;

    pthread_mutex_lock(&srv->lock);
    while (!srv->stopping) {
        uint64_t now = mono_ms();

        if (now >= due)
            break;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)((due - now) / 1000);
        ts.tv_nsec += (long)((due - now) % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
    }
    stopping = srv->stopping;
    pthread_mutex_unlock(&srv->lock);
    return stopping ? -1 : 0;
}

/* ---- writing paced replies ---- */

static ssize_t paced_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct paced *p = cls;
    struct mock_chunk *c;
    size_t n;

    (void)pos;
    if (p->idx >= p->s.n)
        return MHD_CONTENT_READER_END_OF_STREAM;
    c = &p->s.v[p->idx];
    if (p->off == 0 && wait_due(p->srv, p->t0_ms + c->due_ms) < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    n = c->len - p->off < max ? c->len - p->off : max;
    memcpy(buf, c->data + p->off, n);
    p->off += n;
    if (p->off == c->len) {
        p->idx++;
        p->off = 0;
    }
    return (ssize_t)n;
}

static void paced_free(void *cls)
{
    struct paced *p = cls;

    mock_stream_free(&p->s);
    free(p);
}

/* Queues the stream as the reply (takes it over). SSE goes chunked; a JSON body gets its size. */
static enum MHD_Result queue_stream(struct MHD_Connection *conn, struct mock_server *srv,
                                    struct mock_stream *s, uint64_t t0)
{
    struct paced *p = calloc(1, sizeof(*p));
    struct MHD_Response *resp;
    uint64_t size = 0;
    enum MHD_Result ret;
    char num[32];
    size_t i;

    if (!p) {
        mock_stream_free(s);
        return MHD_NO;
    }
    p->srv = srv;
    p->s = *s;
    p->t0_ms = t0;
    for (i = 0; i < p->s.n; i++)
        size += p->s.v[i].len;
    resp = MHD_create_response_from_callback(
        strcmp(p->s.content_type, "text/event-stream") ? size : MHD_SIZE_UNKNOWN, 16384, paced_read,
        p, paced_free);
    if (!resp) {
        paced_free(p);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", p->s.content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    snprintf(num, sizeof(num), "req_mock_%llu",
             (unsigned long long)atomic_load_explicit(&srv->seq, memory_order_relaxed));
    MHD_add_response_header(resp, "request-id", num);
    MHD_add_response_header(resp, "x-request-id", num);
    if (p->s.retry_after_s > 0) {
        snprintf(num, sizeof(num), "%d", p->s.retry_after_s);
        MHD_add_response_header(resp, "Retry-After", num);
        snprintf(num, sizeof(num), "%d", p->s.retry_after_s * 1000);
        MHD_add_response_header(resp, "retry-after-ms", num);
    }
    if (p->s.status == 529)
        MHD_add_response_header(resp, "x-should-retry", "true");
    ret = MHD_queue_response(conn, (unsigned)p->s.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result queue_json(struct MHD_Connection *conn, struct mock_server *srv, int status,
                                  json_t *obj)
{
    struct mock_stream s;

    mock_stream_init(&s, NULL);
    s.status = status;
    s.content_type = "application/json";
    mock_stream_json(&s, obj);
    return queue_stream(conn, srv, &s, mono_ms());
}

/* ---- request bodies ---- */

static int append(struct req *r, const char *data, size_t n)
{
    if (r->too_big || r->len + n > MAX_BODY) {
        r->too_big = 1;
        return 0;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 65536;
        char *b;

        while (cap < r->len + n + 1)
            cap *= 2;
        if (!(b = realloc(r->buf, cap)))
            return -1;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return 0;
}

/* gzip or zlib request bodies (Content-Encoding gzip/deflate) into `out`. */
static int inflate_body(struct req *in, struct req *out)
{
    z_stream z;
    char chunk[65536];
    int zr = Z_OK;

    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return -1;
    z.next_in = (Bytef *)in->buf;
    z.avail_in = (uInt)in->len;
    while (zr != Z_STREAM_END) {
        z.next_out = (Bytef *)chunk;
        z.avail_out = sizeof(chunk);
        zr = inflate(&z, Z_NO_FLUSH);
        if ((zr != Z_OK && zr != Z_STREAM_END) ||
            append(out, chunk, sizeof(chunk) - z.avail_out) < 0 || out->too_big) {
            inflateEnd(&z);
            return -1;
        }
        if (zr == Z_OK && z.avail_in == 0 && z.avail_out != 0)
            break;
    }
    inflateEnd(&z);
    return zr == Z_STREAM_END ? 0 : -1;
}

/* ---- routing ---- */

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);

    return a >= b && !strcmp(s + a - b, suffix);
}

/* The scenario for a request: /s/<name>/ prefix (stripped from *path) or X-Mock-Scenario. */
static const struct mock_scenario *pick_scenario(struct mock_server *srv,
                                                 struct MHD_Connection *conn, const char **path,
                                                 json_t *entry)
{
    const char *hdr = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Mock-Scenario");
    char name[128] = "";
    struct mock_scenario *sc = NULL;
    size_t i;

    if (!strncmp(*path, "/s/", 3)) {
        const char *e = strchr(*path + 3, '/');
        size_t n = e ? (size_t)(e - *path - 3) : strlen(*path + 3);

        if (n < sizeof(name)) {
            memcpy(name, *path + 3, n);
            name[n] = '\0';
        }
        *path = e ? e : "/";
    } else if (hdr) {
        snprintf(name, sizeof(name), "%s", hdr);
    }
    if (!name[0] || strchr(name, '.') || !strcmp(name, srv->scenario->name))
        return srv->scenario;
    pthread_mutex_lock(&srv->lock);
    for (i = 0; i < srv->nnamed; i++)
        if (!strcmp(srv->named[i]->name, name))
            sc = srv->named[i];
    if (!sc && srv->nnamed < MAX_NAMED && mock_scenario_load(&sc, name, srv->scenario_dir) == 0) {
        /* the cache is keyed by the requested name */
        free(sc->name);
        sc->name = strdup(name);
        if (sc->name)
            srv->named[srv->nnamed++] = sc;
        else {
            mock_scenario_free(sc);
            sc = NULL;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    if (!sc)
        json_object_set_new(entry, "scenario_error", json_string(evolve_error_last()->message));
    return sc ? sc : srv->scenario;
}

static const struct mock_dialect *dialect_for(const char *path, struct MHD_Connection *conn,
                                              const char **model_out, char *model, size_t msize)
{
    const char *alt = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "alt");
    const char *m = strstr(path, "/models/"), *colon;

    if (ends_with(path, "/messages"))
        return &mock_dialect_anthropic;
    if (ends_with(path, "/chat/completions"))
        return &mock_dialect_chat;
    if (ends_with(path, "/responses"))
        return &mock_dialect_responses;
    if (m && (colon = strchr(m + 8, ':'))) {
        snprintf(model, msize, "%.*s", (int)(colon - m - 8), m + 8);
        *model_out = model;
        if (!strcmp(colon, ":generateContent"))
            return &mock_dialect_gemini;
        if (!strcmp(colon, ":streamGenerateContent"))
            return alt && !strcmp(alt, "sse") ? &mock_dialect_gemini_sse : &mock_dialect_gemini_arr;
    }
    return NULL;
}

static enum MHD_Result model_call(struct mock_server *srv, struct MHD_Connection *conn,
                                  const struct mock_dialect *d, const struct mock_scenario *sc,
                                  const char *model, json_t *body, const struct req *raw,
                                  uint64_t seq, uint64_t t0, json_t *entry)
{
    const char *sess =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Claude-Code-Session-Id");
    struct mock_view *v = calloc(1, sizeof(*v));
    struct mock_reply r;
    struct mock_stream s;
    json_t *names;
    size_t i;

    if (!v)
        return MHD_NO;
    if (!sess)
        sess = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "session-id");
    if (!sess)
        sess = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-session-id");
    v->body = body;
    v->model = model;
    v->conv_key = mock_fnv(MOCK_FNV_INIT, sess);
    v->prompt_tokens = mock_tokens(raw->len);
    if (d->inspect(v) != 0) {
        free(v);
        json_object_set_new(entry, "reply", json_pack("{si}", "status", 400));
        mock_log_write(&srv->log, entry);
        return queue_json(conn, srv, 400,
                          json_pack("{s{ss ss}}", "error", "type", "invalid_request_error",
                                    "message",
                                    "mock-llm: the request body lacks its "
                                    "messages/contents/input array"));
    }
    mock_find_cwd(raw->buf, raw->len, v->cwd, sizeof(v->cwd));
    mock_select_turn(v, sc);
    if (mock_plan(&r, sc, v, srv->errs, seq) != 0) {
        free(v);
        json_decref(entry);
        return MHD_NO;
    }
    mock_stream_init(&s, &r.pacing);
    d->render(&r, v, &s);
    names = json_array();
    for (i = 0; i < v->ntools; i++)
        json_array_append_new(names, json_string(v->tools[i].name));
    json_object_set_new(entry, "dialect", json_string(d->name));
    json_object_set_new(entry, "scenario", json_string(sc->name));
    json_object_set_new(entry, "model", json_string(v->model ? v->model : ""));
    json_object_set_new(entry, "stream", json_boolean(s.content_type[0] == 't'));
    json_object_set_new(entry, "turn", json_integer(v->turn));
    json_object_set_new(entry, "cwd", json_string(v->cwd));
    json_object_set_new(entry, "tools", names);
    json_object_set_new(entry, "reply", mock_log_reply(&r));
    json_object_set_new(entry, "usage",
                        json_pack("{sI sI sI sI}", "prompt_tokens", (json_int_t)r.prompt_tokens,
                                  "completion_tokens", (json_int_t)r.completion_tokens,
                                  "cache_read_tokens", (json_int_t)r.cache_read_tokens,
                                  "cache_write_tokens", (json_int_t)r.cache_write_tokens));
    if (srv->log_bodies)
        json_object_set_new(entry, "body", mock_log_body(body));
    mock_reply_clear(&r);
    free(v);
    mock_log_write(&srv->log, entry);
    if (s.failed) {
        mock_stream_free(&s);
        return MHD_NO;
    }
    return queue_stream(conn, srv, &s, t0);
}

static enum MHD_Result handle(struct mock_server *srv, struct MHD_Connection *conn, const char *url,
                              const char *method, struct req *rq)
{
    uint64_t seq = atomic_fetch_add_explicit(&srv->seq, 1, memory_order_relaxed) + 1,
             t0 = mono_ms();
    json_t *entry = mock_log_entry(conn, seq, method, url), *body = NULL;
    const char *path = url, *model = NULL, *enc;
    const struct mock_scenario *sc = pick_scenario(srv, conn, &path, entry);
    const struct mock_dialect *d;
    struct req plain = {0};
    char mbuf[128];
    enum MHD_Result ret;

    if (!strcmp(method, "HEAD") || !strcmp(method, "OPTIONS")) {
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

        mock_log_write(&srv->log, entry);
        ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    if (!strcmp(method, "GET")) {
        mock_log_write(&srv->log, entry);
        if (ends_with(path, "/models") || strstr(path, "/models?"))
            return queue_json(conn, srv, 200, mock_models_list(path));
        if (strstr(path, "/models/"))
            return queue_json(conn, srv, 200,
                              json_pack("{ss ss ss ss}", "id", strstr(path, "/models/") + 8, "type",
                                        "model", "object", "model", "display_name",
                                        strstr(path, "/models/") + 8));
        if (!strcmp(path, "/") || !strcmp(path, "/health") || !strcmp(path, "/healthz"))
            return queue_json(conn, srv, 200, json_pack("{sb ss}", "ok", 1, "scenario", sc->name));
        return queue_json(conn, srv, 404,
                          json_pack("{s{ss ss}}", "error", "type", "not_found", "message",
                                    "mock-llm: no such endpoint"));
    }
    if (rq->too_big) {
        mock_log_write(&srv->log, entry);
        return queue_json(
            conn, srv, 413,
            json_pack("{s{ss}}", "error", "message", "mock-llm: request body too large"));
    }
    enc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Encoding");
    if (enc && (!strcasecmp(enc, "gzip") || !strcasecmp(enc, "deflate"))) {
        if (inflate_body(rq, &plain) < 0) {
            free(plain.buf);
            mock_log_write(&srv->log, entry);
            return queue_json(
                conn, srv, 400,
                json_pack("{s{ss}}", "error", "message", "mock-llm: bad compressed body"));
        }
        free(rq->buf);
        *rq = plain;
    }
    body = rq->len ? json_loadb(rq->buf, rq->len, 0, NULL) : json_object();
    if (!json_is_object(body)) {
        json_decref(body);
        mock_log_write(&srv->log, entry);
        return queue_json(conn, srv, 400,
                          json_pack("{s{ss ss}}", "error", "type", "invalid_request_error",
                                    "message", "mock-llm: the body is not a JSON object"));
    }
    if (ends_with(path, "/count_tokens") || ends_with(path, ":countTokens")) {
        unsigned n = mock_tokens(rq->len);

        json_object_set_new(entry, "usage", json_pack("{sI}", "prompt_tokens", (json_int_t)n));
        mock_log_write(&srv->log, entry);
        json_decref(body);
        return queue_json(conn, srv, 200,
                          ends_with(path, ":countTokens")
                              ? json_pack("{sI}", "totalTokens", (json_int_t)n)
                              : json_pack("{sI}", "input_tokens", (json_int_t)n));
    }
    if (!(d = dialect_for(path, conn, &model, mbuf, sizeof(mbuf)))) {
        mock_log_write(&srv->log, entry);
        json_decref(body);
        return queue_json(conn, srv, 404,
                          json_pack("{s{ss ss}}", "error", "type", "not_found", "message",
                                    "mock-llm: no such endpoint"));
    }
    ret = model_call(srv, conn, d, sc, model, body, rq, seq, t0, entry);
    json_decref(body);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx)
{
    struct req *rq = *ctx;

    (void)version;
    if (!rq) {
        if (!(rq = calloc(1, sizeof(*rq))))
            return MHD_NO;
        *ctx = rq;
        return MHD_YES;
    }
    if (*upload_size) {
        if (append(rq, upload, *upload_size) < 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    return handle(cls, conn, url, method, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **ctx,
                         enum MHD_RequestTerminationCode toe)
{
    struct req *rq = *ctx;

    (void)cls;
    (void)conn;
    (void)toe;
    if (rq) {
        free(rq->buf);
        free(rq);
        *ctx = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];

    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    core_log_debug("mock-llm: libmicrohttpd: %s", line);
}

/* ---- start and stop ---- */

static int loopback_addr(const char *host, struct in_addr *out)
{
    if (!host || !*host || !strcmp(host, "localhost"))
        host = "127.0.0.1";
    if (inet_pton(AF_INET, host, out) != 1 || (ntohl(out->s_addr) >> 24) != 127)
        return core_error_set(EVOLVE_EINVAL,
                              "mock-llm: host \"%s\" is not a loopback IPv4 address (127.x.x.x)",
                              host);
    return 0;
}

int mock_server_start(struct mock_server **out, const struct mock_config *cfg)
{
    struct mock_server *srv;
    struct sockaddr_in sa;
    pthread_condattr_t ca;
    const union MHD_DaemonInfo *info;
    int rc;

    *out = NULL;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(cfg->port);
    if ((rc = loopback_addr(cfg->host, &sa.sin_addr)))
        return rc;
    if (!(srv = calloc(1, sizeof(*srv))))
        return core_error_oom();
    pthread_mutex_init(&srv->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv->cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&srv->seq, 0);
    srv->log_bodies = cfg->log_bodies;
    /* first, so that the fail path can always close it */
    if ((rc = mock_log_open(&srv->log, cfg->log_path)))
        goto fail;
    if ((rc = mock_scenario_load(&srv->scenario, cfg->scenario, cfg->scenario_dir)))
        goto fail;
    if (cfg->scenario_dir && !(srv->scenario_dir = strdup(cfg->scenario_dir))) {
        rc = core_error_oom();
        goto fail;
    }
    if (!(srv->errs = mock_errcount_new())) {
        rc = core_error_oom();
        goto fail;
    }
    srv->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
        NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)600, MHD_OPTION_CONNECTION_LIMIT, (unsigned)8192, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, srv, MHD_OPTION_END);
    if (!srv->daemon) {
        rc = core_error_set(EVOLVE_EIO, "mock-llm: cannot listen on %s:%u (port in use?)",
                            cfg->host ? cfg->host : "127.0.0.1", (unsigned)cfg->port);
        goto fail;
    }
    info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : cfg->port;
    *out = srv;
    return 0;
fail:
    mock_server_stop(srv);
    return rc;
}

uint16_t mock_server_port(const struct mock_server *srv)
{
    return srv->port;
}

uint64_t mock_server_requests(const struct mock_server *srv)
{
    return atomic_load_explicit(&((struct mock_server *)srv)->seq, memory_order_relaxed);
}

void mock_server_stop(struct mock_server *srv)
{
    size_t i;

    if (!srv)
        return;
    pthread_mutex_lock(&srv->lock);
    srv->stopping = 1;
    pthread_cond_broadcast(&srv->cond);
    pthread_mutex_unlock(&srv->lock);
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    mock_log_close(&srv->log);
    for (i = 0; i < srv->nnamed; i++)
        mock_scenario_free(srv->named[i]);
    mock_scenario_free(srv->scenario);
    mock_errcount_free(srv->errs);
    free(srv->scenario_dir);
    pthread_cond_destroy(&srv->cond);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}
