/* Integrity and space: a corrupted or missing blob is detected before anything is extracted
 * (restore, download, download_files) and reported by verify; unreadable index records are
 * skipped by list and reported by verify; gc removes only unreferenced blobs and temp files;
 * 100 checkpoints of near-identical trees cost about one copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "storage/storage.h"
#include "support/support.h"
#include "support/tree.h"

static char base[512], home[600], storedir[600];
static evolve_store_t *store;

#define OK(expr) cr_assert_eq((expr), 0, "%s: %s", #expr, evolve_error_last()->message)

static void setup(void)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;

    ts_mkdtemp(base, sizeof(base), "sto-int");
    snprintf(home, sizeof(home), "%s/home", base);
    snprintf(storedir, sizeof(storedir), "%s/store", base);
    o.root = storedir;
    o.no_sync = true;
    OK(evolve_store_open(&store, &o));
}

static void teardown(void)
{
    evolve_store_free(store);
    ts_rmtree(base);
}

TestSuite(sto_integrity, .init = setup, .fini = teardown, .timeout = 120);

static evolve_checkpoint_info_t *make(void)
{
    evolve_checkpoint_options_t o = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_checkpoint_info_t *info = NULL;

    o.agent_type = "claude";
    OK(evolve_store_checkpoint(&info, store, home, &o));
    return info;
}

/* The blob file holding a one-chunk file's content. */
static void blob_path(char *out, size_t n, const char *content)
{
    char id[65];

    OK(sto_sha256_hex(id, content, strlen(content)));
    snprintf(out, n, "%s/blobs/%.2s/%s", storedir, id, id);
}

static void flip_last_byte(const char *path)
{
    size_t len = 0;
    char *b = ts_read_file(path, &len);

    cr_assert_not_null(b, "no blob at %s", path);
    b[len - 5] ^= 0x55; /* inside the deflate data, before the sync-flush marker */
    ts_write_file(path, b, len);
    free(b);
}

static void collect_damage(void *payload, const char *what, const char *msg)
{
    int *n = payload;

    (void)what;
    (void)msg;
    (*n)++;
}

Test(sto_integrity, corrupted_blob_is_caught_before_extraction)
{
    static const char secret[] = "the original content of result.json, long enough";
    evolve_checkpoint_info_t *info;
    evolve_store_report_t rep;
    evolve_file_t *f = NULL;
    size_t n = 0;
    char bp[800], dest[700], to[700];
    const char *want[] = {"workspace/result.json"};
    int damage = 0;

    tt_file(home, "workspace/result.json", secret, 0644);
    tt_file(home, "workspace/other.txt", "untouched", 0644);
    info = make();
    OK(evolve_store_verify(&rep, store, NULL, NULL));
    blob_path(bp, sizeof(bp), secret);
    flip_last_byte(bp);

    snprintf(dest, sizeof(dest), "%s/restored", base);
    cr_assert_eq(evolve_store_restore(NULL, store, info->id, dest), EVOLVE_ECORRUPT);
    cr_assert_not_null(strstr(evolve_error_last()->message, "integrity check failed"), "%s",
                       evolve_error_last()->message);
    cr_assert_eq(access(dest, F_OK), -1, "restore created its destination");
    cr_assert_eq(tt_count(base), 2, "restore left a staging dir behind");

    snprintf(to, sizeof(to), "%s/dl", base);
    cr_assert_eq(evolve_store_download(NULL, store, info->id, to, true), EVOLVE_ECORRUPT);
    cr_assert_eq(tt_count(to), 0);
    cr_assert_eq(evolve_store_download(NULL, store, info->id, to, false), EVOLVE_ECORRUPT);
    cr_assert_eq(tt_count(to), 0);
    cr_assert_eq(evolve_store_download_files(&f, &n, store, info->id, want, 1, NULL, 0, NULL),
                 EVOLVE_ECORRUPT);
    cr_assert_not_null(strstr(evolve_error_last()->message, "workspace/result.json"));

    cr_assert_eq(evolve_store_verify(&rep, store, collect_damage, &damage), EVOLVE_ECORRUPT);
    cr_assert_eq(rep.damaged, 2, "the blob and the checkpoint's archive: %zu", rep.damaged);
    cr_assert_eq(damage, 2);
    evolve_checkpoint_info_free(info);
}

Test(sto_integrity, missing_blob_is_reported)
{
    static const char content[] = "this file's blob will vanish";
    evolve_checkpoint_info_t *info;
    evolve_store_report_t rep;
    char bp[800], dest[700];

    tt_file(home, "workspace/a.txt", content, 0644);
    info = make();
    blob_path(bp, sizeof(bp), content);
    cr_assert_eq(unlink(bp), 0);
    snprintf(dest, sizeof(dest), "%s/restored", base);
    cr_assert_eq(evolve_store_restore(NULL, store, "latest", dest), EVOLVE_ECORRUPT);
    cr_assert_not_null(strstr(evolve_error_last()->message, "missing"), "%s",
                       evolve_error_last()->message);
    cr_assert_eq(evolve_store_verify(&rep, store, NULL, NULL), EVOLVE_ECORRUPT);
    cr_assert_eq(rep.damaged, 1);
    evolve_checkpoint_info_free(info);
}

Test(sto_integrity, unreadable_index_record_is_skipped_by_list_and_reported_by_verify)
{
    evolve_checkpoint_info_t *info, **list = NULL;
    evolve_store_report_t rep;
    size_t n = 0;
    char p[800];

    tt_file(home, "workspace/a.txt", "a", 0644);
    info = make();
    snprintf(p, sizeof(p), "%s/index/ckpt_broken_00000000.json", storedir);
    ts_write_file(p, "{not json", 9);
    OK(evolve_store_list(&list, &n, store, 0, NULL));
    cr_assert_eq(n, 1);
    cr_assert_str_eq(list[0]->id, info->id);
    evolve_checkpoint_list_free(list, n);
    cr_assert_eq(evolve_store_verify(&rep, store, NULL, NULL), EVOLVE_ECORRUPT);
    cr_assert_eq(rep.damaged, 1);
    cr_assert_eq(rep.checkpoints, 1);
    evolve_checkpoint_info_free(info);
}

Test(sto_integrity, gc_removes_only_unreferenced_blobs_and_temp_files)
{
    evolve_checkpoint_info_t *info, *g = NULL;
    evolve_store_report_t rep;
    struct sto_store *raw = NULL;
    char(*ids)[STO_HEX_LEN + 1] = NULL;
    size_t nids = 0;
    char tmp[800], dest[700], why[512];
    static const char orphan[] = "bytes of a checkpoint that crashed before its index record";

    tt_file(home, "workspace/keep.txt", "keep me", 0644);
    tt_file(home, ".claude/settings.json", "{}", 0644);
    info = make();
    OK(sto_store_open(&raw, storedir, 1));
    sto_backend_local_set_nosync(raw->be, true);
    OK(sto_store_bytes(raw, (const unsigned char *)orphan, strlen(orphan), &ids, &nids));
    sto_store_free(raw);
    free(ids);
    snprintf(tmp, sizeof(tmp), "%s/tmp/12345.1.abc", storedir);
    ts_write_file(tmp, "half-written", 12);

    OK(evolve_store_verify(&rep, store, NULL, NULL));
    cr_assert_eq(rep.unreferenced, 1);
    OK(evolve_store_gc(&rep, store));
    cr_assert_eq(rep.unreferenced, 1, "removed %zu", rep.unreferenced);
    cr_assert_eq(rep.checkpoints, 1);
    cr_assert_eq(access(tmp, F_OK), -1);
    OK(evolve_store_verify(&rep, store, NULL, NULL));
    cr_assert_eq(rep.unreferenced, 0);
    cr_assert_eq(rep.damaged, 0);
    snprintf(dest, sizeof(dest), "%s/r", base);
    OK(evolve_store_restore(&g, store, info->id, dest));
    cr_assert_eq(tt_compare(home, dest, why, sizeof(why)), 0, "%s", why);
    evolve_checkpoint_info_free(g);
    evolve_checkpoint_info_free(info);
}

static void append(const char *rel, const char *line)
{
    char p[800];
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", home, rel);
    f = fopen(p, "a");
    cr_assert_not_null(f);
    fputs(line, f);
    fclose(f);
}

static uint64_t store_bytes(void)
{
    char p[800];
    uint64_t sum;

    snprintf(p, sizeof(p), "%s/blobs", storedir);
    sum = tt_bytes_under(p);
    snprintf(p, sizeof(p), "%s/index", storedir);
    return sum + tt_bytes_under(p);
}

Test(sto_integrity, hundred_near_identical_checkpoints_cost_about_one_copy)
{
    evolve_checkpoint_info_t *info = NULL, *g = NULL;
    unsigned char *buf = malloc(200000);
    uint64_t one, all, seed = 42;
    char name[64], line[64], dest[700], why[512];
    size_t f, i;
    int k;

    for (f = 0; f < 30; f++) { /* 6 MB of incompressible files: the worst case for size */
        for (i = 0; i < 200000; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[i] = (unsigned char)(seed >> 56);
        }
        snprintf(name, sizeof(name), "workspace/data/f%02zu.bin", f);
        tt_bytes(home, name, buf, 200000);
    }
    tt_file(home, "workspace/step.txt", "0", 0644);
    { /* an existing 100 KB session log */
        char *log = malloc(100000);
        for (i = 0; i < 100000; i++)
            log[i] = "abcdefghij{}\":, \n"[(i * 7 + i / 13) % 17];
        tt_bytes(home, ".claude/projects/p/session.jsonl", log, 100000);
        free(log);
    }
    info = make();
    one = store_bytes();
    for (k = 1; k < 100; k++) {
        evolve_checkpoint_info_free(info);
        snprintf(line, sizeof(line), "step %d\n", k);
        tt_file(home, "workspace/step.txt", line, 0644);
        /* and a line appended to the agent's session log, as every run does */
        snprintf(name, sizeof(name), "{\"type\":\"assistant\",\"step\":%d}\n", k);
        append(".claude/projects/p/session.jsonl", name);
        info = make();
    }
    all = store_bytes();
    cr_assert_leq((double)all, 1.2 * (double)one, "100 checkpoints: %llu bytes, one: %llu",
                  (unsigned long long)all, (unsigned long long)one);
    snprintf(dest, sizeof(dest), "%s/r", base);
    OK(evolve_store_restore(&g, store, "latest", dest));
    cr_assert_eq(tt_compare(home, dest, why, sizeof(why)), 0, "%s", why);
    evolve_checkpoint_info_free(g);
    evolve_checkpoint_info_free(info);
    free(buf);
}
