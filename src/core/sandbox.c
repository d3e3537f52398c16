/* sandbox.c — the session actor: its state machine, sandbox boot (create or connect, then the
 * workspace), pause/resume/kill/set_session, status, and event publishing with backpressure.
 * Owns: every field of struct sess. Only this actor's behaviour touches them (no locks); other
 * threads reach it by messages: MSG_CALL from API callers, MSG_PROV_DONE from provider jobs,
 * MSG_CHUNK/MSG_END from the reactor, MSG_TIMEOUT/MSG_KILL_GRACE from timers, MSG_WAKE from the
 * bus. Runs and commands themselves are in proc.c, output files in output.c.
 * State changes go through sess_set_state only (one place logs every transition). */
#include "core/session_int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/instructions.h"
#include "core/log.h"
#include "core/stage.h"

static const char *const sb_name[SB_COUNT] = {
    [SB_STOPPED] = "stopped", [SB_BOOTING] = "booting", [SB_READY] = "ready",
    [SB_RUNNING] = "running", [SB_PAUSED] = "paused",   [SB_ERROR] = "error",
};
static const char *const ag_name[AG_COUNT] = {
    [AG_IDLE] = "idle",
    [AG_RUNNING] = "running",
    [AG_INTERRUPTED] = "interrupted",
    [AG_ERROR] = "error",
};

void sess_set_state(struct sess *s, enum sb_state sb, enum ag_state ag)
{
    if (s->sb != sb || s->ag != ag)
        core_log_debug("session %s: sandbox %s -> %s, agent %s -> %s", s->tag, sb_name[s->sb],
                       sb_name[sb], ag_name[s->ag], ag_name[ag]);
    s->sb = sb;
    s->ag = ag;
}

static const char *box_id(const struct sess *s)
{
    return s->box ? s->box->id : (s->ev->attach_id ? s->ev->attach_id : NULL);
}

static void set_public_id(struct sess *s, const char *id)
{
    pthread_mutex_lock(&s->ev->id_lock);
    snprintf(s->ev->sandbox_id, sizeof(s->ev->sandbox_id), "%s", id ? id : "");
    pthread_mutex_unlock(&s->ev->id_lock);
}

/* ---- publishing with backpressure ----------------------------------------------------------- */

static int try_head(struct sess *s)
{
    struct pending_event *p = s->pend_head;
    struct act_msg *wake = malloc(sizeof(*wake));
    int rc;

    if (!wake) {
        /* Without a wake message we cannot wait for room: deliver to nobody rather than stall
         * the session forever. Logged; the session log still has the raw line. */
        core_log_warn("session %s: out of memory waiting for a slow subscriber", s->tag);
        return 0;
    }
    act_msg_init(wake, MSG_WAKE, (act_msg_free_fn)free);
    rc = act_bus_try_publish(s->ev->bus, &p->ev->base, &p->resume, s->ev->actor, wake);
    if (rc == 0)
        free(wake);
    return rc;
}

void sess_flush_pending(struct sess *s)
{
    while (s->pend_head) {
        struct pending_event *p = s->pend_head;

        if (try_head(s) == EVOLVE_EBUSY)
            return;
        s->pend_head = p->next;
        if (!s->pend_head)
            s->pend_tail = NULL;
        act_event_unref(&p->ev->base);
        free(p);
    }
    if (s->active && s->active->pump)
        core_pump_resume(s->active->pump);
}

void sess_publish(struct sess *s, struct evolve_event *ev)
{
    struct pending_event *p;

    if (!ev)
        return;
    p = calloc(1, sizeof(*p));
    if (!p) {
        act_event_unref(&ev->base);
        return;
    }
    p->ev = ev;
    if (s->pend_tail) {
        s->pend_tail->next = p;
        s->pend_tail = p;
        return;
    }
    s->pend_head = s->pend_tail = p;
    if (try_head(s) == EVOLVE_EBUSY) {
        /* A BLOCK subscriber is full: stop reading the agent's stdout until it catches up, so
         * the backpressure reaches the agent through its pipe. */
        if (s->active && s->active->pump)
            core_pump_pause(s->active->pump);
        return;
    }
    s->pend_head = s->pend_tail = NULL;
    act_event_unref(&ev->base);
    free(p);
}

static uint64_t next_seq(struct sess *s)
{
    return atomic_fetch_add_explicit(&s->ev->seq, 1, memory_order_relaxed) + 1;
}

void sess_lifecycle(struct sess *s, enum sb_state sb, enum ag_state ag, const char *reason)
{
    char ts[CORE_ISO8601_SIZE];
    json_t *j;

    sess_set_state(s, sb, ag);
    j = json_pack("{s:s?, s:s, s:s, s:s, s:s}", "sandboxId", box_id(s), "sandbox", sb_name[sb],
                  "agent", ag_name[ag], "timestamp", core_iso8601(ts, core_wall_ms()), "reason",
                  reason);
    if (!j)
        return;
    sess_publish(
        s, core_event_from_json(EVOLVE_EVENT_LIFECYCLE, EVOLVE_UPDATE_TYPE_COUNT, j, next_seq(s)));
    json_decref(j);
}

/* ---- provider completions ----------------------------------------------------------------- */

static void prov_msg_free(struct act_msg *m)
{
    free(m);
}

struct prov_done_msg *sess_prov_msg(struct sess *s, int step, void *ctx)
{
    struct prov_done_msg *m = calloc(1, sizeof(*m));

    if (!m) {
        core_error_oom();
        return NULL;
    }
    act_msg_init(&m->hdr, MSG_PROV_DONE, prov_msg_free);
    m->s = s;
    m->step = step;
    m->ctx = ctx;
    m->generation = s->box_gen;
    s->inflight++;
    return m;
}

void sess_prov_msg_cancel(struct sess *s, struct prov_done_msg *m)
{
    s->inflight--;
    free(m);
}

/* Runs on a provider job's thread: hand the completion to the actor. */
void sess_prov_done(void *payload, const struct prov_status *st, void *result)
{
    struct prov_done_msg *m = payload;

    m->status = *st;
    m->result = result;
    act_send(m->s->ev->actor, &m->hdr);
}

/* ---- boot --------------------------------------------------------------------------------- */

static void fail_waiters(struct sess *s, int rc, const char *msg)
{
    while (s->boot_waiters) {
        struct call *c = s->boot_waiters;

        s->boot_waiters = c->next;
        sess_call_fail(c, rc, "%s", msg);
    }
}

static void boot_failed(struct sess *s, int rc, const char *msg)
{
    s->booting = false;
    core_log_warn("session %s: sandbox setup failed: %s", s->tag, msg);
    sess_lifecycle(s, SB_ERROR, AG_ERROR, "sandbox_error");
    fail_waiters(s, rc, msg);
}

static void boot_done(struct sess *s, const char *reason)
{
    struct call *list = s->boot_waiters, *next;

    s->booting = false;
    s->boot_waiters = NULL;
    sess_lifecycle(s, SB_READY, AG_IDLE, reason);
    /* Waiters queued in arrival order; reverse the LIFO list first. */
    {
        struct call *rev = NULL;

        while (list) {
            next = list->next;
            list->next = rev;
            rev = list;
            list = next;
        }
        list = rev;
    }
    for (; list; list = next) {
        next = list->next;
        list->next = NULL;
        sess_dispatch_ready(s, list);
    }
}

int sess_start_write(struct sess *s, int step, const char *path, char *data, size_t len, void *ctx)
{
    struct prov_done_msg *m = sess_prov_msg(s, step, ctx);
    int rc;

    if (!m) {
        free(data);
        return EVOLVE_ENOMEM;
    }
    /* `data` must live until the write completes: the completion handler of `step` frees it
     * (it is reachable from `ctx`). */
    rc = s->prov->ops->write_file(s->box, path, data, len, sess_prov_done, m);
    if (rc < 0) {
        sess_prov_msg_cancel(s, m);
        free(data);
        return rc;
    }
    return 0;
}

/* Workspace setup after create: the instruction file (the provider lays out context/, scripts/,
 * temp/ and output/). */
static void setup_workspace(struct sess *s)
{
    char *text = NULL, path[256];
    int rc;

    rc = core_instructions_build(&text, SESS_WORKDIR, s->ev->system_prompt, s->ev->schema);
    if (rc < 0) {
        boot_failed(s, rc, evolve_error_last()->message);
        return;
    }
    snprintf(path, sizeof(path), "workspace/%s", s->ev->agent->instruction_file);
    s->setup_pending = 1;
    s->setup_rc = 0;
    rc = sess_start_write(s, STEP_SETUP_WRITE, path, text, strlen(text), text);
    if (rc < 0) {
        s->setup_pending = 0;
        boot_failed(s, rc, evolve_error_last()->message);
    }
}

static void start_boot(struct sess *s)
{
    struct prov_create_spec spec = PROV_CREATE_SPEC_INIT;
    struct prov_done_msg *m;
    int rc;

    s->booting = true;
    sess_lifecycle(s, SB_BOOTING, s->ag, "sandbox_boot");
    spec.envp = (const char *const *)s->ev->env;
    spec.no_network = s->ev->no_network;
    m = sess_prov_msg(s, STEP_CREATED, s->ev->attach_id ? (void *)1 : NULL);
    if (!m) {
        boot_failed(s, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    if (s->ev->attach_id)
        rc = s->prov->ops->connect(s->prov, s->ev->attach_id, &spec, sess_prov_done, m);
    else
        rc = s->prov->ops->create(s->prov, &spec, sess_prov_done, m);
    if (rc < 0) {
        sess_prov_msg_cancel(s, m);
        boot_failed(s, rc, evolve_error_last()->message);
    }
}

void sess_with_sandbox(struct sess *s, struct call *c)
{
    if (s->box && !s->booting) {
        sess_dispatch_ready(s, c);
        return;
    }
    c->next = s->boot_waiters;
    s->boot_waiters = c;
    if (!s->booting)
        start_boot(s);
}

static void destroy_half_built(struct sess *s)
{
    struct prov_done_msg *k = sess_prov_msg(s, STEP_KILLED, NULL);

    if (k && s->prov->ops->kill(s->box, sess_prov_done, k) < 0)
        sess_prov_msg_cancel(s, k);
    s->box = NULL;
    set_public_id(s, NULL);
}

/* Restore done: re-apply the instruction file only when this session configures one (the
 * reference keeps the archived one otherwise). */
static void after_restore(struct sess *s, int rc, const char *err)
{
    free(s->restore_from);
    s->restore_from = NULL;
    if (rc < 0) {
        char msg[512];

        snprintf(msg, sizeof(msg), "%s", err);
        destroy_half_built(s);
        boot_failed(s, rc, msg);
        return;
    }
    if (s->ev->system_prompt || s->ev->schema)
        setup_workspace(s);
    else
        boot_done(s, "sandbox_ready");
}

static void on_created(struct sess *s, struct prov_done_msg *m)
{
    bool connected = m->ctx != NULL;

    if (m->status.code < 0) {
        boot_failed(s, m->status.code, m->status.message);
        return;
    }
    s->box = m->result;
    s->box_gen++;
    set_public_id(s, s->box->id);
    if (connected) {
        s->has_run = true;
        boot_done(s, "sandbox_connected");
        return;
    }
    if (s->restore_from) {
        sess_restore_into_box(s, after_restore);
        return;
    }
    setup_workspace(s);
}

static void on_setup_write(struct sess *s, struct prov_done_msg *m)
{
    free(m->ctx); /* the file's bytes */
    if (m->status.code < 0 && s->setup_rc == 0) {
        s->setup_rc = m->status.code;
        snprintf(s->setup_err, sizeof(s->setup_err), "%s", m->status.message);
    }
    if (--s->setup_pending > 0)
        return;
    if (s->setup_rc < 0) {
        /* A half-set-up sandbox is useless: destroy it (errors ignored), as the reference. */
        destroy_half_built(s);
        boot_failed(s, s->setup_rc, s->setup_err);
        return;
    }
    boot_done(s, "sandbox_ready");
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static void complete_text(struct call *c, json_t *j)
{
    if (!j) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    c->text_out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!c->text_out)
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
    else
        sess_call_complete(c, 0);
}

static void start_simple_op(struct sess *s, struct call *c, int step)
{
    struct prov_done_msg *m = sess_prov_msg(s, step, c);
    int rc;

    if (!m) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    switch (step) {
    case STEP_HOST:
        rc = s->prov->ops->get_host(s->box, c->port, sess_prov_done, m);
        break;
    case STEP_PAUSED:
        rc = s->prov->ops->pause(s->box, sess_prov_done, m);
        break;
    case STEP_RESUMED:
        rc = s->prov->ops->resume(s->box, sess_prov_done, m);
        break;
    case STEP_KILLED:
        rc = s->prov->ops->kill(s->box, sess_prov_done, m);
        break;
    default:
        rc = core_error_set(EVOLVE_ERROR, "internal: unknown step %d", step);
    }
    if (rc < 0) {
        sess_prov_msg_cancel(s, m);
        sess_call_fail(c, rc, "%s", evolve_error_last()->message);
    }
}

static void start_upload(struct sess *s, struct call *c)
{
    char path[1024];
    char *copy = malloc(c->len ? c->len : 1);
    int rc;

    if (!copy) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    memcpy(copy, c->data, c->len);
    if (c->text[0] == '/')
        snprintf(path, sizeof(path), "%s", c->text);
    else
        snprintf(path, sizeof(path), "workspace/%s%s", c->context ? "context/" : "", c->text);
    /* The caller waits on `c`; the copy rides in the message ctx pair (freed on completion). */
    c->text_out = copy;
    rc = sess_start_write(s, STEP_UPLOADED, path, copy, c->len, c);
    if (rc < 0) {
        c->text_out = NULL;
        sess_call_fail(c, rc, "%s", evolve_error_last()->message);
    }
}

void sess_dispatch_ready(struct sess *s, struct call *c)
{
    switch (c->op) {
    case CALL_RUN:
        sess_start_run(s, c);
        break;
    case CALL_COMMAND:
        sess_start_command(s, c);
        break;
    case CALL_HOST:
        start_simple_op(s, c, STEP_HOST);
        break;
    case CALL_UPLOAD:
        start_upload(s, c);
        break;
    case CALL_OUTPUT:
        sess_output_files(s, c);
        break;
    default:
        sess_call_fail(c, EVOLVE_ERROR, "internal: call %d does not need a sandbox", c->op);
    }
}

static void status(struct sess *s, struct call *c)
{
    char ts[CORE_ISO8601_SIZE];
    json_t *pid = s->active && s->active->pid ? json_integer(s->active->pid) : json_null();

    complete_text(c, json_pack("{s:s?, s:s, s:s, s:o, s:b, s:s, s:s}", "sandboxId", box_id(s),
                               "sandbox", sb_name[s->sb], "agent", ag_name[s->ag],
                               "activeProcessId", pid, "hasRun", s->has_run, "timestamp",
                               core_iso8601(ts, core_wall_ms()), "sessionTag", s->tag));
}

static void rotate_tag(struct sess *s)
{
    if (s->log) {
        core_sessionlog_end(s->log);
        core_sessionlog_free(s->log);
        s->log = NULL;
        snprintf(s->prev_tag, sizeof(s->prev_tag), "%s", s->tag);
    }
    core_session_tag_new(s->tag, sizeof(s->tag), s->ev->tag_prefix);
}

/* Parks `c` until the active operation has ended, interrupting it. */
static void park_after_active(struct sess *s, struct call *c, int signo)
{
    c->next = s->after_idle;
    s->after_idle = c;
    sess_interrupt(s, NULL, signo);
}

void sess_after_op(struct sess *s)
{
    struct call *list = s->after_idle, *next;

    s->after_idle = NULL;
    for (; list; list = next) {
        next = list->next;
        list->next = NULL;
        sess_handle_call(s, list);
    }
}

/* Closing completes only when nothing of ours is still in flight: a provider completion or a
 * timer arriving after evolve_free would find the session gone. */
static void check_close(struct sess *s)
{
    struct call *c = s->close_call;

    if (!c || s->inflight || s->jobs || s->active || s->booting)
        return;
    s->close_call = NULL;
    if (s->box) {
        s->prov->ops->box_free(s->box);
        s->box = NULL;
    }
    if (s->log)
        core_sessionlog_end(s->log);
    sess_call_complete(c, 0);
}

static void close_now(struct sess *s, struct call *c)
{
    s->closed = true;
    s->close_call = c;
    fail_waiters(s, EVOLVE_ESHUTDOWN, "the session is closing");
    if (s->box && !s->ev->keep_sandbox) {
        struct prov_done_msg *m = sess_prov_msg(s, STEP_KILLED, NULL);

        if (m && s->prov->ops->kill(s->box, sess_prov_done, m) < 0)
            sess_prov_msg_cancel(s, m);
    }
}

void sess_handle_call(struct sess *s, struct call *c)
{
    const char *busy_run = "Agent is already running. Call interrupt(), wait for the "
                           "active/background run to finish, or create a new Evolve instance.";
    const char *busy_cmd = "Agent is already running. Call interrupt(), wait for the "
                           "active/background command to finish, or create a new Evolve instance.";

    if (s->closed && c->op != CALL_CLOSE) {
        sess_call_fail(c, EVOLVE_ESHUTDOWN, "the session is closed");
        return;
    }
    switch (c->op) {
    case CALL_RUN:
    case CALL_COMMAND:
        if (s->active || s->after_idle) {
            sess_call_fail(c, EVOLVE_EBUSY, "%s", c->op == CALL_RUN ? busy_run : busy_cmd);
            return;
        }
        if (c->op == CALL_RUN && c->run.from && s->box) {
            sess_call_fail(c, EVOLVE_EINVAL,
                           "Cannot restore into existing sandbox. Call kill() "
                           "first, or create a new Evolve instance.");
            return;
        }
        if (c->op == CALL_RUN && c->run.from && sess_prepare_restore(s, c) < 0)
            return;
        sess_with_sandbox(s, c);
        return;
    case CALL_INTERRUPT:
        sess_interrupt(s, c, SIGINT);
        return;
    case CALL_PAUSE:
    case CALL_RESUME:
        if (!s->box) {
            sess_call_fail(c, EVOLVE_ENOTFOUND, "No active sandbox. Call run() first.");
            return;
        }
        if (!prov_can_pause(s->prov)) {
            sess_call_fail(c, EVOLVE_EUNSUPPORTED, "the %s provider cannot pause sandboxes",
                           s->prov->ops->name);
            return;
        }
        start_simple_op(s, c, c->op == CALL_PAUSE ? STEP_PAUSED : STEP_RESUMED);
        return;
    case CALL_KILL:
        /* A frozen process cannot act on SIGKILL until thawed: when paused, the provider's kill
         * (which ends everything) goes first and the operation ends as lost. */
        if (s->active && s->sb != SB_PAUSED) {
            park_after_active(s, c, SIGKILL);
            return;
        }
        if (!s->box) {
            rotate_tag(s);
            s->has_run = false;
            sess_call_complete(c, 0);
            return;
        }
        start_simple_op(s, c, STEP_KILLED);
        return;
    case CALL_SET_SESSION:
        if (s->active) {
            park_after_active(s, c, SIGINT);
            return;
        }
        if (s->box) {
            s->prov->ops->box_free(s->box);
            s->box = NULL;
            s->box_gen++;
        }
        rotate_tag(s);
        free(s->ev->attach_id);
        s->ev->attach_id = strdup(c->text);
        set_public_id(s, c->text);
        sess_set_state(s, SB_READY, AG_IDLE);
        s->has_run = true;
        /* Connect lazily, as the reference: the next operation reattaches. */
        sess_call_complete(c, s->ev->attach_id ? 0 : EVOLVE_ENOMEM);
        return;
    case CALL_STATUS:
        status(s, c);
        return;
    case CALL_HOST:
    case CALL_UPLOAD:
    case CALL_OUTPUT:
        sess_with_sandbox(s, c);
        return;
    case CALL_RUN_COST: {
        json_t *j = core_ledger_run_cost(s->ledger, c->text, c->index);

        if (!j) {
            sess_call_fail(c, evolve_error_last()->code, "%s", evolve_error_last()->message);
            return;
        }
        complete_text(c, j);
        return;
    }
    case CALL_CHECKPOINT:
        sess_checkpoint_call(s, c);
        return;
    case CALL_STDIN:
        sess_write_stdin(s, c);
        return;
    case CALL_SESSION_COST:
        complete_text(c, core_ledger_session_cost(s->ledger, s->tag));
        return;
    case CALL_CLOSE:
        if (s->active && s->sb != SB_PAUSED) {
            park_after_active(s, c, SIGKILL);
            return;
        }
        close_now(s, c);
        return;
    }
}

static void on_simple_done(struct sess *s, struct prov_done_msg *m)
{
    struct call *c = m->ctx;

    if (m->status.code < 0) {
        if (c)
            sess_call_fail(c, m->status.code, "%s", m->status.message);
        return;
    }
    switch (m->step) {
    case STEP_HOST:
        c->text_out = m->result;
        sess_call_complete(c, 0);
        return;
    case STEP_PAUSED:
        sess_lifecycle(s, SB_PAUSED, s->ag, "sandbox_pause");
        sess_call_complete(c, 0);
        return;
    case STEP_RESUMED:
        sess_lifecycle(s, s->active ? SB_RUNNING : SB_READY, s->ag, "sandbox_resume");
        sess_call_complete(c, 0);
        return;
    case STEP_KILLED:
        if (s->box) {
            s->prov->ops->box_free(s->box);
            s->box = NULL;
            s->box_gen++;
        }
        set_public_id(s, NULL);
        if (!c)
            return; /* the cleanup kill of a failed boot, or of a closing session */
        sess_lifecycle(s, SB_STOPPED, AG_IDLE, "sandbox_killed");
        s->has_run = false;
        rotate_tag(s);
        sess_call_complete(c, 0);
        return;
    }
}

static void on_prov_done(struct sess *s, struct prov_done_msg *m)
{
    s->inflight--;
    switch (m->step) {
    case STEP_CREATED:
        on_created(s, m);
        break;
    case STEP_SETUP_WRITE:
        on_setup_write(s, m);
        break;
    case STEP_UPLOADED: {
        struct call *c = m->ctx;

        free(c->text_out);
        c->text_out = NULL;
        if (m->status.code < 0)
            sess_call_fail(c, m->status.code, "%s", m->status.message);
        else
            sess_call_complete(c, 0);
        break;
    }
    case STEP_CMD_FILE_WRITTEN:
    case STEP_EXEC_STARTED:
    case STEP_SIGNAL_SENT:
        sess_proc_prov_done(s, m);
        break;
    case STEP_STAGE_LIST:
    case STEP_STAGE_READ:
    case STEP_STAGE_WRITE:
        sess_stage_prov_done(s, m);
        break;
    case STEP_OUT_LIST:
    case STEP_OUT_READ:
        sess_output_prov_done(s, m);
        break;
    default:
        on_simple_done(s, m);
        break;
    }
}

void sess_behaviour(struct act_actor *self, void *state, struct act_msg *msg)
{
    struct sess *s = state;

    (void)self;
    switch (msg->type) {
    case MSG_CALL:
        sess_handle_call(s, (struct call *)msg);
        check_close(s);
        return; /* the caller owns the call */
    case MSG_PROV_DONE:
        on_prov_done(s, (struct prov_done_msg *)msg);
        break;
    case MSG_CHUNK:
        sess_on_chunk(s, (struct chunk_msg *)msg);
        break;
    case MSG_END:
        sess_on_end(s, (struct end_msg *)msg);
        break;
    case MSG_TIMEOUT:
        sess_on_timeout(s, (struct op_msg *)msg);
        break;
    case MSG_KILL_GRACE:
        sess_on_kill_grace(s, (struct op_msg *)msg);
        break;
    case MSG_WAKE:
        sess_flush_pending(s);
        break;
    case MSG_JOB_DONE: {
        struct sess_job *j = (struct sess_job *)msg;

        s->jobs--;
        j->done(s, j);
        break;
    }
    }
    act_msg_free(msg);
    check_close(s);
}

void sess_state_free(void *state)
{
    struct sess *s = state;

    while (s->pend_head) {
        struct pending_event *p = s->pend_head;

        s->pend_head = p->next;
        act_event_unref(&p->ev->base);
        free(p);
    }
    core_sessionlog_free(s->log);
    core_ledger_free(s->ledger);
    free(s->restore_from);
    free(s);
}
