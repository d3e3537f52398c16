/* e2b.c — the `e2b` provider: configuration, the vtable, and E2B's control plane (create from a
 * template with env vars, TTL and label metadata; connect; pause; resume; kill; list by label;
 * set timeout; get_host), plus the Connect unary helper the other e2b files use.
 * Threads: ops from any thread; every completion runs on the reactor thread (io/http.h). */
#include "providers/e2b_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

enum { K_CREATE = 1, K_CONNECT, K_PAUSE, K_RESUME, K_KILL, K_TIMEOUT };

static const struct prov_ops e2b_ops;

/* ---- references ---------------------------------------------------------------------------- */

void e2b_prov_ref(struct e2b_prov *p)
{
    atomic_fetch_add(&p->refs, 1);
}

void e2b_prov_unref(struct e2b_prov *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    free(p->api_url);
    free(p->sandbox_url);
    free(p->domain);
    free(p->template_id);
    free(p->hdr_key);
    free(p);
}

void e2b_sbx_ref(struct e2b_sbx *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void e2b_sbx_unref(struct e2b_sbx *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    free(s->envd_url);
    free(s->hdr_token);
    free(s->hdr_id);
    free(s->domain);
    free(s);
}

struct e2b_op *e2b_op_new(struct e2b_prov *p, struct e2b_sbx *sbx, prov_done_cb done, void *payload,
                          int kind, const char *what)
{
    struct e2b_op *op = calloc(1, sizeof(*op));

    if (!op) {
        core_error_oom();
        return NULL;
    }
    op->p = p;
    e2b_prov_ref(p);
    op->sbx = sbx;
    if (sbx)
        e2b_sbx_ref(sbx);
    op->done = done;
    op->payload = payload;
    op->kind = kind;
    snprintf(op->what, sizeof(op->what), "%s", what);
    return op;
}

void e2b_op_free(struct e2b_op *op)
{
    e2b_sbx_unref(op->sbx);
    e2b_prov_unref(op->p);
    free(op);
}

void e2b_op_finish(struct e2b_op *op, const struct prov_status *st, void *result)
{
    op->done(op->payload, st, st->code < 0 ? NULL : result);
    e2b_op_free(op);
}

static int op_fail_start(struct e2b_op *op, int rc)
{
    e2b_op_free(op);
    return rc;
}

/* ---- envd helpers -------------------------------------------------------------------------- */

size_t e2b_envd_headers(const struct e2b_sbx *s, const char **h)
{
    size_t n = 0;

    h[n++] = s->hdr_id;
    h[n++] = "E2b-Sandbox-Port: 49983";
    h[n++] = "Authorization: Basic dXNlcjo="; /* "user:" */
    if (s->hdr_token)
        h[n++] = s->hdr_token;
    return n;
}

int e2b_connect_code(const char *code)
{
    static const struct {
        const char *name;
        int code;
    } map[] = {{"not_found", EVOLVE_ENOTFOUND},
               {"already_exists", EVOLVE_EEXISTS},
               {"invalid_argument", EVOLVE_EINVAL},
               {"failed_precondition", EVOLVE_EINVAL},
               {"out_of_range", EVOLVE_EINVAL},
               {"unimplemented", EVOLVE_EUNSUPPORTED},
               {"permission_denied", EVOLVE_EUNSUPPORTED},
               {"unauthenticated", EVOLVE_EUNSUPPORTED},
               {"deadline_exceeded", EVOLVE_ETIMEDOUT},
               {"canceled", EVOLVE_ECANCELED},
               {"unavailable", EVOLVE_EIO},
               {"resource_exhausted", EVOLVE_EIO}};
    size_t i;

    for (i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(code, map[i].name))
            return map[i].code;
    return EVOLVE_ERROR;
}

int e2b_connect_status(struct prov_status *st, const struct cloud_reply *rep, const char *what)
{
    json_t *j;
    const char *code;

    if (rep->res->code == 0 && rep->res->status >= 200 && rep->res->status < 300) {
        st->code = 0;
        st->message[0] = '\0';
        return 0;
    }
    if (rep->res->status == 0 || rep->res->status == 502 || rep->res->status == 429 ||
        rep->res->status == 401)
        return cloud_status_from(st, rep, what);
    j = json_loadb(rep->body, rep->len, 0, NULL);
    code = json_string_value(json_object_get(j, "code"));
    if (!code) {
        json_decref(j);
        return cloud_status_from(st, rep, what);
    }
    cloud_status_set(st, e2b_connect_code(code), "%s: %s: %s (HTTP %ld)", what, code,
                     json_string_value(json_object_get(j, "message"))
                         ? json_string_value(json_object_get(j, "message"))
                         : "",
                     rep->res->status);
    json_decref(j);
    return st->code;
}

int e2b_unary(struct e2b_op *op, const char *path, json_t *req, cloud_reply_fn fn)
{
    struct io_http_request rq = {.method = "POST"};
    const char *h[10];
    size_t n = e2b_envd_headers(op->sbx, h);
    char url[1024], *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    int rc;

    json_decref(req);
    if (!body)
        return core_error_oom();
    h[n++] = "Content-Type: application/json";
    h[n++] = "Connect-Protocol-Version: 1";
    h[n] = NULL;
    snprintf(url, sizeof(url), "%s%s", op->sbx->envd_url, path);
    rq.url = url;
    rq.headers = h;
    rq.body = body;
    rq.body_len = strlen(body);
    rq.timeout_ms = 60000;
    rq.idempotent = false;
    rq.retry.max_attempts = 3; /* 429 and connection failures */
    rc = cloud_call_start(op->p->r, &rq, 0, fn, op);
    free(body);
    return rc;
}

/* ---- control plane ------------------------------------------------------------------------- */

int e2b_api_call(struct e2b_op *op, const char *method, const char *path, json_t *body,
                 cloud_reply_fn fn, bool idempotent)
{
    struct io_http_request rq = {.method = method};
    const char *h[4] = {op->p->hdr_key, "Content-Type: application/json",
                        "User-Agent: evolve-e2b/1", NULL};
    char url[1024], *text = NULL;
    int rc;

    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        if (!text)
            return core_error_oom();
    }
    snprintf(url, sizeof(url), "%s%s", op->p->api_url, path);
    rq.url = url;
    rq.headers = h;
    rq.body = text;
    rq.body_len = text ? strlen(text) : 0;
    rq.timeout_ms = 120000;
    rq.idempotent = idempotent;
    rq.retry.max_attempts = 4;
    rc = cloud_call_start(op->p->r, &rq, 0, fn, op);
    free(text);
    return rc;
}

/* A box from a `Sandbox` JSON reply. */
static struct e2b_box *box_from_json(struct e2b_prov *p, json_t *j, struct prov_status *st,
                                     const char *what)
{
    const char *id = json_string_value(json_object_get(j, "sandboxID"));
    const char *tok = json_string_value(json_object_get(j, "envdAccessToken"));
    const char *dom = json_string_value(json_object_get(j, "domain"));
    struct e2b_box *b;
    struct e2b_sbx *s;
    char hid[128];

    if (!id || !*id || strlen(id) >= sizeof(b->base.id)) {
        cloud_status_set(st, EVOLVE_EPROTO, "%s: reply has no valid sandboxID", what);
        return NULL;
    }
    b = calloc(1, sizeof(*b));
    s = calloc(1, sizeof(*s));
    snprintf(hid, sizeof(hid), "E2b-Sandbox-Id: %s", id);
    if (s) {
        atomic_init(&s->refs, 1);
        snprintf(s->id, sizeof(s->id), "%s", id);
        s->envd_url = strdup(p->sandbox_url);
        s->hdr_id = strdup(hid);
        s->hdr_token = tok ? cloud_hdr("X-Access-Token", tok) : NULL;
        s->domain = strdup(dom ? dom : p->domain);
    }
    if (!b || !s || !s->envd_url || !s->hdr_id || !s->domain || (tok && !s->hdr_token)) {
        free(b);
        e2b_sbx_unref(s);
        cloud_status_set(st, EVOLVE_ENOMEM, "%s: out of memory", what);
        return NULL;
    }
    b->base.prov = &p->base;
    snprintf(b->base.id, sizeof(b->base.id), "%s", id);
    b->sbx = s;
    return b;
}

static void on_sandbox_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct prov_status st = {0};
    struct e2b_box *b;
    json_t *j;

    if (rep->res->code < 0 || rep->res->status < 200 || rep->res->status >= 300) {
        cloud_status_from(&st, rep, op->what);
        e2b_op_finish(op, &st, NULL);
        return;
    }
    j = json_loadb(rep->body, rep->len, 0, NULL);
    b = box_from_json(op->p, j, &st, op->what);
    json_decref(j);
    if (!b) {
        e2b_op_finish(op, &st, NULL);
        return;
    }
    if (op->kind == K_CREATE) {
        e2b_layout_workspace(op, b); /* finishes op */
        return;
    }
    e2b_op_finish(op, &st, b);
}

static json_t *env_object(const char *const *envp)
{
    json_t *o = json_object();
    size_t i;

    for (i = 0; o && envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        char key[256];

        if (!eq || (size_t)(eq - envp[i]) >= sizeof(key))
            continue;
        memcpy(key, envp[i], (size_t)(eq - envp[i]));
        key[eq - envp[i]] = '\0';
        json_object_set_new(o, key, json_string(eq + 1));
    }
    return o;
}

static json_t *label_object(void)
{
    const char *k[4], *v[4];
    size_t n = cloud_labels(k, v, 4), i;
    json_t *o = json_object();

    for (i = 0; o && i < n; i++)
        json_object_set_new(o, k[i], json_string(v[i]));
    return o;
}

static int e2b_create(struct prov *pp, const struct prov_create_spec *spec, prov_done_cb done,
                      void *payload)
{
    struct e2b_prov *p = (struct e2b_prov *)pp;
    struct e2b_op *op;
    json_t *body;
    int rc;

    if (!spec || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b create: spec and done are required");
    op = e2b_op_new(p, NULL, done, payload, K_CREATE, "e2b create");
    if (!op)
        return EVOLVE_ENOMEM;
    body =
        json_pack("{s:s, s:i, s:o, s:o, s:b, s:b}", "templateID", p->template_id, "timeout",
                  (int)p->timeout_s, "metadata", label_object(), "envVars", env_object(spec->envp),
                  "secure", 1, "allow_internet_access", !spec->no_network);
    if (!body)
        return op_fail_start(op, core_error_oom());
    /* Not idempotent: a retried create after a lost reply would leak a sandbox (429 and refused
     * connections are still retried by io/http). */
    rc = e2b_api_call(op, "POST", "/sandboxes", body, on_sandbox_reply, false);
    return rc < 0 ? op_fail_start(op, rc) : 0;
}

static int e2b_connect(struct prov *pp, const char *id, const struct prov_create_spec *spec,
                       prov_done_cb done, void *payload)
{
    struct e2b_prov *p = (struct e2b_prov *)pp;
    struct e2b_op *op;
    char path[160], what[128];

    (void)spec;
    if (!id || !*id || strlen(id) >= 64 || strchr(id, '/') || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b connect: bad sandbox id \"%s\"", id ? id : "");
    snprintf(what, sizeof(what), "e2b connect %s", id);
    op = e2b_op_new(p, NULL, done, payload, K_CONNECT, what);
    if (!op)
        return EVOLVE_ENOMEM;
    snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
    if (e2b_api_call(op, "POST", path, json_pack("{s:i}", "timeout", (int)p->timeout_s),
                     on_sandbox_reply, true) < 0)
        return op_fail_start(op, EVOLVE_ERROR);
    return 0;
}

static void on_empty_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct prov_status st = {0};

    if (rep->res->code < 0 || rep->res->status < 200 || rep->res->status >= 300) {
        /* Killing a sandbox that is already gone is done, not an error. */
        if (!(op->kind == K_KILL && rep->res->status == 404))
            cloud_status_from(&st, rep, op->what);
    }
    e2b_op_finish(op, &st, NULL);
}

static int box_call(struct prov_box *box, int kind, const char *verb, const char *method,
                    const char *suffix, json_t *body, bool idempotent, prov_done_cb done,
                    void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct e2b_op *op;
    char path[200], what[128];

    if (!box || !done) {
        json_decref(body);
        return core_error_set(EVOLVE_EINVAL, "e2b %s: box and done are required", verb);
    }
    snprintf(what, sizeof(what), "e2b %s %s", verb, box->id);
    op = e2b_op_new((struct e2b_prov *)box->prov, b->sbx, done, payload, kind, what);
    if (!op) {
        json_decref(body);
        return EVOLVE_ENOMEM;
    }
    snprintf(path, sizeof(path), "/sandboxes/%s%s", box->id, suffix);
    if (e2b_api_call(op, method, path, body, kind == K_RESUME ? on_sandbox_reply : on_empty_reply,
                     idempotent) < 0)
        return op_fail_start(op, EVOLVE_ERROR);
    return 0;
}

static int e2b_pause(struct prov_box *box, prov_done_cb done, void *payload)
{
    return box_call(box, K_PAUSE, "pause", "POST", "/pause", json_pack("{s:b}", "memory", 1), false,
                    done, payload);
}

static int e2b_resume(struct prov_box *box, prov_done_cb done, void *payload);

static int e2b_kill(struct prov_box *box, prov_done_cb done, void *payload)
{
    return box_call(box, K_KILL, "kill", "DELETE", "", NULL, true, done, payload);
}

int prov_e2b_set_timeout(struct prov_box *box, unsigned seconds, prov_done_cb done, void *payload)
{
    return box_call(box, K_TIMEOUT, "set_timeout", "POST", "/timeout",
                    json_pack("{s:i}", "timeout", (int)seconds), true, done, payload);
}

/* Resume is a connect that answers with a fresh Sandbox; the box keeps its identity, so the
 * reply's box only refreshes nothing and is dropped (the token does not change on resume). */
static void resume_done(void *payload, const struct prov_status *st, void *result)
{
    struct e2b_op *op = payload;
    struct e2b_box *nb = result;

    if (nb) {
        e2b_sbx_unref(nb->sbx);
        free(nb);
    }
    op->done(op->payload, st, NULL);
    e2b_op_free(op);
}

static int e2b_resume(struct prov_box *box, prov_done_cb done, void *payload)
{
    struct e2b_op *outer;
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b resume: box and done are required");
    outer = e2b_op_new((struct e2b_prov *)box->prov, NULL, done, payload, K_RESUME, "");
    if (!outer)
        return EVOLVE_ENOMEM;
    rc = box_call(box, K_RESUME, "resume", "POST", "/connect",
                  json_pack("{s:i}", "timeout", (int)((struct e2b_prov *)box->prov)->timeout_s),
                  true, resume_done, outer);
    if (rc < 0)
        e2b_op_free(outer);
    return rc;
}

int prov_e2b_kill_id(struct prov *pp, const char *id, prov_done_cb done, void *payload)
{
    struct e2b_box b = {.base = {.prov = pp}};

    if (!id || strlen(id) >= sizeof(b.base.id) || strchr(id, '/'))
        return core_error_set(EVOLVE_EINVAL, "e2b kill: bad sandbox id");
    snprintf(b.base.id, sizeof(b.base.id), "%s", id);
    return box_call(&b.base, K_KILL, "kill", "DELETE", "", NULL, true, done, payload);
}

/* ---- lifetime and the vtable ---------------------------------------------------------------- */

static void e2b_box_free(struct prov_box *box)
{
    struct e2b_box *b = (struct e2b_box *)box;

    if (!b)
        return;
    e2b_sbx_unref(b->sbx);
    free(b);
}

static void e2b_free(struct prov *pp)
{
    e2b_prov_unref((struct e2b_prov *)pp);
}

static const struct prov_ops e2b_ops = {
    .version = PROV_OPS_VERSION,
    .name = "e2b",
    .caps = PROV_CAP_PAUSE | PROV_CAP_INTERRUPT | PROV_CAP_STDIN | PROV_CAP_SPLIT_STREAMS |
            PROV_CAP_BINARY_OUTPUT | PROV_CAP_RECONNECT | PROV_CAP_NO_NETWORK,
    .create = e2b_create,
    .connect = e2b_connect,
    .pause = e2b_pause,
    .resume = e2b_resume,
    .kill = e2b_kill,
    .list = e2b_list,
    .exec = e2b_exec,
    .signal = e2b_signal,
    .write_file = e2b_write_file,
    .read_file = e2b_read_file,
    .list_dir = e2b_list_dir,
    .get_host = e2b_get_host,
    .box_free = e2b_box_free,
    .free = e2b_free,
};

static char *pick(const char *opt, const char *env, const char *dflt)
{
    const char *v = opt && *opt ? opt : getenv(env);

    return strdup(v && *v ? v : dflt);
}

/* "host:port" of a URL, for io_http_limit. */
static void host_port(const char *url, char *out, size_t size)
{
    const char *h = strstr(url, "://");
    bool tls = !strncmp(url, "https", 5);
    size_t n;

    h = h ? h + 3 : url;
    n = strcspn(h, "/?");
    if (memchr(h, ':', n))
        snprintf(out, size, "%.*s", (int)n, h);
    else
        snprintf(out, size, "%.*s:%s", (int)n, h, tls ? "443" : "80");
}

int prov_e2b_new(struct prov **out, const struct prov_e2b_opts *opts, struct io_reactor *r)
{
    struct prov_e2b_opts o = PROV_E2B_OPTS_INIT;
    struct prov_env env = {0};
    struct e2b_prov *p;
    const char *key;
    char dflt[300], hp[300];
    int rc;

    *out = NULL;
    if (opts)
        o = *opts;
    if (o.version != PROV_E2B_OPTS_VERSION || !r)
        return core_error_set(EVOLVE_EINVAL, "e2b: bad options (version %u)", o.version);
    key = o.api_key && *o.api_key ? o.api_key : getenv("E2B_API_KEY");
    if (!key || !*key)
        return core_error_set(EVOLVE_EINVAL, "e2b: no API key (set E2B_API_KEY)");
    p = calloc(1, sizeof(*p));
    if (!p)
        return core_error_oom();
    atomic_init(&p->refs, 1);
    p->r = r;
    p->domain = pick(o.domain, "E2B_DOMAIN", "e2b.app");
    if (p->domain) {
        snprintf(dflt, sizeof(dflt), "https://api.%s", p->domain);
        p->api_url = pick(o.api_url, "E2B_API_URL", dflt);
        snprintf(dflt, sizeof(dflt), "https://sandbox.%s", p->domain);
        p->sandbox_url = pick(o.sandbox_url, "E2B_SANDBOX_URL", dflt);
    }
    p->template_id = pick(o.template_id, "E2B_TEMPLATE", "base");
    p->hdr_key = cloud_hdr("X-API-Key", key);
    p->timeout_s =
        o.timeout_s ? o.timeout_s : (unsigned)cloud_env_long("E2B_SANDBOX_TIMEOUT", 3600, 1, 86400);
    p->keepalive_s =
        o.keepalive_s ? o.keepalive_s : (unsigned)cloud_env_long("E2B_KEEPALIVE_S", 50, 1, 3600);
    if (!p->domain || !p->api_url || !p->sandbox_url || !p->template_id || !p->hdr_key) {
        e2b_prov_unref(p);
        return core_error_oom();
    }
    if (strncmp(p->api_url, "http", 4) || strncmp(p->sandbox_url, "http", 4)) {
        rc = core_error_set(EVOLVE_EINVAL, "e2b: API URL \"%s\" / sandbox URL \"%s\" not http(s)",
                            p->api_url, p->sandbox_url);
        e2b_prov_unref(p);
        return rc;
    }
    rc = prov_init(&p->base, &e2b_ops, &env);
    if (rc < 0) {
        e2b_prov_unref(p);
        return rc;
    }
    /* Streams stay open for a command's whole life: envd's host must never run out of slots.
     * The control plane keeps a bound; the batch's admission bucket paces creates. */
    host_port(p->sandbox_url, hp, sizeof(hp));
    io_http_limit(r, hp, 0);
    host_port(p->api_url, hp, sizeof(hp));
    io_http_limit(r, hp, (unsigned)cloud_env_long("E2B_MAX_INFLIGHT", 256, 1, 100000));
    *out = &p->base;
    return 0;
}
