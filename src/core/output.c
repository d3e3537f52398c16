/* output.c — output files of a turn (seed 002 getOutputFiles) and saving them locally.
 * Owns: the turn filter (files modified since the last run or command started, minus 2 s of clock
 * skew), the OutputResult JSON with schema validation of output/result.json, and the confined
 * local writer behind evolve_save_local_dir.
 * Threads: sess_output_* on the session actor; evolve_save_local_dir on the caller's thread. */
#include "core/session_int.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/schema.h"

#define OUTPUT_DIR "workspace/output"

struct out_file {
    char *rel; /* path relative to output/ */
    struct prov_buf *buf;
};

struct out_job {
    struct call *c;
    int64_t since_ms; /* files at or after this mtime count; 0: all */
    size_t lists_pending;
    size_t reads_pending;
    struct out_file *files;
    size_t count, cap;
    int rc;
    char err[512];
};

static void job_free(struct out_job *j)
{
    size_t i;

    for (i = 0; i < j->count; i++) {
        free(j->files[i].rel);
        prov_buf_free(j->files[i].buf);
    }
    free(j->files);
    free(j);
}

static void job_error(struct out_job *j, int rc, const char *msg)
{
    if (j->rc == 0) {
        j->rc = rc;
        snprintf(j->err, sizeof(j->err), "%s", msg);
    }
}

/* One directory listing in flight: which job, and which directory (relative to output/). */
struct out_listing {
    struct out_job *j;
    char rel[];
};

static int list_dir(struct sess *s, struct out_job *j, const char *rel)
{
    char path[1024];
    struct prov_done_msg *m;
    struct out_listing *l = malloc(sizeof(*l) + strlen(rel) + 1);
    int rc;

    if (!l)
        return core_error_oom();
    l->j = j;
    memcpy(l->rel, rel, strlen(rel) + 1);
    snprintf(path, sizeof(path), "%s%s%s", OUTPUT_DIR, *rel ? "/" : "", rel);
    m = sess_prov_msg(s, STEP_OUT_LIST, l);
    if (!m) {
        free(l);
        return EVOLVE_ENOMEM;
    }
    rc = s->prov->ops->list_dir(s->box, path, sess_prov_done, m);
    if (rc < 0) {
        sess_prov_msg_cancel(s, m);
        free(l);
        return rc;
    }
    j->lists_pending++;
    return 0;
}

void sess_output_files(struct sess *s, struct call *c)
{
    struct out_job *j = calloc(1, sizeof(*j));
    int rc;

    if (!j) {
        sess_call_fail(c, EVOLVE_ENOMEM, "out of memory");
        return;
    }
    j->c = c;
    /* Two seconds of slack for clock skew between evolve and the sandbox, as the reference. */
    j->since_ms = s->last_op_ms ? (s->last_op_ms / 1000 - 2) * 1000 : 0;
    rc = list_dir(s, j, "");
    if (rc < 0) {
        sess_call_fail(c, rc, "%s", evolve_error_last()->message);
        job_free(j);
    }
}

static char *b64(const unsigned char *data, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1);

    if (out)
        EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

static void finish_job(struct sess *s, struct out_job *j)
{
    json_t *files = json_object(), *out = json_object(), *data = json_null();
    struct out_file *result = NULL;
    size_t i;

    if (j->rc < 0) {
        sess_call_fail(j->c, j->rc, "%s", j->err);
        goto done;
    }
    for (i = 0; i < j->count; i++) {
        struct out_file *f = &j->files[i];
        json_t *v;

        if (!f->buf)
            continue;
        v = json_stringn((const char *)f->buf->data, f->buf->len);
        if (!v) { /* binary: not valid UTF-8 */
            char *enc = b64(f->buf->data, f->buf->len);
            v = enc ? json_pack("{s:s}", "base64", enc) : NULL;
            free(enc);
        }
        if (v)
            json_object_set_new(files, f->rel, v);
        if (!strcmp(f->rel, "result.json"))
            result = f;
    }
    json_object_set(out, "files", files);
    if (s->ev->schema) {
        if (!result) {
            json_object_set_new(out, "error",
                                json_string("Schema provided but agent did not create "
                                            "output/result.json"));
        } else {
            json_error_t err;
            json_t *parsed = json_loadb((const char *)result->buf->data, result->buf->len,
                                        JSON_DECODE_ANY, &err);
            char msg[700];

            json_object_set_new(out, "rawData",
                                json_stringn((const char *)result->buf->data, result->buf->len));
            if (!parsed) {
                snprintf(msg, sizeof(msg), "Failed to parse result.json: %s", err.text);
                json_object_set_new(out, "error", json_string(msg));
            } else if (core_schema_validate(s->ev->schema, parsed) < 0) {
                snprintf(msg, sizeof(msg), "Schema validation failed: %s",
                         evolve_error_last()->message);
                json_object_set_new(out, "error", json_string(msg));
                json_decref(parsed);
            } else {
                json_decref(data);
                data = parsed;
                json_object_del(out, "rawData");
            }
        }
    }
    json_object_set(out, "data", data);
    j->c->text_out = json_dumps(out, JSON_COMPACT);
    if (!j->c->text_out)
        sess_call_fail(j->c, EVOLVE_ENOMEM, "out of memory");
    else
        sess_call_complete(j->c, 0);
done:
    json_decref(files);
    json_decref(out);
    json_decref(data);
    job_free(j);
}

static void start_reads(struct sess *s, struct out_job *j)
{
    size_t i;

    for (i = 0; i < j->count; i++) {
        struct out_file *f = &j->files[i];
        struct prov_done_msg *m;
        char path[1024];

        snprintf(path, sizeof(path), "%s/%s", OUTPUT_DIR, f->rel);
        m = sess_prov_msg(s, STEP_OUT_READ, j);
        if (!m) {
            job_error(j, EVOLVE_ENOMEM, "out of memory");
            break;
        }
        m->generation = i; /* which file: completions arrive in any order */
        if (s->prov->ops->read_file(s->box, path, sess_prov_done, m) < 0) {
            sess_prov_msg_cancel(s, m);
            continue; /* the reference skips files it cannot read */
        }
        j->reads_pending++;
    }
    if (j->reads_pending == 0)
        finish_job(s, j);
}

static int add_file(struct out_job *j, const char *rel)
{
    if (j->count == j->cap) {
        size_t ncap = j->cap ? j->cap * 2 : 16;
        struct out_file *nf = realloc(j->files, ncap * sizeof(*nf));

        if (!nf)
            return core_error_oom();
        j->files = nf;
        j->cap = ncap;
    }
    j->files[j->count].rel = strdup(rel);
    j->files[j->count].buf = NULL;
    if (!j->files[j->count].rel)
        return core_error_oom();
    j->count++;
    return 0;
}

void sess_output_prov_done(struct sess *s, struct prov_done_msg *m)
{
    struct out_job *j = m->ctx;

    if (m->step == STEP_OUT_READ) {
        size_t i = (size_t)m->generation;

        if (m->status.code == 0 && i < j->count)
            j->files[i].buf = m->result;
        else if (m->result)
            prov_buf_free(m->result);
        if (--j->reads_pending == 0)
            finish_job(s, j);
        return;
    }
    /* STEP_OUT_LIST */
    {
        struct out_listing *l = m->ctx;

        j = l->j;
        j->lists_pending--;
        if (m->status.code < 0) {
            /* No output/ directory yet is an empty result, not an error. */
            if (m->status.code != EVOLVE_ENOTFOUND)
                job_error(j, m->status.code, m->status.message);
        } else {
            struct prov_dir *d = m->result;
            size_t k;

            for (k = 0; d && k < d->count; k++) {
                char rel[1024];

                snprintf(rel, sizeof(rel), "%s%s%s", l->rel, *l->rel ? "/" : "", d->items[k].name);
                if (d->items[k].type == PROV_DT_DIR) {
                    if (j->c->recursive && list_dir(s, j, rel) < 0)
                        job_error(j, EVOLVE_ENOMEM, "out of memory");
                } else if (d->items[k].type == PROV_DT_FILE &&
                           (j->since_ms == 0 || d->items[k].mtime_ms >= j->since_ms)) {
                    if (add_file(j, rel) < 0)
                        job_error(j, EVOLVE_ENOMEM, "out of memory");
                }
            }
            prov_dir_free(d);
        }
        free(l);
    }
    if (j->lists_pending == 0) {
        if (j->rc < 0)
            finish_job(s, j);
        else
            start_reads(s, j);
    }
}

/* ---- saving locally (caller's thread) ------------------------------------------------------ */

/* Writes `rel` under the directory `rootfd` without ever leaving it: absolute names, "..", empty
 * components and symlinks anywhere on the way (or as the file itself) are refused. */
static int write_confined(int rootfd, const char *root, const char *rel, const void *data,
                          size_t len)
{
    char buf[4096], *comp, *slash;
    int dirfd = rootfd, fd, rc = 0;
    size_t off = 0;

    if (rel[0] == '/' || strlen(rel) >= sizeof(buf))
        return core_error_set(EVOLVE_EUNSAFE, "%s: refusing \"%s\": absolute or too long", root,
                              rel);
    memcpy(buf, rel, strlen(rel) + 1);
    for (comp = buf;; comp = slash + 1) {
        int next;

        slash = strchr(comp, '/');
        if (slash)
            *slash = '\0';
        if (!*comp || !strcmp(comp, ".") || !strcmp(comp, "..")) {
            rc = core_error_set(EVOLVE_EUNSAFE,
                                "%s: refusing \"%s\": it climbs out of the "
                                "destination",
                                root, rel);
            break;
        }
        if (!slash) {
            fd = openat(dirfd, comp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd < 0) {
                rc = core_error_set(errno == ELOOP ? EVOLVE_EUNSAFE : EVOLVE_EIO,
                                    "%s: cannot write \"%s\": %s", root, rel,
                                    errno == ELOOP ? "it is a symlink" : strerror(errno));
                break;
            }
            while (off < len) {
                ssize_t n = write(fd, (const char *)data + off, len - off);

                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    rc = core_error_set(EVOLVE_EIO, "%s: writing \"%s\": %s", root, rel,
                                        strerror(errno));
                    break;
                }
                off += (size_t)n;
            }
            close(fd);
            break;
        }
        if (mkdirat(dirfd, comp, 0755) < 0 && errno != EEXIST) {
            rc = core_error_set(EVOLVE_EIO, "%s: cannot create \"%s\": %s", root, rel,
                                strerror(errno));
            break;
        }
        next = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            rc = core_error_set(EVOLVE_EUNSAFE,
                                "%s: refusing \"%s\": \"%s\" is a symlink or not "
                                "a directory",
                                root, rel, comp);
            break;
        }
        if (dirfd != rootfd)
            close(dirfd);
        dirfd = next;
    }
    if (dirfd != rootfd)
        close(dirfd);
    return rc;
}

static unsigned char *b64_decode(const char *in, size_t *len_out)
{
    size_t n = strlen(in), pad = 0;
    unsigned char *out = malloc(n / 4 * 3 + 3);
    int got;

    if (!out)
        return NULL;
    got = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
    if (got < 0) {
        free(out);
        return NULL;
    }
    if (n >= 1 && in[n - 1] == '=')
        pad++;
    if (n >= 2 && in[n - 2] == '=')
        pad++;
    *len_out = (size_t)got - pad;
    return out;
}

static const char *b64_field(const json_t *v)
{
    const char *s = json_string_value(json_object_get(v, "base64"));

    return s ? s : "";
}

int evolve_save_local_dir(evolve_t *ev, const char *dir, bool recursive)
{
    char *text = NULL;
    json_t *res, *files, *v;
    const char *rel;
    int rootfd, rc;

    if (!dir || !*dir)
        return core_error_set(EVOLVE_EINVAL, "evolve_save_local_dir: a directory is required");
    rc = evolve_get_output_files(&text, ev, recursive);
    if (rc < 0)
        return rc;
    res = json_loads(text, 0, NULL);
    free(text);
    if (!res)
        return core_error_oom();
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        json_decref(res);
        return core_error_set(EVOLVE_EIO, "%s: %s", dir, strerror(errno));
    }
    rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        json_decref(res);
        return core_error_set(EVOLVE_EIO, "%s: %s", dir, strerror(errno));
    }
    files = json_object_get(res, "files");
    json_object_foreach(files, rel, v)
    {
        if (json_is_string(v)) {
            rc = write_confined(rootfd, dir, rel, json_string_value(v), json_string_length(v));
        } else {
            size_t n = 0;
            unsigned char *bytes = b64_decode(b64_field(v), &n);

            rc = bytes ? write_confined(rootfd, dir, rel, bytes, n) : core_error_oom();
            free(bytes);
        }
        if (rc < 0)
            break;
    }
    close(rootfd);
    json_decref(res);
    return rc;
}
