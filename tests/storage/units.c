/* The storage building blocks on their own: chunk boundaries resynchronise after an insertion,
 * blobs round-trip and detect damage, path cleaning, symlink resolution, excludes, and the
 * manifest parser rejecting malformed input. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "evolve/evolve.h"
#include "storage/storage.h"

TestSuite(sto_units, .timeout = 30);

static unsigned char *random_bytes(size_t n, uint64_t seed)
{
    unsigned char *b = malloc(n);
    size_t i;

    for (i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (unsigned char)(seed >> 56);
    }
    return b;
}

static size_t chunk_ids(const unsigned char *d, size_t len, char (*ids)[65], size_t max)
{
    size_t off = 0, n = 0;

    while (off < len && n < max) {
        size_t c = sto_chunk_next(d + off, len - off, true);
        cr_assert_leq(c, STO_CHUNK_MAX);
        if (off + c < len)
            cr_assert_geq(c, STO_CHUNK_MIN);
        sto_sha256_hex(ids[n++], d + off, c);
        off += c;
    }
    return n;
}

Test(sto_units, chunks_resynchronise_after_an_insertion)
{
    static char a[400][65], b[400][65];
    size_t len = 2u << 20, na, nb, i, k, shared = 0;
    unsigned char *d = random_bytes(len + 1, 3), *e = malloc(len + 1);

    memcpy(e, d, 1000);
    e[1000] = 'X'; /* one byte inserted near the start */
    memcpy(e + 1001, d + 1000, len - 1000);
    na = chunk_ids(d, len, a, 400);
    nb = chunk_ids(e, len + 1, b, 400);
    cr_assert_gt(na, 2u << 20 >> 16, "average chunk below 64 KiB");
    for (i = 0; i < nb; i++)
        for (k = 0; k < na; k++)
            if (!strcmp(b[i], a[k])) {
                shared++;
                break;
            }
    cr_assert_geq(shared + 2, na, "only %zu of %zu chunks survived", shared, na);
    free(d);
    free(e);
}

Test(sto_units, chunker_waits_for_more_data_unless_final)
{
    unsigned char *d = random_bytes(STO_CHUNK_MIN, 1);

    cr_assert_eq(sto_chunk_next(d, STO_CHUNK_MIN, false), 0);
    cr_assert_eq(sto_chunk_next(d, STO_CHUNK_MIN, true), STO_CHUNK_MIN);
    cr_assert_eq(sto_chunk_next(d, 0, true), 0);
    free(d);
}

Test(sto_units, blobs_round_trip_and_detect_damage)
{
    static const char text[] = "int main(void) { return 0; } int main(void) { return 0; }";
    unsigned char *rnd = random_bytes(50000, 9), *blob = NULL, *raw = NULL;
    const void *inputs[] = {text, rnd, ""};
    size_t lens[] = {sizeof(text) - 1, 50000, 0}, blen = 0, rlen = 0, i;
    char id[65];

    for (i = 0; i < 3; i++) {
        sto_sha256_hex(id, inputs[i], lens[i]);
        cr_assert_eq(sto_blob_encode(&blob, &blen, inputs[i], lens[i]), 0);
        cr_assert_eq(sto_blob_decode(&raw, &rlen, blob, blen, id), 0, "%s",
                     evolve_error_last()->message);
        cr_assert_eq(rlen, lens[i]);
        cr_assert_eq(memcmp(raw, inputs[i], rlen), 0);
        free(raw);
        if (lens[i]) {
            blob[blen - 6] ^= 1;
            cr_assert_eq(sto_blob_decode(&raw, &rlen, blob, blen, id), EVOLVE_ECORRUPT);
            cr_assert_not_null(strstr(evolve_error_last()->message, id));
        }
        cr_assert_eq(sto_blob_decode(&raw, &rlen, blob, blen - 1, id), EVOLVE_ECORRUPT);
        free(blob);
    }
    /* incompressible data is stored, not deflated: barely larger than itself */
    cr_assert_eq(sto_blob_encode(&blob, &blen, rnd, 50000), 0);
    cr_assert_lt(blen, 50000 + 64);
    free(blob);
    free(rnd);
}

Test(sto_units, path_clean_normalises_and_refuses)
{
    char p[64];

    strcpy(p, "./a/./b//c/"); /* checksrc applies to src/ only */
    cr_assert_eq(sto_path_clean(p, "t"), 0);
    cr_assert_str_eq(p, "a/b/c");
    strcpy(p, "./");
    cr_assert_eq(sto_path_clean(p, "t"), 1);
    strcpy(p, "..foo/x"); /* not "..": allowed, unlike the reference's prefix test */
    cr_assert_eq(sto_path_clean(p, "t"), 0);
    strcpy(p, "a/../b");
    cr_assert_eq(sto_path_clean(p, "t"), EVOLVE_EUNSAFE);
    strcpy(p, "/etc/passwd");
    cr_assert_eq(sto_path_clean(p, "t"), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "/etc/passwd"));
    strcpy(p, "");
    cr_assert_eq(sto_path_clean(p, "t"), EVOLVE_EUNSAFE);
}

Test(sto_units, symlink_targets_resolve_through_other_links)
{
    char *links[] = {"d/up", "x/deep", "esc"};
    char *targets[] = {"..", "../d", "d/up/.."};

    cr_assert_eq(sto_symlink_check("a", "b/../c", NULL, NULL, 0), 0);
    cr_assert_eq(sto_symlink_check("d/e/l", "../../x", NULL, NULL, 0), 0);
    cr_assert_eq(sto_symlink_check("d/l", "../../x", NULL, NULL, 0), EVOLVE_EUNSAFE);
    cr_assert_eq(sto_symlink_check("l", "/abs", NULL, NULL, 0), EVOLVE_EUNSAFE);
    cr_assert_eq(sto_symlink_check("d/up", "..", links, targets, 3), 0);
    cr_assert_eq(sto_symlink_check("x/deep", "../d", links, targets, 3), 0);
    cr_assert_eq(sto_symlink_check("esc", "d/up/..", links, targets, 3), EVOLVE_EUNSAFE);
    cr_assert_eq(sto_symlink_check("y", "x/deep/up/..", links, targets, 3), EVOLVE_EUNSAFE);
}

Test(sto_units, excludes)
{
    static const char *const kimi[] = {".kimi-code/config.toml", NULL};

    cr_assert(sto_excluded("workspace/a/node_modules", "workspace", NULL));
    cr_assert(sto_excluded("workspace/x.pyc", "workspace", NULL));
    cr_assert(sto_excluded("workspace/temp", "workspace", NULL));
    cr_assert_not(sto_excluded("workspace/a/temp", "workspace", NULL));
    cr_assert_not(sto_excluded("workspace/venvs", "workspace", NULL));
    cr_assert(sto_excluded("proj/temp", "proj", NULL));
    cr_assert(sto_excluded(".kimi-code/config.toml", "workspace", kimi));
    cr_assert_not(sto_excluded(".kimi-code/config.toml.bak", "workspace", kimi));
}

Test(sto_units, manifest_parser_rejects_malformed_input)
{
    static const char *const bad[] = {
        "",
        "not json\n",
        "{\"evolveManifest\":2,\"entries\":0}\n",
        "{\"evolveManifest\":1,\"entries\":2}\n{\"p\":\"a\",\"t\":\"d\",\"m\":493,\"mt\":0}\n",
        "{\"evolveManifest\":1,\"entries\":2}\n{\"p\":\"b\",\"t\":\"d\",\"m\":493,\"mt\":0}\n"
        "{\"p\":\"a\",\"t\":\"d\",\"m\":493,\"mt\":0}\n",
        "{\"evolveManifest\":1,\"entries\":1}\n{\"p\":\"a\",\"t\":\"f\",\"m\":420,\"mt\":0,"
        "\"s\":1,\"c\":[\"xyz\"]}\n",
        "{\"evolveManifest\":1,\"entries\":1}\n{\"p\":\"a\",\"t\":\"x\",\"m\":420,\"mt\":0}\n",
        "{\"evolveManifest\":1,\"entries\":1}\n{\"p\":\"a\",\"t\":\"l\",\"m\":511,\"mt\":0}\n",
        "{\"evolveManifest\":1,\"entries\":2}\n{\"p\":\"f\",\"t\":\"f\",\"m\":420,\"mt\":0,"
        "\"s\":0,\"c\":[]}\n{\"p\":\"f/g\",\"t\":\"d\",\"m\":493,\"mt\":0}\n",
    };
    struct sto_manifest m;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = sto_manifest_parse(&m, bad[i], strlen(bad[i]), "ckpt_x");
        cr_assert(rc == EVOLVE_ECORRUPT || rc == EVOLVE_EUNSAFE, "case %zu gave %d", i, rc);
        cr_assert_not_null(strstr(evolve_error_last()->message, "ckpt_x"), "case %zu: %s", i,
                           evolve_error_last()->message);
        cr_assert_eq(m.count, 0);
    }
}
