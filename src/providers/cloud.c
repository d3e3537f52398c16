/* cloud.c — shared plumbing of the network providers (providers/cloud.h): buffered REST calls,
 * reactor-fed pipes, the HTTP error model and its batch failure classes, sandbox paths, labels,
 * base64 and RFC 3339.
 * Threads: cloud_call_start, the error/path/encoding helpers from any thread; call callbacks and
 * pipe writes on the reactor thread. */
#include "providers/cloud.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

/* ---- buffered REST calls ------------------------------------------------------------------- */

struct call {
    cloud_reply_fn fn;
    void *payload;
    char *buf;
    size_t len, cap, max;
    bool overflow;
};

static void call_chunk(const char *data, size_t len, void *payload)
{
    struct call *c = payload;

    if (c->overflow)
        return;
    if (c->len + len + 1 > c->max) {
        c->overflow = true;
        return;
    }
    if (c->len + len + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 1024;
        char *nb;

        while (cap < c->len + len + 1)
            cap *= 2;
        nb = realloc(c->buf, cap);
        if (!nb) {
            c->overflow = true;
            return;
        }
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, len);
    c->len += len;
}

static void call_done(const struct io_http_result *res, void *payload)
{
    struct call *c = payload;
    struct io_http_result copy = *res;
    struct cloud_reply rep = {.res = &copy, .body = c->buf ? c->buf : "", .len = c->len};

    if (c->buf)
        c->buf[c->len] = '\0';
    if (c->overflow && copy.code == 0) {
        copy.code = EVOLVE_EPROTO;
        copy.message = "response body too large or out of memory";
    }
    c->fn(&rep, c->payload);
    free(c->buf);
    free(c);
}

int cloud_call_start(struct io_reactor *r, const struct io_http_request *req, size_t max_bytes,
                     cloud_reply_fn fn, void *payload)
{
    static const struct io_http_callbacks cbs = {.on_chunk = call_chunk, .on_done = call_done};
    struct call *c = calloc(1, sizeof(*c));
    struct io_http *h = NULL;
    int rc;

    if (!c)
        return core_error_oom();
    c->fn = fn;
    c->payload = payload;
    c->max = max_bytes ? max_bytes : (size_t)64 << 20;
    rc = io_http_start(&h, r, req, &cbs, c);
    if (rc < 0) {
        free(c);
        return rc;
    }
    io_http_release(h);
    return 0;
}

const char *cloud_header(const struct io_http_result *res, const char *name)
{
    size_t i;

    for (i = 0; res && i < res->nheaders; i++)
        if (!strcasecmp(res->headers[i].name, name))
            return res->headers[i].value;
    return NULL;
}

/* ---- errors -------------------------------------------------------------------------------- */

int cloud_status_set(struct prov_status *st, int code, const char *fmt, ...)
{
    va_list ap;

    st->code = code;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
    return code;
}

static int code_of_http(long status)
{
    switch (status) {
    case 400:
    case 415:
    case 422:
        return EVOLVE_EINVAL;
    case 401:
    case 403:
        return EVOLVE_EUNSUPPORTED;
    case 404:
    case 410:
    case 502:
        return EVOLVE_ENOTFOUND;
    case 409:
        return EVOLVE_EBUSY;
    case 408:
    case 504:
        return EVOLVE_ETIMEDOUT;
    default:
        return status >= 400 ? EVOLVE_EIO : EVOLVE_EPROTO;
    }
}

int cloud_status_from(struct prov_status *st, const struct cloud_reply *rep, const char *what)
{
    const struct io_http_result *res = rep->res;
    char msg[256] = "", tail[96];
    json_t *j;

    if (res->code < 0 && res->status == 0)
        return cloud_status_set(st, res->code, "%s: %s", what, res->message);
    j = rep->len ? json_loadb(rep->body, rep->len, 0, NULL) : NULL;
    if (json_is_object(j)) {
        const char *m = json_string_value(json_object_get(j, "message"));
        const char *ec = json_string_value(json_object_get(j, "error_code"));

        if (!m && json_is_array(json_object_get(j, "message")))
            m = json_string_value(json_array_get(json_object_get(j, "message"), 0));
        snprintf(msg, sizeof(msg), "%s%s%s%s", m ? m : "", ec ? " [" : "", ec ? ec : "",
                 ec ? "]" : "");
    } else if (rep->len && rep->len < 200 && res->status >= 400) {
        snprintf(msg, sizeof(msg), "%.*s", (int)rep->len, rep->body);
    }
    json_decref(j);
    if (res->retry_after_ms >= 0)
        snprintf(tail, sizeof(tail), "(HTTP %ld, retry after %lld ms)", res->status,
                 (long long)res->retry_after_ms);
    else
        snprintf(tail, sizeof(tail), "(HTTP %ld)", res->status);
    return cloud_status_set(st, res->status >= 400 ? code_of_http(res->status) : EVOLVE_EPROTO,
                            "%s: %s%s%s", what, msg, *msg ? " " : "", tail);
}

enum bat_failure prov_cloud_failure(const struct prov_status *st, bool during_create,
                                    int *http_status_out, int64_t *retry_after_ms_out)
{
    const char *p = strstr(st->message, "(HTTP ");
    long status = 0;
    long long ra = -1;
    bool capacity;

    if (p) {
        status = strtol(p + 6, NULL, 10);
        p = strstr(p, "retry after ");
        if (p)
            ra = strtoll(p + 12, NULL, 10);
    }
    if (http_status_out)
        *http_status_out = (int)status;
    if (retry_after_ms_out)
        *retry_after_ms_out = ra;
    if (st->code == 0)
        return BAT_FAILURE_NONE;
    capacity =
        status == 429 || status == 503 || status == 504 || strstr(st->message, "capacity") != NULL;
    if (during_create) {
        if (capacity)
            return BAT_FAILURE_CAPACITY;
        if (status >= 400 || st->code == EVOLVE_EIO || st->code == EVOLVE_ETIMEDOUT)
            return BAT_FAILURE_CREATE_REJECTED;
        return BAT_FAILURE_INTERNAL;
    }
    if (status == 404 || status == 410 || status == 502 || st->code == EVOLVE_EIO ||
        st->code == EVOLVE_ETIMEDOUT || (status == 0 && st->code == EVOLVE_ENOTFOUND))
        return BAT_FAILURE_SANDBOX_LOST;
    if (capacity)
        return BAT_FAILURE_CAPACITY;
    return BAT_FAILURE_INTERNAL;
}

/* ---- pipes --------------------------------------------------------------------------------- */

struct cloud_pipe {
    int fd; /* write end, O_NONBLOCK; -1 when closed */
    struct io_watch *watch;
    char *buf;
    size_t len, cap;
    bool close_when_drained;
    bool broken; /* the reader went away: bytes are dropped */
};

int cloud_pipe_open(struct cloud_pipe **out, int *caller_fd)
{
    struct cloud_pipe *p;
    int fds[2];

    *out = NULL;
    *caller_fd = -1;
    p = calloc(1, sizeof(*p));
    if (!p)
        return core_error_oom();
    if (pipe2(fds, O_CLOEXEC) < 0) {
        free(p);
        return core_error_set(EVOLVE_EIO, "pipe: %s", strerror(errno));
    }
    if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
        close(fds[0]);
        close(fds[1]);
        free(p);
        return core_error_set(EVOLVE_EIO, "pipe: %s", strerror(errno));
    }
    p->fd = fds[1];
    *caller_fd = fds[0];
    *out = p;
    return 0;
}

int cloud_proc_pipes(struct prov_proc *proc, struct cloud_pipe **out, struct cloud_pipe **err,
                     struct cloud_pipe **status, bool want_stdin, int *stdin_read, const char *who)
{
    int fds[2], rc;

    if ((rc = cloud_pipe_open(out, &proc->stdout_fd)) < 0 ||
        (rc = cloud_pipe_open(err, &proc->stderr_fd)) < 0 ||
        (rc = cloud_pipe_open(status, &proc->status_fd)) < 0)
        return rc;
    if (!want_stdin)
        return 0;
    if (pipe2(fds, O_CLOEXEC) < 0)
        return core_error_set(EVOLVE_EIO, "%s: pipe: %s", who, strerror(errno));
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    *stdin_read = fds[0];
    proc->stdin_fd = fds[1];
    return 0;
}

static void pipe_free(struct io_reactor *r, struct cloud_pipe *p)
{
    if (p->watch)
        io_reactor_unwatch(r, p->watch);
    if (p->fd >= 0)
        close(p->fd);
    free(p->buf);
    free(p);
}

/* Writes what it can; returns true when the queue is empty. */
static bool pipe_flush(struct cloud_pipe *p)
{
    while (p->len > 0 && !p->broken) {
        ssize_t n = write(p->fd, p->buf, p->len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return false;
        if (n <= 0) {
            p->broken = true; /* EPIPE: nobody reads any more */
            break;
        }
        memmove(p->buf, p->buf + n, p->len - (size_t)n);
        p->len -= (size_t)n;
    }
    if (p->broken)
        p->len = 0;
    return p->len == 0;
}

static void pipe_writable(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct cloud_pipe *p = arg;

    (void)w;
    if (revents & EPOLLERR)
        p->broken = true;
    if (!pipe_flush(p))
        return;
    io_reactor_unwatch(r, p->watch);
    p->watch = NULL;
    if (p->close_when_drained)
        pipe_free(r, p);
}

void cloud_pipe_write(struct io_reactor *r, struct cloud_pipe *p, const void *data, size_t len)
{
    if (!p || p->fd < 0 || p->broken || len == 0)
        return;
    if (p->len + len > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        char *nb;

        while (cap < p->len + len)
            cap *= 2;
        nb = realloc(p->buf, cap);
        if (!nb) {
            p->broken = true; /* out of memory: the reader sees a short stream */
            return;
        }
        p->buf = nb;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, data, len);
    p->len += len;
    if (p->watch || pipe_flush(p))
        return;
    p->watch = io_reactor_watch(r, p->fd, EPOLLOUT, IO_STAGE_PROC, pipe_writable, p);
    if (!p->watch)
        p->broken = true;
}

void cloud_pipe_close(struct io_reactor *r, struct cloud_pipe *p)
{
    if (!p)
        return;
    if (p->watch && p->len > 0 && !p->broken && !io_reactor_stopping(r)) {
        p->close_when_drained = true;
        return;
    }
    pipe_free(r, p);
}

void cloud_pipe_abort(struct io_reactor *r, struct cloud_pipe *p)
{
    if (p)
        pipe_free(r, p);
}

/* ---- paths, labels, encodings -------------------------------------------------------------- */

int cloud_sandbox_path(char *out, size_t size, const char *path)
{
    char tmp[2048];
    const char *seg;
    size_t olen;

    if (!path || !*path)
        return core_error_set(EVOLVE_EINVAL, "empty sandbox path");
    if (path[0] == '/') {
        if (strncmp(path, CLOUD_HOME, strlen(CLOUD_HOME)) != 0 ||
            (path[strlen(CLOUD_HOME)] != '/' && path[strlen(CLOUD_HOME)] != '\0'))
            return core_error_set(EVOLVE_EUNSAFE, "%s: outside %s", path, CLOUD_HOME);
        path += strlen(CLOUD_HOME);
    }
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp) ||
        snprintf(out, size, "%s", CLOUD_HOME) >= (int)size)
        return core_error_set(EVOLVE_EINVAL, "%s: path too long", path);
    olen = strlen(out);
    seg = tmp;
    while (*seg) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);

        if (n == 0 || (n == 1 && seg[0] == '.')) {
            /* skip */
        } else if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            return core_error_set(EVOLVE_EUNSAFE, "%s: \"..\" leaves the sandbox home", path);
        } else {
            if (olen + 1 + n + 1 > size)
                return core_error_set(EVOLVE_EINVAL, "%s: path too long", path);
            out[olen++] = '/';
            memcpy(out + olen, seg, n);
            olen += n;
            out[olen] = '\0';
        }
        seg += n;
        if (*seg == '/')
            seg++;
    }
    return 0;
}

static pthread_once_t labels_once = PTHREAD_ONCE_INIT;
static char label_owner[160], label_batch[128];

static void labels_init(void)
{
    const char *o = getenv("EVOLVE_SANDBOX_OWNER"), *b = getenv("EVOLVE_BATCH_ID");
    char host[64] = "host";
    const char *user = getenv("USER");

    if (o && *o) {
        snprintf(label_owner, sizeof(label_owner), "%s", o);
    } else {
        gethostname(host, sizeof(host) - 1);
        snprintf(label_owner, sizeof(label_owner), "%s@%s", user ? user : "user", host);
    }
    if (b)
        snprintf(label_batch, sizeof(label_batch), "%s", b);
}

size_t cloud_labels(const char **keys, const char **values, size_t max)
{
    size_t n = 0;

    pthread_once(&labels_once, labels_init);
    if (n < max) {
        keys[n] = "evolve";
        values[n++] = "1";
    }
    if (n < max) {
        keys[n] = "evolve.owner";
        values[n++] = label_owner;
    }
    if (n < max && label_batch[0]) {
        keys[n] = "evolve.batch";
        values[n++] = label_batch;
    }
    return n;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *cloud_b64_encode(const void *data, size_t len)
{
    const unsigned char *d = data;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    size_t i;

    if (!out)
        return NULL;
    for (i = 0; i + 2 < len; i += 3) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
        *o++ = b64[d[i + 2] & 63];
    }
    if (len - i == 1) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[(d[i] & 3) << 4];
        *o++ = '=';
        *o++ = '=';
    } else if (len - i == 2) {
        *o++ = b64[d[i] >> 2];
        *o++ = b64[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64[(d[i + 1] & 15) << 2];
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

long cloud_b64_decode(const char *in, size_t len, unsigned char *out)
{
    unsigned acc = 0;
    int bits = 0;
    long n = 0;
    size_t i;

    while (len > 0 && in[len - 1] == '=')
        len--;
    for (i = 0; i < len; i++) {
        int v = b64_val(in[i]);

        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return n;
}

long long cloud_rfc3339_ms(const char *s)
{
    struct tm tm = {0};
    const char *p;
    long long ms = 0, scale = 100;
    long off = 0;
    time_t t;

    if (!s)
        return -1;
    p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            ms += (*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        long h = strtol(p + 1, NULL, 10), m = p[3] == ':' ? strtol(p + 4, NULL, 10) : 0;

        off = sign * (h * 3600 + m * 60);
    } else if (*p != 'Z' && *p != 'z') {
        return -1;
    }
    t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    return ((long long)t - off) * 1000 + ms;
}

long cloud_env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (!v || !*v)
        return dflt;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || *end || n < lo || n > hi)
        return dflt;
    return n;
}

char *cloud_hdr(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *h = malloc(n);

    if (h)
        snprintf(h, n, "%s: %s", name, value);
    return h;
}
