/* checkpoint.c — the session's use of the checkpoint store: auto-checkpoint after a successful
 * foreground run, explicit checkpoints, and restoring a checkpoint into a fresh sandbox.
 * Owns: lineage (each checkpoint's parent is the session's previous one; restoring from X makes X
 * the parent of the next), the reference's error strings for storage, and running the store's
 * CPU- and disk-heavy work as jobs on the worker pool so the session actor never blocks.
 * Threads: job fns on a worker; everything else on the session actor. */
#include "core/session_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/runtime_public.h"
#include "core/error.h"
#include "core/log.h"
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
        core_error_set(EVOLVE_EUNSUPPORTED, "checkpoints of %s sandboxes are not supported yet",
                       s->prov->ops->name);
        return NULL;
    }
    return prov_local_box_home(prov_local_box_from(s->box));
}

/* ---- checkpoint -------------------------------------------------------------------------- */

struct ckpt_ctx {
    struct call *c;
    bool automatic;
    char tag[64];
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
    free(cc);
}

static int start_checkpoint(struct sess *s, struct call *c, bool automatic, const char *comment)
{
    struct sess_job *j = calloc(1, sizeof(*j));
    struct ckpt_ctx *cc = calloc(1, sizeof(*cc));
    const char *home = sess_host_home(s);

    if (!home) {
        free(j);
        free(cc);
        return evolve_error_last()->code;
    }
    if (!j || !cc) {
        free(j);
        free(cc);
        return core_error_oom();
    }
    cc->c = c;
    cc->automatic = automatic;
    snprintf(cc->tag, sizeof(cc->tag), "%s", s->tag);
    j->fn = checkpoint_fn;
    j->done = checkpoint_done;
    j->ctx = cc;
    j->home = strdup(home);
    j->id = s->last_checkpoint[0] ? strdup(s->last_checkpoint) : NULL;
    j->comment = comment ? strdup(comment) : NULL;
    if (!j->home) {
        free(cc);
        free(j->id);
        free(j->comment);
        free(j);
        return core_error_oom();
    }
    /* The tag is read by the job: it points into cc, which lives until checkpoint_done. */
    cc_tag_attach(j, cc);
    if (sess_job_start(s, j) < 0) {
        free(cc);
        j->ctx = NULL;
        job_msg_free(&j->hdr);
        return core_error_set(EVOLVE_ESHUTDOWN, "the runtime is shutting down");
    }
    return 0;
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
};

static void restore_fn(struct sess_job *j)
{
    char tmp[4096];

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

static void restore_done(struct sess *s, struct sess_job *j)
{
    struct restore_ctx *rc = j->ctx;

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
    const char *home = sess_host_home(s);

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
