/* stage.c — moving a remote sandbox's checkpointed files through this host: download the
 * workspace and the agent's state dirs into a local staging directory (for a checkpoint), and
 * upload a restored tree into a fresh remote sandbox. The store only ever sees a local tree, so
 * remote checkpoints get the same dedup, determinism and verification as local ones.
 * Owns: the staging directory's life and the fan-out of provider list/read/write ops.
 * Does not own: what a checkpoint contains (storage applies its excludes again on the tree).
 * Threads: the session actor (provider completions arrive as MSG_PROV_DONE). Costs: files are
 * transferred one provider call each; a restore holds the whole tree in memory while uploading.
 * Symlinks and special files of a remote sandbox are not staged (the providers' file APIs
 * follow or refuse them). */
#include "core/session_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/stage.h"
#include "storage/storage.h"

struct stage {
    struct sess *s;
    char *dir;      /* local staging directory */
    size_t pending; /* provider ops in flight */
    int rc;
    char err[512];
    sess_stage_done_fn then;
    void *ctx;
    const char *const *agent_excl;
};

/* One provider op of the fan-out: which stage, which path (relative to the sandbox home). */
struct stage_op {
    struct stage *st;
    unsigned mode;
    long long mtime_ms;
    char *data; /* uploads: the bytes being written */
    char rel[];
};

static void stage_error(struct stage *st, int rc, const char *msg)
{
    if (st->rc == 0) {
        st->rc = rc;
        snprintf(st->err, sizeof(st->err), "%s", msg);
    }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void sess_stage_remove(const char *dir)
{
    if (dir && strlen(dir) > 1)
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int mkdirs(const char *path, size_t upto)
{
    char buf[4096];
    size_t i;

    if (upto >= sizeof(buf))
        return -1;
    memcpy(buf, path, upto);
    buf[upto] = '\0';
    for (i = 1; i <= upto; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];

            buf[i] = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    return 0;
}

static struct stage_op *op_new(struct stage *st, const char *rel)
{
    size_t n = strlen(rel) + 1;
    struct stage_op *o = calloc(1, sizeof(*o) + n);

    if (o) {
        o->st = st;
        memcpy(o->rel, rel, n);
    }
    return o;
}

static void finish_if_done(struct sess *s, struct stage *st)
{
    if (st->pending)
        return;
    st->then(s, st->rc, st->rc ? st->err : NULL, st->dir, st->ctx);
    free(st->dir);
    free(st);
}

static void start_list(struct sess *s, struct stage *st, const char *rel)
{
    struct stage_op *o = op_new(st, rel);
    struct prov_done_msg *m = o ? sess_prov_msg(s, STEP_STAGE_LIST, o) : NULL;

    if (!m) {
        free(o);
        stage_error(st, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    if (s->prov->ops->list_dir(s->box, rel, sess_prov_done, m) < 0) {
        sess_prov_msg_cancel(s, m);
        free(o);
        stage_error(st, evolve_error_last()->code, evolve_error_last()->message);
        return;
    }
    st->pending++;
}

static void start_read(struct sess *s, struct stage *st, const char *rel, unsigned mode,
                       long long mtime_ms)
{
    struct stage_op *o = op_new(st, rel);
    struct prov_done_msg *m = o ? sess_prov_msg(s, STEP_STAGE_READ, o) : NULL;

    if (!m) {
        free(o);
        stage_error(st, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    o->mode = mode;
    o->mtime_ms = mtime_ms;
    if (s->prov->ops->read_file(s->box, rel, sess_prov_done, m) < 0) {
        sess_prov_msg_cancel(s, m);
        free(o);
        stage_error(st, evolve_error_last()->code, evolve_error_last()->message);
        return;
    }
    st->pending++;
}

int sess_stage_download(struct sess *s, const char *staging, sess_stage_done_fn then, void *ctx)
{
    struct stage *st = calloc(1, sizeof(*st));
    const char *const *dirs, *const *excl;
    size_t i;
    int rc;

    if (!st)
        return core_error_oom();
    rc = sto_agent_dirs(s->ev->agent->name, &dirs, &excl);
    if (rc < 0) {
        free(st);
        return rc;
    }
    st->s = s;
    st->then = then;
    st->ctx = ctx;
    st->agent_excl = excl;
    st->dir = strdup(staging);
    if (!st->dir || mkdirs(staging, strlen(staging)) < 0) {
        free(st->dir);
        free(st);
        return core_error_set(EVOLVE_EIO, "staging %s: %s", staging, strerror(errno));
    }
    start_list(s, st, "workspace");
    for (i = 0; dirs[i]; i++)
        start_list(s, st, dirs[i]);
    if (st->pending == 0) {
        rc = st->rc ? st->rc : EVOLVE_ERROR;
        core_error_set(rc, "%s", st->rc ? st->err : "nothing to stage");
        free(st->dir);
        free(st);
        return rc;
    }
    return 0;
}

static void on_list(struct sess *s, struct stage_op *o, struct prov_done_msg *m)
{
    struct stage *st = o->st;
    struct prov_dir *d = m->result;
    size_t k;

    if (m->status.code < 0) {
        /* A missing agent dir is not an error (the reference's rule); anything else is. */
        if (m->status.code != EVOLVE_ENOTFOUND)
            stage_error(st, m->status.code, m->status.message);
        return;
    }
    for (k = 0; d && k < d->count; k++) {
        char rel[2048];

        snprintf(rel, sizeof(rel), "%s/%s", o->rel, d->items[k].name);
        if (sto_excluded(rel, "workspace", st->agent_excl))
            continue;
        if (d->items[k].type == PROV_DT_DIR) {
            char local[4096];

            snprintf(local, sizeof(local), "%s/%s", st->dir, rel);
            if (mkdirs(local, strlen(local)) < 0)
                stage_error(st, EVOLVE_EIO, "staging directory could not be created");
            start_list(s, st, rel);
        } else if (d->items[k].type == PROV_DT_FILE) {
            start_read(s, st, rel, d->items[k].mode, d->items[k].mtime_ms);
        }
    }
    prov_dir_free(d);
}

static void on_read(struct stage_op *o, struct prov_done_msg *m)
{
    struct stage *st = o->st;
    struct prov_buf *b = m->result;
    char local[4096];
    size_t off = 0;
    int fd;

    if (m->status.code < 0) {
        stage_error(st, m->status.code, m->status.message);
        return;
    }
    snprintf(local, sizeof(local), "%s/%s", st->dir, o->rel);
    if (mkdirs(local, (size_t)(strrchr(local, '/') - local)) < 0 ||
        (fd = open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, o->mode & 0777)) < 0) {
        stage_error(st, EVOLVE_EIO, "staging a file failed");
        prov_buf_free(b);
        return;
    }
    while (off < b->len) {
        ssize_t n = write(fd, b->data + off, b->len - off);

        if (n <= 0 && errno != EINTR) {
            stage_error(st, EVOLVE_EIO, "staging a file failed");
            break;
        }
        if (n > 0)
            off += (size_t)n;
    }
    /* The mtime is part of the archive: keep the sandbox's, so the same remote tree gives the
     * same checkpoint hash. */
    futimens(fd, (struct timespec[]){{o->mtime_ms / 1000, (o->mtime_ms % 1000) * 1000000L},
                                     {o->mtime_ms / 1000, (o->mtime_ms % 1000) * 1000000L}});
    close(fd);
    prov_buf_free(b);
}

/* ---- upload ---------------------------------------------------------------------------------- */

struct walk {
    struct sess *s;
    struct stage *st;
    size_t root_len;
};

static int upload_file(struct sess *s, struct stage *st, const char *path, const char *rel)
{
    struct stage_op *o = op_new(st, rel);
    struct prov_done_msg *m;
    struct stat sb;
    size_t off = 0;
    int fd = -1;

    if (!o || stat(path, &sb) < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        goto fail;
    o->data = malloc(sb.st_size ? (size_t)sb.st_size : 1);
    if (!o->data)
        goto fail;
    while (off < (size_t)sb.st_size) {
        ssize_t n = read(fd, o->data + off, (size_t)sb.st_size - off);

        if (n <= 0)
            goto fail;
        off += (size_t)n;
    }
    close(fd);
    fd = -1;
    m = sess_prov_msg(s, STEP_STAGE_WRITE, o);
    if (!m)
        goto fail;
    if (s->prov->ops->write_file(s->box, rel, o->data, off, sess_prov_done, m) < 0) {
        sess_prov_msg_cancel(s, m);
        goto fail;
    }
    st->pending++;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    if (o)
        free(o->data);
    free(o);
    stage_error(st, EVOLVE_EIO, "uploading the restored tree failed");
    return -1;
}

static int upload_tree(struct sess *s, struct stage *st, const char *dir, size_t root_len)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[4096];
        struct stat sb;

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &sb) < 0)
            continue;
        if (S_ISDIR(sb.st_mode))
            upload_tree(s, st, path, root_len);
        else if (S_ISREG(sb.st_mode))
            upload_file(s, st, path, path + root_len + 1);
    }
    closedir(d);
    return 0;
}

int sess_stage_upload(struct sess *s, const char *staging, sess_stage_done_fn then, void *ctx)
{
    struct stage *st = calloc(1, sizeof(*st));

    if (!st || !(st->dir = strdup(staging))) {
        free(st);
        return core_error_oom();
    }
    st->s = s;
    st->then = then;
    st->ctx = ctx;
    upload_tree(s, st, staging, strlen(staging));
    /* Even an empty tree completes through `then`, on this turn. */
    finish_if_done(s, st);
    return 0;
}

void sess_stage_prov_done(struct sess *s, struct prov_done_msg *m)
{
    struct stage_op *o = m->ctx;
    struct stage *st = o->st;

    if (m->step == STEP_STAGE_LIST)
        on_list(s, o, m);
    else if (m->step == STEP_STAGE_READ)
        on_read(o, m);
    else if (m->status.code < 0)
        stage_error(st, m->status.code, m->status.message);
    free(o->data);
    free(o);
    st->pending--;
    finish_if_done(s, st);
}
