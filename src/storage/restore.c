/* restore.c — getting checkpoints back out: restore into an empty directory, download as a tar.gz
 * or extracted, and reading selected files straight from their chunks.
 * Integrity: restore and download rebuild the archive from the manifest and compare its SHA-256
 * with the recorded hash before extracting anything; the extraction pass hashes again and a
 * restore is only renamed into place when that matches too. download_files never builds the
 * archive: each chunk it reads is checked against its own SHA-256 (its id).
 * Threads: one thread per store handle; no shared state. */
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

struct gen_src {
    struct sto_archive_gen *g;
    struct sto_sha256 *h;
};

static ssize_t gen_read(void *payload, const void **buf)
{
    struct gen_src *s = payload;
    const unsigned char *d = NULL;
    size_t n = 0;
    int rc = sto_archive_gen_next(s->g, &d, &n);

    if (rc < 0)
        return rc;
    if (n && sto_sha256_update(s->h, d, n) < 0)
        return EVOLVE_ERROR;
    *buf = d;
    return (ssize_t)n;
}

/* Loads record and manifest and checks the rebuilt archive's hash against the record. */
static int load_verified(struct sto_store *st, const char *id, struct sto_record *r,
                         struct sto_manifest *m)
{
    char hex[STO_HEX_LEN + 1];
    uint64_t size = 0;
    int rc = sto_record_load(st, id, r);

    if (rc < 0)
        return rc;
    rc = sto_manifest_load(st, r, m);
    if (rc == 0) {
        rc = sto_archive_hash(m, sto_store_fetch, st, hex, &size);
        if (rc < 0)
            core_error_prefix("Checkpoint integrity check failed (%s): ", r->info->id);
        else if (strcmp(hex, r->info->hash))
            rc = core_error_set(EVOLVE_ECORRUPT,
                                "Checkpoint integrity check failed (expected %s, "
                                "got %s)",
                                r->info->hash, hex);
    }
    if (rc < 0) {
        sto_manifest_free(m);
        sto_record_free(r);
    }
    return rc;
}

/* Extracts the rebuilt archive of m into dest, hashing it again on the way. */
static int extract_to(struct sto_store *st, const struct sto_record *r,
                      const struct sto_manifest *m, const char *dest)
{
    struct gen_src s = {0};
    char hex[STO_HEX_LEN + 1];
    int rc = sto_sha256_new(&s.h);

    if (rc == 0)
        rc = sto_archive_gen_new(&s.g, m, sto_store_fetch, st);
    if (rc == 0)
        rc = sto_extract_run(gen_read, &s, dest);
    if (rc == 0)
        rc = sto_sha256_final_hex(s.h, hex);
    if (rc == 0 && strcmp(hex, r->info->hash))
        rc = core_error_set(EVOLVE_ECORRUPT,
                            "Checkpoint integrity check failed (expected %s, "
                            "got %s)",
                            r->info->hash, hex);
    sto_archive_gen_free(s.g);
    sto_sha256_free(s.h);
    return rc;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_DP) {
        chmod(path, 0700);
        return rmdir(path);
    }
    return unlink(path);
}

static void rmtree(const char *path)
{
    chmod(path, 0700);
    nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

/* 1 when dir is missing, 0 when it is an empty directory, <0 otherwise. */
static int check_empty(const char *dest)
{
    DIR *d = opendir(dest);
    struct dirent *de;
    int rc = 0;

    if (!d) {
        if (errno == ENOENT)
            return 1;
        return core_error_set(errno == ENOTDIR ? EVOLVE_EEXISTS : EVOLVE_EIO, "restore: %s: %s",
                              dest, strerror(errno));
    }
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            rc = core_error_set(EVOLVE_EEXISTS, "restore: %s is not empty", dest);
            break;
        }
    closedir(d);
    return rc;
}

int sto_restore(struct sto_store *st, const char *id, const char *dest, struct sto_record *out)
{
    struct sto_record r = {0};
    struct sto_manifest m = {0};
    char parent[PATH_MAX], stage[PATH_MAX + 32];
    int rc = check_empty(dest);

    if (rc < 0)
        return rc;
    rc = load_verified(st, id, &r, &m);
    if (rc < 0)
        return rc;
    /* Extract beside dest and rename: a failed restore leaves nothing in dest. */
    snprintf(parent, sizeof(parent), "%s", dest);
    snprintf(stage, sizeof(stage), "%s/.evolve-restore-XXXXXX", dirname(parent));
    if (!mkdtemp(stage)) {
        rc = core_error_set(EVOLVE_EIO, "restore: mkdtemp %s: %s", stage, strerror(errno));
        goto done;
    }
    rc = extract_to(st, &r, &m, stage);
    if (rc == 0 && chmod(stage, 0755) < 0)
        rc = core_error_set(EVOLVE_EIO, "restore: chmod %s: %s", stage, strerror(errno));
    if (rc == 0 && rename(stage, dest) < 0)
        rc = core_error_set(errno == ENOTEMPTY || errno == EEXIST ? EVOLVE_EEXISTS : EVOLVE_EIO,
                            "restore: rename to %s: %s", dest, strerror(errno));
    if (rc < 0)
        rmtree(stage);
done:
    sto_manifest_free(&m);
    if (rc < 0 || !out)
        sto_record_free(&r);
    else
        *out = r;
    return rc < 0 ? core_error_prefix("restore of %s: ", id) : 0;
}

static int mkdir_p(const char *dir)
{
    char p[PATH_MAX], *s;

    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
        return core_error_set(EVOLVE_EINVAL, "path too long: %s", dir);
    for (s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return core_error_set(EVOLVE_EIO, "mkdir %s: %s", dir, strerror(errno));
    return 0;
}

static int write_archive(struct sto_store *st, const struct sto_record *r,
                         const struct sto_manifest *m, const char *to, char **path_out)
{
    struct gen_src s = {0};
    char final[PATH_MAX], tmp[PATH_MAX + 16], hex[STO_HEX_LEN + 1];
    const void *buf;
    ssize_t n;
    int fd = -1, rc;

    if (snprintf(final, sizeof(final), "%s/checkpoint-%s.tar.gz", to, r->info->id) >=
            (int)sizeof(final) ||
        snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", final) >= (int)sizeof(tmp))
        return core_error_set(EVOLVE_EINVAL, "download: path too long: %s", to);
    fd = mkstemp(tmp);
    if (fd < 0)
        return core_error_set(EVOLVE_EIO, "download: create %s: %s", tmp, strerror(errno));
    rc = sto_sha256_new(&s.h);
    if (rc == 0)
        rc = sto_archive_gen_new(&s.g, m, sto_store_fetch, st);
    while (rc == 0 && (n = gen_read(&s, &buf)) != 0) {
        const unsigned char *p = buf;
        if (n < 0) {
            rc = (int)n;
            break;
        }
        while (rc == 0 && n > 0) {
            ssize_t w = write(fd, p, (size_t)n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                rc = core_error_set(EVOLVE_EIO, "download: write %s: %s", tmp, strerror(errno));
            else {
                p += w;
                n -= w;
            }
        }
    }
    if (rc == 0)
        rc = sto_sha256_final_hex(s.h, hex);
    if (rc == 0 && strcmp(hex, r->info->hash))
        rc = core_error_set(EVOLVE_ECORRUPT,
                            "Checkpoint integrity check failed (expected %s, "
                            "got %s)",
                            r->info->hash, hex);
    if (rc == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
        rc = core_error_set(EVOLVE_EIO, "download: %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc == 0 && rename(tmp, final) < 0)
        rc = core_error_set(EVOLVE_EIO, "download: rename %s: %s", final, strerror(errno));
    if (rc < 0)
        unlink(tmp);
    sto_archive_gen_free(s.g);
    sto_sha256_free(s.h);
    if (rc == 0 && path_out) {
        *path_out = strdup(final);
        if (!*path_out)
            rc = core_error_oom();
    }
    return rc;
}

int sto_download(struct sto_store *st, const char *id, const char *to, bool extract,
                 char **path_out)
{
    struct sto_record r = {0};
    struct sto_manifest m = {0};
    char cwd[PATH_MAX];
    int rc;

    if (!to) {
        if (!getcwd(cwd, sizeof(cwd)))
            return core_error_set(EVOLVE_EIO, "download: getcwd: %s", strerror(errno));
        to = cwd;
    }
    rc = load_verified(st, id, &r, &m); /* also checks every path and symlink of the manifest */
    if (rc == 0)
        rc = mkdir_p(to);
    if (rc == 0 && !extract)
        rc = write_archive(st, &r, &m, to, path_out);
    else if (rc == 0) {
        rc = extract_to(st, &r, &m, to);
        if (rc == 0 && path_out) {
            *path_out = strdup(to);
            if (!*path_out)
                rc = core_error_oom();
        }
    }
    sto_manifest_free(&m);
    sto_record_free(&r);
    return rc;
}

static int read_file(struct sto_store *st, const struct sto_entry *e, evolve_file_t *f)
{
    size_t i, len = 0;
    int rc = 0;

    f->data = malloc(e->size ? e->size : 1);
    f->path = strdup(e->path);
    if (!f->data || !f->path)
        return core_error_oom();
    for (i = 0; rc == 0 && i < e->nchunks; i++) {
        unsigned char *part = NULL;
        size_t n = 0;
        rc = sto_blob_read(st, e->chunks[i], &part, &n);
        if (rc < 0) {
            core_error_prefix("Checkpoint integrity check failed (%s): ", e->path);
            break;
        }
        if (len + n > e->size)
            rc = core_error_set(EVOLVE_ECORRUPT,
                                "Checkpoint integrity check failed (%s: chunks "
                                "exceed the file size)",
                                e->path);
        else
            memcpy(f->data + len, part, n);
        len += n;
        free(part);
    }
    if (rc == 0 && len != e->size)
        rc = core_error_set(EVOLVE_ECORRUPT, "Checkpoint integrity check failed (%s: size)",
                            e->path);
    f->len = len;
    return rc;
}

static bool selected(const struct sto_entry *e, const char *const *globs, size_t nglobs)
{
    size_t i;

    if (!nglobs)
        return true;
    for (i = 0; i < nglobs; i++)
        if (sto_glob_match(globs[i], e->path))
            return true;
    return false;
}

static const struct sto_entry *find_file(const struct sto_manifest *m, const char *path)
{
    size_t lo = 0, hi = m->count;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(m->entries[mid].path, path);
        if (!c)
            return m->entries[mid].type == STO_FILE ? &m->entries[mid] : NULL;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int sto_download_files(struct sto_store *st, const char *id, const char *const *files,
                       size_t nfiles, const char *const *globs, size_t nglobs, const char *to,
                       evolve_file_t **out, size_t *count)
{
    struct sto_record r = {0};
    struct sto_manifest m = {0};
    const struct sto_entry **sel = NULL;
    evolve_file_t *res = NULL;
    size_t nsel = 0, i;
    int rc, tofd = -1;

    *out = NULL;
    *count = 0;
    for (i = 0; i < nfiles; i++) { /* before any store access, as the reference does */
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s", files[i]) >= (int)sizeof(p) ||
            sto_path_clean(p, "requested file") != 0 || strcmp(p, files[i]))
            return core_error_set(EVOLVE_EUNSAFE, "Unsafe file path requested: %s", files[i]);
    }
    rc = sto_record_load(st, id, &r);
    if (rc == 0)
        rc = sto_manifest_load(st, &r, &m);
    if (rc == 0) {
        sel = calloc(m.count ? m.count : 1, sizeof(*sel));
        if (!sel)
            rc = core_error_oom();
    }
    if (rc == 0 && nfiles) { /* exact paths take precedence; absent ones are omitted */
        for (i = 0; i < m.count; i++) {
            size_t k;
            for (k = 0; k < nfiles; k++)
                if (m.entries[i].type == STO_FILE && !strcmp(files[k], m.entries[i].path)) {
                    sel[nsel++] = find_file(&m, files[k]);
                    break;
                }
        }
    } else if (rc == 0) {
        for (i = 0; i < m.count; i++)
            if (m.entries[i].type == STO_FILE && selected(&m.entries[i], globs, nglobs))
                sel[nsel++] = &m.entries[i];
    }
    if (rc == 0 && nsel) {
        res = calloc(nsel, sizeof(*res));
        if (!res)
            rc = core_error_oom();
    }
    for (i = 0; rc == 0 && i < nsel; i++)
        rc = read_file(st, sel[i], &res[i]);
    if (rc == 0 && to && nsel) {
        rc = mkdir_p(to);
        if (rc == 0) {
            tofd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (tofd < 0)
                rc = core_error_set(EVOLVE_EIO, "download: open %s: %s", to, strerror(errno));
        }
        for (i = 0; rc == 0 && i < nsel; i++)
            rc = sto_write_under(tofd, res[i].path, res[i].data, res[i].len, sel[i]->mode);
        if (tofd >= 0)
            close(tofd);
    }
    free(sel);
    sto_manifest_free(&m);
    sto_record_free(&r);
    if (rc < 0) {
        evolve_files_free(res, nsel);
        return rc;
    }
    *out = res;
    *count = nsel;
    return 0;
}
