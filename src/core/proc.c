/* proc.c — runs and commands inside the session actor: building the agent's command, starting it,
 * turning its output into events, timeouts, interrupts, and the final result.
 * Owns: struct proc_op (the one active operation) and the per-line order of the reference run
 * loop: parse, session log, `stdout` event, then the line's content events.
 * Threads: the session actor, except the pump callbacks and the stdin writer job marked below. */
#include "core/session_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "actors/runtime_public.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"
#include "core/rawjson.h"
#include "core/runtime.h"
#include "providers/local.h"

#define KILL_GRACE_MS 3000u

/* What the reactor-side callbacks need: they never touch the session itself. */
struct pump_ctx {
    struct act_actor *actor;
    uint64_t op_id;
};

static uint64_t next_seq(struct sess *s)
{
    return atomic_fetch_add_explicit(&s->ev->seq, 1, memory_order_relaxed) + 1;
}

static void uuid4(char out[40])
{
    unsigned char b[16];

    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        uint64_t t = core_mono_ns();
        memcpy(b, &t, 8);
        memcpy(b + 8, &t, 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static void op_free(struct proc_op *op)
{
    if (!op)
        return;
    if (op->stdin_fd >= 0)
        close(op->stdin_fd);
    core_pump_release(op->pump);
    hns_parser_free(op->parser);
    hns_command_dispose(&op->cmd);
    free(op->line);
    free(op->out);
    free(op->err);
    free(op);
}

/* Appends to a capped buffer (the result keeps at most SESS_OUTPUT_CAP bytes of each stream). */
static void append_capped(char **buf, size_t *len, bool *truncated, const char *data, size_t n)
{
    char *nb;

    if (*len + n > SESS_OUTPUT_CAP) {
        *truncated = true;
        n = *len < SESS_OUTPUT_CAP ? SESS_OUTPUT_CAP - *len : 0;
    }
    if (!n)
        return;
    nb = realloc(*buf, *len + n + 1);
    if (!nb) {
        *truncated = true;
        return;
    }
    memcpy(nb + *len, data, n);
    *len += n;
    nb[*len] = '\0';
    *buf = nb;
}

static void tail_append(struct proc_op *op, const char *text, size_t n)
{
    size_t cap = sizeof(op->error_tail) - 1;

    if (n >= cap) {
        text += n - cap;
        n = cap;
    }
    if (op->error_tail_len + n > cap) {
        size_t drop = op->error_tail_len + n - cap;
        memmove(op->error_tail, op->error_tail + drop, op->error_tail_len - drop);
        op->error_tail_len -= drop;
    }
    memcpy(op->error_tail + op->error_tail_len, text, n);
    op->error_tail_len += n;
    op->error_tail[op->error_tail_len] = '\0';
}

static void publish_raw(struct sess *s, evolve_event_kind_t kind, const char *data, size_t len)
{
    size_t n;
    char *js =
        core_raw_event_json(kind == EVOLVE_EVENT_STDOUT ? "stdout" : "stderr", data, len, &n);

    if (!js)
        return;
    sess_publish(s, core_event_new(kind, EVOLVE_UPDATE_TYPE_COUNT, js, n, next_seq(s)));
    free(js);
}

/* ---- line handling ------------------------------------------------------------------------ */

struct line_events {
    struct sess *s;
    struct proc_op *op;
    json_t *events[16];
    evolve_update_type_t types[16];
    size_t count;
};

static void flush_line_events(struct line_events *le)
{
    size_t i;

    for (i = 0; i < le->count; i++) {
        sess_publish(le->s, core_event_from_json(EVOLVE_EVENT_CONTENT, le->types[i], le->events[i],
                                                 next_seq(le->s)));
        json_decref(le->events[i]);
    }
    le->count = 0;
}

static void on_parsed(void *payload, evolve_update_type_t type, json_t *event)
{
    struct line_events *le = payload;

    core_ledger_add(le->s->ledger, event);
    if (type == EVOLVE_UPDATE_ERROR) {
        const char *m =
            json_string_value(json_object_get(json_object_get(event, "update"), "message"));
        if (m) {
            tail_append(le->op, m, strlen(m));
            tail_append(le->op, "\n", 1);
        }
    }
    if (le->count == sizeof(le->events) / sizeof(le->events[0])) {
        /* A line rarely yields more than a handful of events; keep order by flushing early. */
        flush_line_events(le);
    }
    le->types[le->count] = type;
    le->events[le->count++] = event;
}

/* The parser's payload is its op; the op points at the line being processed (set only by its
 * own actor for the duration of a feed). */
static void emit_trampoline(void *payload, evolve_update_type_t type, json_t *event)
{
    struct proc_op *op = payload;

    on_parsed(op->le, type, event);
}

static void process_line(struct sess *s, struct proc_op *op, const char *line, size_t len)
{
    struct line_events le = {.s = s, .op = op};
    char *with_lf;

    op->le = &le;
    hns_parser_feed(op->parser, line, len);
    op->le = NULL;
    if (s->log)
        core_sessionlog_line(s->log, line, len);
    with_lf = malloc(len + 1);
    if (with_lf) {
        memcpy(with_lf, line, len);
        with_lf[len] = '\n';
        publish_raw(s, EVOLVE_EVENT_STDOUT, with_lf, len + 1);
        free(with_lf);
    }
    flush_line_events(&le);
}

static void split_lines(struct sess *s, struct proc_op *op, const char *data, size_t n)
{
    const char *p = data, *end = data + n;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);

        if (op->line_len == 0 && nl) {
            /* Fast path: a whole line inside this chunk. */
            process_line(s, op, p, take);
        } else {
            if (op->line_len + take + 1 > op->line_cap) {
                size_t cap = (op->line_len + take + 1) * 2;
                char *nb = realloc(op->line, cap);

                if (!nb)
                    return;
                op->line = nb;
                op->line_cap = cap;
            }
            memcpy(op->line + op->line_len, p, take);
            op->line_len += take;
            if (nl) {
                process_line(s, op, op->line, op->line_len);
                op->line_len = 0;
            }
        }
        p += take + (nl ? 1 : 0);
    }
}

/* ---- reactor-side callbacks (reactor thread) -------------------------------------------- */

static void chunk_msg_free(struct act_msg *msg)
{
    struct chunk_msg *m = (struct chunk_msg *)msg;

    free(m->data);
    free(m);
}

static void on_pump_chunk(void *payload, int stream, char *data, size_t len)
{
    struct pump_ctx *pc = payload;
    struct chunk_msg *m = malloc(sizeof(*m));

    if (!m) {
        free(data);
        return;
    }
    act_msg_init(&m->hdr, MSG_CHUNK, chunk_msg_free);
    m->op_id = pc->op_id;
    m->stream = stream;
    m->data = data;
    m->len = len;
    act_send(pc->actor, &m->hdr); /* on failure the runtime frees it through chunk_msg_free */
}

static void on_pump_end(void *payload, const struct prov_exit *ex, bool lost)
{
    struct pump_ctx *pc = payload;
    struct end_msg *m = calloc(1, sizeof(*m));

    if (m) {
        act_msg_init(&m->hdr, MSG_END, (act_msg_free_fn)free);
        m->op_id = pc->op_id;
        m->exit = *ex;
        m->lost = lost;
        act_send(pc->actor, &m->hdr);
    }
    act_actor_unref(pc->actor);
    free(pc);
}

/* stdin is written by a job on the worker pool: a large prompt must not block the actor. */
struct stdin_job {
    int fd;
    char *data;
    size_t len;
};

static int write_all_nosigpipe(int fd, const char *data, size_t len);

static void write_stdin_job(void *arg)
{
    struct stdin_job *j = arg;

    /* A failure means the agent closed stdin or died: its exit tells the rest. */
    write_all_nosigpipe(j->fd, j->data, j->len);
    close(j->fd);
    free(j->data);
    free(j);
}

/* Writes all of `data` to an agent's stdin pipe (blocking or not, as the fd is set). A reader
 * that went away must not kill the embedding program with SIGPIPE, and a library must not change
 * the process's signal dispositions: SIGPIPE is blocked on this thread for the write, and one it
 * raised is consumed before unblocking, so the write fails with EPIPE instead. */
static int write_all_nosigpipe(int fd, const char *data, size_t len)
{
    sigset_t pipe_set, old;
    size_t off = 0;
    int rc = 0, saved;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = -1;
            break;
        }
        off += (size_t)n;
    }
    saved = errno;
    if (rc < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE))
        sigtimedwait(&pipe_set, NULL, &(struct timespec){0, 0});
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

void sess_write_stdin(struct sess *s, struct call *c)
{
    struct proc_op *op = s->active;

    if (!op || op->stdin_fd < 0) {
        sess_call_fail(c, EVOLVE_ENOTFOUND, "no active run with an open stdin");
        return;
    }
    if (write_all_nosigpipe(op->stdin_fd, c->data, c->len) < 0) {
        sess_call_fail(c, EVOLVE_EBUSY, "the agent is not reading its stdin (%s)", strerror(errno));
        return;
    }
    sess_call_complete(c, 0);
}

/* ---- starting ----------------------------------------------------------------------------- */

static void fail_start(struct sess *s, struct proc_op *op, int rc, const char *msg)
{
    struct call *c = op->call;

    s->active = NULL;
    op_free(op);
    if (c)
        sess_call_fail(c, rc, "%s", msg);
    sess_after_op(s);
}

static void exec_now(struct sess *s, struct proc_op *op)
{
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_done_msg *m;
    int rc;

    spec.argv = (const char *const *)op->cmd.argv;
    spec.envp = (const char *const *)op->cmd.env;
    spec.cwd = SESS_WORKDIR;
    spec.flags = op->cmd.stdin_data || op->cmd.stdin_keep_open ? 0 : PROV_EXEC_NO_STDIN;
    /* Recorded before the spawn: output files changed from here on belong to this turn. */
    s->last_op_ms = core_wall_ms();
    m = sess_prov_msg(s, STEP_EXEC_STARTED, op);
    if (!m) {
        fail_start(s, op, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    rc = s->prov->ops->exec(s->box, &spec, sess_prov_done, m);
    if (rc < 0) {
        sess_prov_msg_cancel(s, m);
        fail_start(s, op, rc, evolve_error_last()->message);
    }
}

/* The agent's HOME as its processes see it: /home/user inside a sandbox, but the host directory
 * when the local provider runs without isolation (no mount namespace maps it there), so that
 * paths the harness derives from it (CODEX_HOME, config files) exist. */
static const char *agent_home(struct sess *s, char *buf, size_t size)
{
    if (s->box && !strcmp(s->prov->ops->name, "local")) {
        struct prov_local_box *b = prov_local_box_from(s->box);

        if (!strcmp(prov_local_box_mode(b), "none")) {
            snprintf(buf, size, "%s", prov_local_box_home(b));
            return buf;
        }
    }
    return SESS_HOME;
}

static int model_of(struct sess *s, const char **out)
{
    *out = s->ev->model ? s->ev->model : s->ev->agent->default_model;
    return 0;
}

void sess_start_run(struct sess *s, struct call *c)
{
    struct proc_op *op = calloc(1, sizeof(*op));
    struct hns_run_spec spec = {0};
    char home[1024], workdir[1100];
    size_t i;
    int rc;

    if (!op) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    op->id = ++s->op_counter;
    op->stdin_fd = -1;
    op->is_run = true;
    op->background = c->background;
    op->call = c;
    uuid4(op->run_id);
    spec.prompt = c->text;
    model_of(s, &spec.model);
    spec.api_key = s->ev->api_key
                       ? s->ev->api_key
                       : (s->ev->agent->api_key_env ? getenv(s->ev->agent->api_key_env) : NULL);
    spec.base_url = s->ev->base_url
                        ? s->ev->base_url
                        : (s->ev->agent->base_url_env ? getenv(s->ev->agent->base_url_env) : NULL);
    spec.home = agent_home(s, home, sizeof(home));
    snprintf(workdir, sizeof(workdir), "%s/workspace", spec.home);
    spec.workdir = workdir;
    spec.resume = c->run.resume == EVOLVE_RESUME_NO    ? false
                  : c->run.resume == EVOLVE_RESUME_YES ? true
                                                       : s->has_run;
    spec.offline = true;
    spec.ask_permission = s->ev->ask_permission;
    rc = s->ev->agent->build_command(&op->cmd, &spec);
    if (rc == 0)
        rc = hns_parser_new(&op->parser, s->ev->agent->name, emit_trampoline, op);
    if (rc < 0) {
        char msg[512];

        snprintf(msg, sizeof(msg), "%s", evolve_error_last()->message);
        op_free(op);
        sess_call_fail(c, rc, "%s", msg);
        return;
    }
    s->active = op;
    op->files_pending = op->cmd.files_count;
    if (!op->files_pending) {
        exec_now(s, op);
        return;
    }
    for (i = 0; i < op->cmd.files_count; i++) {
        struct hns_file *f = &op->cmd.files[i];
        char *copy = malloc(f->len + 1);

        if (copy)
            memcpy(copy, f->content, f->len);
        rc = copy ? sess_start_write(s, STEP_CMD_FILE_WRITTEN, f->path, copy, f->len, copy)
                  : EVOLVE_ENOMEM;
        if (rc < 0) {
            /* Writes already started still complete; mark the op failed when they do. */
            op->files_pending -= op->cmd.files_count - i;
            op->ended = true;
            snprintf(op->error_tail, sizeof(op->error_tail), "%s", evolve_error_last()->message);
            if (op->files_pending == 0)
                fail_start(s, op, rc, op->error_tail);
            return;
        }
    }
}

void sess_start_command(struct sess *s, struct call *c)
{
    struct proc_op *op = calloc(1, sizeof(*op));
    int rc;

    if (!op) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    op->id = ++s->op_counter;
    op->stdin_fd = -1;
    op->background = c->background;
    op->call = c;
    rc = hns_command_arg(&op->cmd, "sh");
    if (rc == 0)
        rc = hns_command_arg(&op->cmd, "-c");
    if (rc == 0)
        rc = hns_command_arg(&op->cmd, c->text);
    if (rc < 0) {
        op_free(op);
        sess_call_fail(c, rc, "out of memory");
        return;
    }
    s->active = op;
    exec_now(s, op);
}

static void on_started(struct sess *s, struct proc_op *op, struct prov_done_msg *m)
{
    struct prov_proc *proc = m->result;
    struct core_pump_cbs cbs = {on_pump_chunk, on_pump_end};
    struct pump_ctx *pc;
    struct op_msg *tm;
    struct call *c = op->call;
    const char *model;
    int rc;

    if (m->status.code < 0) {
        fail_start(s, op, m->status.code, m->status.message);
        return;
    }
    op->proc_id = proc->id;
    op->pid = proc->pid;
    if (proc->stdin_fd >= 0 && op->cmd.stdin_keep_open) {
        /* An RPC agent: the actor owns stdin for the run (prompt now, replies later), written
         * non-blocking so a stalled agent can never block a worker. */
        fcntl(proc->stdin_fd, F_SETFL, fcntl(proc->stdin_fd, F_GETFL) | O_NONBLOCK);
        op->stdin_fd = proc->stdin_fd;
        proc->stdin_fd = -1;
        if (op->cmd.stdin_data &&
            write_all_nosigpipe(op->stdin_fd, op->cmd.stdin_data, op->cmd.stdin_len) < 0)
            core_log_warn("session %s: the agent did not take its %zu-byte prompt on stdin", s->tag,
                          op->cmd.stdin_len);
    } else if (proc->stdin_fd >= 0 && op->cmd.stdin_data) {
        struct stdin_job *j = malloc(sizeof(*j));

        if (j) {
            j->fd = proc->stdin_fd;
            j->data = op->cmd.stdin_data;
            j->len = op->cmd.stdin_len;
            op->cmd.stdin_data = NULL;
            proc->stdin_fd = -1;
            if (act_runtime_submit(act_runtime_of(s->ev->rt), write_stdin_job, j) < 0) {
                close(j->fd);
                free(j->data);
                free(j);
            }
        }
    }
    pc = malloc(sizeof(*pc));
    if (!pc) {
        prov_proc_free(proc);
        fail_start(s, op, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    pc->actor = s->ev->actor;
    pc->op_id = op->id;
    act_actor_ref(pc->actor);
    rc = core_pump_start(&op->pump, core_runtime_io(s->ev->rt), proc, &cbs, pc);
    prov_proc_free(proc);
    if (rc < 0) {
        act_actor_unref(pc->actor);
        free(pc);
        fail_start(s, op, rc, evolve_error_last()->message);
        return;
    }
    tm = malloc(sizeof(*tm));
    if (tm) {
        act_msg_init(&tm->hdr, MSG_TIMEOUT, (act_msg_free_fn)free);
        tm->op_id = op->id;
        if (act_after(&op->timer_id, s->ev->actor, c ? c->timeout_ms : SESS_DEFAULT_TIMEOUT_MS,
                      &tm->hdr) < 0)
            op->timer_id = 0;
    }
    if (op->is_run) {
        model_of(s, &model);
        if (!s->log) {
            struct core_sessionlog_meta meta = {
                .dir = s->ev->log_dir,
                .tag = s->tag,
                .provider = s->prov->ops->name,
                .sandbox_id = s->box->id,
                .agent = s->ev->agent->name,
                .model = model,
                .secrets = (const char *const[]){s->ev->api_key ? s->ev->api_key : "", NULL},
            };
            if (core_sessionlog_open(&s->log, &meta) < 0)
                core_log_warn("session %s: %s", s->tag, evolve_error_last()->message);
        }
        if (s->log)
            core_sessionlog_prompt(s->log, c ? c->text : "");
        core_ledger_run_begin(s->ledger, op->run_id, model);
    }
    sess_lifecycle(s, SB_RUNNING, AG_RUNNING, op->is_run ? "run_start" : "command_start");
    if (op->is_run)
        s->has_run = true;
    if (op->background && c) {
        char msg[96];

        snprintf(msg, sizeof(msg), "Background process started with ID %ld", op->pid);
        c->result =
            sess_result_new(0, strdup(msg), NULL, op->is_run ? op->run_id : NULL, s->box->id, NULL);
        op->call = NULL;
        if (!c->result)
            sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        else
            sess_call_complete(c, 0);
    }
}

void sess_proc_prov_done(struct sess *s, struct prov_done_msg *m)
{
    struct proc_op *op = s->active;

    switch (m->step) {
    case STEP_CMD_FILE_WRITTEN:
        free(m->ctx);
        if (!op)
            return;
        if (m->status.code < 0 && !op->ended) {
            op->ended = true;
            snprintf(op->error_tail, sizeof(op->error_tail), "%s", m->status.message);
        }
        if (--op->files_pending > 0)
            return;
        if (op->ended) {
            char msg[sizeof(op->error_tail)];

            snprintf(msg, sizeof(msg), "%s", op->error_tail);
            fail_start(s, op, EVOLVE_EIO, msg);
            return;
        }
        exec_now(s, op);
        return;
    case STEP_EXEC_STARTED:
        if (op != m->ctx) {
            if (m->result)
                prov_proc_free(m->result);
            return;
        }
        on_started(s, op, m);
        return;
    case STEP_SIGNAL_SENT:
        /* ENOTFOUND: the command already ended; its exit is on the way. */
        return;
    }
}

/* ---- output and the end ----------------------------------------------------------------- */

void sess_on_chunk(struct sess *s, struct chunk_msg *m)
{
    struct proc_op *op = s->active;

    if (op && op->id == m->op_id) {
        if (m->stream == 2) {
            append_capped(&op->err, &op->err_len, &op->err_truncated, m->data, m->len);
            tail_append(op, m->data, m->len);
            publish_raw(s, EVOLVE_EVENT_STDERR, m->data, m->len);
        } else {
            append_capped(&op->out, &op->out_len, &op->out_truncated, m->data, m->len);
            if (op->is_run)
                split_lines(s, op, m->data, m->len);
            else
                publish_raw(s, EVOLVE_EVENT_STDOUT, m->data, m->len);
        }
    }
}

static void send_signal(struct sess *s, struct proc_op *op, int signo)
{
    struct prov_done_msg *m;

    if (!s->box)
        return;
    m = sess_prov_msg(s, STEP_SIGNAL_SENT, NULL);
    if (m && s->prov->ops->signal(s->box, op->proc_id, signo, sess_prov_done, m) < 0)
        sess_prov_msg_cancel(s, m);
}

static void arm_grace(struct sess *s, struct proc_op *op)
{
    struct op_msg *g;

    if (op->grace_timer_id)
        return;
    g = malloc(sizeof(*g));
    if (!g)
        return;
    act_msg_init(&g->hdr, MSG_KILL_GRACE, (act_msg_free_fn)free);
    g->op_id = op->id;
    if (act_after(&op->grace_timer_id, s->ev->actor, KILL_GRACE_MS, &g->hdr) < 0)
        op->grace_timer_id = 0;
}

void sess_interrupt(struct sess *s, struct call *c, int signo)
{
    struct proc_op *op = s->active;

    if (!op || !op->pump) {
        if (op && c) {
            /* Still starting: it will see the flag and end as interrupted. */
            op->interrupted = true;
        }
        if (c)
            sess_call_complete(c, 0);
        return;
    }
    op->interrupted = true;
    if (c) {
        c->next = op->interrupt_waiters;
        op->interrupt_waiters = c;
    }
    send_signal(s, op, signo);
    if (signo != SIGKILL)
        arm_grace(s, op);
}

void sess_on_timeout(struct sess *s, struct op_msg *m)
{
    struct proc_op *op = s->active;

    if (!op || op->id != m->op_id || op->ended)
        return;
    op->timer_id = 0;
    op->timed_out = true;
    send_signal(s, op, SIGTERM);
    arm_grace(s, op);
}

void sess_on_kill_grace(struct sess *s, struct op_msg *m)
{
    struct proc_op *op = s->active;

    if (!op || op->id != m->op_id)
        return;
    op->grace_timer_id = 0;
    send_signal(s, op, SIGKILL);
}

void sess_on_end(struct sess *s, struct end_msg *m)
{
    struct proc_op *op = s->active;
    enum ag_state ag;
    const char *reason;
    struct call *c, *w;
    int code;
    bool interrupted;

    if (!op || op->id != m->op_id)
        return;
    op->ended = true;
    if (op->timer_id)
        act_timer_cancel(act_runtime_of(s->ev->rt), op->timer_id);
    if (op->grace_timer_id)
        act_timer_cancel(act_runtime_of(s->ev->rt), op->grace_timer_id);
    if (op->is_run) {
        struct line_events le = {.s = s, .op = op};

        if (op->line_len)
            process_line(s, op, op->line, op->line_len);
        op->line_len = 0;
        op->le = &le;
        hns_parser_finish(op->parser);
        op->le = NULL;
        flush_line_events(&le);
    }
    code = m->lost ? -1 : m->exit.code;
    interrupted = !op->timed_out && (op->interrupted || code == 130);
    if (op->timed_out)
        code = -1;
    if (interrupted) {
        ag = AG_INTERRUPTED;
        reason = op->is_run ? "run_interrupted" : "command_interrupted";
    } else if (op->background) {
        ag = code == 0 ? AG_IDLE : AG_ERROR;
        reason = op->is_run
                     ? (code == 0 ? "run_background_complete" : "run_background_failed")
                     : (code == 0 ? "command_background_complete" : "command_background_failed");
    } else {
        ag = code == 0 ? AG_IDLE : AG_ERROR;
        reason = op->is_run ? (code == 0 ? "run_complete" : "run_failed")
                            : (code == 0 ? "command_complete" : "command_failed");
    }
    if (m->lost) {
        static const char lost[] =
            "sandbox lost: the command's status stream ended without an exit\n";

        tail_append(op, lost, sizeof(lost) - 1); /* was 66 for 65 bytes: read past the end */
    }
    if (op->is_run)
        core_ledger_run_end(s->ledger, true);
    if (s->log)
        core_sessionlog_flush(s->log, 0);
    /* A paused or stopped sandbox keeps its state: a late completion must not overwrite it. */
    sess_lifecycle(s, s->sb == SB_PAUSED || s->sb == SB_STOPPED ? s->sb : SB_READY, ag, reason);
    c = op->call;
    if (c) {
        c->result = sess_result_new(code, op->out, op->err, op->is_run ? op->run_id : NULL,
                                    s->box ? s->box->id : NULL, NULL);
        op->out = op->err = NULL;
        if (!c->result)
            sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        else if (s->ev->store && op->is_run && !op->background && code == 0 && !interrupted)
            sess_auto_checkpoint(s, c); /* answers the call when the checkpoint is done */
        else
            sess_call_complete(c, 0);
    }
    while ((w = op->interrupt_waiters)) {
        op->interrupt_waiters = w->next;
        sess_call_complete(w, 0);
    }
    s->active = NULL;
    op_free(op);
    sess_after_op(s);
}
