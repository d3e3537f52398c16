/* checkpoint.c — the session's use of the checkpoint store: auto-checkpoint after a successful
 * foreground run, explicit checkpoints, and restoring a checkpoint into a fresh sandbox.
 * Owns: lineage (each checkpoint's parent is the session's previous one; restoring from X makes X
 * the parent of the next), the reference's error strings for storage, and running the store's
 * CPU- and disk-heavy work as jobs on the worker pool so the session actor never blocks.
 * Threads: job fns on a worker; everything else on the session actor. */
#include "core/session_int.h"

#include <dirent.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/runtime_public.h"
#include "core/error.h"
#include "core/log.h"
#include "core/stage.h"
#include "providers/local.h"

static void job_msg_free(struct act_msg *m)
{
    struct sess_job *j = (struct sess_job *)m;

    evolve_checkpoint_info_free(j->info);
    free(j->home);
    free(j->id);
    free(j->comment);
    free(j);
}

static void job_trampoline(void *arg)
{
    struct sess_job *j = arg;

    j->fn(j);
    act_send(j->s->ev->actor, &j->hdr);
}

int sess_job_start(struct sess *s, struct sess_job *job)
{
    int rc;

    act_msg_init(&job->hdr, MSG_JOB_DONE, job_msg_free);
    job->s = s;
    s->jobs++;
    rc = act_runtime_submit(act_runtime_of(s->ev->rt), job_trampoline, job);
    if (rc < 0)
        s->jobs--; /* the caller still owns job */
    return rc;
}

const char *sess_host_home(struct sess *s)
{
    if (!s->box) {
        core_error_set(EVOLVE_ENOTFOUND, "No active sandbox. Call run() first.");
        return NULL;
    }
    if (strcmp(s->prov->ops->name, "local")) {
        core_error_set(EVOLVE_EUNSUPPORTED, "the %s sandbox has no home on this host",
                       s->prov->ops->name);
        return NULL;
    }
    return prov_local_box_home(prov_local_box_from(s->box));
}

static bool is_remote(const struct sess *s)
{
    return strcmp(s->prov->ops->name, "local") != 0;
}

/* A fresh staging directory for a remote sandbox's tree, under $EVOLVE_HOME/staging. */
static void staging_path(char *buf, size_t size, const struct sess *s, const char *what)
{
    const char *home = getenv("EVOLVE_HOME"), *user = getenv("HOME");
    static atomic_uint counter;

    if (home && *home)
        snprintf(buf, size, "%s/staging/%s-%s-%ld-%u", home, what, s->box->id, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
    else
        snprintf(buf, size, "%s/.evolve/staging/%s-%s-%ld-%u", user && *user ? user : ".", what,
                 s->box->id, (long)getpid(), atomic_fetch_add(&counter, 1));
}

/* ---- checkpoint -------------------------------------------------------------------------- */

struct ckpt_ctx {
    struct call *c;
    bool automatic;
    bool staged; /* home is a staging copy of a remote sandbox, removed after the checkpoint */
    char tag[64];
    char *comment;
};

static void cc_tag_attach(struct sess_job *j, struct ckpt_ctx *cc)
{
    j->ctx = cc;
}

static void checkpoint_fn(struct sess_job *j)
{
    evolve_checkpoint_options_t o = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    struct sess *s = j->s;

    /* Read-only fields of the session configuration plus copies made on the actor: safe here. */
    o.agent_type = s->ev->agent->name;
    o.model = s->ev->model ? s->ev->model : s->ev->agent->default_model;
    o.workspace_mode = s->ev->workspace_mode;
    o.parent_id = j->id;
    o.comment = j->comment;
    o.tag = ((struct ckpt_ctx *)j->ctx)->tag;
    j->rc = evolve_store_checkpoint(&j->info, s->ev->store, j->home, &o);
    if (j->rc < 0)
        snprintf(j->err, sizeof(j->err), "%s", evolve_error_last()->message);
    if (((struct ckpt_ctx *)j->ctx)->staged)
        sess_stage_remove(j->home);
}

static void checkpoint_done(struct sess *s, struct sess_job *j)
{
    struct ckpt_ctx *cc = j->ctx;
    struct call *c = cc->c;
    char *json = NULL;

    if (j->rc == 0) {
        snprintf(s->last_checkpoint, sizeof(s->last_checkpoint), "%s", j->info->id);
        json = evolve_checkpoint_info_to_json(j->info, false);
    }
    if (cc->automatic) {
        /* A failed auto-checkpoint is a warning, never a failed run (the reference's rule). */
        if (j->rc < 0)
            core_log_warn("[Evolve] Auto-checkpoint failed: %s", j->err);
        else if (json && c->result)
            sess_result_set_checkpoint(c->result, json);
        free(json);
        sess_call_complete(c, 0);
    } else if (j->rc < 0) {
        free(json);
        sess_call_fail(c, j->rc, "%s", j->err);
    } else {
        c->text_out = json;
        if (!json)
            sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        else
            sess_call_complete(c, 0);
    }
    free(cc->comment);
    free(cc);
}

static int start_checkpoint_job(struct sess *s, struct ckpt_ctx *cc, const char *home)
{
    struct sess_job *j = calloc(1, sizeof(*j));

    if (!j)
        return core_error_oom();
    j->fn = checkpoint_fn;
    j->done = checkpoint_done;
    j->home = strdup(home);
    j->id = s->last_checkpoint[0] ? strdup(s->last_checkpoint) : NULL;
    j->comment = cc->comment;
    cc->comment = NULL;
    if (!j->home) {
        free(j->id);
        free(j->comment);
        free(j);
        return core_error_oom();
    }
    /* The tag is read by the job: it points into cc, which lives until checkpoint_done. */
    cc_tag_attach(j, cc);
    if (sess_job_start(s, j) < 0) {
        j->ctx = NULL;
        job_msg_free(&j->hdr);
        return core_error_set(EVOLVE_ESHUTDOWN, "the runtime is shutting down");
    }
    return 0;
}

/* A remote sandbox's tree has arrived in the staging dir: checkpoint it like a local one. */
static void staged_for_checkpoint(struct sess *s, int rc, const char *err, const char *staging,
                                  void *ctx)
{
    struct ckpt_ctx *cc = ctx;
    struct sess_job fake = {0};

    if (rc == 0)
        rc = start_checkpoint_job(s, cc, staging);
    if (rc == 0)
        return;
    sess_stage_remove(staging);
    /* Report through the same path as a failed job. */
    fake.rc = rc;
    snprintf(fake.err, sizeof(fake.err), "%s", err ? err : evolve_error_last()->message);
    fake.ctx = cc;
    checkpoint_done(s, &fake);
}

static int start_checkpoint(struct sess *s, struct call *c, bool automatic, const char *comment)
{
    struct ckpt_ctx *cc;
    const char *home = NULL;
    char staging[4096];
    int rc;

    if (!s->box)
        return core_error_set(EVOLVE_ENOTFOUND, "No active sandbox. Call run() first.");
    if (!is_remote(s) && !(home = sess_host_home(s)))
        return evolve_error_last()->code;
    cc = calloc(1, sizeof(*cc));
    if (!cc)
        return core_error_oom();
    cc->c = c;
    cc->automatic = automatic;
    snprintf(cc->tag, sizeof(cc->tag), "%s", s->tag);
    if (comment && !(cc->comment = strdup(comment))) {
        free(cc);
        return core_error_oom();
    }
    if (home) {
        rc = start_checkpoint_job(s, cc, home);
    } else {
        cc->staged = true;
        staging_path(staging, sizeof(staging), s, "ckpt");
        rc = sess_stage_download(s, staging, staged_for_checkpoint, cc);
    }
    if (rc < 0) {
        free(cc->comment);
        free(cc);
    }
    return rc;
}

void sess_auto_checkpoint(struct sess *s, struct call *c)
{
    if (start_checkpoint(s, c, true, c->run.checkpoint_comment) < 0) {
        core_log_warn("[Evolve] Auto-checkpoint failed: %s", evolve_error_last()->message);
        sess_call_complete(c, 0);
    }
}

void sess_checkpoint_call(struct sess *s, struct call *c)
{
    int rc;

    if (!s->ev->store) {
        sess_call_fail(c, EVOLVE_EINVAL, "Storage not configured. Call .withStorage().");
        return;
    }
    if (!s->box) {
        sess_call_fail(c, EVOLVE_ENOTFOUND, "No active sandbox. Call run() first.");
        return;
    }
    if (s->active) {
        sess_call_fail(c, EVOLVE_EBUSY, "a run or command is active; checkpoint after it ends");
        return;
    }
    rc = start_checkpoint(s, c, false, c->text);
    if (rc < 0)
        sess_call_fail(c, rc, "%s", evolve_error_last()->message);
}

/* ---- restore ----------------------------------------------------------------------------- */

int sess_prepare_restore(struct sess *s, struct call *c)
{
    const char *from = c->run.from;
    evolve_checkpoint_info_t *info = NULL;
    int rc;

    if (!s->ev->store)
        return sess_call_fail(c, EVOLVE_EINVAL, "%s",
                              !strcmp(from, "latest")
                                  ? "Storage not configured. Call .withStorage() before using "
                                    "from: \"latest\"."
                                  : "Storage not configured. Call .withStorage() before using "
                                    "'from'.");
    rc = evolve_store_get(&info, s->ev->store, from);
    if (rc == EVOLVE_ENOTFOUND && !strcmp(from, "latest"))
        return sess_call_fail(c, rc, "No checkpoints found for from: \"latest\".");
    if (rc < 0)
        return sess_call_fail(c, rc, "%s", evolve_error_last()->message);
    if (info->agent_type && strcmp(info->agent_type, s->ev->agent->name)) {
        rc = sess_call_fail(c, EVOLVE_EINVAL,
                            "Cannot restore checkpoint: agent type mismatch (checkpoint: %s, "
                            "current: %s)",
                            info->agent_type, s->ev->agent->name);
        evolve_checkpoint_info_free(info);
        return rc;
    }
    if (info->workspace_mode && strcmp(info->workspace_mode, s->ev->workspace_mode)) {
        rc = sess_call_fail(c, EVOLVE_EINVAL,
                            "Cannot restore checkpoint: workspace mode mismatch (checkpoint: %s, "
                            "current: %s)",
                            info->workspace_mode, s->ev->workspace_mode);
        evolve_checkpoint_info_free(info);
        return rc;
    }
    free(s->restore_from);
    s->restore_from = strdup(info->id);
    evolve_checkpoint_info_free(info);
    return s->restore_from ? 0 : sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
}

/* Moves everything under src into dst, replacing what is there (the fresh sandbox's empty
 * layout directories merge with the restored ones). Both are on one filesystem. */
static int merge_move(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    struct dirent *e;
    int rc = 0;

    if (!d)
        return -1;
    while (rc == 0 && (e = readdir(d))) {
        char s[4096], t[4096];
        struct stat ss, ts;

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(s, sizeof(s), "%s/%s", src, e->d_name);
        snprintf(t, sizeof(t), "%s/%s", dst, e->d_name);
        if (lstat(s, &ss) < 0) {
            rc = -1;
            break;
        }
        if (lstat(t, &ts) == 0 && S_ISDIR(ts.st_mode) && S_ISDIR(ss.st_mode)) {
            rc = merge_move(s, t);
            if (rc == 0)
                rmdir(s);
            continue;
        }
        if (rename(s, t) < 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

struct restore_ctx {
    void (*then)(struct sess *s, int rc, const char *err);
    bool remote; /* restore into a staging dir, then upload it into the sandbox */
};

static void restore_fn(struct sess_job *j)
{
    char tmp[4096];

    if (((struct restore_ctx *)j->ctx)->remote) {
        /* j->home is the staging dir: the upload happens on the actor afterwards. */
        j->rc = evolve_store_restore(&j->info, j->s->ev->store, j->id, j->home);
        if (j->rc < 0)
            snprintf(j->err, sizeof(j->err), "%s", evolve_error_last()->message);
        return;
    }
    snprintf(tmp, sizeof(tmp), "%s/../../restore-%s", j->home, j->id);
    j->rc = evolve_store_restore(&j->info, j->s->ev->store, j->id, tmp);
    if (j->rc < 0) {
        snprintf(j->err, sizeof(j->err), "%s", evolve_error_last()->message);
        return;
    }
    if (merge_move(tmp, j->home) < 0) {
        j->rc =
            core_error_set(EVOLVE_EIO, "restoring %s into the sandbox: %s", j->id, strerror(errno));
        snprintf(j->err, sizeof(j->err), "%s", evolve_error_last()->message);
    }
    rmdir(tmp);
}

static void uploaded(struct sess *s, int rc, const char *err, const char *staging, void *ctx)
{
    struct restore_ctx *r = ctx;

    sess_stage_remove(staging);
    if (rc == 0)
        s->has_run = true;
    r->then(s, rc, err);
    free(r);
}

static void restore_done(struct sess *s, struct sess_job *j)
{
    struct restore_ctx *rc = j->ctx;

    if (rc->remote) {
        if (j->rc == 0) {
            snprintf(s->last_checkpoint, sizeof(s->last_checkpoint), "%s", j->id);
            if (sess_stage_upload(s, j->home, uploaded, rc) == 0)
                return;
            j->rc = evolve_error_last()->code;
            snprintf(j->err, sizeof(j->err), "%s", evolve_error_last()->message);
        }
        sess_stage_remove(j->home);
        rc->then(s, j->rc, j->err);
        free(rc);
        return;
    }
    if (j->rc == 0) {
        snprintf(s->last_checkpoint, sizeof(s->last_checkpoint), "%s", j->id);
        s->has_run = true;
    }
    rc->then(s, j->rc, j->err);
    free(rc);
}

void sess_restore_into_box(struct sess *s, void (*then)(struct sess *s, int rc, const char *err))
{
    struct sess_job *j = calloc(1, sizeof(*j));
    struct restore_ctx *rc = calloc(1, sizeof(*rc));
    char staging[4096];
    const char *home;

    if (s->box && is_remote(s)) {
        char *slash;

        staging_path(staging, sizeof(staging), s, "restore");
        home = staging;
        /* The store restores into a missing directory; its parent must exist. */
        slash = strrchr(staging, '/');
        if (slash) {
            *slash = '\0';
            mkdir(staging, 0755);
            *slash = '/';
        }
        if (rc)
            rc->remote = true;
    } else {
        home = sess_host_home(s);
    }
    if (!j || !rc || !home) {
        free(j);
        free(rc);
        then(s, home ? EVOLVE_ENOMEM : evolve_error_last()->code,
             home ? "out of memory" : evolve_error_last()->message);
        return;
    }
    rc->then = then;
    j->fn = restore_fn;
    j->done = restore_done;
    j->ctx = rc;
    j->home = strdup(home);
    j->id = strdup(s->restore_from);
    if (!j->home || !j->id || sess_job_start(s, j) < 0) {
        j->ctx = NULL;
        job_msg_free(&j->hdr);
        free(rc);
        then(s, EVOLVE_ENOMEM, "could not start the restore");
    }
}
