/* maint.c — store maintenance: verify (re-hash every blob, re-read every manifest, rebuild every
 * archive against its recorded hash) and gc (delete blobs no checkpoint references, and temp
 * files of dead writers).
 * gc holds the store lock exclusively, so it runs between checkpoints, never during one: a
 * checkpoint may rely on a blob that exists but is not yet referenced by any index record.
 * Threads: one thread per store handle. */
#include "storage/storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct keys {
    char **k;
    uint64_t *size;
    size_t n, cap;
};

static int collect(void *payload, const char *key, uint64_t size)
{
    struct keys *ks = payload;

    if (ks->n == ks->cap) {
        size_t nc = ks->cap ? ks->cap * 2 : 1024;
        char **nk = realloc(ks->k, nc * sizeof(*nk));
        uint64_t *ns;
        if (!nk)
            return core_error_oom();
        ks->k = nk;
        ns = realloc(ks->size, nc * sizeof(*ns));
        if (!ns)
            return core_error_oom();
        ks->size = ns;
        ks->cap = nc;
    }
    ks->k[ks->n] = strdup(key);
    if (!ks->k[ks->n])
        return core_error_oom();
    ks->size[ks->n++] = size;
    return 0;
}

static void keys_free(struct keys *ks)
{
    size_t i;

    for (i = 0; i < ks->n; i++)
        free(ks->k[i]);
    free(ks->k);
    free(ks->size);
}

/* The blob id of a key "blobs/xx/<id>", or NULL. */
static const char *blob_id(const char *key)
{
    const char *s = strrchr(key, '/');

    return s && sto_is_hex_id(s + 1) && !strncmp(key, "blobs/", 6) && !strncmp(key + 6, s + 1, 2)
               ? s + 1
               : NULL;
}

struct damage {
    evolve_store_report_t *rep;
    evolve_store_damage_cb cb;
    void *payload;
};

static void report(struct damage *d, const char *what, const char *msg)
{
    d->rep->damaged++;
    if (d->cb)
        d->cb(d->payload, what, msg);
}

/* Adds every blob id a record references (manifest and file chunks) to refs. */
static int add_refs(struct sto_store *st, const struct sto_record *r, struct sto_set *refs,
                    struct sto_manifest *m)
{
    size_t i, k;
    int rc;

    for (i = 0; i < r->nmanifest; i++)
        if (sto_set_add(refs, r->manifest[i], 1) < 0)
            return EVOLVE_ENOMEM;
    rc = sto_manifest_load(st, r, m);
    for (i = 0; rc == 0 && i < m->count; i++)
        for (k = 0; k < m->entries[i].nchunks; k++)
            if (sto_set_add(refs, m->entries[i].chunks[k], 1) < 0)
                return EVOLVE_ENOMEM;
    return rc;
}

int sto_verify(struct sto_store *st, evolve_store_report_t *rep, evolve_store_damage_cb cb,
               void *payload)
{
    struct damage d = {rep, cb, payload};
    struct keys blobs = {0}, index = {0};
    struct sto_set *refs = NULL;
    struct sto_record *recs = NULL;
    size_t nrecs = 0, i;
    int rc;

    memset(rep, 0, sizeof(*rep));
    rep->version = EVOLVE_STORE_REPORT_VERSION;
    rc = sto_set_new(&refs);
    if (rc == 0)
        rc = st->be->ops->list(st->be, "blobs/", collect, &blobs);
    if (rc == 0)
        rc = st->be->ops->list(st->be, "index/", collect, &index);
    for (i = 0; rc == 0 && i < blobs.n; i++) {
        const char *id = blob_id(blobs.k[i]);
        unsigned char *raw = NULL;
        size_t len = 0;
        rep->blobs++;
        rep->bytes += blobs.size[i];
        if (!id) {
            report(&d, blobs.k[i], "not a blob name");
            continue;
        }
        if (sto_blob_read(st, id, &raw, &len) < 0)
            report(&d, blobs.k[i], evolve_error_last()->message);
        free(raw);
    }
    if (rc == 0)
        rc = sto_record_list(st, &recs, &nrecs);
    if (rc == 0 && nrecs != index.n) /* list skips unreadable records: name them */
        for (i = 0; i < index.n; i++) {
            size_t k, kl = strlen(index.k[i]);
            bool found = false;
            for (k = 0; k < nrecs && !found; k++)
                found = kl == strlen(recs[k].info->id) + 11 &&
                        !strncmp(index.k[i] + 6, recs[k].info->id, kl - 11);
            if (!found) {
                struct sto_record bad = {0};
                char id[128];
                snprintf(id, sizeof(id), "%.*s", (int)(kl > 11 ? kl - 11 : 0), index.k[i] + 6);
                sto_record_load(st, id, &bad);
                report(&d, index.k[i], evolve_error_last()->message);
            }
        }
    for (i = 0; rc == 0 && i < nrecs; i++) {
        struct sto_manifest m = {0};
        char hex[STO_HEX_LEN + 1];
        uint64_t size = 0;
        const char *id = recs[i].info->id;
        rep->checkpoints++;
        if (add_refs(st, &recs[i], refs, &m) < 0) {
            report(&d, id, evolve_error_last()->message);
        } else if (sto_archive_hash(&m, sto_store_fetch, st, hex, &size) < 0) {
            report(&d, id, evolve_error_last()->message);
        } else if (strcmp(hex, recs[i].info->hash) ||
                   (recs[i].info->size_bytes >= 0 && (uint64_t)recs[i].info->size_bytes != size)) {
            char msg[256];
            snprintf(msg, sizeof(msg), "archive hash %s does not match the recorded %s", hex,
                     recs[i].info->hash);
            report(&d, id, msg);
        }
        sto_manifest_free(&m);
    }
    for (i = 0; rc == 0 && i < blobs.n; i++) {
        const char *id = blob_id(blobs.k[i]);
        if (id && !sto_set_get(refs, id))
            rep->unreferenced++;
    }
    sto_record_list_free(recs, nrecs);
    sto_set_free(refs);
    keys_free(&blobs);
    keys_free(&index);
    if (rc < 0)
        return rc;
    if (rep->damaged)
        return core_error_set(EVOLVE_ECORRUPT, "store %s: %zu problem(s) found", st->root,
                              rep->damaged);
    return 0;
}

int sto_gc(struct sto_store *st, evolve_store_report_t *rep)
{
    struct keys blobs = {0}, tmp = {0};
    struct sto_set *refs = NULL;
    struct sto_record *recs = NULL;
    size_t nrecs = 0, i;
    int rc;

    memset(rep, 0, sizeof(*rep));
    rep->version = EVOLVE_STORE_REPORT_VERSION;
    rc = sto_store_lock(st, true);
    if (rc < 0)
        return rc;
    rc = sto_set_new(&refs);
    if (rc == 0)
        rc = sto_record_list(st, &recs, &nrecs);
    for (i = 0; rc == 0 && i < nrecs; i++) {
        struct sto_manifest m = {0};
        rep->checkpoints++;
        rc = add_refs(st, &recs[i], refs, &m);
        sto_manifest_free(&m);
        if (rc < 0) /* an unreadable manifest hides its references: delete nothing */
            core_error_prefix("gc stopped, nothing deleted: ");
    }
    if (rc == 0)
        rc = st->be->ops->list(st->be, "blobs/", collect, &blobs);
    if (rc == 0)
        rc = st->be->ops->list(st->be, "tmp/", collect, &tmp);
    for (i = 0; rc == 0 && i < blobs.n; i++) {
        const char *id = blob_id(blobs.k[i]);
        rep->blobs++;
        if (id && sto_set_get(refs, id))
            continue;
        rc = st->be->ops->del(st->be, blobs.k[i]);
        rep->unreferenced++;
        rep->bytes += blobs.size[i];
    }
    /* Every writer holds the lock shared, so no temp file belongs to a live checkpoint. */
    for (i = 0; rc == 0 && i < tmp.n; i++) {
        rc = st->be->ops->del(st->be, tmp.k[i]);
        rep->bytes += tmp.size[i];
    }
    sto_store_unlock(st);
    sto_record_list_free(recs, nrecs);
    sto_set_free(refs);
    keys_free(&blobs);
    keys_free(&tmp);
    return rc;
}
