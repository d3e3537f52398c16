/* e2b_exec.c — commands in an E2B sandbox: process.Process/Start as a Connect server stream
 * (JSON codec, 5-byte envelopes, errors in the end frame of an HTTP 200) pumped into the pipes
 * of struct prov_proc; reattach with Process/Connect after a dropped or stalled stream; stdin
 * with SendInput/CloseStdin; SendSignal.
 * Streams carry no request timeout: a timer watches for envd's keepalive events instead, so a
 * background command never inherits a per-request deadline.
 * Threads: e2b_exec/e2b_signal from any thread; all stream state lives on the reactor thread
 * (the stream is started by a function posted there). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/error.h"
#include "io/decode.h"
#include "providers/e2b_int.h"

#define RECONNECTS 3

struct exec {
    struct e2b_op *op; /* done reported at the start event; then NULL */
    struct e2b_prov *p;
    struct e2b_sbx *sbx;
    int refs; /* the stream + a stdin call in flight (reactor only) */
    char *start_body;
    size_t start_len;
    struct io_http *h;
    struct io_connect dec;
    struct io_timer *ka;
    uint64_t last_rx_ms;
    bool stalled, http_error, started, ended, stream_error;
    long status;
    char errbuf[512];
    size_t errlen;
    char stream_err[300];
    int stream_err_code;
    int attempts; /* reconnects made */
    uint32_t pid;
    struct prov_exit exit;
    struct cloud_pipe *out, *err, *st;
    int in_fd; /* our read end of the caller's stdin, or -1 */
    struct io_watch *in_watch;
    bool in_busy;
    struct prov_proc *proc; /* handed over at the start event */
};

static void stream_begin(struct exec *e, bool reconnect);

static void exec_unref(struct exec *e)
{
    if (--e->refs > 0)
        return;
    if (e->ka)
        io_reactor_timer_cancel(e->p->r, e->ka);
    io_connect_dispose(&e->dec);
    io_http_release(e->h);
    cloud_pipe_abort(e->p->r, e->out);
    cloud_pipe_abort(e->p->r, e->err);
    cloud_pipe_abort(e->p->r, e->st);
    if (e->in_watch)
        io_reactor_unwatch(e->p->r, e->in_watch);
    if (e->in_fd >= 0)
        close(e->in_fd);
    prov_proc_free(e->proc);
    free(e->start_body);
    e2b_sbx_unref(e->sbx);
    e2b_prov_unref(e->p);
    free(e);
}

/* ---- stdin --------------------------------------------------------------------------------- */

static void stdin_stop(struct exec *e)
{
    if (e->in_watch)
        io_reactor_unwatch(e->p->r, e->in_watch);
    e->in_watch = NULL;
    if (e->in_fd >= 0)
        close(e->in_fd);
    e->in_fd = -1;
}

static void on_stdin_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct exec *e = op->payload;
    struct prov_status st = {0};

    e->in_busy = false;
    if (e2b_connect_status(&st, rep, op->what) < 0)
        stdin_stop(e); /* the process is gone or closed its input: its end tells the rest */
    else if (e->in_watch)
        io_reactor_watch_set(e->p->r, e->in_watch, EPOLLIN);
    e2b_op_free(op);
    exec_unref(e);
}

static void on_stdin_readable(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct exec *e = arg;
    char buf[32768], *b64;
    struct e2b_op *op;
    json_t *req;
    ssize_t n;

    (void)revents;
    n = read(e->in_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    op = e2b_op_new(e->p, e->sbx, NULL, e, 0, "e2b stdin");
    if (!op) {
        stdin_stop(e);
        return;
    }
    if (n <= 0) {
        req = json_pack("{s:{s:I}}", "process", "pid", (json_int_t)e->pid);
        stdin_stop(e);
        w = NULL;
    } else {
        b64 = cloud_b64_encode(buf, (size_t)n);
        req = b64 ? json_pack("{s:{s:I}, s:{s:s}}", "process", "pid", (json_int_t)e->pid, "input",
                              "stdin", b64)
                  : NULL;
        free(b64);
    }
    if (!req || e2b_unary(op, n <= 0 ? "/process.Process/CloseStdin" : "/process.Process/SendInput",
                          req, on_stdin_reply) < 0) {
        e2b_op_free(op);
        stdin_stop(e);
        return;
    }
    e->refs++;
    e->in_busy = true;
    if (w)
        io_reactor_watch_set(r, w, 0); /* one SendInput at a time keeps the bytes in order */
}

/* ---- the event stream ---------------------------------------------------------------------- */

static void report_start(struct exec *e)
{
    struct prov_status st = {0};
    struct e2b_op *op = e->op;
    struct prov_proc *proc = e->proc;

    e->op = NULL;
    e->proc = NULL;
    proc->id = e->pid;
    proc->pid = e->pid;
    if (e->in_fd >= 0) {
        e->in_watch =
            io_reactor_watch(e->p->r, e->in_fd, EPOLLIN, IO_STAGE_PROC, on_stdin_readable, e);
        if (!e->in_watch)
            stdin_stop(e);
    }
    e2b_op_finish(op, &st, proc);
}

static int signo_of(const char *status)
{
    static const struct {
        const char *name;
        int signo;
    } map[] = {{"killed", SIGKILL},
               {"terminated", SIGTERM},
               {"interrupt", SIGINT},
               {"hangup", SIGHUP},
               {"aborted", SIGABRT},
               {"broken pipe", SIGPIPE},
               {"segmentation fault", SIGSEGV}};
    size_t i;

    if (!status || strncmp(status, "signal: ", 8))
        return 0;
    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(status + 8, map[i].name))
            return map[i].signo;
    return SIGKILL;
}

static int on_data(struct exec *e, json_t *data)
{
    const char *which[2] = {"stdout", "stderr"};
    int k;

    for (k = 0; k < 2; k++) {
        const char *s = json_string_value(json_object_get(data, which[k]));
        unsigned char *buf;
        long n;

        if (!s)
            continue;
        buf = malloc(strlen(s) * 3 / 4 + 3);
        if (!buf)
            return EVOLVE_ENOMEM;
        n = cloud_b64_decode(s, strlen(s), buf);
        if (n < 0) {
            free(buf);
            return EVOLVE_EPROTO;
        }
        cloud_pipe_write(e->p->r, k ? e->err : e->out, buf, (size_t)n);
        free(buf);
    }
    return 0;
}

static int on_msg(const struct io_connect_msg *m, void *payload)
{
    struct exec *e = payload;
    json_t *j, *ev, *x;
    int rc = 0;

    if (m->end_stream) {
        if (m->error_code) {
            e->stream_error = true;
            e->stream_err_code = e2b_connect_code(m->error_code);
            snprintf(e->stream_err, sizeof(e->stream_err), "%s: %s", m->error_code,
                     m->error_message ? m->error_message : "");
        }
        return 0;
    }
    j = json_loadb(m->data, m->len, 0, NULL);
    ev = json_object_get(json_object_get(j, "event"), "start");
    if (ev) {
        e->pid = (uint32_t)json_integer_value(json_object_get(ev, "pid"));
        if (!e->started) {
            e->started = true;
            report_start(e);
        }
    } else if ((ev = json_object_get(json_object_get(j, "event"), "data"))) {
        rc = on_data(e, ev);
    } else if ((ev = json_object_get(json_object_get(j, "event"), "end"))) {
        const char *status = json_string_value(json_object_get(ev, "status"));
        int signo = signo_of(status);

        x = json_object_get(ev, "exitCode");
        e->ended = true;
        e->exit.signo = signo;
        e->exit.code = signo ? 128 + signo : (int32_t)json_integer_value(x);
    } else if (!json_object_get(json_object_get(j, "event"), "keepalive")) {
        rc = j ? 0 : EVOLVE_EPROTO; /* unknown events are ignored (newer envd) */
    }
    json_decref(j);
    return rc;
}

static void on_headers(long status, const struct io_http_header *h, size_t n, void *payload)
{
    struct exec *e = payload;

    (void)h;
    (void)n;
    e->status = status;
    e->http_error = status != 200;
    e->last_rx_ms = io_now_ms();
}

static void on_chunk(const char *data, size_t len, void *payload)
{
    struct exec *e = payload;

    e->last_rx_ms = io_now_ms();
    if (e->http_error) {
        size_t room = sizeof(e->errbuf) - 1 - e->errlen;

        memcpy(e->errbuf + e->errlen, data, len < room ? len : room);
        e->errlen += len < room ? len : room;
        e->errbuf[e->errlen] = '\0';
        return;
    }
    if (io_connect_feed(&e->dec, data, len, on_msg, e) < 0)
        e->http_error = true; /* undecodable: treat as a broken stream */
}

static void ka_tick(struct io_reactor *r, void *arg)
{
    struct exec *e = arg;
    uint64_t period = (uint64_t)e->p->keepalive_s * 1000;

    e->ka = NULL;
    if (e->h && io_now_ms() - e->last_rx_ms > 3 * period) {
        e->stalled = true;
        io_http_cancel(e->h);
        return;
    }
    e->ka = io_reactor_timer(r, period, ka_tick, e);
}

/* The command's end: exit record (or none when the sandbox is lost), then EOF everywhere. */
static void finish(struct exec *e, bool have_exit)
{
    if (have_exit)
        cloud_pipe_write(e->p->r, e->st, &e->exit, sizeof(e->exit));
    cloud_pipe_close(e->p->r, e->out);
    cloud_pipe_close(e->p->r, e->err);
    cloud_pipe_close(e->p->r, e->st);
    e->out = e->err = e->st = NULL;
    stdin_stop(e);
}

static void retry_timer(struct io_reactor *r, void *arg)
{
    struct exec *e = arg;

    (void)r;
    stream_begin(e, true);
}

static void on_done(const struct io_http_result *res, void *payload)
{
    struct exec *e = payload;
    struct prov_status st = {0};
    bool gone;

    if (e->ka)
        io_reactor_timer_cancel(e->p->r, e->ka);
    e->ka = NULL;
    io_http_release(e->h);
    e->h = NULL;
    if (e->ended) {
        finish(e, true);
        exec_unref(e);
        return;
    }
    gone = e->status == 502 || e->status == 404 ||
           (e->stream_error && e->stream_err_code == EVOLVE_ENOTFOUND) ||
           res->code == EVOLVE_ESHUTDOWN;
    if (!e->started) {
        if (e->attempts == 0 && e->stream_error)
            cloud_status_set(&st, e->stream_err_code, "%s: %s", e->op->what, e->stream_err);
        else if (e->http_error) {
            struct io_http_result copy = *res;
            struct cloud_reply rep = {.res = &copy, .body = e->errbuf, .len = e->errlen};

            copy.status = e->status;
            copy.code = 0;
            cloud_status_from(&st, &rep, e->op->what);
        } else {
            cloud_status_set(&st, res->code < 0 ? res->code : EVOLVE_EPROTO,
                             "%s: stream ended before the process started%s%s", e->op->what,
                             res->code < 0 ? ": " : "", res->code < 0 ? res->message : "");
        }
        e2b_op_finish(e->op, &st, NULL);
        e->op = NULL;
        finish(e, false);
        exec_unref(e);
        return;
    }
    /* Started, no end: the stream dropped or stalled. Reattach by pid unless the sandbox or the
     * process is known to be gone. Output produced while detached is lost (envd keeps none). */
    if (!gone && e->attempts < RECONNECTS) {
        e->attempts++;
        if (io_reactor_timer(e->p->r, 100u << e->attempts, retry_timer, e))
            return;
    }
    finish(e, false);
    exec_unref(e);
}

static void stream_begin(struct exec *e, bool reconnect)
{
    static const struct io_http_callbacks cbs = {
        .on_headers = on_headers, .on_chunk = on_chunk, .on_done = on_done};
    struct io_http_request rq = {.method = "POST"};
    const char *h[10];
    size_t n = e2b_envd_headers(e->sbx, h);
    char url[1024], ka[64], *body = e->start_body, *cbody = NULL;
    size_t blen = e->start_len;
    struct io_http_result fake = {0};

    io_connect_dispose(&e->dec);
    io_connect_init(&e->dec, 0);
    e->http_error = e->stalled = e->stream_error = false;
    e->status = 0;
    e->errlen = 0;
    snprintf(ka, sizeof(ka), "Keepalive-Ping-Interval: %u", e->p->keepalive_s);
    h[n++] = "Content-Type: application/connect+json";
    h[n++] = "Connect-Protocol-Version: 1";
    h[n++] = ka;
    h[n] = NULL;
    if (reconnect) {
        char js[96];
        int jl = snprintf(js, sizeof(js), "{\"process\":{\"pid\":%u}}", e->pid);

        cbody = malloc(5 + (size_t)jl);
        if (cbody) {
            io_connect_header((uint8_t *)cbody, 0, (uint32_t)jl);
            memcpy(cbody + 5, js, (size_t)jl);
        }
        body = cbody;
        blen = 5 + (size_t)jl;
    }
    snprintf(url, sizeof(url), "%s/process.Process/%s", e->sbx->envd_url,
             reconnect ? "Connect" : "Start");
    rq.url = url;
    rq.headers = h;
    rq.body = body;
    rq.body_len = blen;
    rq.timeout_ms = 0; /* long-lived: the keepalive timer watches it */
    rq.retry.max_attempts = reconnect ? 3 : 1;
    e->last_rx_ms = io_now_ms();
    if (!body || io_http_start(&e->h, e->p->r, &rq, &cbs, e) < 0) {
        free(cbody);
        fake.code = io_reactor_stopping(e->p->r) ? EVOLVE_ESHUTDOWN : EVOLVE_ERROR;
        fake.message = evolve_error_last()->message;
        on_done(&fake, e);
        return;
    }
    free(cbody);
    e->ka = io_reactor_timer(e->p->r, (uint64_t)e->p->keepalive_s * 1000, ka_tick, e);
}

static void stream_post(struct io_reactor *r, void *arg)
{
    (void)r;
    stream_begin(arg, false);
}

/* ---- the ops ------------------------------------------------------------------------------- */

static json_t *envs_object(const char *const *envp)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; o && envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');

        if (eq) {
            char *k = strndup(envp[i], (size_t)(eq - envp[i]));

            if (k)
                json_object_set_new(o, k, json_string(eq + 1));
            free(k);
        }
    }
    return o;
}

static char *start_request(const struct prov_exec_spec *spec, bool want_stdin, size_t *len)
{
    json_t *args = json_array(), *req;
    char cwd[1024], *text, *env;
    size_t i, tl;

    for (i = 1; args && spec->argv[i]; i++)
        json_array_append_new(args, json_string(spec->argv[i]));
    if (cloud_sandbox_path(cwd, sizeof(cwd), spec->cwd ? spec->cwd : "workspace") < 0) {
        json_decref(args);
        return NULL;
    }
    req = json_pack("{s:{s:s, s:o, s:o, s:s}, s:b}", "process", "cmd", spec->argv[0], "args", args,
                    "envs", envs_object(spec->envp), "cwd", cwd, "stdin", want_stdin);
    text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text) {
        core_error_oom();
        return NULL;
    }
    tl = strlen(text);
    env = malloc(tl + 5);
    if (env) {
        io_connect_header((uint8_t *)env, 0, (uint32_t)tl);
        memcpy(env + 5, text, tl);
        *len = tl + 5;
    } else {
        core_error_oom();
    }
    free(text);
    return env;
}

int e2b_exec(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
             void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct e2b_prov *p;
    bool want_stdin;
    struct exec *e;
    char what[160];
    int rc;

    if (!box || !spec || !spec->argv || !spec->argv[0] || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b exec: box, argv and done are required");
    p = (struct e2b_prov *)box->prov;
    want_stdin = !(spec->flags & (PROV_EXEC_NO_STDIN | PROV_EXEC_BACKGROUND));
    e = calloc(1, sizeof(*e));
    if (!e)
        return core_error_oom();
    e->in_fd = -1;
    e->refs = 1;
    e->p = p;
    e2b_prov_ref(p);
    e->sbx = b->sbx;
    e2b_sbx_ref(b->sbx);
    io_connect_init(&e->dec, 0);
    snprintf(what, sizeof(what), "e2b exec %s in %s", spec->argv[0], box->id);
    e->op = e2b_op_new(p, b->sbx, done, payload, 0, what);
    e->proc = calloc(1, sizeof(*e->proc));
    rc = EVOLVE_ENOMEM;
    if (!e->op || !e->proc)
        goto fail;
    e->proc->stdin_fd = e->proc->stdout_fd = e->proc->stderr_fd = e->proc->status_fd = -1;
    e->start_body = start_request(spec, want_stdin, &e->start_len);
    if (!e->start_body) {
        rc = evolve_error_last()->code;
        goto fail;
    }
    rc = cloud_proc_pipes(e->proc, &e->out, &e->err, &e->st, want_stdin, &e->in_fd, "e2b exec");
    if (rc < 0)
        goto fail;
    rc = io_reactor_post(p->r, stream_post, e);
    if (rc < 0) {
        rc = core_error_set(rc, "e2b exec: the reactor is shutting down");
        goto fail;
    }
    return 0;
fail:
    if (e->op)
        e2b_op_free(e->op);
    e->op = NULL;
    exec_unref(e);
    return rc;
}

static void on_signal_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct prov_status st = {0};

    e2b_connect_status(&st, rep, op->what);
    e2b_op_finish(op, &st, NULL);
}

int e2b_signal(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done, void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct e2b_op *op;
    const char *name;
    char what[128];
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b signal: box and done are required");
    /* envd delivers SIGTERM and SIGKILL only; an interrupt becomes SIGTERM. */
    if (signo == SIGKILL)
        name = "SIGNAL_SIGKILL";
    else if (signo == SIGTERM || signo == SIGINT)
        name = "SIGNAL_SIGTERM";
    else
        return core_error_set(EVOLVE_EUNSUPPORTED, "e2b signal: signal %d (only TERM/KILL/INT)",
                              signo);
    snprintf(what, sizeof(what), "e2b signal %u in %s", proc_id, box->id);
    op = e2b_op_new((struct e2b_prov *)box->prov, b->sbx, done, payload, 0, what);
    if (!op)
        return EVOLVE_ENOMEM;
    rc = e2b_unary(
        op, "/process.Process/SendSignal",
        json_pack("{s:{s:I}, s:s}", "process", "pid", (json_int_t)proc_id, "signal", name),
        on_signal_reply);
    if (rc < 0)
        e2b_op_free(op);
    return rc;
}
