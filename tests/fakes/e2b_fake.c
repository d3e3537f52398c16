/* e2b_fake.c — the E2B fake (spec/provider-apis.md §2, §7.1): control plane (spec/openapi.yml
 * paths, X-API-Key, {"code","message"} errors) and envd (E2b-Sandbox-Id/-Port routing, 502 for
 * an unknown sandbox, X-Access-Token, /files, Connect unary calls with application/json and
 * Connect server streams with application/connect+json: 5-byte envelopes, proto3 JSON with
 * omitted zero fields, int64 as strings, errors in the end-of-stream envelope of an HTTP 200).
 * Threads: MHD connection threads; state under f->mu. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakes/fake_int.h"

static enum MHD_Result api_error(struct freq *r, unsigned status, const char *msg)
{
    return fake_reply_json(r, status, json_pack("{s:i, s:s}", "code", (int)status, "message", msg));
}

static enum MHD_Result connect_error(struct freq *r, unsigned status, const char *code,
                                     const char *msg)
{
    return fake_reply_json(r, status, json_pack("{s:s, s:s}", "code", code, "message", msg));
}

static json_t *sandbox_json(const struct fsbx *sb, bool detail)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:n}", "sandboxID", sb->id, "templateID", "base",
                          "envdVersion", "0.5.7", "envdAccessToken", sb->token, "domain");

    if (detail) {
        char ts[64];
        time_t now = time(NULL) - (time_t)((fake_now_ms() - sb->created_ms) / 1000);

        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        json_object_set_new(j, "state", json_string(sb->state == 1 ? "paused" : "running"));
        json_object_set_new(j, "startedAt", json_string(ts));
        json_object_set(j, "metadata", sb->meta ? sb->meta : json_object());
        json_object_set_new(j, "cpuCount", json_integer(2));
        json_object_set_new(j, "memoryMB", json_integer(512));
    }
    return j;
}

/* ---- control plane ----------------------------------------------------------------------------
 */

static bool meta_matches(const struct fsbx *sb, const char *filter)
{
    char buf[2048], *save = NULL, *kv;

    if (!filter || !*filter)
        return true;
    snprintf(buf, sizeof(buf), "%s", filter);
    for (kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        const char *have;

        if (!eq)
            return false;
        *eq = '\0';
        MHD_http_unescape(kv);
        MHD_http_unescape(eq + 1);
        have = json_string_value(json_object_get(sb->meta, kv));
        if (!have || strcmp(have, eq + 1))
            return false;
    }
    return true;
}

static enum MHD_Result api_list(struct freq *r)
{
    struct ts_fake *f = r->f;
    const char *meta = fake_query(r, "metadata"), *state = fake_query(r, "state");
    const char *tok = fake_query(r, "nextToken"), *lim = fake_query(r, "limit");
    size_t start = tok ? strtoul(tok, NULL, 10) : 0, limit = lim ? strtoul(lim, NULL, 10) : 100;
    size_t i, n = 0, next = 0;
    struct MHD_Response *resp;
    json_t *arr = json_array();
    char *s, ntok[32];
    enum MHD_Result rc;

    if (limit == 0 || limit > 100)
        limit = 100;
    pthread_mutex_lock(&f->mu);
    for (i = start; i < f->nsbx; i++) {
        struct fsbx *sb = f->sbx[i];

        if (sb->state == 2 || !meta_matches(sb, meta))
            continue;
        if (state && !strstr(state, sb->state == 1 ? "paused" : "running"))
            continue;
        if (n == limit) {
            next = i;
            break;
        }
        json_array_append_new(arr, sandbox_json(sb, true));
        n++;
    }
    pthread_mutex_unlock(&f->mu);
    s = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    resp = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (next) {
        snprintf(ntok, sizeof(ntok), "%zu", next);
        MHD_add_response_header(resp, "X-Next-Token", ntok);
    }
    rc = MHD_queue_response(r->c, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result api_create(struct freq *r)
{
    struct ts_fake *f = r->f;
    json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, NULL), *j;
    struct fsbx *sb;

    if (fake_take_fault(f, TS_FAULT_429_CREATE)) {
        struct MHD_Response *resp;
        const char *m = "{\"code\":429,\"message\":\"Rate limit exceeded\"}";
        enum MHD_Result rc;

        json_decref(body);
        resp = MHD_create_response_from_buffer(strlen(m), (void *)m, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(resp, "Retry-After", "1");
        MHD_add_response_header(resp, "Content-Type", "application/json");
        rc = MHD_queue_response(r->c, 429, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (fake_take_fault(f, TS_FAULT_503_CREATE)) {
        json_decref(body);
        return fake_reply_json(r, 503,
                               json_pack("{s:i, s:s, s:s}", "code", 503, "message",
                                         "no capacity for new sandboxes", "error_code",
                                         "sandbox_capacity_unavailable"));
    }
    if (!json_is_object(body) || !json_string_value(json_object_get(body, "templateID"))) {
        json_decref(body);
        return api_error(r, 400, "templateID is required");
    }
    if (f->o.create_delay_ms)
        fake_sleep_ms(f->o.create_delay_ms);
    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_new(f, "i");
    if (sb) {
        sb->meta = json_incref(json_object_get(body, "metadata"));
        sb->env = json_incref(json_object_get(body, "envVars"));
        sb->deadline_ms =
            fake_now_ms() + 1000 * (uint64_t)json_integer_value(json_object_get(body, "timeout"));
        j = sandbox_json(sb, false);
    }
    pthread_mutex_unlock(&f->mu);
    json_decref(body);
    if (!sb)
        return api_error(r, 500, "cannot create the sandbox directory");
    return fake_reply_json(r, 201, j);
}

static enum MHD_Result api_sandbox(struct freq *r, const char *rest)
{
    struct ts_fake *f = r->f;
    char id[64];
    const char *op;
    size_t n = strcspn(rest, "/");
    struct fsbx *sb;
    json_t *j = NULL;
    unsigned status = 204;

    snprintf(id, sizeof(id), "%.*s", (int)(n < 63 ? n : 63), rest);
    op = rest[n] == '/' ? rest + n + 1 : "";
    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_find(f, id);
    if (!sb || sb->state == 2) {
        pthread_mutex_unlock(&f->mu);
        return api_error(r, 404, "sandbox not found");
    }
    if (!strcmp(r->method, "GET") && !*op) {
        j = sandbox_json(sb, true);
        status = 200;
    } else if (!strcmp(r->method, "DELETE") && !*op) {
        fake_sbx_destroy(f, sb);
    } else if (!strcmp(op, "pause")) {
        if (sb->state == 1) {
            pthread_mutex_unlock(&f->mu);
            return api_error(r, 409, "sandbox is already paused");
        }
        fake_sbx_signal_all(sb, SIGSTOP);
        sb->state = 1;
    } else if (!strcmp(op, "connect") || !strcmp(op, "resume")) {
        status = sb->state == 1 ? 201 : 200;
        if (sb->state == 1)
            fake_sbx_signal_all(sb, SIGCONT);
        sb->state = 0;
        j = sandbox_json(sb, false);
    } else if (!strcmp(op, "timeout") || !strcmp(op, "refreshes")) {
        json_t *b = json_loadb(r->body ? r->body : "", r->len, 0, NULL);

        sb->deadline_ms =
            fake_now_ms() + 1000 * (uint64_t)json_integer_value(json_object_get(b, "timeout"));
        json_decref(b);
    } else {
        pthread_mutex_unlock(&f->mu);
        return api_error(r, 404, "no such route");
    }
    pthread_mutex_unlock(&f->mu);
    return j ? fake_reply_json(r, status, j) : fake_reply(r, status, NULL, NULL, 0);
}

static enum MHD_Result api_handle(struct freq *r)
{
    const char *key = fake_header(r, "X-API-Key");

    if (!key || strcmp(key, "e2b_test"))
        return api_error(r, 401, "Invalid API key");
    if (!strcmp(r->url, "/health"))
        return fake_reply(r, 204, NULL, NULL, 0);
    if (fake_take_fault(r->f, TS_FAULT_500))
        return api_error(r, 500, "internal server error (injected)");
    if (!strcmp(r->url, "/sandboxes") && !strcmp(r->method, "POST"))
        return api_create(r);
    if (!strcmp(r->url, "/v2/sandboxes") && !strcmp(r->method, "GET"))
        return api_list(r);
    if (!strncmp(r->url, "/sandboxes/", 11))
        return api_sandbox(r, r->url + 11);
    return api_error(r, 404, "no such route");
}

/* ---- envd: Connect streams --------------------------------------------------------------------
 */

struct stream {
    struct ts_fake *f;
    struct fproc *p;
    char *buf; /* envelopes ready to send */
    size_t len, off, cap;
    int phase; /* 0 start, 1 live, 2 ended */
    bool reset, stall, replay_end;
    unsigned sent_data;
    uint64_t ka_ms, last_ms;
};

static void put_env(struct stream *s, uint8_t flags, json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT);
    size_t n = strlen(text);

    json_decref(j);
    if (s->len + n + 5 > s->cap) {
        s->cap = (s->len + n + 5) * 2;
        s->buf = realloc(s->buf, s->cap);
    }
    s->buf[s->len] = (char)flags;
    s->buf[s->len + 1] = (char)(n >> 24);
    s->buf[s->len + 2] = (char)(n >> 16);
    s->buf[s->len + 3] = (char)(n >> 8);
    s->buf[s->len + 4] = (char)n;
    memcpy(s->buf + s->len + 5, text, n);
    s->len += n + 5;
    free(text);
}

static void put_end(struct stream *s, const struct fproc *p)
{
    json_t *end = json_object();
    char st[64];

    if (p->exit_code == -1) {
        snprintf(st, sizeof(st), "signal: %s",
                 p->signo == SIGKILL   ? "killed"
                 : p->signo == SIGTERM ? "terminated"
                 : p->signo == SIGINT  ? "interrupt"
                                       : "hangup");
        json_object_set_new(end, "exitCode", json_integer(-1));
    } else {
        snprintf(st, sizeof(st), "exit status %d", p->exit_code);
        if (p->exit_code)
            json_object_set_new(end, "exitCode", json_integer(p->exit_code));
        json_object_set_new(end, "exited", json_true());
    }
    json_object_set_new(end, "status", json_string(st));
    put_env(s, 0, json_pack("{s:{s:o}}", "event", "end", end));
    put_env(s, 2, json_object());
    s->phase = 2;
}

/* Moves queued output into envelopes, splitting each chunk at an arbitrary point. */
static void take_output(struct stream *s)
{
    struct fproc *p = s->p;
    size_t off = 0;

    while (off + 5 <= p->qlen) {
        int stream = p->q[off];
        size_t n = (size_t)(unsigned char)p->q[off + 1] << 24 |
                   (size_t)(unsigned char)p->q[off + 2] << 16 |
                   (size_t)(unsigned char)p->q[off + 3] << 8 | (unsigned char)p->q[off + 4];
        const char *d = p->q + off + 5;
        size_t cut = n > 1 ? (n * 7 / 13) + 1 : n;
        size_t parts[2] = {cut, n - cut}, k, at = 0;

        for (k = 0; k < 2; k++) {
            char *b;

            if (!parts[k])
                continue;
            b = fake_b64(d + at, parts[k]);
            put_env(s, 0,
                    json_pack("{s:{s:{s:s}}}", "event", "data", stream ? "stderr" : "stdout", b));
            free(b);
            at += parts[k];
        }
        s->sent_data++;
        off += 5 + n;
    }
    p->qlen = 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct stream *s = cls;
    struct ts_fake *f = s->f;

    (void)pos;
    for (;;) {
        if (s->off < s->len) {
            size_t n = s->len - s->off < max ? s->len - s->off : max;

            memcpy(out, s->buf + s->off, n);
            s->off += n;
            if (s->off == s->len)
                s->off = s->len = 0;
            return (ssize_t)n;
        }
        if (s->phase == 2)
            return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&f->mu);
        if (s->phase == 0) {
            put_env(s, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)s->p->pid));
            s->phase = 1;
            if (s->replay_end)
                put_end(s, s->p);
            pthread_mutex_unlock(&f->mu);
            continue;
        }
        if (f->stopping || s->p->sb->state == 2) {
            pthread_mutex_unlock(&f->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (s->reset && s->sent_data > 0) {
            pthread_mutex_unlock(&f->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (!s->stall && s->p->qlen) {
            take_output(s);
        } else if (!s->stall && s->p->exited) {
            put_end(s, s->p);
        } else {
            struct timespec ts;
            uint64_t now = fake_now_ms();

            if (!s->stall && now - s->last_ms >= s->ka_ms) {
                put_env(s, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
                s->last_ms = now;
            } else {
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 50 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&f->cv, &f->mu, &ts);
            }
        }
        pthread_mutex_unlock(&f->mu);
    }
}

static void stream_free(void *cls)
{
    struct stream *s = cls;

    pthread_mutex_lock(&s->f->mu);
    s->p->subscribers--;
    pthread_mutex_unlock(&s->f->mu);
    free(s->buf);
    free(s);
}

static enum MHD_Result stream_reply(struct freq *r, struct fproc *p, bool replay_end, bool reset,
                                    bool stall)
{
    struct stream *s = calloc(1, sizeof(*s));
    const char *ka = fake_header(r, "Keepalive-Ping-Interval");
    struct MHD_Response *resp;
    enum MHD_Result rc;

    s->f = r->f;
    s->p = p;
    s->replay_end = replay_end;
    s->ka_ms = ka ? strtoul(ka, NULL, 10) * 1000 : 90000;
    if (r->f->o.keepalive_ms && (s->ka_ms == 0 || s->ka_ms > r->f->o.keepalive_ms))
        s->ka_ms = r->f->o.keepalive_ms;
    s->last_ms = fake_now_ms();
    s->reset = reset;
    s->stall = stall;
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, s, stream_free);
    MHD_add_response_header(resp, "Content-Type", "application/connect+json");
    rc = MHD_queue_response(r->c, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result stream_error(struct freq *r, const char *code, const char *msg)
{
    struct stream s = {0};
    enum MHD_Result rc;

    put_env(&s, 2, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
    rc = fake_reply(r, 200, "application/connect+json", s.buf, s.len);
    free(s.buf);
    return rc;
}

/* The single JSON message of a streaming request body. */
static json_t *enveloped(const struct freq *r)
{
    size_t n;

    if (r->len < 5)
        return NULL;
    n = (size_t)(unsigned char)r->body[1] << 24 | (size_t)(unsigned char)r->body[2] << 16 |
        (size_t)(unsigned char)r->body[3] << 8 | (unsigned char)r->body[4];
    if (n + 5 != r->len || (r->body[0] & 1))
        return NULL;
    return json_loadb(r->body + 5, n, 0, NULL);
}

static enum MHD_Result envd_stream(struct freq *r, struct fsbx *sb, bool start)
{
    json_t *req = enveloped(r), *proc = json_object_get(req, "process");
    struct fproc *p = NULL;
    enum MHD_Result rc;
    bool reset = fake_take_fault(r->f, TS_FAULT_RESET);
    bool stall = !reset && fake_take_fault(r->f, TS_FAULT_STALL);
    const char *to = fake_header(r, "Connect-Timeout-Ms");

    if (!req) {
        json_decref(req);
        return stream_error(r, "invalid_argument", "request is not one JSON envelope");
    }
    pthread_mutex_lock(&r->f->mu);
    if (start) {
        const char *argv[256];
        json_t *args = json_object_get(proc, "args");
        size_t i, n = 0;

        argv[n++] = json_string_value(json_object_get(proc, "cmd"));
        for (i = 0; i < json_array_size(args) && n < 254; i++)
            argv[n++] = json_string_value(json_array_get(args, i));
        argv[n] = NULL;
        if (argv[0])
            p = fake_spawn(r->f, sb, argv, json_object_get(proc, "envs"),
                           json_string_value(json_object_get(proc, "cwd")),
                           json_is_true(json_object_get(req, "stdin")), false);
        if (!p) {
            char msg[300];

            pthread_mutex_unlock(&r->f->mu);
            snprintf(msg, sizeof(msg), "error starting process '%s': %s", argv[0] ? argv[0] : "",
                     strerror(errno));
            json_decref(req);
            return stream_error(r, "invalid_argument", msg);
        }
        if (to && strtoul(to, NULL, 10) > 0)
            p->deadline_ms = fake_now_ms() + strtoul(to, NULL, 10);
        /* Subscribed under the lock, answered outside it: MHD takes its own locks in
         * MHD_queue_response and holds them around stream_read, which takes f->mu. */
        p->subscribers++;
        pthread_mutex_unlock(&r->f->mu);
        rc = stream_reply(r, p, false, reset, stall);
    } else {
        p = fake_proc_by_pid(sb, (pid_t)json_integer_value(json_object_get(proc, "pid")));
        if (!p || (p->exited && fake_now_ms() - p->end_ms > 30000)) {
            pthread_mutex_unlock(&r->f->mu);
            json_decref(req);
            return stream_error(r, "not_found", "process not found");
        }
        {
            bool exited = p->exited;

            p->subscribers++;
            pthread_mutex_unlock(&r->f->mu);
            rc = stream_reply(r, p, exited, reset, stall);
        }
    }
    json_decref(req);
    return rc;
}

/* ---- envd: unary calls and files ------------------------------------------------------------ */

static json_t *entry_json(const char *name, const char *path, const struct stat *st)
{
    json_t *e = json_pack("{s:s, s:s, s:s, s:i}", "name", name, "path", path, "type",
                          S_ISDIR(st->st_mode)   ? "FILE_TYPE_DIRECTORY"
                          : S_ISLNK(st->st_mode) ? "FILE_TYPE_SYMLINK"
                                                 : "FILE_TYPE_FILE",
                          "mode", (int)(st->st_mode & 07777));
    char ts[64], sz[32];
    struct tm tm;

    gmtime_r(&st->st_mtim.tv_sec, &tm);
    strftime(ts, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%09ldZ", st->st_mtim.tv_nsec);
    json_object_set_new(e, "modifiedTime", json_string(ts));
    if (st->st_size) {
        snprintf(sz, sizeof(sz), "%lld", (long long)st->st_size);
        json_object_set_new(e, "size", json_string(sz));
    }
    return e;
}

static enum MHD_Result envd_unary(struct freq *r, struct fsbx *sb, const char *method)
{
    json_t *req = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
    char path[1024];
    pid_t pid = (pid_t)json_integer_value(json_object_get(json_object_get(req, "process"), "pid"));
    char host[1200];
    enum MHD_Result rc;
    struct fproc *p;

    if (!json_is_object(req)) {
        json_decref(req);
        return connect_error(r, 400, "invalid_argument", "body is not a JSON object");
    }
    snprintf(path, sizeof(path), "%s",
             json_string_value(json_object_get(req, "path"))
                 ? json_string_value(json_object_get(req, "path"))
                 : "");
    if (!strcmp(method, "/filesystem.Filesystem/ListDir") ||
        !strcmp(method, "/filesystem.Filesystem/MakeDir")) {
        bool mk = strstr(method, "MakeDir") != NULL;
        struct stat st;

        if (fake_map_path(sb, path, host, sizeof(host)) < 0) {
            json_decref(req);
            return connect_error(r, 403, "permission_denied", "path outside the home");
        }
        json_decref(req);
        if (mk) {
            if (stat(host, &st) == 0)
                return connect_error(r, 409, "already_exists", "directory already exists");
            if (fake_mkdirs(host, 0755) < 0 || stat(host, &st) < 0)
                return connect_error(r, 500, "internal", strerror(errno));
            return fake_reply_json(r, 200,
                                   json_pack("{s:o}", "entry", entry_json("dir", path, &st)));
        }
        {
            DIR *d = opendir(host);
            struct dirent *de;
            json_t *entries = json_array();

            if (!d) {
                json_decref(entries);
                return connect_error(r, 404, "not_found", "directory not found");
            }
            while ((de = readdir(d))) {
                char full[1500], spath[1500];

                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                snprintf(full, sizeof(full), "%s/%s", host, de->d_name);
                snprintf(spath, sizeof(spath), "%s/%s", path, de->d_name);
                if (lstat(full, &st) == 0)
                    json_array_append_new(entries, entry_json(de->d_name, spath, &st));
            }
            closedir(d);
            return fake_reply_json(r, 200, json_pack("{s:o}", "entries", entries));
        }
    }
    pthread_mutex_lock(&r->f->mu);
    p = fake_proc_by_pid(sb, pid);
    if (!p || p->exited) {
        pthread_mutex_unlock(&r->f->mu);
        json_decref(req);
        return connect_error(r, 404, "not_found", "process not found");
    }
    if (!strcmp(method, "/process.Process/SendSignal")) {
        const char *sig = json_string_value(json_object_get(req, "signal"));
        int signo = sig && !strcmp(sig, "SIGNAL_SIGKILL")   ? SIGKILL
                    : sig && !strcmp(sig, "SIGNAL_SIGTERM") ? SIGTERM
                                                            : 0;

        if (signo)
            kill(-p->pid, signo);
        pthread_mutex_unlock(&r->f->mu);
        json_decref(req);
        return signo ? fake_reply(r, 200, NULL, "{}", 2)
                     : connect_error(r, 501, "unimplemented", "only SIGTERM and SIGKILL");
    }
    if (!strcmp(method, "/process.Process/SendInput")) {
        const char *in = json_string_value(json_object_get(json_object_get(req, "input"), "stdin"));
        unsigned char *buf = in ? malloc(strlen(in)) : NULL;
        long n = buf ? fake_unb64(in, buf) : -1;
        int fd = p->in_fd;

        pthread_mutex_unlock(&r->f->mu);
        rc = fd < 0 || n < 0 ? connect_error(r, 400, "failed_precondition", "no stdin")
             : write(fd, buf, (size_t)n) == n ? fake_reply(r, 200, NULL, "{}", 2)
                                              : connect_error(r, 500, "internal", "write");
        free(buf);
        json_decref(req);
        return rc;
    }
    if (!strcmp(method, "/process.Process/CloseStdin")) {
        if (p->in_fd >= 0)
            close(p->in_fd);
        p->in_fd = -1;
        pthread_mutex_unlock(&r->f->mu);
        json_decref(req);
        return fake_reply(r, 200, NULL, "{}", 2);
    }
    pthread_mutex_unlock(&r->f->mu);
    json_decref(req);
    return connect_error(r, 404, "unimplemented", "no such method");
}

static enum MHD_Result envd_files(struct freq *r, struct fsbx *sb)
{
    const char *path = fake_query(r, "path");
    char host[1200];
    struct stat st;

    if (!path || fake_map_path(sb, path, host, sizeof(host)) < 0)
        return api_error(r, 400, "invalid path");
    if (!strcmp(r->method, "GET")) {
        char *data;
        FILE *fp;

        if (stat(host, &st) < 0)
            return api_error(r, 404, "file not found");
        if (S_ISDIR(st.st_mode))
            return api_error(r, 400, "path is a directory");
        fp = fopen(host, "rb");
        data = malloc((size_t)st.st_size + 1);
        if (!fp || !data || fread(data, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
            if (fp)
                fclose(fp);
            free(data);
            return api_error(r, 500, "read failed");
        }
        fclose(fp);
        {
            struct MHD_Response *resp =
                MHD_create_response_from_buffer((size_t)st.st_size, data, MHD_RESPMEM_MUST_FREE);
            enum MHD_Result rc;

            MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
            rc = MHD_queue_response(r->c, 200, resp);
            MHD_destroy_response(resp);
            return rc;
        }
    }
    {
        const char *ct = fake_header(r, "Content-Type");
        char dir[1200], *slash;
        FILE *fp;

        if (!ct || strncmp(ct, "application/octet-stream", 24))
            return api_error(r, 400, "expected application/octet-stream");
        snprintf(dir, sizeof(dir), "%s", host);
        slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            fake_mkdirs(dir, 0755);
        }
        fp = fopen(host, "wb");
        if (!fp || (r->len && fwrite(r->body, 1, r->len, fp) != r->len)) {
            if (fp)
                fclose(fp);
            return api_error(r, 500, "write failed");
        }
        fclose(fp);
        return fake_reply_json(r, 200,
                               json_pack("[{s:s, s:s, s:s}]", "path", path, "name",
                                         strrchr(path, '/') ? strrchr(path, '/') + 1 : path, "type",
                                         "file"));
    }
}

static enum MHD_Result envd_handle(struct freq *r)
{
    const char *id = fake_header(r, "E2b-Sandbox-Id"), *port = fake_header(r, "E2b-Sandbox-Port");
    const char *tok = fake_header(r, "X-Access-Token"), *ct = fake_header(r, "Content-Type");
    struct fsbx *sb;
    bool ok, gone;

    if (!id || !port || strcmp(port, "49983"))
        return fake_reply_json(r, 502,
                               json_pack("{s:s, s:s, s:i}", "sandboxId", id ? id : "", "message",
                                         "The sandbox was not found", "code", 502));
    pthread_mutex_lock(&r->f->mu);
    sb = fake_sbx_find(r->f, id);
    gone = !sb || sb->state != 0;
    ok = sb && tok && !strcmp(tok, sb->token);
    pthread_mutex_unlock(&r->f->mu);
    if (gone)
        return fake_reply_json(r, 502,
                               json_pack("{s:s, s:s, s:i}", "sandboxId", id, "message",
                                         "The sandbox was not found", "code", 502));
    if (!strcmp(r->url, "/health"))
        return fake_reply(r, 204, NULL, NULL, 0);
    if (!ok)
        return api_error(r, 401, "unauthorized access, please provide a valid access token");
    if (!strcmp(r->url, "/files"))
        return envd_files(r, sb);
    if (strcmp(r->method, "POST"))
        return api_error(r, 405, "method not allowed");
    if (!strcmp(r->url, "/process.Process/Start") || !strcmp(r->url, "/process.Process/Connect")) {
        if (!ct || strncmp(ct, "application/connect+", 20))
            return connect_error(r, 415, "unknown", "streams take application/connect+json");
        return envd_stream(r, sb, !strcmp(r->url, "/process.Process/Start"));
    }
    if (!ct || strcmp(ct, "application/json"))
        return connect_error(r, 415, "unknown", "unary calls take application/json");
    return envd_unary(r, sb, r->url);
}

enum MHD_Result fake_e2b_handle(struct freq *r)
{
    return r->data_port ? envd_handle(r) : api_handle(r);
}
