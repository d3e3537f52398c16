/* session.c — the public session API (evolve_t): configuration, and the synchronous calls that
 * hand work to the session actor and wait for its answer.
 * Owns: option validation and copying (the configuration is frozen at evolve_new), the call
 * rendezvous (mutex + condition per call, on the caller's stack), subscriptions and results.
 * Does not own: what the calls do (sandbox.c, proc.c, output.c run them inside the actor).
 * Threads: any caller thread; a call blocks its caller, never a worker (calls from a worker of
 * the same runtime could deadlock it and are refused with EVOLVE_EBUSY). */
#include "core/session_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/runtime_public.h"
#include "core/error.h"
#include "core/runtime.h"
#include "core/schema.h"

#define EVOLVE_MAGIC 0xe7017e5au

struct evolve_subscription {
    struct act_sub *sub;
    evolve_event_cb cb;
    void *payload;
    uint32_t kinds;
    struct act_event *stash; /* an event held back behind the gap marker polled before it */
};

struct evolve_result {
    int exit_code;
    char *out, *err, *run_id, *sandbox_id, *checkpoint, *json;
};

/* ---- options ------------------------------------------------------------------------------ */

int evolve_options_init(evolve_options_t *opts, unsigned int version)
{
    if (version == 0 || version > EVOLVE_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_options_t: version %u is not supported",
                              version);
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    return 0;
}

static int dup_opt(char **dst, const char *src)
{
    if (!src) {
        *dst = NULL;
        return 0;
    }
    *dst = strdup(src);
    return *dst ? 0 : core_error_oom();
}

static void evolve_dispose(struct evolve *ev)
{
    size_t i;

    free(ev->model);
    free(ev->api_key);
    free(ev->base_url);
    free(ev->provider_name);
    free(ev->workspace_mode);
    free(ev->system_prompt);
    json_decref(ev->schema);
    free(ev->tag_prefix);
    free(ev->attach_id);
    free(ev->store_root);
    free(ev->log_dir);
    evolve_store_free(ev->store);
    for (i = 0; ev->env && ev->env[i]; i++)
        free(ev->env[i]);
    free(ev->env);
    pthread_mutex_destroy(&ev->id_lock);
    ev->magic = 0;
    free(ev);
}

int evolve_new(evolve_t **out, evolve_runtime_t *rt, const evolve_options_t *opts)
{
    static const evolve_options_t defaults = EVOLVE_OPTIONS_INIT;
    struct evolve *ev;
    struct sess *s;
    json_error_t jerr;
    size_t n = 0, i;
    int rc;

    *out = NULL;
    if (!opts)
        opts = &defaults;
    if (opts->version == 0 || opts->version > EVOLVE_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_options_t: version %u is not supported",
                              opts->version);
    if (!rt)
        return core_error_set(EVOLVE_EINVAL, "evolve_new: a runtime is required");
    ev = calloc(1, sizeof(*ev));
    if (!ev)
        return core_error_oom();
    ev->magic = EVOLVE_MAGIC;
    ev->rt = rt;
    pthread_mutex_init(&ev->id_lock, NULL);
    ev->agent = hns_agent_find(opts->agent ? opts->agent : "claude");
    if (!ev->agent) {
        rc = core_error_set(EVOLVE_EINVAL, "Unknown agent type: %s", opts->agent);
        goto fail;
    }
    if ((rc = dup_opt(&ev->model, opts->model)) < 0 ||
        (rc = dup_opt(&ev->api_key, opts->api_key)) < 0 ||
        (rc = dup_opt(&ev->base_url, opts->base_url)) < 0 ||
        (rc = dup_opt(&ev->provider_name, opts->provider ? opts->provider : "local")) < 0 ||
        (rc = dup_opt(&ev->workspace_mode,
                      opts->workspace_mode ? opts->workspace_mode : "knowledge")) < 0 ||
        (rc = dup_opt(&ev->system_prompt, opts->system_prompt)) < 0 ||
        (rc = dup_opt(&ev->tag_prefix, opts->session_tag_prefix)) < 0 ||
        (rc = dup_opt(&ev->attach_id, opts->session_id)) < 0 ||
        (rc = dup_opt(&ev->store_root, opts->store_root)) < 0 ||
        (rc = dup_opt(&ev->log_dir, opts->session_log_dir)) < 0)
        goto fail;
    if (strcmp(ev->workspace_mode, "knowledge") && strcmp(ev->workspace_mode, "swe")) {
        rc = core_error_set(EVOLVE_EINVAL, "workspace mode \"%s\" (expected knowledge or swe)",
                            ev->workspace_mode);
        goto fail;
    }
    if (opts->schema_json) {
        json_t *probe = json_integer(0);

        ev->schema = json_loads(opts->schema_json, JSON_DECODE_ANY, &jerr);
        if (!ev->schema) {
            json_decref(probe);
            rc = core_error_set(EVOLVE_EINVAL, "Invalid JSON Schema: %s (line %d, column %d)",
                                jerr.text, jerr.line, jerr.column);
            goto fail;
        }
        /* Compile-time check as the reference does: a malformed schema (bad $ref, regex) fails
         * now, not after the agent ran. Validation failures of the probe value are fine. */
        rc = core_schema_validate(ev->schema, probe);
        json_decref(probe);
        if (rc < 0 && !strncmp(evolve_error_last()->message, "schema", 6)) {
            rc = core_error_set(EVOLVE_EINVAL, "Invalid JSON Schema: %s",
                                evolve_error_last()->message);
            goto fail;
        }
    }
    while (opts->env && opts->env[n])
        n++;
    ev->env = calloc(n + 1, sizeof(char *));
    if (!ev->env) {
        rc = core_error_oom();
        goto fail;
    }
    for (i = 0; i < n; i++) {
        if (!strchr(opts->env[i], '=')) {
            rc = core_error_set(EVOLVE_EINVAL, "env entry \"%s\" is not NAME=value", opts->env[i]);
            goto fail;
        }
        if ((rc = dup_opt(&ev->env[i], opts->env[i])) < 0)
            goto fail;
    }
    ev->storage = opts->storage;
    if (ev->storage) {
        evolve_store_options_t so = EVOLVE_STORE_OPTIONS_INIT;

        so.root = ev->store_root;
        rc = evolve_store_open(&ev->store, &so);
        if (rc < 0)
            goto fail;
    }
    ev->no_network = opts->no_network;
    ev->keep_sandbox = opts->keep_sandbox;
    ev->ask_permission = opts->ask_permission;
    s = calloc(1, sizeof(*s));
    if (!s) {
        rc = core_error_oom();
        goto fail;
    }
    s->ev = ev;
    s->sb = ev->attach_id ? SB_READY : SB_STOPPED;
    s->ag = AG_IDLE;
    s->has_run = ev->attach_id != NULL;
    core_session_tag_new(s->tag, sizeof(s->tag), ev->tag_prefix);
    rc = core_ledger_new(&s->ledger, core_runtime_pricing(rt));
    if (rc < 0) {
        free(s);
        goto fail;
    }
    rc = core_runtime_provider(&s->prov, rt, ev->provider_name);
    if (rc == 0)
        rc = act_bus_new(&ev->bus, act_runtime_of(rt));
    if (rc < 0) {
        core_ledger_free(s->ledger);
        free(s);
        goto fail;
    }
    ev->st = s;
    rc = act_actor_new(&ev->actor, act_runtime_of(rt), sess_behaviour, s, sess_state_free);
    if (rc < 0) {
        core_ledger_free(s->ledger);
        free(s);
        act_bus_free(ev->bus);
        goto fail;
    }
    *out = ev;
    return 0;
fail:
    evolve_dispose(ev);
    return rc;
}

/* ---- the call rendezvous ------------------------------------------------------------------ */

static void call_init(struct call *c, enum call_op op)
{
    memset(c, 0, sizeof(*c));
    act_msg_init(&c->hdr, MSG_CALL, NULL);
    c->op = op;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
}

void sess_call_complete(struct call *c, int rc)
{
    pthread_mutex_lock(&c->lock);
    c->rc = rc;
    c->done = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

int sess_call_fail(struct call *c, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof(c->err), fmt, ap);
    va_end(ap);
    sess_call_complete(c, rc);
    return rc;
}

/* Sends the call to the actor and waits for its answer; the error message crosses threads as
 * data (the actor's thread-local error is not ours) and is re-set here. */
static int call_run(struct evolve *ev, struct call *c)
{
    int rc;

    if (act_runtime_on_worker(act_runtime_of(ev->rt))) {
        rc = core_error_set(EVOLVE_EBUSY, "evolve calls cannot be made from a runtime worker "
                                          "(an event callback): they would wait for themselves");
        goto out;
    }
    rc = act_send(ev->actor, &c->hdr);
    if (rc < 0) {
        rc = core_error_set(EVOLVE_ESHUTDOWN, "the session is closed");
        goto out;
    }
    pthread_mutex_lock(&c->lock);
    while (!c->done)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
    rc = c->rc;
    if (rc < 0)
        core_error_set(rc, "%s", c->err[0] ? c->err : evolve_strerror(rc));
out:
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    return rc;
}

static int check(const struct evolve *ev)
{
    if (!ev || ev->magic != EVOLVE_MAGIC)
        return core_error_set(EVOLVE_EINVAL, "not a live evolve_t");
    return 0;
}

void evolve_free(evolve_t *ev)
{
    struct call c;

    if (!ev || check(ev) < 0)
        return;
    call_init(&c, CALL_CLOSE);
    call_run(ev, &c);
    act_actor_stop(ev->actor);
    act_actor_unref(ev->actor);
    act_bus_free(ev->bus);
    evolve_dispose(ev);
}

/* ---- operations --------------------------------------------------------------------------- */

int evolve_run(evolve_result_t **out, evolve_t *ev, const evolve_run_options_t *opts)
{
    struct call c;
    int rc;

    *out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    if (!opts || opts->version == 0 || opts->version > EVOLVE_RUN_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL,
                              "evolve_run_options_t: missing or unsupported version");
    if (!opts->prompt)
        return core_error_set(EVOLVE_EINVAL, "evolve_run: a prompt is required");
    /* Checked before anything else, as the reference does (em dash included). */
    if (opts->from && ev->attach_id)
        return core_error_set(EVOLVE_EINVAL, "Cannot use 'from' with 'withSession()' \xe2\x80\x94 "
                                             "restore requires a fresh sandbox.");
    call_init(&c, CALL_RUN);
    c.run = *opts;
    c.text = opts->prompt;
    c.timeout_ms = opts->timeout_ms ? opts->timeout_ms : SESS_DEFAULT_TIMEOUT_MS;
    c.background = opts->background;
    rc = call_run(ev, &c);
    *out = c.result;
    return rc;
}

int evolve_execute_command(evolve_result_t **out, evolve_t *ev, const char *command,
                           const evolve_command_options_t *opts)
{
    struct call c;
    int rc;

    *out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    if (!command)
        return core_error_set(EVOLVE_EINVAL, "evolve_execute_command: a command is required");
    if (opts && (opts->version == 0 || opts->version > EVOLVE_COMMAND_OPTIONS_VERSION))
        return core_error_set(EVOLVE_EINVAL, "evolve_command_options_t: unsupported version");
    call_init(&c, CALL_COMMAND);
    c.text = command;
    c.timeout_ms = opts && opts->timeout_ms ? opts->timeout_ms : SESS_DEFAULT_TIMEOUT_MS;
    c.background = opts && opts->background;
    rc = call_run(ev, &c);
    *out = c.result;
    return rc;
}

static int simple_call(evolve_t *ev, enum call_op op)
{
    struct call c;
    int rc;

    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, op);
    return call_run(ev, &c);
}

int evolve_write_stdin(evolve_t *ev, const void *data, size_t len)
{
    struct call c;
    int rc;

    if ((rc = check(ev)) < 0)
        return rc;
    if (!data || !len)
        return core_error_set(EVOLVE_EINVAL, "evolve_write_stdin: no data");
    call_init(&c, CALL_STDIN);
    c.data = data;
    c.len = len;
    return call_run(ev, &c);
}

int evolve_interrupt(evolve_t *ev)
{
    return simple_call(ev, CALL_INTERRUPT);
}

int evolve_pause(evolve_t *ev)
{
    return simple_call(ev, CALL_PAUSE);
}

int evolve_resume(evolve_t *ev)
{
    return simple_call(ev, CALL_RESUME);
}

int evolve_kill(evolve_t *ev)
{
    return simple_call(ev, CALL_KILL);
}

int evolve_set_session(evolve_t *ev, const char *sandbox_id)
{
    struct call c;
    int rc;

    if ((rc = check(ev)) < 0)
        return rc;
    if (!sandbox_id || !*sandbox_id)
        return core_error_set(EVOLVE_EINVAL, "evolve_set_session: a sandbox id is required");
    call_init(&c, CALL_SET_SESSION);
    c.text = sandbox_id;
    return call_run(ev, &c);
}

const char *evolve_get_session(evolve_t *ev)
{
    const char *id;

    if (check(ev) < 0)
        return NULL;
    pthread_mutex_lock(&ev->id_lock);
    id = ev->sandbox_id[0] ? ev->sandbox_id : (ev->attach_id ? ev->attach_id : NULL);
    pthread_mutex_unlock(&ev->id_lock);
    return id;
}

static int text_call(char **out, evolve_t *ev, struct call *c)
{
    int rc = call_run(ev, c);

    *out = c->text_out;
    return rc;
}

int evolve_status(char **json_out, evolve_t *ev)
{
    struct call c;
    int rc;

    *json_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, CALL_STATUS);
    return text_call(json_out, ev, &c);
}

int evolve_get_host(char **url_out, evolve_t *ev, unsigned int port)
{
    struct call c;
    int rc;

    *url_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    if (port == 0 || port > 65535)
        return core_error_set(EVOLVE_EINVAL, "port %u is out of range", port);
    call_init(&c, CALL_HOST);
    c.port = port;
    return text_call(url_out, ev, &c);
}

static int upload(evolve_t *ev, const char *path, const void *data, size_t len, bool context)
{
    struct call c;
    int rc;

    if ((rc = check(ev)) < 0)
        return rc;
    if (!path || !*path || (!data && len))
        return core_error_set(EVOLVE_EINVAL, "upload: a path and data are required");
    call_init(&c, CALL_UPLOAD);
    c.text = path;
    c.data = data;
    c.len = len;
    c.context = context;
    return call_run(ev, &c);
}

int evolve_upload_context(evolve_t *ev, const char *path, const void *data, size_t len)
{
    return upload(ev, path, data, len, true);
}

int evolve_upload_file(evolve_t *ev, const char *path, const void *data, size_t len)
{
    return upload(ev, path, data, len, false);
}

int evolve_get_output_files(char **json_out, evolve_t *ev, bool recursive)
{
    struct call c;
    int rc;

    *json_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, CALL_OUTPUT);
    c.recursive = recursive;
    return text_call(json_out, ev, &c);
}

int evolve_checkpoint(char **json_out, evolve_t *ev, const char *comment)
{
    struct call c;
    int rc;

    *json_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, CALL_CHECKPOINT);
    c.text = comment;
    return text_call(json_out, ev, &c);
}

int evolve_run_cost(char **json_out, evolve_t *ev, const char *run_id, int index)
{
    struct call c;
    int rc;

    *json_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, CALL_RUN_COST);
    c.text = run_id;
    c.index = index;
    return text_call(json_out, ev, &c);
}

int evolve_session_cost(char **json_out, evolve_t *ev)
{
    struct call c;
    int rc;

    *json_out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    call_init(&c, CALL_SESSION_COST);
    return text_call(json_out, ev, &c);
}

/* ---- results ------------------------------------------------------------------------------ */

int evolve_result_exit_code(const evolve_result_t *r)
{
    return r->exit_code;
}

const char *evolve_result_stdout(const evolve_result_t *r)
{
    return r->out ? r->out : "";
}

const char *evolve_result_stderr(const evolve_result_t *r)
{
    return r->err ? r->err : "";
}

const char *evolve_result_run_id(const evolve_result_t *r)
{
    return r->run_id;
}

const char *evolve_result_sandbox_id(const evolve_result_t *r)
{
    return r->sandbox_id;
}

const char *evolve_result_checkpoint_json(const evolve_result_t *r)
{
    return r->checkpoint;
}

const char *evolve_result_json(const evolve_result_t *r)
{
    return r->json;
}

void evolve_result_free(evolve_result_t *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err);
    free(r->run_id);
    free(r->sandbox_id);
    free(r->checkpoint);
    free(r->json);
    free(r);
}

/* Rebuilds the result's JSON with the checkpoint added. On OOM the result keeps no checkpoint. */
void sess_result_set_checkpoint(evolve_result_t *r, const char *checkpoint_json)
{
    json_t *j = json_loads(r->json, 0, NULL), *cp = json_loads(checkpoint_json, 0, NULL);
    char *text = NULL;

    if (j && cp && json_object_set(j, "checkpoint", cp) == 0)
        text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    json_decref(cp);
    if (!text || !(r->checkpoint = strdup(checkpoint_json))) {
        free(text);
        return;
    }
    free(r->json);
    r->json = text;
}

/* Builds a result; takes ownership of out/err. NULL on OOM (out/err freed). */
evolve_result_t *sess_result_new(int exit_code, char *out, char *err, const char *run_id,
                                 const char *sandbox_id, const char *checkpoint_json);
evolve_result_t *sess_result_new(int exit_code, char *out, char *err, const char *run_id,
                                 const char *sandbox_id, const char *checkpoint_json)
{
    struct evolve_result *r = calloc(1, sizeof(*r));
    json_t *j;

    if (!r) {
        free(out);
        free(err);
        return NULL;
    }
    r->exit_code = exit_code;
    r->out = out ? out : strdup("");
    r->err = err ? err : strdup("");
    r->run_id = run_id ? strdup(run_id) : NULL;
    r->sandbox_id = sandbox_id ? strdup(sandbox_id) : NULL;
    r->checkpoint = checkpoint_json ? strdup(checkpoint_json) : NULL;
    j = json_pack("{s:s?, s:s?, s:i, s:s, s:s}", "sandboxId", r->sandbox_id, "runId", r->run_id,
                  "exitCode", exit_code, "stdout", r->out ? r->out : "", "stderr",
                  r->err ? r->err : "");
    if (j && r->checkpoint) {
        json_t *cp = json_loads(r->checkpoint, 0, NULL);
        if (cp)
            json_object_set_new(j, "checkpoint", cp);
    }
    r->json = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!r->out || !r->err || (run_id && !r->run_id) || (sandbox_id && !r->sandbox_id) ||
        !r->json) {
        evolve_result_free(r);
        return NULL;
    }
    return r;
}

/* ---- subscriptions ------------------------------------------------------------------------ */

static void sub_trampoline(struct act_event *ev, uint64_t gap, void *payload)
{
    struct evolve_subscription *s = payload;
    struct evolve_event *e = (struct evolve_event *)ev;

    if (gap) {
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "{\"gap\":%llu}", (unsigned long long)gap);
        struct evolve_event *g =
            core_event_new(EVOLVE_EVENT_GAP, EVOLVE_UPDATE_TYPE_COUNT, buf, (size_t)n, ev->seq);
        if (g) {
            s->cb(g, s->payload);
            evolve_event_unref(g);
        }
    }
    if (!s->kinds || (s->kinds & (1u << e->kind)))
        s->cb(e, s->payload);
}

int evolve_subscribe(evolve_subscription_t **out, evolve_t *ev,
                     const evolve_subscribe_options_t *opts)
{
    struct evolve_subscription *s;
    struct act_sub_config cfg = {0};
    int rc;

    *out = NULL;
    if ((rc = check(ev)) < 0)
        return rc;
    if (!opts || opts->version == 0 || opts->version > EVOLVE_SUBSCRIBE_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_subscribe_options_t: unsupported version");
    s = calloc(1, sizeof(*s));
    if (!s)
        return core_error_oom();
    s->cb = opts->callback;
    s->payload = opts->payload;
    s->kinds = opts->kinds;
    cfg.capacity = opts->capacity;
    cfg.policy =
        opts->backpressure == EVOLVE_BACKPRESSURE_DROP_OLDEST ? ACT_SUB_DROP_OLDEST : ACT_SUB_BLOCK;
    if (s->cb) {
        cfg.cb = sub_trampoline;
        cfg.payload = s;
    }
    rc = act_bus_subscribe(&s->sub, ev->bus, &cfg);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int evolve_subscription_poll(evolve_subscription_t *s, uint32_t timeout_ms, evolve_event_t **out)
{
    struct act_event *ev;
    uint64_t gap = 0;
    int rc;

    *out = NULL;
    if (s->cb)
        return core_error_set(EVOLVE_EINVAL, "a callback subscription cannot be polled");
    rc = 0;
    for (;;) {
        if (s->stash) {
            ev = s->stash;
            s->stash = NULL;
            gap = 0;
        } else {
            rc = act_sub_poll(s->sub, timeout_ms, &ev, &gap);
        }
        if (rc < 0)
            return rc == EVOLVE_ETIMEDOUT ? core_error_set(rc, "no event within %u ms", timeout_ms)
                                          : rc;
        if (gap) {
            char buf[64];
            int n = snprintf(buf, sizeof(buf), "{\"gap\":%llu}", (unsigned long long)gap);
            struct evolve_event *g =
                core_event_new(EVOLVE_EVENT_GAP, EVOLVE_UPDATE_TYPE_COUNT, buf, (size_t)n, ev->seq);
            if (!g) {
                act_event_unref(ev);
                return EVOLVE_ENOMEM;
            }
            s->stash = ev; /* the gap marker first, the event on the next poll */
            *out = g;
            return 0;
        }
        if (s->kinds && !(s->kinds & (1u << ((struct evolve_event *)ev)->kind))) {
            act_event_unref(ev);
            continue;
        }
        *out = (struct evolve_event *)ev;
        return 0;
    }
}

void evolve_subscription_free(evolve_subscription_t *s)
{
    if (!s)
        return;
    act_bus_unsubscribe(s->sub);
    act_event_unref(s->stash);
    free(s);
}
