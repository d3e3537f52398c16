/* daytona_exec.c — commands in a Daytona sandbox: one toolbox session per command (so a signal
 * can end it: DELETE of the session, TERM then KILL), `exec` with runAsync, then polling — every
 * poll period GET .../command/{id} for the exit code and GET .../logs (JSON stdout/stderr, as
 * X-Daytona-SDK-Version >= 0.167 asks) whose new suffix goes into the prov_proc pipes. Stdin
 * bytes go to .../input (Daytona has no stdin EOF). Without WebSocket support in libcurl this
 * polling is the only live output; it costs up to one poll period of latency per chunk and
 * two requests per period per running command.
 * Threads: dt_exec/dt_signal from any thread; all command state on the reactor thread. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/error.h"
#include "providers/daytona_int.h"

#define MAX_FAILS 10

struct dt_exec {
    struct dt_exec *next; /* p->execs */
    struct dt_op *op;     /* the exec op until started, then NULL */
    struct dt_prov *p;
    struct dt_sbx *sbx;
    int refs; /* the poll loop + a stdin call in flight */
    uint32_t id;
    char sid[64], cmd_id[80];
    char *command;
    struct cloud_pipe *out, *err, *st;
    int in_fd;
    struct io_watch *in_watch;
    size_t out_off, err_off;
    bool have_exit, finished, linked;
    struct prov_exit exit;
    int signo; /* a signal we asked for (the session was deleted) */
    int fails;
    struct prov_proc *proc;
};

static void tick(struct io_reactor *r, void *arg);

static void unlink_exec(struct dt_exec *e)
{
    struct dt_exec **pp;

    if (!e->linked)
        return;
    for (pp = &e->p->execs; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            break;
        }
    e->linked = false;
}

static void exec_unref(struct dt_exec *e)
{
    if (--e->refs > 0)
        return;
    unlink_exec(e);
    cloud_pipe_abort(e->p->r, e->out);
    cloud_pipe_abort(e->p->r, e->err);
    cloud_pipe_abort(e->p->r, e->st);
    if (e->in_watch)
        io_reactor_unwatch(e->p->r, e->in_watch);
    if (e->in_fd >= 0)
        close(e->in_fd);
    prov_proc_free(e->proc);
    if (e->op)
        dt_op_free(e->op);
    free(e->command);
    dt_sbx_unref(e->sbx);
    dt_prov_unref(e->p);
    free(e);
}

/* A throwaway op for the command's own calls (no done). */
static struct dt_op *sub_op(struct dt_exec *e)
{
    struct dt_op *op = dt_op_new(e->p, e->sbx, NULL, e, 0, e->sid);

    if (op)
        op->ctx = e;
    return op;
}

static void ignore_reply(const struct cloud_reply *rep, void *payload)
{
    (void)rep;
    dt_op_free(payload);
}

static void delete_session(struct dt_exec *e)
{
    struct dt_op *op = sub_op(e);
    char path[160];

    snprintf(path, sizeof(path), "/process/session/%s", e->sid);
    if (op && dt_toolbox(op, "DELETE", path, NULL, 0, NULL, 30000, ignore_reply) < 0)
        dt_op_free(op);
}

static void finish(struct dt_exec *e, bool have_exit)
{
    if (e->finished)
        return;
    e->finished = true;
    unlink_exec(e);
    if (have_exit)
        cloud_pipe_write(e->p->r, e->st, &e->exit, sizeof(e->exit));
    cloud_pipe_close(e->p->r, e->out);
    cloud_pipe_close(e->p->r, e->err);
    cloud_pipe_close(e->p->r, e->st);
    e->out = e->err = e->st = NULL;
    if (e->in_watch)
        io_reactor_unwatch(e->p->r, e->in_watch);
    e->in_watch = NULL;
    if (e->in_fd >= 0)
        close(e->in_fd);
    e->in_fd = -1;
    if (!e->signo)
        delete_session(e);
}

static void fail_start(struct dt_exec *e, const struct prov_status *st)
{
    struct dt_op *op = e->op;

    e->op = NULL;
    dt_op_finish(op, st, NULL);
    finish(e, false);
    exec_unref(e);
}

static void schedule(struct dt_exec *e)
{
    if (!io_reactor_timer(e->p->r, e->p->poll_ms, tick, e)) {
        finish(e, false);
        exec_unref(e);
    }
}

/* ---- polling -----------------------------------------------------------------------------------
 */

static void emit_suffix(struct dt_exec *e, struct cloud_pipe *pipe, const char *s, size_t *off)
{
    size_t n = s ? strlen(s) : 0;

    if (n > *off) {
        cloud_pipe_write(e->p->r, pipe, s + *off, n - *off);
        *off = n;
    }
}

/* A failed poll: the sandbox or session is gone, or a transient error to ride out. */
static void poll_failed(struct dt_exec *e, const struct cloud_reply *rep)
{
    long status = rep->res->status;

    if (e->signo && (status == 404 || status == 410)) {
        e->exit.signo = e->signo;
        e->exit.code = 128 + e->signo;
        finish(e, true);
        exec_unref(e);
        return;
    }
    if (status == 404 || status == 410 || status == 502 || ++e->fails >= MAX_FAILS) {
        finish(e, false); /* lost: EOF without an exit record */
        exec_unref(e);
        return;
    }
    schedule(e);
}

static void on_logs(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct dt_exec *e = op->ctx;
    json_t *j;

    dt_op_free(op);
    if (!dt_ok(rep)) {
        poll_failed(e, rep);
        return;
    }
    e->fails = 0;
    j = json_loadb(rep->body, rep->len, 0, NULL);
    emit_suffix(e, e->out, json_string_value(json_object_get(j, "stdout")), &e->out_off);
    emit_suffix(e, e->err, json_string_value(json_object_get(j, "stderr")), &e->err_off);
    json_decref(j);
    if (e->have_exit) {
        finish(e, true);
        exec_unref(e);
        return;
    }
    schedule(e);
}

static void fetch_logs(struct dt_exec *e)
{
    struct dt_op *op = sub_op(e);
    char path[300];

    snprintf(path, sizeof(path), "/process/session/%s/command/%s/logs", e->sid, e->cmd_id);
    if (!op || dt_toolbox(op, "GET", path, NULL, 0, NULL, e->p->poll_timeout_ms, on_logs) < 0) {
        if (op)
            dt_op_free(op);
        schedule(e);
    }
}

static void on_status(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct dt_exec *e = op->ctx;
    json_t *j, *code;

    dt_op_free(op);
    if (!dt_ok(rep)) {
        poll_failed(e, rep);
        return;
    }
    j = json_loadb(rep->body, rep->len, 0, NULL);
    code = json_object_get(j, "exitCode");
    if (json_is_integer(code)) {
        int c = (int)json_integer_value(code);

        e->have_exit = true;
        e->exit.code = c;
        /* A shell reports a signal death as 128 + n. */
        e->exit.signo = c > 128 && c < 160 ? c - 128 : 0;
    }
    json_decref(j);
    fetch_logs(e);
}

static void tick(struct io_reactor *r, void *arg)
{
    struct dt_exec *e = arg;
    struct dt_op *op;
    char path[300];

    (void)r;
    op = sub_op(e);
    snprintf(path, sizeof(path), "/process/session/%s/command/%s", e->sid, e->cmd_id);
    if (!op || dt_toolbox(op, "GET", path, NULL, 0, NULL, e->p->poll_timeout_ms, on_status) < 0) {
        if (op)
            dt_op_free(op);
        finish(e, false);
        exec_unref(e);
    }
}

/* ---- stdin -------------------------------------------------------------------------------------
 */

static void on_input(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct dt_exec *e = op->ctx;

    dt_op_free(op);
    if (e->in_watch)
        io_reactor_watch_set(e->p->r, e->in_watch, dt_ok(rep) ? EPOLLIN : 0);
    exec_unref(e);
}

static void on_stdin(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct dt_exec *e = arg;
    char buf[16384], path[300], *body;
    struct dt_op *op;
    json_t *j;
    ssize_t n;

    (void)revents;
    n = read(e->in_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* Daytona has no stdin EOF: the command sees its input end only when it exits. */
        io_reactor_unwatch(r, w);
        e->in_watch = NULL;
        close(e->in_fd);
        e->in_fd = -1;
        return;
    }
    j = json_pack("{s:s%}", "data", buf, (size_t)n);
    body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    op = body ? sub_op(e) : NULL;
    snprintf(path, sizeof(path), "/process/session/%s/command/%s/input", e->sid, e->cmd_id);
    if (!op || dt_toolbox(op, "POST", path, body, strlen(body), NULL, 30000, on_input) < 0) {
        if (op)
            dt_op_free(op);
        free(body);
        return;
    }
    free(body);
    e->refs++;
    io_reactor_watch_set(r, w, 0); /* one input call at a time keeps the bytes in order */
}

/* ---- starting ----------------------------------------------------------------------------------
 */

static void on_exec(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct dt_exec *e = op->ctx;
    struct prov_status st = {0};
    struct prov_proc *proc;
    const char *cid;
    json_t *j;

    dt_op_free(op);
    j = json_loadb(rep->body, rep->len, 0, NULL);
    cid = json_string_value(json_object_get(j, "cmdId"));
    if (!dt_ok(rep) || !cid || strlen(cid) >= sizeof(e->cmd_id)) {
        if (dt_ok(rep))
            cloud_status_set(&st, EVOLVE_EPROTO, "%s: exec reply has no cmdId", e->op->what);
        else
            cloud_status_from(&st, rep, e->op->what);
        json_decref(j);
        fail_start(e, &st);
        return;
    }
    snprintf(e->cmd_id, sizeof(e->cmd_id), "%s", cid);
    json_decref(j);
    e->next = e->p->execs;
    e->p->execs = e;
    e->linked = true;
    if (e->in_fd >= 0) {
        e->in_watch = io_reactor_watch(e->p->r, e->in_fd, EPOLLIN, IO_STAGE_PROC, on_stdin, e);
        if (!e->in_watch) {
            close(e->in_fd);
            e->in_fd = -1;
        }
    }
    proc = e->proc;
    e->proc = NULL;
    op = e->op;
    e->op = NULL;
    dt_op_finish(op, &st, proc);
    schedule(e);
}

static void on_session(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct dt_exec *e = op->ctx;
    struct prov_status st = {0};
    json_t *body;
    char path[160], *text;

    dt_op_free(op);
    if (!dt_ok(rep)) {
        cloud_status_from(&st, rep, e->op->what);
        fail_start(e, &st);
        return;
    }
    body = json_pack("{s:s, s:b}", "command", e->command, "runAsync", 1);
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    op = text ? sub_op(e) : NULL;
    snprintf(path, sizeof(path), "/process/session/%s/exec", e->sid);
    if (!op || dt_toolbox(op, "POST", path, text, strlen(text), NULL, 60000, on_exec) < 0) {
        if (op)
            dt_op_free(op);
        cloud_status_set(&st, EVOLVE_ENOMEM, "%s: cannot start the exec call", e->op->what);
        free(text);
        fail_start(e, &st);
        return;
    }
    free(text);
}

static void begin(struct io_reactor *r, void *arg)
{
    struct dt_exec *e = arg;
    struct prov_status st;
    struct dt_op *op;
    char body[128];

    (void)r;
    snprintf(body, sizeof(body), "{\"sessionId\":\"%s\"}", e->sid);
    op = sub_op(e);
    if (!op || dt_toolbox(op, "POST", "/process/session", body, strlen(body), NULL, 60000,
                          on_session) < 0) {
        if (op)
            dt_op_free(op);
        cloud_status_set(&st, io_reactor_stopping(r) ? EVOLVE_ESHUTDOWN : EVOLVE_ERROR,
                         "%s: cannot start the session call", e->op->what);
        fail_start(e, &st);
    }
}

/* Appends s single-quoted for sh. */
static int quote(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + strlen(s) * 4 + 4;

    if (need > *cap) {
        char *nb = realloc(*buf, need * 2);

        if (!nb)
            return EVOLVE_ENOMEM;
        *buf = nb;
        *cap = need * 2;
    }
    (*buf)[(*len)++] = '\'';
    for (; *s; s++) {
        if (*s == '\'') {
            memcpy(*buf + *len, "'\\''", 4);
            *len += 4;
        } else {
            (*buf)[(*len)++] = *s;
        }
    }
    (*buf)[(*len)++] = '\'';
    (*buf)[(*len)++] = ' ';
    (*buf)[*len] = '\0';
    return 0;
}

static char *command_line(const struct prov_exec_spec *spec, const char *cwd)
{
    size_t len = 0, cap = 256, i;
    char *buf = malloc(cap);
    int rc = 0;

    if (!buf)
        return NULL;
    memcpy(buf, "cd ", 4);
    len = 3;
    rc = quote(&buf, &len, &cap, cwd);
    if (rc == 0 && len + 16 < cap) {
        memcpy(buf + len, "&& env ", 8);
        len += 7;
    }
    for (i = 0; rc == 0 && spec->envp && spec->envp[i]; i++)
        rc = quote(&buf, &len, &cap, spec->envp[i]);
    for (i = 0; rc == 0 && spec->argv[i]; i++)
        rc = quote(&buf, &len, &cap, spec->argv[i]);
    if (rc < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int dt_exec(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
            void *payload)
{
    struct dt_box *b = (struct dt_box *)box;
    struct dt_prov *p;
    struct dt_exec *e;
    char cwd[1024], what[160];
    bool want_stdin;
    int rc;

    if (!box || !spec || !spec->argv || !spec->argv[0] || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona exec: box, argv and done are required");
    rc = cloud_sandbox_path(cwd, sizeof(cwd), spec->cwd ? spec->cwd : "workspace");
    if (rc < 0)
        return rc;
    p = (struct dt_prov *)box->prov;
    want_stdin = !(spec->flags & (PROV_EXEC_NO_STDIN | PROV_EXEC_BACKGROUND));
    e = calloc(1, sizeof(*e));
    if (!e)
        return core_error_oom();
    e->refs = 1;
    e->in_fd = -1;
    e->p = p;
    dt_prov_ref(p);
    e->sbx = b->sbx;
    dt_sbx_ref(b->sbx);
    e->id = atomic_fetch_add(&p->next_cmd, 1) + 1;
    snprintf(e->sid, sizeof(e->sid), "%s-%u", p->sid_prefix, e->id);
    snprintf(what, sizeof(what), "daytona exec %s in %s", spec->argv[0], box->id);
    e->op = dt_op_new(p, b->sbx, done, payload, 0, what);
    e->proc = calloc(1, sizeof(*e->proc));
    e->command = command_line(spec, cwd);
    rc = EVOLVE_ENOMEM;
    if (!e->op || !e->proc || !e->command)
        goto fail;
    e->proc->stdin_fd = e->proc->stdout_fd = e->proc->stderr_fd = e->proc->status_fd = -1;
    e->proc->id = e->id;
    e->proc->pid = 0; /* Daytona does not say */
    rc = cloud_proc_pipes(e->proc, &e->out, &e->err, &e->st, want_stdin, &e->in_fd, "daytona exec");
    if (rc < 0)
        goto fail;
    rc = io_reactor_post(p->r, begin, e);
    if (rc < 0) {
        rc = core_error_set(rc, "daytona exec: the reactor is shutting down");
        goto fail;
    }
    return 0;
fail:
    if (rc == EVOLVE_ENOMEM)
        core_error_oom();
    exec_unref(e);
    return rc;
}

/* ---- signal: delete the command's session --------------------------------------------------- */

struct sig_job {
    struct dt_op *op;
    uint32_t id;
    int signo;
};

static void on_deleted(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};

    if (!dt_ok(rep))
        cloud_status_from(&st, rep, op->what);
    dt_op_finish(op, &st, NULL);
}

static void sig_post(struct io_reactor *r, void *arg)
{
    struct sig_job *j = arg;
    struct prov_status st = {0};
    struct dt_exec *e;
    char path[160];

    (void)r;
    for (e = j->op->p->execs; e && e->id != j->id; e = e->next)
        ;
    if (!e || e->finished) {
        cloud_status_set(&st, EVOLVE_ENOTFOUND, "%s: no running command %u", j->op->what, j->id);
        dt_op_finish(j->op, &st, NULL);
        free(j);
        return;
    }
    e->signo = j->signo;
    snprintf(path, sizeof(path), "/process/session/%s", e->sid);
    if (dt_toolbox(j->op, "DELETE", path, NULL, 0, NULL, 30000, on_deleted) < 0) {
        cloud_status_set(&st, EVOLVE_ERROR, "%s: %s", j->op->what, evolve_error_last()->message);
        dt_op_finish(j->op, &st, NULL);
    }
    free(j);
}

int dt_signal(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done, void *payload)
{
    struct dt_box *b = (struct dt_box *)box;
    struct sig_job *j;
    char what[128];
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona signal: box and done are required");
    /* Daytona has no process signals: deleting the session sends TERM, then KILL. */
    if (signo != SIGTERM && signo != SIGKILL && signo != SIGINT)
        return core_error_set(EVOLVE_EUNSUPPORTED,
                              "daytona signal: signal %d (only TERM/KILL/INT, by session delete)",
                              signo);
    snprintf(what, sizeof(what), "daytona signal %u in %s", proc_id, box->id);
    j = calloc(1, sizeof(*j));
    if (!j || !(j->op = dt_op_new((struct dt_prov *)box->prov, b->sbx, done, payload, 0, what))) {
        free(j);
        return core_error_oom();
    }
    j->id = proc_id;
    j->signo = signo == SIGINT ? SIGTERM : signo;
    rc = io_reactor_post(((struct dt_prov *)box->prov)->r, sig_post, j);
    if (rc < 0) {
        dt_op_free(j->op);
        free(j);
        return core_error_set(rc, "daytona signal: the reactor is shutting down");
    }
    return 0;
}
