/* daytona.c — the `daytona` provider: configuration, the vtable, and Daytona's REST API
 * (create with env and labels then poll until started; start/stop; delete; list by labels;
 * auto-stop; preview URLs), plus the toolbox call helper used by daytona_files.c and
 * daytona_exec.c. Every request sends X-Daytona-SDK-Version, which shapes the toolbox's replies.
 * Threads: ops from any thread; completions and poll timers on the reactor thread. */
#include "providers/daytona_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/error.h"

enum { K_CREATE = 1, K_CONNECT, K_STOP, K_START, K_KILL, K_AUTOSTOP };

static const struct prov_ops dt_ops;

/* ---- references ------------------------------------------------------------------------------ */

void dt_prov_ref(struct dt_prov *p)
{
    atomic_fetch_add(&p->refs, 1);
}

void dt_prov_unref(struct dt_prov *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    free(p->api_url);
    free(p->snapshot);
    free(p->hdr_auth);
    free(p);
}

void dt_sbx_ref(struct dt_sbx *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void dt_sbx_unref(struct dt_sbx *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    free(s->toolbox);
    free(s);
}

struct dt_op *dt_op_new(struct dt_prov *p, struct dt_sbx *s, prov_done_cb done, void *payload,
                        int kind, const char *what)
{
    struct dt_op *op = calloc(1, sizeof(*op));

    if (!op) {
        core_error_oom();
        return NULL;
    }
    op->p = p;
    dt_prov_ref(p);
    op->sbx = s;
    if (s)
        dt_sbx_ref(s);
    op->done = done;
    op->payload = payload;
    op->kind = kind;
    snprintf(op->what, sizeof(op->what), "%s", what);
    return op;
}

void dt_op_free(struct dt_op *op)
{
    dt_sbx_unref(op->sbx);
    dt_prov_unref(op->p);
    free(op);
}

void dt_op_finish(struct dt_op *op, const struct prov_status *st, void *result)
{
    op->done(op->payload, st, st->code < 0 ? NULL : result);
    dt_op_free(op);
}

bool dt_ok(const struct cloud_reply *rep)
{
    /* Any 2xx: NestJS answers 201 where the spec documents 200. */
    return rep->res->code == 0 && rep->res->status >= 200 && rep->res->status < 300;
}

static int request(struct dt_op *op, const char *method, const char *url, const void *body,
                   size_t len, const char *ctype, uint32_t timeout_ms, bool idempotent,
                   cloud_reply_fn fn)
{
    struct io_http_request rq = {.method = method};
    char ct[160];
    const char *h[6] = {op->p->hdr_auth,
                        "X-Daytona-SDK-Version: " PROV_DAYTONA_SDK_VERSION,
                        "X-Daytona-Source: evolve",
                        NULL,
                        NULL,
                        NULL};

    if (body) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
        h[3] = ct;
    }
    rq.url = url;
    rq.headers = h;
    rq.body = body;
    rq.body_len = len;
    rq.timeout_ms = timeout_ms;
    rq.idempotent = idempotent;
    rq.retry.max_attempts = 4;
    return cloud_call_start(op->p->r, &rq, 0, fn, op);
}

int dt_api(struct dt_op *op, const char *method, const char *path, json_t *body, bool idempotent,
           cloud_reply_fn fn)
{
    char url[1500], *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc;

    json_decref(body);
    if (body && !text)
        return core_error_oom();
    snprintf(url, sizeof(url), "%s%s", op->p->api_url, path);
    rc = request(op, method, url, text, text ? strlen(text) : 0, NULL, 120000, idempotent, fn);
    free(text);
    return rc;
}

int dt_toolbox(struct dt_op *op, const char *method, const char *path, const void *body, size_t len,
               const char *ctype, uint32_t timeout_ms, cloud_reply_fn fn)
{
    char url[3000];

    snprintf(url, sizeof(url), "%s%s", op->sbx->toolbox, path);
    return request(op, method, url, body, len, ctype, timeout_ms, true, fn);
}

/* ---- create / connect: poll until started ------------------------------------------------------
 */

static void on_sandbox(const struct cloud_reply *rep, void *payload);

/* The workspace layout's reply: the create completes with the box, or kills nothing (the caller
 * never saw the sandbox: it is deleted here) and fails. */
static void ignore_done(void *payload, const struct prov_status *st, void *result)
{
    (void)payload;
    (void)st;
    (void)result;
}

static void on_layout(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};
    struct dt_box *b = op->ctx;

    if (!dt_ok(rep))
        cloud_status_from(&st, rep, op->what);
    if (st.code < 0) {
        prov_daytona_kill_id(&op->p->base, b->base.id, ignore_done, NULL);
        dt_sbx_unref(b->sbx);
        free(b);
        b = NULL;
    }
    dt_op_finish(op, &st, b);
}

static void poll_timer(struct io_reactor *r, void *arg)
{
    struct dt_op *op = arg;
    struct prov_status st;
    char path[200];

    (void)r;
    snprintf(path, sizeof(path), "/sandbox/%s", op->sbx->id);
    if (dt_api(op, "GET", path, NULL, true, on_sandbox) < 0) {
        cloud_status_set(&st, EVOLVE_ERROR, "%s: %s", op->what, evolve_error_last()->message);
        dt_op_finish(op, &st, NULL);
    }
}

static void on_sandbox(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};
    const char *id, *state, *tb;
    struct dt_box *b;
    json_t *j;

    if (!dt_ok(rep)) {
        cloud_status_from(&st, rep, op->what);
        dt_op_finish(op, &st, NULL);
        return;
    }
    j = json_loadb(rep->body, rep->len, 0, NULL);
    id = json_string_value(json_object_get(j, "id"));
    state = json_string_value(json_object_get(j, "state"));
    tb = json_string_value(json_object_get(j, "toolboxProxyUrl"));
    if (!id || !state || strlen(id) >= sizeof(op->sbx->id)) {
        json_decref(j);
        cloud_status_set(&st, EVOLVE_EPROTO, "%s: reply lacks id/state", op->what);
        dt_op_finish(op, &st, NULL);
        return;
    }
    if (!op->sbx) {
        op->sbx = calloc(1, sizeof(*op->sbx));
        if (op->sbx) {
            atomic_init(&op->sbx->refs, 1);
            snprintf(op->sbx->id, sizeof(op->sbx->id), "%s", id);
        }
    }
    if (op->sbx && tb && !op->sbx->toolbox) {
        size_t n = strlen(tb) + strlen(id) + 2;

        op->sbx->toolbox = malloc(n);
        if (op->sbx->toolbox)
            snprintf(op->sbx->toolbox, n, "%s/%s", tb, id);
    }
    if (!op->sbx || !op->sbx->toolbox) {
        json_decref(j);
        cloud_status_set(&st, op->sbx ? EVOLVE_EPROTO : EVOLVE_ENOMEM,
                         "%s: no toolboxProxyUrl (or out of memory)", op->what);
        dt_op_finish(op, &st, NULL);
        return;
    }
    if (!strcmp(state, "error") || !strcmp(state, "build_failed") || !strcmp(state, "destroyed") ||
        !strcmp(state, "destroying")) {
        const char *why = json_string_value(json_object_get(j, "errorReason"));

        cloud_status_set(&st, EVOLVE_EIO, "%s: sandbox %s is %s%s%s", op->what, id, state,
                         why ? ": " : "", why ? why : "");
        json_decref(j);
        dt_op_finish(op, &st, NULL);
        return;
    }
    if (strcmp(state, "started")) {
        bool startable =
            !strcmp(state, "stopped") || !strcmp(state, "archived") || !strcmp(state, "paused");

        json_decref(j);
        if (startable && op->polls++ < 100) {
            char path[200];

            snprintf(path, sizeof(path), "/sandbox/%s/start", op->sbx->id);
            if (dt_api(op, "POST", path, NULL, true, on_sandbox) == 0)
                return;
        }
        /* SDK cadence: 100 ms growing x1.1 up to 1 s; give up after about 3 minutes. */
        op->poll_delay = op->poll_delay ? op->poll_delay * 11 / 10 : 100;
        if (op->poll_delay > 1000)
            op->poll_delay = 1000;
        if (op->polls++ < 300 && io_reactor_timer(op->p->r, op->poll_delay, poll_timer, op))
            return;
        cloud_status_set(&st, EVOLVE_ETIMEDOUT, "%s: sandbox %s never reached started", op->what,
                         id);
        dt_op_finish(op, &st, NULL);
        return;
    }
    json_decref(j);
    b = calloc(1, sizeof(*b));
    if (!b) {
        cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", op->what);
        dt_op_finish(op, &st, NULL);
        return;
    }
    b->base.prov = &op->p->base;
    snprintf(b->base.id, sizeof(b->base.id), "%s", op->sbx->id);
    b->sbx = op->sbx;
    dt_sbx_ref(b->sbx);
    if (op->kind == K_START) {
        dt_sbx_unref(b->sbx);
        free(b);
        b = NULL;
    }
    if (op->kind == K_CREATE) {
        /* The workspace layout, made by the toolbox before the box is handed out. */
        static const char cmd[] =
            "{\"command\":\"mkdir -p /home/user/workspace/context /home/user/workspace/scripts "
            "/home/user/workspace/temp /home/user/workspace/output\",\"timeout\":60}";

        op->ctx = b;
        if (dt_toolbox(op, "POST", "/process/execute", cmd, sizeof(cmd) - 1, NULL, 60000,
                       on_layout) == 0)
            return;
        cloud_status_set(&st, EVOLVE_ERROR, "%s: %s", op->what, evolve_error_last()->message);
        dt_sbx_unref(b->sbx);
        free(b);
        b = NULL;
    }
    dt_op_finish(op, &st, b);
}

static json_t *string_map(const char *const *kv)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; o && kv && kv[i]; i++) {
        const char *eq = strchr(kv[i], '=');
        char *k;

        if (!eq || !(k = strndup(kv[i], (size_t)(eq - kv[i]))))
            continue;
        json_object_set_new(o, k, json_string(eq + 1));
        free(k);
    }
    return o;
}

json_t *dt_labels(void)
{
    const char *k[4], *v[4];
    size_t n = cloud_labels(k, v, 4), i;
    json_t *o = json_object();

    for (i = 0; o && i < n; i++)
        json_object_set_new(o, k[i], json_string(v[i]));
    return o;
}

static int dt_create(struct prov *pp, const struct prov_create_spec *spec, prov_done_cb done,
                     void *payload)
{
    struct dt_prov *p = (struct dt_prov *)pp;
    struct dt_op *op;
    json_t *body;
    int rc;

    if (!spec || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona create: spec and done are required");
    op = dt_op_new(p, NULL, done, payload, K_CREATE, "daytona create");
    if (!op)
        return EVOLVE_ENOMEM;
    body = json_pack("{s:o, s:o, s:i, s:b}", "env", string_map(spec->envp), "labels", dt_labels(),
                     "autoStopInterval", (int)p->autostop_min, "networkBlockAll", spec->no_network);
    if (body && p->snapshot)
        json_object_set_new(body, "snapshot", json_string(p->snapshot));
    if (!body) {
        dt_op_free(op);
        return core_error_oom();
    }
    /* Not idempotent: a retried create after a lost reply would leak a sandbox. */
    rc = dt_api(op, "POST", "/sandbox", body, false, on_sandbox);
    if (rc < 0)
        dt_op_free(op);
    return rc;
}

static int dt_connect(struct prov *pp, const char *id, const struct prov_create_spec *spec,
                      prov_done_cb done, void *payload)
{
    struct dt_prov *p = (struct dt_prov *)pp;
    struct dt_op *op;
    char path[200], what[128];
    int rc;

    (void)spec;
    if (!id || !*id || strlen(id) >= 64 || strchr(id, '/') || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona connect: bad sandbox id \"%s\"",
                              id ? id : "");
    snprintf(what, sizeof(what), "daytona connect %s", id);
    op = dt_op_new(p, NULL, done, payload, K_CONNECT, what);
    if (!op)
        return EVOLVE_ENOMEM;
    snprintf(path, sizeof(path), "/sandbox/%s", id);
    rc = dt_api(op, "GET", path, NULL, true, on_sandbox);
    if (rc < 0)
        dt_op_free(op);
    return rc;
}

static void on_empty(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};

    if (!dt_ok(rep) && !(op->kind == K_KILL && rep->res->status == 404))
        cloud_status_from(&st, rep, op->what);
    dt_op_finish(op, &st, NULL);
}

static int box_call(struct prov *pp, const char *id, struct dt_sbx *sbx, int kind, const char *verb,
                    const char *method, const char *suffix, prov_done_cb done, void *payload)
{
    struct dt_op *op;
    char path[200], what[128];
    int rc;

    if (!pp || !id || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona %s: box and done are required", verb);
    snprintf(what, sizeof(what), "daytona %s %s", verb, id);
    op = dt_op_new((struct dt_prov *)pp, sbx, done, payload, kind, what);
    if (!op)
        return EVOLVE_ENOMEM;
    snprintf(path, sizeof(path), "/sandbox/%s%s", id, suffix);
    rc = dt_api(op, method, path, NULL, kind != K_STOP, kind == K_START ? on_sandbox : on_empty);
    if (rc < 0)
        dt_op_free(op);
    return rc;
}

/* Pause is stop (every sandbox class supports it): the filesystem stays, processes end. */
static int dt_pause(struct prov_box *box, prov_done_cb done, void *payload)
{
    return box_call(box ? box->prov : NULL, box ? box->id : NULL,
                    box ? ((struct dt_box *)box)->sbx : NULL, K_STOP, "stop", "POST", "/stop", done,
                    payload);
}

static int dt_resume(struct prov_box *box, prov_done_cb done, void *payload)
{
    return box_call(box ? box->prov : NULL, box ? box->id : NULL,
                    box ? ((struct dt_box *)box)->sbx : NULL, K_START, "start", "POST", "/start",
                    done, payload);
}

static int dt_kill(struct prov_box *box, prov_done_cb done, void *payload)
{
    return box_call(box ? box->prov : NULL, box ? box->id : NULL, NULL, K_KILL, "delete", "DELETE",
                    "", done, payload);
}

int prov_daytona_kill_id(struct prov *p, const char *id, prov_done_cb done, void *payload)
{
    if (id && strchr(id, '/'))
        return core_error_set(EVOLVE_EINVAL, "daytona delete: bad sandbox id");
    return box_call(p, id, NULL, K_KILL, "delete", "DELETE", "", done, payload);
}

int prov_daytona_set_autostop(struct prov_box *box, unsigned minutes, prov_done_cb done,
                              void *payload)
{
    char suffix[32];

    snprintf(suffix, sizeof(suffix), "/autostop/%u", minutes);
    return box_call(box ? box->prov : NULL, box ? box->id : NULL, NULL, K_AUTOSTOP, "autostop",
                    "POST", suffix, done, payload);
}

/* ---- lifetime and the vtable ----------------------------------------------------------------- */

static void dt_box_free(struct prov_box *box)
{
    struct dt_box *b = (struct dt_box *)box;

    if (!b)
        return;
    dt_sbx_unref(b->sbx);
    free(b);
}

static void dt_free(struct prov *pp)
{
    dt_prov_unref((struct dt_prov *)pp);
}

static const struct prov_ops dt_ops = {
    .version = PROV_OPS_VERSION,
    .name = "daytona",
    .caps = PROV_CAP_PAUSE | PROV_CAP_INTERRUPT | PROV_CAP_SPLIT_STREAMS | PROV_CAP_RECONNECT |
            PROV_CAP_NO_NETWORK,
    .create = dt_create,
    .connect = dt_connect,
    .pause = dt_pause,
    .resume = dt_resume,
    .kill = dt_kill,
    .list = dt_list,
    .exec = dt_exec,
    .signal = dt_signal,
    .write_file = dt_write_file,
    .read_file = dt_read_file,
    .list_dir = dt_list_dir,
    .get_host = dt_get_host,
    .box_free = dt_box_free,
    .free = dt_free,
};

int prov_daytona_new(struct prov **out, const struct prov_daytona_opts *opts, struct io_reactor *r)
{
    struct prov_daytona_opts o = PROV_DAYTONA_OPTS_INIT;
    struct dt_prov *p;
    const char *key, *url, *snap;
    unsigned char rnd[6];
    int rc;

    *out = NULL;
    if (opts)
        o = *opts;
    if (o.version != PROV_DAYTONA_OPTS_VERSION || !r)
        return core_error_set(EVOLVE_EINVAL, "daytona: bad options (version %u)", o.version);
    key = o.api_key && *o.api_key ? o.api_key : getenv("DAYTONA_API_KEY");
    if (!key || !*key)
        return core_error_set(EVOLVE_EINVAL, "daytona: no API key (set DAYTONA_API_KEY)");
    url = o.api_url && *o.api_url ? o.api_url : getenv("DAYTONA_API_URL");
    snap = o.snapshot && *o.snapshot ? o.snapshot : getenv("DAYTONA_SNAPSHOT");
    p = calloc(1, sizeof(*p));
    if (!p)
        return core_error_oom();
    atomic_init(&p->refs, 1);
    p->r = r;
    p->api_url = strdup(url && *url ? url : "https://app.daytona.io/api");
    p->snapshot = snap && *snap ? strdup(snap) : NULL;
    {
        size_t n = strlen(key) + 32;

        p->hdr_auth = malloc(n);
        if (p->hdr_auth)
            snprintf(p->hdr_auth, n, "Authorization: Bearer %s", key);
    }
    p->poll_ms =
        o.poll_ms ? o.poll_ms : (unsigned)cloud_env_long("DAYTONA_POLL_MS", 200, 10, 60000);
    p->poll_timeout_ms = (unsigned)cloud_env_long("DAYTONA_POLL_TIMEOUT_MS", 10000, 100, 600000);
    p->autostop_min = o.autostop_min
                          ? o.autostop_min
                          : (unsigned)cloud_env_long("DAYTONA_AUTOSTOP_MIN", 15, 0, 100000);
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        memset(rnd, 0x5a, sizeof(rnd));
    snprintf(p->sid_prefix, sizeof(p->sid_prefix), "evolve-%02x%02x%02x%02x%02x%02x", rnd[0],
             rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
    if (!p->api_url || !p->hdr_auth || (snap && *snap && !p->snapshot)) {
        dt_prov_unref(p);
        return core_error_oom();
    }
    if (strncmp(p->api_url, "http", 4)) {
        rc = core_error_set(EVOLVE_EINVAL, "daytona: API URL \"%s\" is not http(s)", p->api_url);
        dt_prov_unref(p);
        return rc;
    }
    rc = prov_init(&p->base, &dt_ops, NULL);
    if (rc < 0) {
        dt_prov_unref(p);
        return rc;
    }
    *out = &p->base;
    return 0;
}
