/* api.c — the public storage API (include/evolve/storage.h): argument checks, store location,
 * and conversions between internal records and evolve_checkpoint_info_t.
 * Threads: any thread, one at a time per evolve_store_t. */
#include "storage/storage.h"
#include "storage/info.h"

#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

struct evolve_store {
    struct sto_store *st;
};

static int default_root(char *out, size_t size)
{
    const char *eh = getenv("EVOLVE_HOME"), *home = getenv("HOME");
    struct passwd pw, *res = NULL;
    char pwbuf[1024];
    int n;

    if (eh && *eh)
        n = snprintf(out, size, "%s/store", eh);
    else {
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) == 0 &&
            res)
            home = res->pw_dir;
        if (!home || !*home)
            return core_error_set(EVOLVE_EINVAL, "store: neither EVOLVE_HOME nor HOME is set");
        n = snprintf(out, size, "%s/.evolve/store", home);
    }
    if (n < 0 || (size_t)n >= size)
        return core_error_set(EVOLVE_EINVAL, "store: path too long");
    return 0;
}

EVOLVE_API int evolve_store_open(evolve_store_t **out, const evolve_store_options_t *opts)
{
    evolve_store_options_t defaults = EVOLVE_STORE_OPTIONS_INIT;
    evolve_store_t *s;
    char root[4096];
    int rc;

    if (!out)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_open: out is NULL");
    *out = NULL;
    if (!opts)
        opts = &defaults;
    if (opts->version == 0 || opts->version > EVOLVE_STORE_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_options_t: unknown version %u",
                              opts->version);
    if (opts->root && *opts->root)
        rc = snprintf(root, sizeof(root), "%s", opts->root) < (int)sizeof(root)
                 ? 0
                 : core_error_set(EVOLVE_EINVAL, "store: path too long");
    else
        rc = default_root(root, sizeof(root));
    if (rc < 0)
        return rc;
    s = calloc(1, sizeof(*s));
    if (!s)
        return core_error_oom();
    rc = sto_store_open(&s->st, root, opts->threads);
    if (rc < 0) {
        free(s);
        return rc;
    }
    sto_backend_local_set_nosync(s->st->be, opts->no_sync);
    *out = s;
    return 0;
}

EVOLVE_API void evolve_store_free(evolve_store_t *store)
{
    if (!store)
        return;
    sto_store_free(store->st);
    free(store);
}

static int take_info(evolve_checkpoint_info_t **out, struct sto_record *r)
{
    if (out) {
        *out = r->info;
        r->info = NULL;
    }
    sto_record_free(r);
    return 0;
}

EVOLVE_API int evolve_store_checkpoint(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                       const char *home, const evolve_checkpoint_options_t *opts)
{
    struct sto_record r = {0};
    int rc;

    if (out)
        *out = NULL;
    if (!store || !home || !opts)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_checkpoint: store, home and options "
                                             "are required");
    if (opts->version == 0 || opts->version > EVOLVE_CHECKPOINT_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "evolve_checkpoint_options_t: unknown version %u",
                              opts->version);
    rc = sto_checkpoint(store->st, home, opts, &r);
    return rc < 0 ? rc : take_info(out, &r);
}

EVOLVE_API int evolve_store_restore(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                    const char *id, const char *dest)
{
    struct sto_record r = {0};
    int rc;

    if (out)
        *out = NULL;
    if (!store || !id || !dest)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_restore: store, id and dest are "
                                             "required");
    rc = sto_restore(store->st, id, dest, &r);
    return rc < 0 ? rc : take_info(out, &r);
}

EVOLVE_API int evolve_store_list(evolve_checkpoint_info_t ***out, size_t *count,
                                 evolve_store_t *store, int limit, const char *tag)
{
    struct sto_record *recs = NULL;
    evolve_checkpoint_info_t **res;
    size_t n = 0, i, k = 0, lim;
    int rc;

    if (!out || !count || !store)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_list: NULL argument");
    *out = NULL;
    *count = 0;
    lim = limit > 0 ? (size_t)(limit < 500 ? limit : 500) : 100;
    rc = sto_record_list(store->st, &recs, &n);
    if (rc < 0)
        return rc;
    res = calloc(n ? n : 1, sizeof(*res));
    if (!res) {
        sto_record_list_free(recs, n);
        return core_error_oom();
    }
    for (i = 0; i < n && k < lim; i++) { /* the tag filter comes before the limit */
        if (tag && strcmp(recs[i].info->tag, tag))
            continue;
        res[k++] = recs[i].info;
        recs[i].info = NULL;
    }
    sto_record_list_free(recs, n);
    *out = res;
    *count = k;
    return 0;
}

EVOLVE_API int evolve_store_get(evolve_checkpoint_info_t **out, evolve_store_t *store,
                                const char *id)
{
    struct sto_record r = {0};
    int rc;

    if (!out || !store || !id)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_get: NULL argument");
    *out = NULL;
    rc = sto_record_load(store->st, id, &r);
    return rc < 0 ? rc : take_info(out, &r);
}

EVOLVE_API int evolve_store_download(char **path_out, evolve_store_t *store, const char *id,
                                     const char *to, bool extract)
{
    if (path_out)
        *path_out = NULL;
    if (!store || !id)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_download: store and id are required");
    return sto_download(store->st, id, to, extract, path_out);
}

EVOLVE_API int evolve_store_download_files(evolve_file_t **out, size_t *count,
                                           evolve_store_t *store, const char *id,
                                           const char *const *files, size_t nfiles,
                                           const char *const *globs, size_t nglobs, const char *to)
{
    if (!out || !count || !store || !id || (nfiles && !files) || (nglobs && !globs))
        return core_error_set(EVOLVE_EINVAL, "evolve_store_download_files: NULL argument");
    return sto_download_files(store->st, id, files, nfiles, globs, nglobs, to, out, count);
}

EVOLVE_API int evolve_store_verify(evolve_store_report_t *out, evolve_store_t *store,
                                   evolve_store_damage_cb cb, void *payload)
{
    evolve_store_report_t tmp;

    if (!store)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_verify: store is NULL");
    return sto_verify(store->st, out ? out : &tmp, cb, payload);
}

EVOLVE_API int evolve_store_gc(evolve_store_report_t *out, evolve_store_t *store)
{
    evolve_store_report_t tmp;

    if (!store)
        return core_error_set(EVOLVE_EINVAL, "evolve_store_gc: store is NULL");
    return sto_gc(store->st, out ? out : &tmp);
}

EVOLVE_API char *evolve_checkpoint_info_to_json(const evolve_checkpoint_info_t *info, bool pretty)
{
    json_t *o = info ? sto_info_to_json(info) : NULL;
    char *s = o ? json_dumps(o, pretty ? JSON_INDENT(2) : JSON_COMPACT) : NULL;

    json_decref(o);
    if (!s)
        core_error_oom();
    return s;
}

EVOLVE_API void evolve_checkpoint_info_free(evolve_checkpoint_info_t *info)
{
    sto_info_free(info);
}

EVOLVE_API void evolve_checkpoint_list_free(evolve_checkpoint_info_t **list, size_t count)
{
    size_t i;

    if (!list)
        return;
    for (i = 0; i < count; i++)
        sto_info_free(list[i]);
    free(list);
}

EVOLVE_API void evolve_files_free(evolve_file_t *files, size_t count)
{
    size_t i;

    if (!files)
        return;
    for (i = 0; i < count; i++) {
        free(files[i].path);
        free(files[i].data);
    }
    free(files);
}
