/* Checkpoint round trips and the read operations: restore reproduces the tree (symlinks, empty
 * dirs, executable bits, unicode names, mtimes); the archive is deterministic; excludes; lineage,
 * latest, list limit/tag; download and download_files. */
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

static evolve_store_t *open_store(const char *dir)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
    evolve_store_t *s = NULL;

    o.root = dir;
    o.no_sync = true;
    OK(evolve_store_open(&s, &o));
    return s;
}

static void setup(void)
{
    ts_mkdtemp(base, sizeof(base), "sto-rt");
    snprintf(home, sizeof(home), "%s/home", base);
    snprintf(storedir, sizeof(storedir), "%s/store", base);
    store = open_store(storedir);
}

static void teardown(void)
{
    evolve_store_free(store);
    ts_rmtree(base);
}

TestSuite(sto_roundtrip, .init = setup, .fini = teardown, .timeout = 60);

static void sample_tree(const char *h)
{
    tt_file(h, "workspace/README.md", "# project\n", 0644);
    tt_file(h, "workspace/bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
    tt_file(h, "workspace/src/main.c", "int main(void) { return 0; }\n", 0600);
    tt_file(h, "workspace/ünïcödé/名前 with space.txt", "unicode\n", 0644);
    tt_link(h, "workspace/latest", "src/main.c");
    tt_link(h, "workspace/src/up", "../README.md");
    tt_dir(h, "workspace/empty", 0750);
    tt_file(h, "workspace/output/result.json", "{\"answer\":42}", 0644);
    tt_file(h, "workspace/output/summary.txt", "done", 0644);
    tt_file(h, ".claude/settings.json", "{\"model\":\"x\"}", 0644);
    tt_file(h, ".claude/projects/p/session.jsonl", "{\"type\":\"user\"}\n", 0644);
    tt_mtime(h, "workspace/README.md", 1700000000);
    tt_mtime(h, "workspace/bin/run.sh", 1600000000);
    {
        char big[200000];
        size_t i;
        for (i = 0; i < sizeof(big); i++)
            big[i] = (char)((i * 2654435761u) >> 13);
        tt_bytes(h, "workspace/data/big.bin", big, sizeof(big));
    }
}

static evolve_checkpoint_info_t *make(const char *h, const char *agent, const char *parent,
                                      const char *tag, const char *comment)
{
    evolve_checkpoint_options_t o = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_checkpoint_info_t *info = NULL;

    o.agent_type = agent;
    o.parent_id = parent;
    o.tag = tag;
    o.comment = comment;
    o.model = "m1";
    o.workspace_mode = "knowledge";
    OK(evolve_store_checkpoint(&info, store, h, &o));
    return info;
}

Test(sto_roundtrip, restore_reproduces_the_tree)
{
    evolve_checkpoint_info_t *info, *got = NULL;
    char out[700], why[1024];

    sample_tree(home);
    info = make(home, "claude", NULL, "t", "first");
    cr_assert_eq(strncmp(info->id, "ckpt_", 5), 0);
    cr_assert_eq(strlen(info->hash), 64);
    cr_assert_not_null(strchr(info->timestamp, 'T'));
    cr_assert_gt(info->size_bytes, 0);
    snprintf(out, sizeof(out), "%s/restored", base);
    OK(evolve_store_restore(&got, store, info->id, out));
    cr_assert_str_eq(got->agent_type, "claude");
    cr_assert_str_eq(got->workspace_mode, "knowledge");
    cr_assert_eq(tt_compare(home, out, why, sizeof(why)), 0, "%s", why);
    evolve_checkpoint_info_free(got);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, restore_refuses_a_non_empty_destination)
{
    evolve_checkpoint_info_t *info;
    char out[700];

    sample_tree(home);
    info = make(home, "claude", NULL, NULL, NULL);
    snprintf(out, sizeof(out), "%s/busy", base);
    tt_file(out, "keep.txt", "mine", 0644);
    cr_assert_eq(evolve_store_restore(NULL, store, info->id, out), EVOLVE_EEXISTS);
    cr_assert_not_null(strstr(evolve_error_last()->message, "not empty"));
    cr_assert_eq(tt_count(out), 1);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, same_tree_gives_same_hash_in_one_and_two_stores)
{
    evolve_checkpoint_info_t *a, *b, *c = NULL;
    evolve_checkpoint_options_t o = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_store_t *other;
    char dir2[700];

    sample_tree(home);
    a = make(home, "claude", NULL, NULL, NULL);
    b = make(home, "claude", a->id, "other-tag", "c");
    cr_assert_str_neq(a->id, b->id);
    cr_assert_str_eq(a->hash, b->hash);
    cr_assert_eq(a->size_bytes, b->size_bytes);
    snprintf(dir2, sizeof(dir2), "%s/store2", base);
    other = open_store(dir2);
    o.agent_type = "claude";
    OK(evolve_store_checkpoint(&c, other, home, &o));
    cr_assert_str_eq(a->hash, c->hash);
    evolve_store_free(other);
    evolve_checkpoint_info_free(a);
    evolve_checkpoint_info_free(b);
    evolve_checkpoint_info_free(c);
}

Test(sto_roundtrip, a_changed_mtime_or_mode_changes_the_hash)
{
    evolve_checkpoint_info_t *a, *b, *c;

    sample_tree(home);
    a = make(home, "claude", NULL, NULL, NULL);
    tt_mtime(home, "workspace/src/main.c", 1234567890);
    b = make(home, "claude", NULL, NULL, NULL);
    cr_assert_str_neq(a->hash, b->hash);
    tt_file(home, "workspace/src/main.c", "int main(void) { return 0; }\n", 0700);
    tt_mtime(home, "workspace/src/main.c", 1234567890);
    c = make(home, "claude", NULL, NULL, NULL);
    cr_assert_str_neq(b->hash, c->hash);
    evolve_checkpoint_info_free(a);
    evolve_checkpoint_info_free(b);
    evolve_checkpoint_info_free(c);
}

Test(sto_roundtrip, excludes_follow_the_reference)
{
    evolve_checkpoint_info_t *info;
    evolve_file_t *files = NULL;
    size_t n = 0, i;
    static const char *const gone[] = {"workspace/node_modules/x/index.js",
                                       "workspace/a/__pycache__/m.cpython.pyc",
                                       "workspace/mod.pyc",
                                       "workspace/.cache/c",
                                       "workspace/.npm/n",
                                       "workspace/.pip/p",
                                       "workspace/.venv/bin/python",
                                       "workspace/venv/lib",
                                       "workspace/temp/scratch.txt",
                                       ".kimi-code/config.toml",
                                       ".claude/settings.json",
                                       "other/file.txt"};

    for (i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        tt_file(home, gone[i], "x", 0644);
    tt_file(home, "workspace/keep.py", "print(1)", 0644);
    tt_file(home, "workspace/deep/temp/kept.txt", "only <ws>/temp is excluded", 0644);
    tt_file(home, ".kimi-code/sessions/s1.json", "{}", 0644);
    info = make(home, "kimi", NULL, NULL, NULL);
    OK(evolve_store_download_files(&files, &n, store, info->id, NULL, 0, NULL, 0, NULL));
    cr_assert_eq(n, 3, "got %zu files", n);
    cr_assert_str_eq(files[0].path, ".kimi-code/sessions/s1.json");
    cr_assert_str_eq(files[1].path, "workspace/deep/temp/kept.txt");
    cr_assert_str_eq(files[2].path, "workspace/keep.py");
    evolve_files_free(files, n);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, opencode_archives_its_xdg_dirs_and_missing_dirs_are_fine)
{
    evolve_checkpoint_info_t *info;
    evolve_file_t *files = NULL;
    size_t n = 0;

    tt_file(home, "workspace/a.txt", "a", 0644);
    tt_file(home, ".local/share/opencode/storage/s.json", "1", 0644);
    tt_file(home, ".config/opencode/opencode.json", "2", 0644);
    tt_file(home, ".local/share/other/x", "not archived", 0644);
    info = make(home, "opencode", NULL, NULL, NULL); /* .local/state/opencode is missing */
    OK(evolve_store_download_files(&files, &n, store, info->id, NULL, 0, NULL, 0, NULL));
    cr_assert_eq(n, 3);
    cr_assert_str_eq(files[0].path, ".config/opencode/opencode.json");
    cr_assert_str_eq(files[1].path, ".local/share/opencode/storage/s.json");
    evolve_files_free(files, n);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, unknown_agent_and_missing_home_fail)
{
    evolve_checkpoint_options_t o = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_checkpoint_info_t *info = NULL;
    evolve_checkpoint_info_t **list = NULL;
    size_t n = 9;

    tt_file(home, "workspace/a", "a", 0644);
    o.agent_type = "nope";
    cr_assert_eq(evolve_store_checkpoint(&info, store, home, &o), EVOLVE_EINVAL);
    cr_assert_not_null(strstr(evolve_error_last()->message, "Unknown agent type: nope"));
    o.agent_type = "codex";
    cr_assert_eq(evolve_store_checkpoint(&info, store, "/nonexistent/home", &o), EVOLVE_ENOTFOUND);
    cr_assert_null(info);
    OK(evolve_store_list(&list, &n, store, 0, NULL));
    cr_assert_eq(n, 0);
    evolve_checkpoint_list_free(list, n);
}

Test(sto_roundtrip, info_json_matches_the_reference_shape)
{
    evolve_checkpoint_info_t *a, *b;
    char *js, expect[512];

    tt_file(home, "workspace/a", "a", 0644);
    a = make(home, "claude", NULL, "sess", NULL);
    b = make(home, "claude", a->id, "sess", "note");
    js = evolve_checkpoint_info_to_json(b, false);
    snprintf(expect, sizeof(expect),
             "{\"id\":\"%s\",\"hash\":\"%s\",\"tag\":\"sess\",\"timestamp\":\"%s\","
             "\"sizeBytes\":%lld,\"agentType\":\"claude\",\"model\":\"m1\","
             "\"workspaceMode\":\"knowledge\",\"parentId\":\"%s\",\"comment\":\"note\"}",
             b->id, b->hash, b->timestamp, (long long)b->size_bytes, a->id);
    cr_assert_str_eq(js, expect);
    free(js);
    js = evolve_checkpoint_info_to_json(a, false);
    cr_assert_null(strstr(js, "parentId"));
    cr_assert_null(strstr(js, "comment"));
    free(js);
    evolve_checkpoint_info_free(a);
    evolve_checkpoint_info_free(b);
}

Test(sto_roundtrip, lineage_chains_and_branches)
{
    evolve_checkpoint_info_t *r1, *r2, *r3, *r4, *g = NULL;
    char out[700];

    tt_file(home, "workspace/step", "1", 0644);
    r1 = make(home, "claude", NULL, "s", "step 1");
    tt_file(home, "workspace/step", "2", 0644);
    r2 = make(home, "claude", r1->id, "s", "step 2");
    tt_file(home, "workspace/step", "3", 0644);
    r3 = make(home, "claude", r2->id, "s", "step 3");
    /* restore r1 and continue: the branch's parent is r1, not r3 */
    snprintf(out, sizeof(out), "%s/branch", base);
    OK(evolve_store_restore(&g, store, r1->id, out));
    tt_file(out, "workspace/step", "1b", 0644);
    r4 = make(out, "claude", g->id, "s", "branch");
    cr_assert_null(r1->parent_id);
    cr_assert_str_eq(r2->parent_id, r1->id);
    cr_assert_str_eq(r3->parent_id, r2->id);
    cr_assert_str_eq(r4->parent_id, r1->id);
    evolve_checkpoint_info_free(g);
    OK(evolve_store_get(&g, store, r4->id));
    cr_assert_str_eq(g->parent_id, r1->id);
    cr_assert_str_eq(g->comment, "branch");
    evolve_checkpoint_info_free(g);
    evolve_checkpoint_info_free(r1);
    evolve_checkpoint_info_free(r2);
    evolve_checkpoint_info_free(r3);
    evolve_checkpoint_info_free(r4);
}

Test(sto_roundtrip, latest_is_global_and_missing_ids_fail)
{
    evolve_checkpoint_info_t *a, *b, *g = NULL;
    evolve_file_t *files = NULL;
    size_t n = 0;
    char out[700];

    cr_assert_eq(evolve_store_get(&g, store, "latest"), EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message, "No checkpoints found");
    snprintf(out, sizeof(out), "%s/o", base);
    cr_assert_eq(evolve_store_restore(NULL, store, "latest", out), EVOLVE_ENOTFOUND);
    cr_assert_not_null(strstr(evolve_error_last()->message, "No checkpoints found"));
    cr_assert_eq(evolve_store_download_files(&files, &n, store, "latest", NULL, 0, NULL, 0, NULL),
                 EVOLVE_ENOTFOUND);
    tt_file(home, "workspace/a", "a", 0644);
    a = make(home, "claude", NULL, "alpha", NULL);
    b = make(home, "codex", NULL, "beta", NULL);
    OK(evolve_store_get(&g, store, "latest"));
    cr_assert_str_eq(g->id, b->id);
    evolve_checkpoint_info_free(g);
    cr_assert_eq(evolve_store_get(&g, store, "ckpt_nothere_00000000"), EVOLVE_ENOTFOUND);
    cr_assert_str_eq(evolve_error_last()->message, "Checkpoint ckpt_nothere_00000000 not found");
    cr_assert_eq(evolve_store_get(&g, store, "../../etc/passwd"), EVOLVE_ENOTFOUND);
    evolve_checkpoint_info_free(a);
    evolve_checkpoint_info_free(b);
}

Test(sto_roundtrip, list_is_newest_first_with_tag_filter_before_limit)
{
    evolve_checkpoint_info_t *c[8], **list = NULL;
    size_t n = 0, i;

    tt_file(home, "workspace/a", "a", 0644);
    for (i = 0; i < 8; i++) /* alpha at 0, 2, 4, 6; beta at odd */
        c[i] = make(home, "claude", NULL, i % 2 ? "beta" : "alpha", NULL);
    OK(evolve_store_list(&list, &n, store, 0, NULL));
    cr_assert_eq(n, 8);
    for (i = 0; i < 8; i++)
        cr_assert_str_eq(list[i]->id, c[7 - i]->id);
    evolve_checkpoint_list_free(list, n);
    OK(evolve_store_list(&list, &n, store, 2, "alpha"));
    cr_assert_eq(n, 2);
    cr_assert_str_eq(list[0]->id, c[6]->id);
    cr_assert_str_eq(list[1]->id, c[4]->id);
    evolve_checkpoint_list_free(list, n);
    OK(evolve_store_list(&list, &n, store, 50, "beta"));
    cr_assert_eq(n, 4);
    evolve_checkpoint_list_free(list, n);
    OK(evolve_store_list(&list, &n, store, 1, NULL));
    cr_assert_eq(n, 1);
    cr_assert_str_eq(list[0]->id, c[7]->id);
    evolve_checkpoint_list_free(list, n);
    OK(evolve_store_list(&list, &n, store, -3, NULL));
    cr_assert_eq(n, 8);
    evolve_checkpoint_list_free(list, n);
    for (i = 0; i < 8; i++)
        evolve_checkpoint_info_free(c[i]);
}

Test(sto_roundtrip, download_archive_hashes_to_the_recorded_value)
{
    evolve_checkpoint_info_t *info;
    char *path = NULL, to[700], hex[65], why[1024], ex[700];
    size_t len = 0;
    char *bytes;

    sample_tree(home);
    info = make(home, "claude", NULL, NULL, NULL);
    snprintf(to, sizeof(to), "%s/dl", base);
    OK(evolve_store_download(&path, store, "latest", to, false));
    cr_assert_not_null(strstr(path, ".tar.gz"));
    bytes = ts_read_file(path, &len);
    cr_assert_not_null(bytes);
    cr_assert_eq((int64_t)len, info->size_bytes);
    OK(sto_sha256_hex(hex, bytes, len));
    cr_assert_str_eq(hex, info->hash);
    /* the downloaded tar.gz extracts (with our safe extractor) to the same tree */
    snprintf(ex, sizeof(ex), "%s/ex", base);
    OK(sto_extract_file(path, ex));
    cr_assert_eq(tt_compare(home, ex, why, sizeof(why)), 0, "%s", why);
    free(bytes);
    free(path);
    path = NULL;
    snprintf(to, sizeof(to), "%s/extracted", base);
    OK(evolve_store_download(&path, store, info->id, to, true));
    cr_assert_str_eq(path, to);
    cr_assert_eq(tt_compare(home, to, why, sizeof(why)), 0, "%s", why);
    free(path);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, download_files_by_path_glob_and_to)
{
    evolve_checkpoint_info_t *info;
    evolve_file_t *f = NULL;
    size_t n = 0;
    const char *two[] = {"workspace/output/result.json", ".claude/settings.json",
                         "workspace/absent.txt"};
    const char *g1[] = {"workspace/output/*"}, *g2[] = {"**/*.json"}, *g3[] = {"nonexistent/**"};
    const char *bad[] = {"../etc/passwd"};
    char to[700], p[800];
    char *got;

    sample_tree(home);
    info = make(home, "claude", NULL, NULL, NULL);
    OK(evolve_store_download_files(&f, &n, store, info->id, two, 3, g3, 1, NULL));
    cr_assert_eq(n, 2, "files take precedence over globs; absent paths are omitted");
    cr_assert_str_eq(f[0].path, ".claude/settings.json");
    cr_assert_eq(f[1].len, 13);
    cr_assert_eq(memcmp(f[1].data, "{\"answer\":42}", 13), 0);
    evolve_files_free(f, n);
    OK(evolve_store_download_files(&f, &n, store, "latest", NULL, 0, g1, 1, NULL));
    cr_assert_eq(n, 2);
    evolve_files_free(f, n);
    OK(evolve_store_download_files(&f, &n, store, "latest", NULL, 0, g2, 1, NULL));
    cr_assert_eq(n, 2); /* the workspace json and the agent json */
    evolve_files_free(f, n);
    OK(evolve_store_download_files(&f, &n, store, "latest", NULL, 0, g3, 1, NULL));
    cr_assert_eq(n, 0);
    cr_assert_null(f);
    OK(evolve_store_download_files(&f, &n, store, "latest", NULL, 0, NULL, 0, NULL));
    cr_assert_eq(n, 9, "all regular files, symlinks excluded: %zu", n);
    evolve_files_free(f, n);
    snprintf(to, sizeof(to), "%s/out", base);
    OK(evolve_store_download_files(&f, &n, store, "latest", NULL, 0, g1, 1, to));
    evolve_files_free(f, n);
    snprintf(p, sizeof(p), "%s/workspace/output/result.json", to);
    got = ts_read_file(p, NULL);
    cr_assert_str_eq(got, "{\"answer\":42}");
    free(got);
    cr_assert_eq(evolve_store_download_files(&f, &n, store, "latest", bad, 1, NULL, 0, NULL),
                 EVOLVE_EUNSAFE);
    cr_assert_str_eq(evolve_error_last()->message, "Unsafe file path requested: ../etc/passwd");
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, glob_semantics_match_the_reference)
{
    cr_assert(sto_glob_match("workspace/output/*", "workspace/output/a.json"));
    cr_assert_not(sto_glob_match("workspace/output/*", "workspace/output/d/a.json"));
    cr_assert(sto_glob_match("**/*.json", "x.json"));
    cr_assert(sto_glob_match("**/*.json", "workspace/output/result.json"));
    cr_assert(sto_glob_match("**/*.json", ".claude/settings.json"));
    cr_assert(sto_glob_match("workspace/output/**", "workspace/output/a/b/c"));
    cr_assert_not(sto_glob_match("workspace/output/**", "workspace/outputs/a"));
    cr_assert(sto_glob_match("workspace/report.*", "workspace/report.md"));
    cr_assert(sto_glob_match("a?c", "abc"));
    cr_assert_not(sto_glob_match("a?c", "a/c"));
    cr_assert(sto_glob_match("[x].txt", "[x].txt")); /* brackets are literal */
    cr_assert_not(sto_glob_match("[x].txt", "x.txt"));
    cr_assert(sto_glob_match("{a,b}", "{a,b}"));
}

Test(sto_roundtrip, empty_workspace_round_trips)
{
    evolve_checkpoint_info_t *info, *g = NULL;
    char out[700], why[512];

    tt_dir(home, "workspace", 0755);
    info = make(home, "gemini", NULL, NULL, NULL);
    snprintf(out, sizeof(out), "%s/r", base);
    mkdir(out, 0755); /* an existing empty directory is fine */
    OK(evolve_store_restore(&g, store, info->id, out));
    cr_assert_eq(tt_compare(home, out, why, sizeof(why)), 0, "%s", why);
    evolve_checkpoint_info_free(g);
    evolve_checkpoint_info_free(info);
}

Test(sto_roundtrip, long_names_fifos_and_planted_links)
{
    evolve_checkpoint_info_t *info, *g = NULL;
    evolve_file_t *f = NULL;
    char longname[400], out[700], why[512], p[1200], outside[700];
    size_t n = 0;

    /* a 300-byte path needs a pax header */
    snprintf(longname, sizeof(longname), "workspace/%0120d/%0150d.txt", 7, 9);
    tt_file(home, longname, "long", 0644);
    snprintf(p, sizeof(p), "%s/workspace/fifo", home);
    cr_assert_eq(mkfifo(p, 0644), 0);
    /* .local -> a directory outside the home: opencode's dirs must not be followed through it */
    snprintf(outside, sizeof(outside), "%s/outside", base);
    tt_file(outside, "share/opencode/secret.txt", "host file", 0644);
    tt_link(home, ".local", outside);
    info = make(home, "opencode", NULL, NULL, NULL);
    OK(evolve_store_download_files(&f, &n, store, info->id, NULL, 0, NULL, 0, NULL));
    cr_assert_eq(n, 1, "only the long-named file: %zu", n);
    cr_assert_str_eq(f[0].path, longname);
    evolve_files_free(f, n);
    snprintf(out, sizeof(out), "%s/r", base);
    OK(evolve_store_restore(&g, store, info->id, out));
    snprintf(p, sizeof(p), "%s/workspace/fifo", home);
    unlink(p);
    snprintf(p, sizeof(p), "%s/.local", home);
    unlink(p);
    cr_assert_eq(tt_compare(home, out, why, sizeof(why)), 0, "%s", why);
    evolve_checkpoint_info_free(g);
    evolve_checkpoint_info_free(info);
}
