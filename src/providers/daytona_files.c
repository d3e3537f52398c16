/* daytona_files.c — files of a Daytona sandbox through its toolbox: multipart upload
 * (POST /files/upload, part "file"), download (GET /files/download), listing (GET /files).
 * Threads: ops from any thread; completions on the reactor thread. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "providers/daytona_int.h"

enum { F_WRITE = 1, F_READ, F_LIST };

#define BOUNDARY "evolve-daytona-7d1c0b5e4a"

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const struct prov_dirent *)a)->name, ((const struct prov_dirent *)b)->name);
}

/* "-rwxr-xr-x" (or an octal number string) to permission bits. */
static unsigned mode_bits(json_t *m)
{
    const char *s = json_string_value(m);
    unsigned bits = 0;
    size_t i;

    if (json_is_integer(m))
        return (unsigned)json_integer_value(m) & 07777;
    if (!s)
        return 0;
    if (s[0] >= '0' && s[0] <= '7')
        return (unsigned)strtoul(s, NULL, 8) & 07777;
    for (i = 1; i < 10 && s[i]; i++)
        if (s[i] != '-')
            bits |= 1u << (9 - i);
    return bits;
}

static void on_reply(const struct cloud_reply *rep, void *payload)
{
    struct dt_op *op = payload;
    struct prov_status st = {0};
    void *result = NULL;

    if (!dt_ok(rep)) {
        cloud_status_from(&st, rep, op->what);
    } else if (op->kind == F_READ) {
        struct prov_buf *b = malloc(sizeof(*b));

        if (b && (b->data = malloc(rep->len + 1))) {
            memcpy(b->data, rep->body, rep->len);
            b->data[rep->len] = '\0';
            b->len = rep->len;
            result = b;
        } else {
            free(b);
            cloud_status_set(&st, EVOLVE_ENOMEM, "%s: out of memory", op->what);
        }
    } else if (op->kind == F_LIST) {
        json_t *j = json_loadb(rep->body, rep->len, 0, NULL), *it;
        struct prov_dir *dir = calloc(1, sizeof(*dir));
        size_t i;

        if (!json_is_array(j) || !dir ||
            (json_array_size(j) &&
             !(dir->items = calloc(json_array_size(j), sizeof(*dir->items))))) {
            cloud_status_set(&st, dir ? EVOLVE_EPROTO : EVOLVE_ENOMEM,
                             "%s: reply is not a file list", op->what);
            free(dir);
            dir = NULL;
        }
        json_array_foreach(dir ? j : NULL, i, it)
        {
            struct prov_dirent *d = &dir->items[dir->count];
            const char *name = json_string_value(json_object_get(it, "name"));
            long long mt = cloud_rfc3339_ms(json_string_value(json_object_get(it, "modTime")));

            if (mt < 0)
                mt = cloud_rfc3339_ms(json_string_value(json_object_get(it, "modifiedAt")));
            if (!name || !(d->name = strdup(name)))
                continue;
            d->type = json_is_true(json_object_get(it, "isDir")) ? PROV_DT_DIR : PROV_DT_FILE;
            d->size = (uint64_t)json_integer_value(json_object_get(it, "size"));
            d->mode = mode_bits(json_object_get(it, "mode"));
            d->mtime_ms = mt < 0 ? 0 : mt;
            dir->count++;
        }
        json_decref(j);
        if (dir && dir->count > 1)
            qsort(dir->items, dir->count, sizeof(*dir->items), cmp_dirent);
        result = dir;
    }
    dt_op_finish(op, &st, result);
}

static int start(struct prov_box *box, int kind, const char *verb, const char *path,
                 const void *data, size_t len, prov_done_cb done, void *payload)
{
    struct dt_box *b = (struct dt_box *)box;
    char abs[1024], what[1200], url[3000], *enc, *body = NULL;
    struct dt_op *op;
    size_t blen = 0;
    int rc;

    if (!box || !done)
        return core_error_set(EVOLVE_EINVAL, "daytona %s: box and done are required", verb);
    rc = cloud_sandbox_path(abs, sizeof(abs), path);
    if (rc < 0)
        return rc;
    snprintf(what, sizeof(what), "daytona %s %s in %s", verb, abs, box->id);
    op = dt_op_new((struct dt_prov *)box->prov, b->sbx, done, payload, kind, what);
    enc = curl_easy_escape(NULL, abs, 0);
    if (!op || !enc) {
        curl_free(enc);
        if (op)
            dt_op_free(op);
        return core_error_oom();
    }
    snprintf(url, sizeof(url), "%s?path=%s",
             kind == F_WRITE  ? "/files/upload"
             : kind == F_READ ? "/files/download"
                              : "/files",
             enc);
    curl_free(enc);
    if (kind == F_WRITE) {
        static const char head[] = "--" BOUNDARY "\r\nContent-Disposition: form-data; "
                                   "name=\"file\"; filename=\"upload\"\r\n"
                                   "Content-Type: application/octet-stream\r\n\r\n";
        static const char tail[] = "\r\n--" BOUNDARY "--\r\n";

        blen = sizeof(head) - 1 + len + sizeof(tail) - 1;
        body = malloc(blen);
        if (!body) {
            dt_op_free(op);
            return core_error_oom();
        }
        memcpy(body, head, sizeof(head) - 1);
        if (len)
            memcpy(body + sizeof(head) - 1, data, len);
        memcpy(body + sizeof(head) - 1 + len, tail, sizeof(tail) - 1);
    }
    rc = dt_toolbox(op, kind == F_WRITE ? "POST" : "GET", url, body, blen,
                    kind == F_WRITE ? "multipart/form-data; boundary=" BOUNDARY : NULL, 300000,
                    on_reply);
    free(body);
    if (rc < 0)
        dt_op_free(op);
    return rc;
}

int dt_write_file(struct prov_box *box, const char *path, const void *data, size_t len,
                  prov_done_cb done, void *payload)
{
    return start(box, F_WRITE, "write_file", path, data, len, done, payload);
}

int dt_read_file(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    return start(box, F_READ, "read_file", path, NULL, 0, done, payload);
}

int dt_list_dir(struct prov_box *box, const char *path, prov_done_cb done, void *payload)
{
    return start(box, F_LIST, "list_dir", path, NULL, 0, done, payload);
}
