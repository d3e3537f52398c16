/* e2b_files.c — files of an E2B sandbox: envd's /files (raw octet-stream upload, download),
 * filesystem.Filesystem/ListDir and MakeDir (Connect unary, JSON codec), and the workspace
 * layout made right after create.
 * Threads: ops from any thread; completions on the reactor thread. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "providers/e2b_int.h"

enum { F_WRITE = 1, F_READ, F_LIST };

static void on_files_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct prov_status st = {0};
    struct prov_buf *buf = NULL;

    if (rep->res->code < 0 || rep->res->status < 200 || rep->res->status >= 300) {
        cloud_status_from(&st, rep, op->what);
    } else if (op->kind == F_READ) {
        buf = malloc(sizeof(*buf));
        if (buf)
            buf->data = malloc(rep->len + 1);
        if (!buf || !buf->data) {
            free(buf);
            buf = NULL;
            cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", op->what);
        } else {
            memcpy(buf->data, rep->body, rep->len);
            buf->data[rep->len] = '\0';
            buf->len = rep->len;
        }
    }
    e2b_op_finish(op, &st, buf);
}

static int files_start(struct prov_box *box, int kind, const char *verb, const char *path,
                       const void *data, size_t len, prov_done_cb done, void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct io_http_request rq;
    struct e2b_op *op;
    char abs[1024], what[1200], url[3000], *enc;
    const char *h[10];
    size_t n;
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b %s: box and done are required", verb);
    rc = cloud_sandbox_path(abs, sizeof(abs), path);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof(what), "e2b %s %s in %s", verb, abs, box->id);
    op = e2b_op_new((struct e2b_prov *)box->prov, b->sbx, done, payload, kind, what);
    if (!op)
        return EVOLVE_ENOMEM;
    enc = curl_easy_escape(NULL, abs, 0);
    if (!enc) {
        e2b_op_free(op);
        return core_error_oom();
    }
    n = e2b_envd_headers(b->sbx, h);
    if (kind == F_WRITE)
        h[n++] = "Content-Type: application/octet-stream";
    h[n] = NULL;
    snprintf(url, sizeof(url), "%s/files?path=%s&username=user", b->sbx->envd_url, enc);
    curl_free(enc);
    memset(&rq, 0, sizeof(rq));
    rq.method = kind == F_WRITE ? "POST" : "GET";
    rq.url = url;
    rq.headers = h;
    rq.body = kind == F_WRITE ? (data ? data : "") : NULL;
    rq.body_len = len;
    rq.timeout_ms = 300000;
    rq.idempotent = true; /* an upload replaces the file: repeating it is harmless */
    rq.retry.max_attempts = 3;
    rc = cloud_call_start(op->p->r, &rq, 0, on_files_reply, op);
    if (rc < 0)
        e2b_op_free(op);
    return rc;
}

int e2b_write_file(struct prov_box *box, const char *path, const void *data, size_t len,
                   prov_done_cb done, void *payload)
{
    return files_start(box, F_WRITE, "write_file", path, data, len, done, payload);
}

int e2b_read_file(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    return files_start(box, F_READ, "read_file", path, NULL, 0, done, payload);
}

/* ---- ListDir --------------------------------------------------------------------------------- */

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const struct prov_dirent *)a)->name, ((const struct prov_dirent *)b)->name);
}

static void on_list_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct prov_status st = {0};
    struct prov_dir *dir = NULL;
    json_t *j = NULL, *entries, *it;
    size_t i;

    if (e2b_connect_status(&st, rep, op->what) < 0)
        goto out;
    j = json_loadb(rep->body, rep->len, 0, NULL);
    entries = json_object_get(j, "entries");
    if (!json_is_object(j) || (entries && !json_is_array(entries))) {
        cloud_status_set(&st, EVOLVE_EPROTO, "%s: reply has no entries array", op->what);
        goto out;
    }
    dir = calloc(1, sizeof(*dir));
    if (dir && json_array_size(entries))
        dir->items = calloc(json_array_size(entries), sizeof(*dir->items));
    if (!dir || (json_array_size(entries) && !dir->items)) {
        cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", op->what);
        goto out;
    }
    json_array_foreach(entries, i, it)
    {
        struct prov_dirent *d = &dir->items[dir->count];
        const char *name = json_string_value(json_object_get(it, "name"));
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *size = json_string_value(json_object_get(it, "size"));
        long long mt = cloud_rfc3339_ms(json_string_value(json_object_get(it, "modifiedTime")));

        if (!name || !(d->name = strdup(name)))
            continue;
        d->type = !type                                  ? PROV_DT_OTHER
                  : !strcmp(type, "FILE_TYPE_FILE")      ? PROV_DT_FILE
                  : !strcmp(type, "FILE_TYPE_DIRECTORY") ? PROV_DT_DIR
                  : !strcmp(type, "FILE_TYPE_SYMLINK")   ? PROV_DT_SYMLINK
                                                         : PROV_DT_OTHER;
        d->size = size ? strtoull(size, NULL, 10)
                       : (uint64_t)json_integer_value(json_object_get(it, "size"));
        d->mode = (unsigned)json_integer_value(json_object_get(it, "mode")) & 07777;
        d->mtime_ms = mt < 0 ? 0 : mt;
        dir->count++;
    }
    if (dir->count > 1)
        qsort(dir->items, dir->count, sizeof(*dir->items), cmp_dirent);
out:
    json_decref(j);
    if (st.code < 0) {
        prov_dir_free(dir);
        dir = NULL;
    }
    e2b_op_finish(op, &st, dir);
}

int e2b_list_dir(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    struct e2b_box *b = (struct e2b_box *)box;
    struct e2b_op *op;
    char abs[1024], what[1200];
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "e2b list_dir: box and done are required");
    rc = cloud_sandbox_path(abs, sizeof(abs), path);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof(what), "e2b list_dir %s in %s", abs, box->id);
    op = e2b_op_new((struct e2b_prov *)box->prov, b->sbx, done, payload, F_LIST, what);
    if (!op)
        return EVOLVE_ENOMEM;
    rc = e2b_unary(op, "/filesystem.Filesystem/ListDir",
                   json_pack("{s:s, s:i}", "path", abs, "depth", 1), on_list_reply);
    if (rc < 0)
        e2b_op_free(op);
    return rc;
}

/* ---- workspace layout after create ------------------------------------------------------------
 */

static const char *const layout_dirs[] = {
    CLOUD_HOME "/workspace/context", CLOUD_HOME "/workspace/scripts", CLOUD_HOME "/workspace/temp",
    CLOUD_HOME "/workspace/output"};
#define NLAYOUT (sizeof(layout_dirs) / sizeof(layout_dirs[0]))

struct layout {
    struct e2b_op *op; /* the create */
    struct e2b_box *box;
    int pending;
    struct prov_status st;
};

static void ignore_done(void *payload, const struct prov_status *st, void *result)
{
    (void)payload;
    (void)st;
    (void)result;
}

static void layout_step_done(struct layout *l)
{
    if (--l->pending > 0)
        return;
    if (l->st.code < 0) {
        /* The sandbox exists but is unusable: the caller never sees it, so kill it here. */
        struct prov_box *b = &l->box->base;

        prov_e2b_kill_id(b->prov, b->id, ignore_done, NULL);
        b->prov->ops->box_free(b);
        e2b_op_finish(l->op, &l->st, NULL);
    } else {
        e2b_op_finish(l->op, &l->st, l->box);
    }
    free(l);
}

static void on_mkdir_reply(const struct cloud_reply *rep, void *payload)
{
    struct e2b_op *op = payload;
    struct layout *l = op->payload;
    struct prov_status st = {0};

    if (e2b_connect_status(&st, rep, op->what) < 0 && st.code != EVOLVE_EEXISTS && l->st.code == 0)
        l->st = st;
    e2b_op_free(op);
    layout_step_done(l);
}

void e2b_layout_workspace(struct e2b_op *create, struct e2b_box *box)
{
    struct layout *l = calloc(1, sizeof(*l));
    size_t i;

    if (!l) {
        struct prov_status st;

        cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", create->what);
        box->base.prov->ops->box_free(&box->base);
        e2b_op_finish(create, &st, NULL);
        return;
    }
    l->op = create;
    l->box = box;
    l->pending = 1;
    for (i = 0; i < NLAYOUT; i++) {
        struct e2b_op *op = e2b_op_new(create->p, box->sbx, NULL, l, 0, create->what);

        if (!op) {
            cloud_status_set(&l->st, EVOLVE_ENOMEM, "%s: out of memory", create->what);
            break;
        }
        l->pending++;
        if (e2b_unary(op, "/filesystem.Filesystem/MakeDir",
                      json_pack("{s:s}", "path", layout_dirs[i]), on_mkdir_reply) < 0) {
            e2b_op_free(op);
            l->pending--;
            cloud_status_set(&l->st, EVOLVE_ERROR, "%s: %s", create->what,
                             evolve_error_last()->message);
            break;
        }
    }
    layout_step_done(l);
}
