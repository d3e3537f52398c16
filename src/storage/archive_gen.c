/* archive_gen.c — the deterministic tar.gz of a manifest, produced piece by piece.
 * Tar headers come from libarchive (pax restricted: ustar, plus a pax header only for long or
 * non-ASCII names), fed with fixed owner fields, whole-second mtimes and sorted entries, under the
 * C.UTF-8 locale so the process locale cannot change the bytes. The gzip member is assembled
 * here: a fixed header (no name, mtime 0), then each run of tar headers/padding deflated on its own
 * and each file chunk's stored deflate stream spliced in as-is (every piece ends byte-aligned
 * with a sync flush), an empty final block, and the CRC-32 (crc32_combine) and length.
 * So the bytes depend only on the manifest and the stored blobs, and rebuilding costs no
 * compression. Owns: the generator. Threads: a generator is used by one thread. */
#include "storage/storage.h"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"

enum { G_START, G_ENTRY, G_CHUNK, G_CLOSE, G_TAIL, G_DONE };

struct sto_archive_gen {
    const struct sto_manifest *m;
    sto_blob_fetch_fn fetch;
    void *payload;
    struct archive *a;
    locale_t loc;
    int state;
    size_t ei, ci; /* entry, chunk */
    uint64_t entry_bytes;
    bool data_mode; /* libarchive output is file data: counted, not kept */
    size_t data_seen;
    unsigned char *plain; /* tar header bytes collected from libarchive */
    size_t plain_len, plain_cap;
    unsigned char *out; /* the current piece */
    size_t out_cap;
    unsigned char *blob; /* fetched chunk */
    z_stream z;
    bool z_ready;
    uint32_t crc;
    uint32_t isize;
    unsigned char tail[16];
    size_t tail_len;
};

static const unsigned char zeros[STO_CHUNK_MAX];

static la_ssize_t on_write(struct archive *a, void *cd, const void *buf, size_t len)
{
    struct sto_archive_gen *g = cd;

    (void)a;
    if (g->data_mode) {
        g->data_seen += len;
        return (la_ssize_t)len;
    }
    if (g->plain_len + len > g->plain_cap) {
        size_t ncap = (g->plain_len + len) * 2;
        unsigned char *np = realloc(g->plain, ncap);
        if (!np)
            return -1;
        g->plain = np;
        g->plain_cap = ncap;
    }
    memcpy(g->plain + g->plain_len, buf, len);
    g->plain_len += len;
    return (la_ssize_t)len;
}

int sto_archive_gen_new(struct sto_archive_gen **out, const struct sto_manifest *m,
                        sto_blob_fetch_fn fetch, void *payload)
{
    struct sto_archive_gen *g = calloc(1, sizeof(*g));
    unsigned char fin[16];
    locale_t old;
    int rc = 0;

    if (!g)
        return core_error_oom();
    g->m = m;
    g->fetch = fetch;
    g->payload = payload;
    g->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    g->loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (deflateInit2(&g->z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        return core_error_oom();
    }
    g->z_ready = true;
    /* The empty final deflate block, produced by zlib rather than hard-coded. */
    g->z.next_in = (Bytef *)zeros;
    g->z.avail_in = 0;
    g->z.next_out = fin;
    g->z.avail_out = sizeof(fin);
    if (deflate(&g->z, Z_FINISH) != Z_STREAM_END || deflateReset(&g->z) != Z_OK) {
        sto_archive_gen_free(g);
        return core_error_set(EVOLVE_ERROR, "archive: deflate setup failed");
    }
    memcpy(g->tail, fin, sizeof(fin) - g->z.avail_out);
    g->tail_len = sizeof(fin) - g->z.avail_out;
    g->a = archive_write_new();
    if (!g->a) {
        sto_archive_gen_free(g);
        return core_error_oom();
    }
    old = g->loc ? uselocale(g->loc) : (locale_t)0;
    if (archive_write_set_format_pax_restricted(g->a) != ARCHIVE_OK ||
        archive_write_set_bytes_per_block(g->a, 0) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(g->a, 1) != ARCHIVE_OK ||
        archive_write_open(g->a, g, NULL, on_write, NULL) != ARCHIVE_OK)
        rc = core_error_set(EVOLVE_ERROR, "archive: %s", archive_error_string(g->a));
    if (g->loc)
        uselocale(old);
    if (rc < 0) {
        sto_archive_gen_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void sto_archive_gen_free(struct sto_archive_gen *g)
{
    if (!g)
        return;
    if (g->a)
        archive_write_free(g->a); /* no close: an unfinished archive writes nothing more */
    if (g->z_ready)
        deflateEnd(&g->z);
    if (g->loc)
        freelocale(g->loc);
    free(g->plain);
    free(g->out);
    free(g->blob);
    free(g);
}

/* Deflates the collected tar bytes into g->out as one spliceable piece. */
static int flush_plain(struct sto_archive_gen *g, size_t *len)
{
    size_t need = deflateBound(&g->z, (uLong)g->plain_len) + 16;

    *len = 0;
    if (!g->plain_len)
        return 0;
    if (need > g->out_cap) {
        unsigned char *no = realloc(g->out, need);
        if (!no)
            return core_error_oom();
        g->out = no;
        g->out_cap = need;
    }
    g->z.next_in = g->plain;
    g->z.avail_in = (uInt)g->plain_len;
    g->z.next_out = g->out;
    g->z.avail_out = (uInt)need;
    if (deflate(&g->z, Z_SYNC_FLUSH) != Z_OK || g->z.avail_in != 0)
        return core_error_set(EVOLVE_ERROR, "archive: deflate failed");
    *len = need - g->z.avail_out;
    g->crc = (uint32_t)crc32(g->crc, g->plain, (uInt)g->plain_len);
    g->isize += (uint32_t)g->plain_len;
    g->plain_len = 0;
    if (deflateReset(&g->z) != Z_OK)
        return core_error_set(EVOLVE_ERROR, "archive: deflate reset failed");
    return 0;
}

static int write_header(struct sto_archive_gen *g, const struct sto_entry *e)
{
    struct archive_entry *ae = archive_entry_new();
    int r;

    if (!ae)
        return core_error_oom();
    archive_entry_set_pathname_utf8(ae, e->path);
    archive_entry_set_filetype(ae, e->type == STO_DIR    ? AE_IFDIR
                                   : e->type == STO_LINK ? AE_IFLNK
                                                         : AE_IFREG);
    archive_entry_set_perm(ae, (mode_t)e->mode);
    archive_entry_set_mtime(ae, (time_t)e->mtime, 0);
    archive_entry_set_uid(ae, 1000);
    archive_entry_set_gid(ae, 1000);
    archive_entry_set_uname_utf8(ae, "user");
    archive_entry_set_gname_utf8(ae, "user");
    archive_entry_set_size(ae, e->type == STO_FILE ? (la_int64_t)e->size : 0);
    if (e->type == STO_LINK)
        archive_entry_set_symlink_utf8(ae, e->target);
    r = archive_write_header(g->a, ae);
    archive_entry_free(ae);
    if (r != ARCHIVE_OK)
        return core_error_set(EVOLVE_ERROR, "archive: entry %s: %s", e->path,
                              archive_error_string(g->a));
    return 0;
}

static int step(struct sto_archive_gen *g, const unsigned char **data, size_t *len)
{
    const struct sto_entry *e;
    struct sto_blob_info bi;
    size_t blen = 0, off;
    int rc;

    *len = 0;
    switch (g->state) {
    case G_START: {
        static const unsigned char gz[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
        *data = gz;
        *len = sizeof(gz);
        g->state = g->m->count ? G_ENTRY : G_CLOSE;
        return 0;
    }
    case G_ENTRY:
        e = &g->m->entries[g->ei];
        rc = write_header(g, e);
        if (rc == 0)
            rc = flush_plain(g, len);
        *data = g->out;
        g->ci = 0;
        g->entry_bytes = 0;
        g->state = G_CHUNK;
        return rc;
    case G_CHUNK:
        e = &g->m->entries[g->ei];
        if (e->type != STO_FILE || g->ci == e->nchunks) {
            if (e->type == STO_FILE && g->entry_bytes != e->size)
                return core_error_set(EVOLVE_ECORRUPT,
                                      "archive: chunks of %s hold %llu bytes, "
                                      "manifest says %llu",
                                      e->path, (unsigned long long)g->entry_bytes,
                                      (unsigned long long)e->size);
            g->state = ++g->ei < g->m->count ? G_ENTRY : G_CLOSE;
            return 0;
        }
        free(g->blob);
        g->blob = NULL;
        rc = g->fetch(g->payload, e->chunks[g->ci], &g->blob, &blen);
        if (rc == 0)
            rc = sto_blob_header(&bi, g->blob, blen, e->chunks[g->ci]);
        if (rc < 0)
            return rc;
        if (g->entry_bytes + bi.raw_len > e->size)
            return core_error_set(EVOLVE_ECORRUPT, "archive: chunks of %s exceed its size",
                                  e->path);
        g->data_mode = true;
        g->data_seen = 0;
        for (off = 0; off < bi.raw_len;) {
            size_t n = bi.raw_len - off < sizeof(zeros) ? bi.raw_len - off : sizeof(zeros);
            if (archive_write_data(g->a, zeros, n) != (la_ssize_t)n)
                break;
            off += n;
        }
        g->data_mode = false;
        if (g->data_seen != bi.raw_len)
            return core_error_set(EVOLVE_ERROR, "archive: %s: %s", e->path,
                                  archive_error_string(g->a));
        g->entry_bytes += bi.raw_len;
        g->crc = (uint32_t)crc32_combine(g->crc, bi.crc, (z_off_t)bi.raw_len);
        g->isize += bi.raw_len;
        g->ci++;
        *data = g->blob + STO_BLOB_HDR;
        *len = bi.comp_len;
        return 0;
    case G_CLOSE:
        if (archive_write_close(g->a) != ARCHIVE_OK)
            return core_error_set(EVOLVE_ERROR, "archive: %s", archive_error_string(g->a));
        rc = flush_plain(g, len);
        *data = g->out;
        g->state = G_TAIL;
        return rc;
    case G_TAIL: {
        unsigned char *t = g->tail + g->tail_len;
        uint32_t v[2] = {g->crc, g->isize};
        int i, k;
        for (k = 0; k < 2; k++)
            for (i = 0; i < 4; i++)
                *t++ = (unsigned char)(v[k] >> (8 * i));
        *data = g->tail;
        *len = g->tail_len + 8;
        g->state = G_DONE;
        return 0;
    }
    default:
        return 0;
    }
}

int sto_archive_gen_next(struct sto_archive_gen *g, const unsigned char **data, size_t *len)
{
    locale_t old = g->loc ? uselocale(g->loc) : (locale_t)0;
    int rc = 0;

    *len = 0;
    /* Some steps (a directory's header already flushed, a finished file) yield nothing. */
    while (rc == 0 && *len == 0 && g->state != G_DONE)
        rc = step(g, data, len);
    if (g->loc)
        uselocale(old);
    if (rc < 0)
        g->state = G_DONE;
    return rc;
}

int sto_archive_hash(const struct sto_manifest *m, sto_blob_fetch_fn fetch, void *payload,
                     char hex[STO_HEX_LEN + 1], uint64_t *size)
{
    struct sto_archive_gen *g = NULL;
    struct sto_sha256 *h = NULL;
    const unsigned char *d;
    size_t n;
    int rc;

    *size = 0;
    rc = sto_sha256_new(&h);
    if (rc == 0)
        rc = sto_archive_gen_new(&g, m, fetch, payload);
    while (rc == 0) {
        rc = sto_archive_gen_next(g, &d, &n);
        if (rc < 0 || n == 0)
            break;
        rc = sto_sha256_update(h, d, n);
        *size += n;
    }
    if (rc == 0)
        rc = sto_sha256_final_hex(h, hex);
    sto_archive_gen_free(g);
    sto_sha256_free(h);
    return rc;
}
