/* httpd.c — the in-process loopback HTTP server of the I/O tests and bench (see httpd.h).
 * Threads: libmicrohttpd runs one thread per connection (so a delay or a hanging handler blocks
 * only its own connection); routes and counters are shared under one mutex. */
#include "support/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/support.h"

#define MAX_ROUTES 32

struct route {
    struct ts_httpd_route r;
    char *path, *body, *retry_after;
    uint64_t hits, first_ms, last_ms;
    unsigned in_flight, max_in_flight;
};

struct ts_httpd {
    struct MHD_Daemon *d;
    unsigned port;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when stopping: hanging handlers and delays end */
    bool stopping;
    struct route routes[MAX_ROUTES];
    int nroutes;
    struct ts_httpd_stats st;
};

struct req {
    bool counted;
    int route; /* index, or -1 */
    char *upload;
    size_t upload_len;
};

struct stream {
    struct ts_httpd *s;
    unsigned chunk, chunks, delay_ms;
    size_t chunk_size, off;
    bool reset;
    char *cur;
};

void ts_httpd_chunk(char *buf, unsigned i, size_t size)
{
    size_t j;
    char head[32];
    int n = snprintf(head, sizeof(head), "chunk %06u:", i);

    for (j = 0; j < size; j++)
        buf[j] = j < (size_t)n ? head[j] : (char)('a' + (i + j) % 26);
    if (size)
        buf[size - 1] = '\n';
}

/* Waits up to ms unless the server is stopping; returns false when stopping. */
static bool pause_ms(struct ts_httpd *s, unsigned ms)
{
    struct timespec until;
    bool stopping;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    while (!s->stopping && ms) {
        if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
            break;
    }
    stopping = s->stopping;
    pthread_mutex_unlock(&s->mu);
    return !stopping;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *st = cls;
    size_t n;

    (void)pos;
    if (st->chunk == st->chunks)
        return st->reset ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    if (st->off == 0) {
        if (st->chunk > 0 && st->delay_ms && !pause_ms(st->s, st->delay_ms))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        ts_httpd_chunk(st->cur, st->chunk, st->chunk_size);
    }
    n = st->chunk_size - st->off;
    if (n > max)
        n = max;
    memcpy(buf, st->cur + st->off, n);
    st->off += n;
    if (st->off == st->chunk_size) {
        st->off = 0;
        st->chunk++;
    }
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *st = cls;

    free(st->cur);
    free(st);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             size_t len, const char *hname, const char *hvalue)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (!resp)
        return MHD_NO;
    if (hname)
        MHD_add_response_header(resp, hname, hvalue);
    rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    struct ts_httpd *s = cls;
    struct req *rq = *con_cls;
    struct ts_httpd_route route;
    struct route *rt = NULL;
    uint64_t hit = 0;
    int i;

    (void)version;
    if (!rq) { /* first call: headers only */
        rq = calloc(1, sizeof(*rq));
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        rq->counted = true;
        rq->route = -1;
        pthread_mutex_lock(&s->mu);
        for (i = 0; i < s->nroutes; i++)
            if (!strcmp(s->routes[i].path, url))
                rq->route = i;
        if (rq->route >= 0) {
            rt = &s->routes[rq->route];
            if (++rt->in_flight > rt->max_in_flight)
                rt->max_in_flight = rt->in_flight;
        }
        s->st.requests++;
        s->st.in_flight++;
        if (s->st.in_flight > s->st.max_in_flight)
            s->st.max_in_flight = s->st.in_flight;
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    if (*upload_size) {
        char *nb = realloc(rq->upload, rq->upload_len + *upload_size + 1);

        if (!nb)
            return MHD_NO;
        rq->upload = nb;
        memcpy(rq->upload + rq->upload_len, upload, *upload_size);
        rq->upload_len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&s->mu);
    if (rq->route >= 0)
        rt = &s->routes[rq->route];
    if (rt) {
        uint64_t now = ts_now_ms();

        hit = ++rt->hits;
        if (hit == 1)
            rt->first_ms = now;
        rt->last_ms = now;
        route = rt->r;
    }
    pthread_mutex_unlock(&s->mu);
    if (!rt)
        return reply(c, 404, "no such route\n", 14, NULL, NULL);
    switch (route.kind) {
    case TS_HTTPD_FIXED:
        if (route.delay_ms && !pause_ms(s, route.delay_ms))
            return MHD_NO;
        return reply(c, route.status ? (unsigned)route.status : 200, route.body ? route.body : "",
                     route.body ? strlen(route.body) : 0, NULL, NULL);
    case TS_HTTPD_RETRY_AFTER:
        if (hit <= route.fail_first)
            return reply(c, route.fail_status ? (unsigned)route.fail_status : 429, "slow down\n",
                         10, "Retry-After", route.retry_after ? route.retry_after : "1");
        return reply(c, 200, route.body ? route.body : "", route.body ? strlen(route.body) : 0,
                     NULL, NULL);
    case TS_HTTPD_STREAM:
    case TS_HTTPD_RESET: {
        struct stream *st = calloc(1, sizeof(*st));
        struct MHD_Response *resp;
        enum MHD_Result rc;

        if (!st || !(st->cur = malloc(route.chunk_size ? route.chunk_size : 1))) {
            free(st);
            return MHD_NO;
        }
        st->s = s;
        st->chunks = route.chunks;
        st->chunk_size = route.chunk_size;
        st->delay_ms = route.delay_ms;
        st->reset = route.kind == TS_HTTPD_RESET;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st,
                                                 stream_free);
        if (!resp) {
            stream_free(st);
            return MHD_NO;
        }
        rc = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    case TS_HTTPD_HANG:
        pthread_mutex_lock(&s->mu);
        while (!s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        return MHD_NO; /* close without an answer */
    case TS_HTTPD_ECHO: {
        const char *test = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Test");
        struct MHD_Response *resp = MHD_create_response_from_buffer(
            rq->upload_len, rq->upload ? rq->upload : (void *)"", MHD_RESPMEM_MUST_COPY);
        enum MHD_Result rc;

        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, "X-Echo-Method", method);
        MHD_add_response_header(resp, "X-Echo-Test", test ? test : "");
        rc = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    }
    return MHD_NO;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct ts_httpd *s = cls;
    struct req *rq = *con_cls;

    (void)c;
    (void)toe;
    if (!rq)
        return;
    if (rq->counted) {
        pthread_mutex_lock(&s->mu);
        s->st.in_flight--;
        if (rq->route >= 0)
            s->routes[rq->route].in_flight--;
        pthread_mutex_unlock(&s->mu);
    }
    free(rq->upload);
    free(rq);
    *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct ts_httpd *s = cls;

    (void)c;
    (void)socket_context;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED)
        return;
    pthread_mutex_lock(&s->mu);
    s->st.connections++;
    pthread_mutex_unlock(&s->mu);
}

struct ts_httpd *ts_httpd_start(void)
{
    struct ts_httpd *s = calloc(1, sizeof(*s));
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (!s)
        ts_die("httpd: out of memory");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL,
        NULL, handler, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
        completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)4000, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)2048,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(512 * 1024), MHD_OPTION_END);
    if (!s->d)
        ts_die("httpd: MHD_start_daemon failed");
    info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port)
        ts_die("httpd: no bound port");
    s->port = info->port;
    return s;
}

void ts_httpd_stop(struct ts_httpd *s)
{
    int i;

    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    MHD_stop_daemon(s->d);
    for (i = 0; i < s->nroutes; i++) {
        free(s->routes[i].path);
        free(s->routes[i].body);
        free(s->routes[i].retry_after);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static char *dup_or_null(const char *v)
{
    char *d = v ? strdup(v) : NULL;

    if (v && !d)
        ts_die("httpd: out of memory");
    return d;
}

void ts_httpd_route(struct ts_httpd *s, const struct ts_httpd_route *route)
{
    struct route *rt;

    pthread_mutex_lock(&s->mu);
    if (s->nroutes == MAX_ROUTES)
        ts_die("httpd: more than %d routes", MAX_ROUTES);
    rt = &s->routes[s->nroutes++];
    memset(rt, 0, sizeof(*rt));
    rt->r = *route;
    rt->path = dup_or_null(route->path);
    rt->body = dup_or_null(route->body);
    rt->retry_after = dup_or_null(route->retry_after);
    rt->r.path = rt->path;
    rt->r.body = rt->body;
    rt->r.retry_after = rt->retry_after;
    pthread_mutex_unlock(&s->mu);
}

char *ts_httpd_url(const struct ts_httpd *s, const char *path, char *buf, size_t size)
{
    snprintf(buf, size, "http://127.0.0.1:%u%s", s->port, path);
    return buf;
}

unsigned ts_httpd_port(const struct ts_httpd *s)
{
    return s->port;
}

void ts_httpd_stats(struct ts_httpd *s, struct ts_httpd_stats *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    pthread_mutex_unlock(&s->mu);
}

void ts_httpd_reset_max(struct ts_httpd *s)
{
    int i;

    pthread_mutex_lock(&s->mu);
    s->st.max_in_flight = s->st.in_flight;
    for (i = 0; i < s->nroutes; i++)
        s->routes[i].max_in_flight = s->routes[i].in_flight;
    pthread_mutex_unlock(&s->mu);
}

uint64_t ts_httpd_hits(struct ts_httpd *s, const char *path, uint64_t *first_ms, uint64_t *last_ms)
{
    uint64_t hits = 0;
    int i;

    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->nroutes; i++)
        if (!strcmp(s->routes[i].path, path)) {
            hits = s->routes[i].hits;
            if (first_ms)
                *first_ms = s->routes[i].first_ms;
            if (last_ms)
                *last_ms = s->routes[i].last_ms;
        }
    pthread_mutex_unlock(&s->mu);
    return hits;
}

unsigned ts_httpd_max_in_flight(struct ts_httpd *s, const char *path)
{
    unsigned max = 0;
    int i;

    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->nroutes; i++)
        if (!strcmp(s->routes[i].path, path))
            max = s->routes[i].max_in_flight;
    pthread_mutex_unlock(&s->mu);
    return max;
}
