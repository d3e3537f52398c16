/* blob.c — the stored form of one chunk: a small header and a raw deflate stream that ends with a
 * sync flush, so stored chunks are spliced as-is into the gzip member of an archive (no second
 * compression when an archive is rebuilt).
 * Owns: encoding and verified decoding. Threads: any (no shared state). */
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* True when the bytes look uniformly random (compressed media, archives, encrypted data):
 * a chi-square test of the byte histogram against uniform, in integers. Such chunks are stored
 * (deflate level 0) instead of spending level 6's time on data it cannot shrink. A pure function
 * of the bytes, so archives stay deterministic. For random data chi2 is about 255 +- 23; text
 * and code give tens of thousands. */
static bool looks_random(const unsigned char *d, size_t len)
{
    uint32_t hist[256] = {0};
    uint64_t sum = 0;
    size_t i;

    if (len < 4096)
        return false;
    for (i = 0; i < len; i++)
        hist[d[i]]++;
    /* chi2 * E = sum (c - E)^2 with E = len / 256; compare in units of 1/256 to stay integral */
    for (i = 0; i < 256; i++) {
        int64_t diff = (int64_t)hist[i] * 256 - (int64_t)len;
        sum += (uint64_t)(diff * diff);
    }
    /* chi2 = sum / (256 * len); random if chi2 < 400 */
    return sum < (uint64_t)400 * 256 * (uint64_t)len;
}

int sto_blob_encode(unsigned char **out, size_t *out_len, const void *data, size_t len)
{
    z_stream z;
    size_t cap;
    unsigned char *buf;
    int zr;

    if (len > STO_CHUNK_MAX * 64u)
        return core_error_set(EVOLVE_EINVAL, "blob: chunk of %zu bytes is too large", len);
    memset(&z, 0, sizeof(z));
    /* Level 6 (gzip's default) and default memLevel: the output is part of the archive bytes. */
    if (deflateInit2(&z, looks_random(data, len) ? 0 : 6, Z_DEFLATED, -15, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return core_error_oom();
    cap = STO_BLOB_HDR + deflateBound(&z, (uLong)len) + 16;
    buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return core_error_oom();
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = buf + STO_BLOB_HDR;
    z.avail_out = (uInt)(cap - STO_BLOB_HDR);
    zr = deflate(&z, Z_SYNC_FLUSH);
    if (zr != Z_OK || z.avail_in != 0 || z.avail_out == 0) {
        deflateEnd(&z);
        free(buf);
        return core_error_set(EVOLVE_ERROR, "blob: deflate failed (%d)", zr);
    }
    memcpy(buf, "EVB1", 4);
    put32(buf + 4, (uint32_t)len);
    put32(buf + 8, (uint32_t)crc32(0L, data, (uInt)len));
    put32(buf + 12, (uint32_t)z.total_out);
    *out_len = STO_BLOB_HDR + z.total_out;
    deflateEnd(&z);
    *out = buf;
    return 0;
}

int sto_blob_header(struct sto_blob_info *info, const unsigned char *blob, size_t blob_len,
                    const char *id)
{
    if (blob_len < STO_BLOB_HDR || memcmp(blob, "EVB1", 4))
        return core_error_set(EVOLVE_ECORRUPT, "blob %s: bad header", id);
    info->raw_len = get32(blob + 4);
    info->crc = get32(blob + 8);
    info->comp_len = get32(blob + 12);
    if ((size_t)info->comp_len != blob_len - STO_BLOB_HDR || info->raw_len > STO_CHUNK_MAX * 64u)
        return core_error_set(EVOLVE_ECORRUPT, "blob %s: length %zu does not match its header", id,
                              blob_len);
    return 0;
}

int sto_blob_decode(unsigned char **out, size_t *out_len, const unsigned char *blob,
                    size_t blob_len, const char *id)
{
    struct sto_blob_info bi;
    char hex[STO_HEX_LEN + 1];
    unsigned char *buf;
    z_stream z;
    int rc, zr;

    rc = sto_blob_header(&bi, blob, blob_len, id);
    if (rc < 0)
        return rc;
    buf = malloc((size_t)bi.raw_len + 1); /* +1: room to notice extra output */
    if (!buf)
        return core_error_oom();
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, -15) != Z_OK) {
        free(buf);
        return core_error_oom();
    }
    z.next_in = (Bytef *)blob + STO_BLOB_HDR;
    z.avail_in = bi.comp_len;
    z.next_out = buf;
    z.avail_out = bi.raw_len + 1;
    zr = inflate(&z, Z_SYNC_FLUSH);
    inflateEnd(&z);
    if ((zr != Z_OK && zr != Z_BUF_ERROR) || z.total_out != bi.raw_len || z.avail_in != 0) {
        free(buf);
        return core_error_set(EVOLVE_ECORRUPT, "blob %s: deflate data is damaged", id);
    }
    if ((uint32_t)crc32(0L, buf, bi.raw_len) != bi.crc ||
        sto_sha256_hex(hex, buf, bi.raw_len) < 0 || strcmp(hex, id)) {
        free(buf);
        return core_error_set(EVOLVE_ECORRUPT, "blob %s: content does not match its hash", id);
    }
    *out = buf;
    *out_len = bi.raw_len;
    return 0;
}
