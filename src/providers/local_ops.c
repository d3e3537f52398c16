/* local_ops.c — the async vtable (struct prov_ops) of the `local` provider.
 * Owns: turning each op into one job run through the embedder's defer hook, copying the op's
 *       inputs into the job, and calling `done` exactly once from the job (never inline).
 * Does not own: the work itself (local.c and friends, synchronous).
 * Threads: ops from any thread; jobs and therefore `done` run wherever defer runs them. */
#include "providers/local_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct local_prov {
    struct prov base; /* first (R15) */
    struct prov_local *pl;
};

enum job_op {
    J_CREATE,
    J_CONNECT,
    J_PAUSE,
    J_RESUME,
    J_KILL,
    J_LIST,
    J_EXEC,
    J_SIGNAL,
    J_WRITE,
    J_READ,
    J_LSDIR,
    J_HOST
};

struct job {
    enum job_op op;
    struct local_prov *lp;
    struct prov_local_box *box;
    prov_done_cb done;
    void *payload;
    char *str;   /* id (connect), path (files), cwd (exec) */
    char **envp; /* create/connect env, exec env */
    char **argv; /* exec */
    bool no_network;
    unsigned int flags;
    uint32_t proc_id;
    int signo;
    unsigned int port;
    const void *data; /* write: borrowed until done */
    size_t len;
};

static const struct prov_ops local_ops;

static void strv_free(char **v)
{
    size_t i;

    for (i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* Copies a NULL-terminated vector; NULL in gives NULL out with *ok still true. */
static char **strv_copy(const char *const *v, bool *ok)
{
    size_t n = 0, i;
    char **c;

    if (!v)
        return NULL;
    while (v[n])
        n++;
    c = calloc(n + 1, sizeof(*c));
    if (!c) {
        *ok = false;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        c[i] = strdup(v[i]);
        if (!c[i]) {
            strv_free(c);
            *ok = false;
            return NULL;
        }
    }
    return c;
}

static void job_free(struct job *j)
{
    free(j->str);
    strv_free(j->envp);
    strv_free(j->argv);
    free(j);
}

static void run_job(void *arg)
{
    struct job *j = arg;
    struct prov_status st = {0, ""};
    void *result = NULL;
    int rc = 0;

    switch (j->op) {
    case J_CREATE:
    case J_CONNECT: {
        struct prov_create_spec spec = PROV_CREATE_SPEC_INIT;
        struct prov_local_box *b = NULL;

        spec.envp = (const char *const *)j->envp;
        spec.no_network = j->no_network;
        rc = j->op == J_CREATE ? prov_local_create(&b, j->lp->pl, &spec)
                               : prov_local_connect(&b, j->lp->pl, j->str, &spec);
        if (rc == 0) {
            b->base.prov = &j->lp->base;
            result = &b->base;
        }
        break;
    }
    case J_PAUSE:
        rc = prov_local_pause(j->box);
        break;
    case J_RESUME:
        rc = prov_local_resume(j->box);
        break;
    case J_KILL:
        rc = prov_local_kill(j->box);
        break;
    case J_LIST: {
        struct prov_list *l = NULL;

        rc = prov_local_list(&l, j->lp->pl);
        result = l;
        break;
    }
    case J_EXEC: {
        struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
        struct prov_proc *proc = NULL;

        spec.argv = (const char *const *)j->argv;
        spec.envp = (const char *const *)j->envp;
        spec.cwd = j->str;
        spec.flags = j->flags;
        rc = prov_local_exec(&proc, j->box, &spec);
        result = proc;
        break;
    }
    case J_SIGNAL:
        rc = prov_local_signal(j->box, j->proc_id, j->signo);
        break;
    case J_WRITE:
        rc = prov_local_write_file(j->box, j->str, j->data, j->len);
        break;
    case J_READ: {
        struct prov_buf *buf = NULL;

        rc = prov_local_read_file(&buf, j->box, j->str);
        result = buf;
        break;
    }
    case J_LSDIR: {
        struct prov_dir *dir = NULL;

        rc = prov_local_list_dir(&dir, j->box, j->str);
        result = dir;
        break;
    }
    case J_HOST: {
        char *url = NULL;

        rc = prov_local_get_host(&url, j->box, j->port);
        result = url;
        break;
    }
    }
    if (rc < 0) {
        st.code = rc;
        snprintf(st.message, sizeof(st.message), "%s", evolve_error_last()->message);
        result = NULL;
    }
    j->done(j->payload, &st, result);
    job_free(j);
}

/* Allocates a job for `op`; NULL (error set) when arguments are missing or memory is short. */
static struct job *job_new(enum job_op op, struct prov *p, struct prov_box *box, prov_done_cb done,
                           void *payload)
{
    struct job *j;

    if (!done) {
        core_error_set(EVOLVE_EINVAL, "local provider: no done callback");
        return NULL;
    }
    if (!p && box)
        p = box->prov;
    if (!p || p->ops != &local_ops || (op >= J_PAUSE && op != J_LIST && !box)) {
        core_error_set(EVOLVE_EINVAL, "local provider: handle is missing or not a local one");
        return NULL;
    }
    j = calloc(1, sizeof(*j));
    if (!j) {
        core_error_oom();
        return NULL;
    }
    j->op = op;
    j->lp = (struct local_prov *)p;
    j->box = box ? (struct prov_local_box *)box : NULL;
    j->done = done;
    j->payload = payload;
    return j;
}

static int submit(struct job *j)
{
    struct prov_env *env = &j->lp->base.env;

    env->defer(env->defer_ctx, run_job, j);
    return 0;
}

static int op_create(struct prov *p, const struct prov_create_spec *spec, prov_done_cb done,
                     void *payload)
{
    struct job *j = job_new(J_CREATE, p, NULL, done, payload);
    bool ok = true;

    if (!j)
        return evolve_error_last()->code;
    if (spec) {
        j->envp = strv_copy(spec->envp, &ok);
        j->no_network = spec->no_network;
    }
    if (!ok) {
        job_free(j);
        return core_error_oom();
    }
    return submit(j);
}

static int op_connect(struct prov *p, const char *id, const struct prov_create_spec *spec,
                      prov_done_cb done, void *payload)
{
    struct job *j;
    bool ok = true;

    if (!id)
        return core_error_set(EVOLVE_EINVAL, "local provider: connect without an id");
    j = job_new(J_CONNECT, p, NULL, done, payload);
    if (!j)
        return evolve_error_last()->code;
    j->str = strdup(id);
    if (spec)
        j->envp = strv_copy(spec->envp, &ok);
    if (!ok || !j->str) {
        job_free(j);
        return core_error_oom();
    }
    return submit(j);
}

static int simple_op(enum job_op op, struct prov_box *box, prov_done_cb done, void *payload)
{
    struct job *j = job_new(op, NULL, box, done, payload);

    return j ? submit(j) : evolve_error_last()->code;
}

static int op_pause(struct prov_box *box, prov_done_cb done, void *payload)
{
    return simple_op(J_PAUSE, box, done, payload);
}

static int op_resume(struct prov_box *box, prov_done_cb done, void *payload)
{
    return simple_op(J_RESUME, box, done, payload);
}

static int op_kill(struct prov_box *box, prov_done_cb done, void *payload)
{
    return simple_op(J_KILL, box, done, payload);
}

static int op_list(struct prov *p, prov_done_cb done, void *payload)
{
    struct job *j = job_new(J_LIST, p, NULL, done, payload);

    return j ? submit(j) : evolve_error_last()->code;
}

static int op_exec(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
                   void *payload)
{
    struct job *j;
    bool ok = true;

    if (!spec || spec->version == 0 || spec->version > PROV_EXEC_SPEC_VERSION || !spec->argv ||
        !spec->argv[0])
        return core_error_set(EVOLVE_EINVAL, "local provider: exec needs a prov_exec_spec with "
                                             "argv");
    j = job_new(J_EXEC, NULL, box, done, payload);
    if (!j)
        return evolve_error_last()->code;
    j->argv = strv_copy(spec->argv, &ok);
    j->envp = strv_copy(spec->envp, &ok);
    j->flags = spec->flags;
    if (spec->cwd && !(j->str = strdup(spec->cwd)))
        ok = false;
    if (!ok) {
        job_free(j);
        return core_error_oom();
    }
    return submit(j);
}

static int op_signal(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done,
                     void *payload)
{
    struct job *j = job_new(J_SIGNAL, NULL, box, done, payload);

    if (!j)
        return evolve_error_last()->code;
    j->proc_id = proc_id;
    j->signo = signo;
    return submit(j);
}

static int path_op(enum job_op op, struct prov_box *box, const char *path, prov_done_cb done,
                   void *payload, struct job **out)
{
    struct job *j;

    if (!path)
        return core_error_set(EVOLVE_EINVAL, "local provider: file op without a path");
    j = job_new(op, NULL, box, done, payload);
    if (!j)
        return evolve_error_last()->code;
    j->str = strdup(path);
    if (!j->str) {
        job_free(j);
        return core_error_oom();
    }
    *out = j;
    return 0;
}

static int op_write_file(struct prov_box *box, const char *path, const void *data, size_t len,
                         prov_done_cb done, void *payload)
{
    struct job *j = NULL;
    int rc = path_op(J_WRITE, box, path, done, payload, &j);

    if (rc < 0)
        return rc;
    j->data = data;
    j->len = len;
    return submit(j);
}

static int op_read_file(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    struct job *j = NULL;
    int rc = path_op(J_READ, box, path, done, payload, &j);

    return rc < 0 ? rc : submit(j);
}

static int op_list_dir(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    struct job *j = NULL;
    int rc = path_op(J_LSDIR, box, path ? path : ".", done, payload, &j);

    return rc < 0 ? rc : submit(j);
}

static int op_get_host(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload)
{
    struct job *j = job_new(J_HOST, NULL, box, done, payload);

    if (!j)
        return evolve_error_last()->code;
    j->port = port;
    return submit(j);
}

static void op_box_free(struct prov_box *box)
{
    prov_local_box_free((struct prov_local_box *)box);
}

static void op_free(struct prov *p)
{
    struct local_prov *lp = (struct local_prov *)p;

    if (!lp)
        return;
    prov_local_close(lp->pl);
    free(lp);
}

static const struct prov_ops local_ops = {
    .version = PROV_OPS_VERSION,
    .name = "local",
    .caps = PROV_CAP_PAUSE | PROV_CAP_INTERRUPT | PROV_CAP_SIGNAL_ANY | PROV_CAP_STDIN |
            PROV_CAP_SPLIT_STREAMS | PROV_CAP_BINARY_OUTPUT | PROV_CAP_RECONNECT |
            PROV_CAP_NO_NETWORK,
    .create = op_create,
    .connect = op_connect,
    .pause = op_pause,
    .resume = op_resume,
    .kill = op_kill,
    .list = op_list,
    .exec = op_exec,
    .signal = op_signal,
    .write_file = op_write_file,
    .read_file = op_read_file,
    .list_dir = op_list_dir,
    .get_host = op_get_host,
    .box_free = op_box_free,
    .free = op_free,
};

int prov_local_new(struct prov **out, const struct prov_local_opts *opts,
                   const struct prov_env *env)
{
    struct local_prov *lp;
    int rc;

    *out = NULL;
    if (!env || !env->defer)
        return core_error_set(EVOLVE_EINVAL, "local provider: prov_env.defer is required");
    lp = calloc(1, sizeof(*lp));
    if (!lp)
        return core_error_oom();
    rc = prov_init(&lp->base, &local_ops, env);
    if (rc == 0)
        rc = prov_local_open(&lp->pl, opts);
    if (rc < 0) {
        free(lp);
        return rc;
    }
    *out = &lp->base;
    return 0;
}

struct prov_local *prov_local_from(struct prov *p)
{
    return p && p->ops == &local_ops ? ((struct local_prov *)p)->pl : NULL;
}

struct prov_local_box *prov_local_box_from(struct prov_box *box)
{
    return box && box->prov && box->prov->ops == &local_ops ? (struct prov_local_box *)box : NULL;
}
