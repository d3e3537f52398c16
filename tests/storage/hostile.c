/* Hostile archives (built here with libarchive) are refused with an error naming the entry, and
 * nothing is written: "..", absolute paths, symlinks and hard links pointing outside (also through
 * a chain of symlinks), device files and FIFOs, names that pass through an earlier symlink. A
 * tampered manifest in the store is refused the same way by restore and download. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "storage/storage.h"
#include "support/support.h"
#include "support/tree.h"

static char base[512], arch[600], dest[600];

static void setup(void)
{
    ts_mkdtemp(base, sizeof(base), "sto-hostile");
    snprintf(arch, sizeof(arch), "%s/a.tar.gz", base);
    snprintf(dest, sizeof(dest), "%s/dest", base);
}

static void teardown(void)
{
    ts_rmtree(base);
}

TestSuite(sto_hostile, .init = setup, .fini = teardown, .timeout = 30);

struct ent {
    const char *path;
    char type; /* f d l h p c b */
    const char *target;
};

static void build(const struct ent *e, size_t n)
{
    struct archive *a = archive_write_new();
    size_t i;

    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    cr_assert_eq(archive_write_open_filename(a, arch), ARCHIVE_OK);
    for (i = 0; i < n; i++) {
        struct archive_entry *ae = archive_entry_new();
        archive_entry_set_pathname(ae, e[i].path);
        archive_entry_set_perm(ae, 0644);
        switch (e[i].type) {
        case 'f':
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_size(ae, 5);
            break;
        case 'd':
            archive_entry_set_filetype(ae, AE_IFDIR);
            break;
        case 'l':
            archive_entry_set_filetype(ae, AE_IFLNK);
            archive_entry_set_symlink(ae, e[i].target);
            break;
        case 'h':
            archive_entry_set_filetype(ae, AE_IFREG);
            archive_entry_set_hardlink(ae, e[i].target);
            break;
        case 'p':
            archive_entry_set_filetype(ae, AE_IFIFO);
            break;
        case 'c':
            archive_entry_set_filetype(ae, AE_IFCHR);
            archive_entry_set_rdev(ae, makedev(1, 3));
            break;
        case 'b':
            archive_entry_set_filetype(ae, AE_IFBLK);
            archive_entry_set_rdev(ae, makedev(7, 0));
            break;
        }
        cr_assert_eq(archive_write_header(a, ae), ARCHIVE_OK, "%s", archive_error_string(a));
        if (e[i].type == 'f')
            archive_write_data(a, "hello", 5);
        archive_entry_free(ae);
    }
    archive_write_close(a);
    archive_write_free(a);
}

/* The archive must be refused with EVOLVE_EUNSAFE, the message naming `name`, and nothing
 * written: no destination, nothing beside it. */
static void refused(const struct ent *e, size_t n, const char *name)
{
    size_t before;

    build(e, n);
    before = tt_count(base);
    cr_assert_eq(sto_extract_file(arch, dest), EVOLVE_EUNSAFE, "got: %s",
                 evolve_error_last()->message);
    cr_assert_not_null(strstr(evolve_error_last()->message, name), "message: %s",
                       evolve_error_last()->message);
    cr_assert_eq(tt_count(dest), 0, "something was extracted");
    cr_assert_eq(tt_count(base), before, "something was written beside the destination");
}

Test(sto_hostile, dotdot_path)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"../evil.txt", 'f', NULL}};
    refused(e, 2, "../evil.txt");
}

Test(sto_hostile, dotdot_inside_path)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"a/b/../../../evil.txt", 'f', NULL}};
    refused(e, 2, "evil.txt");
}

Test(sto_hostile, absolute_path)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"/tmp/evolve-abs-evil.txt", 'f', NULL}};
    refused(e, 2, "/tmp/evolve-abs-evil.txt");
    cr_assert_eq(access("/tmp/evolve-abs-evil.txt", F_OK), -1);
}

Test(sto_hostile, symlink_to_absolute_target)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"etc", 'l', "/etc"}};
    refused(e, 2, "\"etc\"");
}

Test(sto_hostile, symlink_up_and_out)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"sub/out", 'l', "../../outside"}};
    refused(e, 2, "sub/out");
}

Test(sto_hostile, symlink_escaping_through_another_symlink)
{
    /* "d/up" -> ".." stays inside; "esc" -> "d/up/.." looks inside lexically ("d") but d/up is
     * the root, so esc is the root's parent. */
    struct ent e[] = {{"d", 'd', NULL}, {"d/up", 'l', ".."}, {"esc", 'l', "d/up/.."}};
    refused(e, 3, "esc");
}

Test(sto_hostile, symlink_loop)
{
    struct ent e[] = {{"a", 'l', "b"}, {"b", 'l', "a"}};
    refused(e, 2, "symlinks");
}

Test(sto_hostile, hardlink_outside)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"h", 'h', "../outside"}};
    refused(e, 2, "\"h\"");
}

Test(sto_hostile, hardlink_absolute)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"passwd", 'h', "/etc/passwd"}};
    refused(e, 2, "passwd");
}

Test(sto_hostile, fifo)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"pipe", 'p', NULL}};
    refused(e, 2, "unsupported entry type: \"p\" (pipe)");
}

Test(sto_hostile, char_device)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"null", 'c', NULL}};
    refused(e, 2, "unsupported entry type: \"c\" (null)");
}

Test(sto_hostile, block_device)
{
    struct ent e[] = {{"ok.txt", 'f', NULL}, {"disk", 'b', NULL}};
    refused(e, 2, "unsupported entry type: \"b\" (disk)");
}

Test(sto_hostile, name_through_an_earlier_symlink)
{
    struct ent e[] = {{"sub", 'd', NULL}, {"ln", 'l', "sub"}, {"ln/x.txt", 'f', NULL}};
    refused(e, 3, "ln/x.txt");
}

Test(sto_hostile, file_replaced_by_directory)
{
    struct ent e[] = {{"x", 'f', NULL}, {"x", 'd', NULL}};
    refused(e, 2, "\"x\"");
}

Test(sto_hostile, safe_links_and_root_entry_extract)
{
    struct ent e[] = {{"./", 'd', NULL},   {"a.txt", 'f', NULL},     {"d", 'd', NULL},
                      {"d/up", 'l', ".."}, {"d/hard", 'h', "a.txt"}, {"d/rel", 'l', "../a.txt"}};
    char p[700], t[64] = {0};
    char *got;

    build(e, 6);
    cr_assert_eq(sto_extract_file(arch, dest), 0, "%s", evolve_error_last()->message);
    snprintf(p, sizeof(p), "%s/d/hard", dest);
    got = ts_read_file(p, NULL);
    cr_assert_str_eq(got, "hello");
    free(got);
    snprintf(p, sizeof(p), "%s/d/rel", dest);
    cr_assert_gt(readlink(p, t, sizeof(t) - 1), 0);
    cr_assert_str_eq(t, "../a.txt");
}

Test(sto_hostile, existing_symlink_in_destination_is_not_followed)
{
    char outside[700], p[700];
    struct ent e[] = {{"lnk/x.txt", 'f', NULL}};

    snprintf(outside, sizeof(outside), "%s/outside", base);
    mkdir(outside, 0755);
    mkdir(dest, 0755);
    snprintf(p, sizeof(p), "%s/lnk", dest);
    cr_assert_eq(symlink(outside, p), 0);
    build(e, 1);
    cr_assert_eq(sto_extract_file(arch, dest), EVOLVE_EUNSAFE);
    cr_assert_not_null(strstr(evolve_error_last()->message, "lnk/x.txt"));
    cr_assert_eq(tt_count(outside), 0);
}

/* A manifest in the store that names "../x" (written behind the store's back) is refused by
 * restore and by download before anything is written. */
Test(sto_hostile, tampered_manifest_is_refused_by_restore_and_download)
{
    static const char manifest[] = "{\"evolveManifest\":1,\"entries\":2}\n"
                                   "{\"p\":\"../escape\",\"t\":\"d\",\"m\":493,\"mt\":0}\n"
                                   "{\"p\":\"workspace\",\"t\":\"d\",\"m\":493,\"mt\":0}\n";
    static const char linkman[] =
        "{\"evolveManifest\":1,\"entries\":2}\n"
        "{\"p\":\"workspace\",\"t\":\"d\",\"m\":493,\"mt\":0}\n"
        "{\"p\":\"workspace/l\",\"t\":\"l\",\"m\":511,\"mt\":0,\"l\":\"../../etc\"}\n";
    const char *const texts[] = {manifest, linkman};
    const char *const names[] = {"../escape", "workspace/l"};
    struct sto_store *st = NULL;
    char root[600], to[700];
    size_t k;

    snprintf(root, sizeof(root), "%s/store", base);
    cr_assert_eq(sto_store_open(&st, root, 1), 0);
    for (k = 0; k < 2; k++) {
        struct sto_record r = {0};
        evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
        evolve_store_t *pub = NULL;
        char id[64];
        snprintf(id, sizeof(id), "ckpt_tampered_%zu", k);
        cr_assert_eq(sto_store_bytes(st, (const unsigned char *)texts[k], strlen(texts[k]),
                                     &r.manifest, &r.nmanifest),
                     0);
        cr_assert_eq(st->be->ops->sync(st->be), 0);
        r.info = calloc(1, sizeof(*r.info));
        r.info->id = strdup(id);
        r.info->hash = strdup("0000000000000000000000000000000000000000000000000000000000000000");
        r.info->tag = strdup("");
        r.info->timestamp = strdup("2026-01-01T00:00:00.000Z");
        r.info->agent_type = strdup("claude");
        r.info->size_bytes = -1;
        cr_assert_eq(sto_record_write(st, &r), 0, "%s", evolve_error_last()->message);
        sto_record_free(&r);
        o.root = root;
        cr_assert_eq(evolve_store_open(&pub, &o), 0);
        cr_assert_eq(evolve_store_restore(NULL, pub, id, dest), EVOLVE_EUNSAFE, "%s",
                     evolve_error_last()->message);
        cr_assert_not_null(strstr(evolve_error_last()->message, names[k]), "%s",
                           evolve_error_last()->message);
        cr_assert_eq(tt_count(dest), 0);
        snprintf(to, sizeof(to), "%s/dl", base);
        cr_assert_eq(evolve_store_download(NULL, pub, id, to, true), EVOLVE_EUNSAFE);
        cr_assert_eq(tt_count(to), 0);
        evolve_store_free(pub);
    }
    sto_store_free(st);
}
