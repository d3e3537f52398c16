/* store.c — the store: its directory, the lock, blobs by key, and the checkpoint index (one file
 * per checkpoint, index/<id>.json, written last: it is the commit point of a checkpoint).
 * Locking: <root>/lock is flock'ed shared by checkpoint writers and exclusive by gc, so gc never
 * deletes a blob a running checkpoint has counted on; readers take no lock (blobs they need are
 * referenced, and referenced blobs are never deleted).
 * Threads: a handle is used by one thread at a time; handles share nothing in memory. */
#include "storage/storage.h"
#include "storage/info.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

#define STORE_FORMAT 1

int sto_store_open(struct sto_store **out, const char *root, unsigned int threads)
{
    struct sto_store *st = calloc(1, sizeof(*st));
    char *lock = NULL;
    size_t n;
    int rc;

    if (!st)
        return core_error_oom();
    st->lock_fd = -1;
    st->threads = threads;
    st->root = strdup(root);
    if (!st->root) {
        rc = core_error_oom();
        goto fail;
    }
    rc = sto_backend_local_new(&st->be, root);
    if (rc < 0)
        goto fail;
    n = strlen(root) + 8;
    lock = malloc(n);
    if (!lock) {
        rc = core_error_oom();
        goto fail;
    }
    snprintf(lock, n, "%s/lock", root);
    st->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (st->lock_fd < 0) {
        rc = core_error_set(EVOLVE_EIO, "store: open %s: %s", lock, strerror(errno));
        goto fail;
    }
    free(lock);
    *out = st;
    return 0;
fail:
    free(lock);
    sto_store_free(st);
    return rc;
}

void sto_store_free(struct sto_store *st)
{
    if (!st)
        return;
    if (st->be)
        st->be->ops->free(st->be);
    if (st->lock_fd >= 0)
        close(st->lock_fd);
    free(st->root);
    free(st);
}

int sto_store_lock(struct sto_store *st, bool exclusive)
{
    while (flock(st->lock_fd, exclusive ? LOCK_EX : LOCK_SH) < 0)
        if (errno != EINTR)
            return core_error_set(EVOLVE_EIO, "store: lock %s/lock: %s", st->root, strerror(errno));
    return 0;
}

void sto_store_unlock(struct sto_store *st)
{
    flock(st->lock_fd, LOCK_UN);
}

int sto_blob_key(char *key, size_t size, const char *id)
{
    if (!sto_is_hex_id(id))
        return core_error_set(EVOLVE_ECORRUPT, "store: bad blob id \"%s\"", id);
    snprintf(key, size, "blobs/%.2s/%s", id, id);
    return 0;
}

int sto_store_fetch(void *store, const char *id, unsigned char **blob, size_t *blob_len)
{
    struct sto_store *st = store;
    char key[128];
    int rc = sto_blob_key(key, sizeof(key), id);

    if (rc < 0)
        return rc;
    rc = st->be->ops->get(st->be, key, blob, blob_len);
    if (rc == EVOLVE_ENOTFOUND)
        return core_error_set(EVOLVE_ECORRUPT, "blob %s is missing from the store", id);
    return rc;
}

int sto_blob_read(struct sto_store *st, const char *id, unsigned char **out, size_t *out_len)
{
    unsigned char *blob = NULL;
    size_t len = 0;
    int rc = sto_store_fetch(st, id, &blob, &len);

    if (rc == 0)
        rc = sto_blob_decode(out, out_len, blob, len, id);
    free(blob);
    return rc;
}

int sto_store_bytes(struct sto_store *st, const unsigned char *data, size_t len,
                    char (**ids)[STO_HEX_LEN + 1], size_t *nids)
{
    size_t off = 0;
    int rc = 0;

    while (rc == 0 && off < len) {
        size_t n = sto_chunk_next_small(data + off, len - off, true);
        char key[128], (*grown)[STO_HEX_LEN + 1];
        grown = realloc(*ids, (*nids + 1) * sizeof(**ids));
        if (!grown)
            return core_error_oom();
        *ids = grown;
        rc = sto_sha256_hex((*ids)[*nids], data + off, n);
        if (rc == 0)
            rc = sto_blob_key(key, sizeof(key), (*ids)[*nids]);
        if (rc == 0)
            rc = st->be->ops->exists(st->be, key);
        if (rc == 0) {
            unsigned char *blob = NULL;
            size_t blen = 0;
            rc = sto_blob_encode(&blob, &blen, data + off, n);
            if (rc == 0)
                rc = st->be->ops->put(st->be, key, blob, blen, STO_PUT_NOSYNC);
            free(blob);
        }
        if (rc > 0)
            rc = 0;
        (*nids)++;
        off += n;
    }
    return rc;
}

void sto_record_free(struct sto_record *r)
{
    if (!r)
        return;
    sto_info_free(r->info);
    free(r->manifest);
    memset(r, 0, sizeof(*r));
}

int sto_record_write(struct sto_store *st, const struct sto_record *r)
{
    json_t *o = sto_info_to_json(r->info), *ev = NULL, *ids = json_array();
    char key[256], *text = NULL;
    size_t i;
    int rc = 0;

    for (i = 0; o && ids && i < r->nmanifest; i++)
        if (json_array_append_new(ids, json_string(r->manifest[i])) < 0)
            break;
    if (o && ids && i == r->nmanifest)
        ev = json_pack("{s:i,s:I,s:O}", "store", STORE_FORMAT, "createdNs",
                       (json_int_t)r->created_ns, "manifest", ids);
    if (ev && json_object_set_new(o, "evolve", ev) == 0)
        text = json_dumps(o, JSON_INDENT(2));
    json_decref(ids);
    json_decref(o);
    if (!text)
        return core_error_oom();
    snprintf(key, sizeof(key), "index/%s.json", r->info->id);
    rc = st->be->ops->put(st->be, key, text, strlen(text), 0);
    free(text);
    return rc;
}

/* Checkpoint ids are ckpt_ followed by [a-z0-9_]: anything else is not an id of this store. */
static bool valid_id(const char *id)
{
    size_t i;

    if (strncmp(id, "ckpt_", 5) || strlen(id) > 64)
        return false;
    for (i = 5; id[i]; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '_'))
            return false;
    return i > 5;
}

static int parse_record(struct sto_record *r, const unsigned char *text, size_t len,
                        const char *what)
{
    json_t *o = json_loadb((const char *)text, len, 0, NULL), *ids = NULL;
    json_int_t created = 0, format = 0;
    size_t i;
    int rc;

    memset(r, 0, sizeof(*r));
    if (!o)
        return core_error_set(EVOLVE_ECORRUPT, "%s: index record is not JSON", what);
    if (json_unpack(o, "{s:{s:I,s:I,s:o}}", "evolve", "store", &format, "createdNs", &created,
                    "manifest", &ids) < 0 ||
        format != STORE_FORMAT || !json_is_array(ids)) {
        json_decref(o);
        return core_error_set(EVOLVE_ECORRUPT, "%s: index record has no manifest", what);
    }
    rc = sto_info_from_json(&r->info, o, what);
    r->nmanifest = json_array_size(ids);
    r->created_ns = (int64_t)created;
    if (rc == 0) {
        r->manifest = calloc(r->nmanifest ? r->nmanifest : 1, sizeof(*r->manifest));
        if (!r->manifest)
            rc = core_error_oom();
    }
    for (i = 0; rc == 0 && i < r->nmanifest; i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        if (!sto_is_hex_id(id))
            rc = core_error_set(EVOLVE_ECORRUPT, "%s: bad manifest chunk id", what);
        else
            memcpy(r->manifest[i], id, STO_HEX_LEN + 1);
    }
    if (rc == 0 && (!valid_id(r->info->id) || !sto_is_hex_id(r->info->hash)))
        rc = core_error_set(EVOLVE_ECORRUPT, "%s: bad id or hash", what);
    json_decref(o);
    if (rc < 0)
        sto_record_free(r);
    return rc;
}

static int load_id(struct sto_store *st, const char *id, struct sto_record *r)
{
    unsigned char *text = NULL;
    char key[256];
    size_t len = 0;
    int rc;

    if (!valid_id(id))
        return core_error_set(EVOLVE_ENOTFOUND, "Checkpoint %s not found", id);
    snprintf(key, sizeof(key), "index/%s.json", id);
    rc = st->be->ops->get(st->be, key, &text, &len);
    if (rc == EVOLVE_ENOTFOUND)
        return core_error_set(EVOLVE_ENOTFOUND, "Checkpoint %s not found", id);
    if (rc == 0)
        rc = parse_record(r, text, len, id);
    free(text);
    if (rc == 0 && strcmp(r->info->id, id)) {
        sto_record_free(r);
        rc = core_error_set(EVOLVE_ECORRUPT, "%s: index record names another id", id);
    }
    return rc;
}

struct list_acc {
    struct sto_store *st;
    struct sto_record *recs;
    size_t n, cap;
};

static int list_one(void *payload, const char *key, uint64_t size)
{
    struct list_acc *acc = payload;
    char id[128];
    size_t kl = strlen(key);

    (void)size;
    if (kl < 6 + 5 || strcmp(key + kl - 5, ".json") || kl - 11 >= sizeof(id))
        return 0;
    memcpy(id, key + 6, kl - 11);
    id[kl - 11] = '\0';
    if (acc->n == acc->cap) {
        size_t ncap = acc->cap ? acc->cap * 2 : 64;
        struct sto_record *nr = realloc(acc->recs, ncap * sizeof(*nr));
        if (!nr)
            return core_error_oom();
        acc->recs = nr;
        acc->cap = ncap;
    }
    if (load_id(acc->st, id, &acc->recs[acc->n]) == 0)
        acc->n++;
    else /* the reference skips unreadable metadata silently */
        core_log_debug("store: skipping index record %s: %s", id, evolve_error_last()->message);
    return 0;
}

static int cmp_newest(const void *a, const void *b)
{
    const struct sto_record *x = a, *y = b;

    if (x->created_ns != y->created_ns)
        return x->created_ns > y->created_ns ? -1 : 1;
    return -strcmp(x->info->id, y->info->id);
}

int sto_record_list(struct sto_store *st, struct sto_record **out, size_t *count)
{
    struct list_acc acc = {.st = st};
    int rc = st->be->ops->list(st->be, "index/", list_one, &acc);

    if (rc < 0) {
        sto_record_list_free(acc.recs, acc.n);
        return rc;
    }
    if (acc.n)
        qsort(acc.recs, acc.n, sizeof(*acc.recs), cmp_newest);
    *out = acc.recs;
    *count = acc.n;
    return 0;
}

void sto_record_list_free(struct sto_record *list, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++)
        sto_record_free(&list[i]);
    free(list);
}

int sto_record_load(struct sto_store *st, const char *id_or_latest, struct sto_record *r)
{
    struct sto_record *all = NULL;
    size_t n = 0, i;
    int rc;

    if (!id_or_latest)
        return core_error_set(EVOLVE_EINVAL, "checkpoint id is required");
    if (strcmp(id_or_latest, "latest"))
        return load_id(st, id_or_latest, r);
    rc = sto_record_list(st, &all, &n);
    if (rc < 0)
        return rc;
    if (!n) {
        free(all);
        return core_error_set(EVOLVE_ENOTFOUND, "No checkpoints found");
    }
    *r = all[0];
    for (i = 1; i < n; i++)
        sto_record_free(&all[i]);
    free(all);
    return 0;
}

int sto_manifest_load(struct sto_store *st, const struct sto_record *r, struct sto_manifest *m)
{
    unsigned char *text = NULL, *part;
    size_t len = 0, plen, i;
    int rc = 0;

    for (i = 0; rc == 0 && i < r->nmanifest; i++) {
        rc = sto_blob_read(st, r->manifest[i], &part, &plen);
        if (rc == 0) {
            unsigned char *nt = realloc(text, len + plen + 1);
            if (!nt)
                rc = core_error_oom();
            else {
                text = nt;
                memcpy(text + len, part, plen);
                len += plen;
            }
            free(part);
        }
    }
    if (rc == 0)
        rc = sto_manifest_parse(m, (const char *)text, len, r->info->id);
    else
        core_error_prefix("checkpoint %s: ", r->info->id);
    free(text);
    return rc;
}
