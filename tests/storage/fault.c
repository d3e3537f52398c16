/* I/O fault injection: a backend wrapper fails its n-th call (put, get, exists, list, sync),
 * for n = 0, 1, 2, ... until a checkpoint succeeds. Every failed checkpoint must return an
 * error, list nothing, leave the store verifiably clean, and leak nothing (ASan). Then the same
 * for restore: a failure leaves no destination behind. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "evolve/evolve.h"
#include "storage/storage.h"
#include "support/support.h"
#include "support/tree.h"

static char base[512], home[600], storedir[600];

static void setup(void)
{
    ts_mkdtemp(base, sizeof(base), "sto-fault");
    snprintf(home, sizeof(home), "%s/home", base);
    snprintf(storedir, sizeof(storedir), "%s/store", base);
}

static void teardown(void)
{
    ts_rmtree(base);
}

TestSuite(sto_fault, .init = setup, .fini = teardown, .timeout = 120);

struct faulty {
    struct sto_backend base; /* first */
    struct sto_backend *inner;
    long calls, fail_at;
};

static int hit(struct sto_backend *b)
{
    struct faulty *f = (struct faulty *)b;

    if (f->calls++ == f->fail_at)
        return core_error_set(EVOLVE_EIO, "injected fault at call %ld", f->fail_at);
    return 0;
}

#define INNER(b) (((struct faulty *)(b))->inner)

static int f_put(struct sto_backend *b, const char *k, const void *d, size_t n, unsigned int fl)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->put(INNER(b), k, d, n, fl);
}
static int f_get(struct sto_backend *b, const char *k, unsigned char **o, size_t *n)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->get(INNER(b), k, o, n);
}
static int f_exists(struct sto_backend *b, const char *k)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->exists(INNER(b), k);
}
static int f_list(struct sto_backend *b, const char *p, int (*cb)(void *, const char *, uint64_t),
                  void *pl)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->list(INNER(b), p, cb, pl);
}
static int f_del(struct sto_backend *b, const char *k)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->del(INNER(b), k);
}
static int f_sync(struct sto_backend *b)
{
    return hit(b) ? EVOLVE_EIO : INNER(b)->ops->sync(INNER(b));
}
static void f_discard(struct sto_backend *b)
{
    INNER(b)->ops->discard(INNER(b));
}
static void f_free(struct sto_backend *b)
{
    INNER(b)->ops->free(INNER(b));
    free(b);
}

static const struct sto_backend_ops faulty_ops = {.version = STO_BACKEND_OPS_VERSION,
                                                  .name = "faulty",
                                                  .put = f_put,
                                                  .get = f_get,
                                                  .exists = f_exists,
                                                  .list = f_list,
                                                  .del = f_del,
                                                  .sync = f_sync,
                                                  .discard = f_discard,
                                                  .free = f_free};

static struct sto_store *open_faulty(long fail_at, unsigned int threads)
{
    struct sto_store *st = NULL;
    struct faulty *f = calloc(1, sizeof(*f));

    cr_assert_eq(sto_store_open(&st, storedir, threads), 0);
    f->base.ops = &faulty_ops;
    f->inner = st->be;
    f->fail_at = fail_at;
    st->be = &f->base;
    return st;
}

static void assert_clean(size_t want_checkpoints)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
    evolve_store_report_t rep;
    evolve_store_t *s = NULL;

    o.root = storedir;
    cr_assert_eq(evolve_store_open(&s, &o), 0);
    cr_assert_eq(evolve_store_verify(&rep, s, NULL, NULL), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(rep.checkpoints, want_checkpoints);
    evolve_store_free(s);
}

Test(sto_fault, every_failing_call_of_a_checkpoint_fails_it_cleanly)
{
    evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    long n;
    int rc = -1;

    tt_file(home, "workspace/a.txt", "alpha", 0644);
    tt_file(home, "workspace/b/c.txt", "gamma gamma gamma", 0755);
    tt_link(home, "workspace/l", "a.txt");
    tt_file(home, ".claude/s.json", "{}", 0644);
    co.agent_type = "claude";
    for (n = 0; rc != 0 && n < 1000; n++) {
        struct sto_store *st = open_faulty(n, 1);
        struct sto_record r = {0};
        rc = sto_checkpoint(st, home, &co, &r);
        if (rc < 0) {
            cr_assert_not_null(strstr(evolve_error_last()->message, "injected fault"), "%s",
                               evolve_error_last()->message);
            char tmp[700];
            snprintf(tmp, sizeof(tmp), "%s/tmp", storedir);
            assert_clean(0);
            cr_assert_eq(tt_count(tmp), 0, "fault %ld left staged files", n);
        }
        sto_record_free(&r);
        sto_store_free(st);
    }
    cr_assert_eq(rc, 0, "never succeeded");
    cr_assert_gt(n, 5, "too few calls to be meaningful: %ld", n);
    assert_clean(1);
}

Test(sto_fault, every_failing_call_of_a_restore_leaves_no_destination)
{
    evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    struct sto_store *st;
    struct sto_record r = {0};
    char dest[700], why[512];
    long n;
    int rc = -1;

    tt_file(home, "workspace/a.txt", "alpha", 0644);
    tt_file(home, "workspace/b/c.txt", "gamma", 0644);
    co.agent_type = "claude";
    st = open_faulty(-1, 1);
    cr_assert_eq(sto_checkpoint(st, home, &co, &r), 0);
    sto_store_free(st);
    snprintf(dest, sizeof(dest), "%s/restored", base);
    for (n = 0; rc != 0 && n < 1000; n++) {
        struct sto_record got = {0};
        st = open_faulty(n, 1);
        rc = sto_restore(st, r.info->id, dest, &got);
        if (rc < 0) {
            cr_assert_eq(access(dest, F_OK), -1, "fault %ld left %s", n, dest);
            cr_assert_eq(tt_count(base), 2, "fault %ld left a staging dir", n);
        }
        sto_record_free(&got);
        sto_store_free(st);
    }
    cr_assert_eq(rc, 0);
    cr_assert_eq(tt_compare(home, dest, why, sizeof(why)), 0, "%s", why);
    sto_record_free(&r);
}
