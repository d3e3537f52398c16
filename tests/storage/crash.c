/* Several processes at once, and crashes: two processes checkpointing into one store corrupt
 * nothing; a checkpoint killed with SIGKILL mid-way leaves no listed checkpoint, verify stays
 * clean and gc removes its leftovers. Runs with fsync on (the default). */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "support/support.h"
#include "support/tree.h"

static char base[512], storedir[600];

static void setup(void)
{
    ts_mkdtemp(base, sizeof(base), "sto-crash");
    snprintf(storedir, sizeof(storedir), "%s/store", base);
}

static void teardown(void)
{
    ts_rmtree(base);
}

TestSuite(sto_crash, .init = setup, .fini = teardown, .timeout = 300);

static evolve_store_t *open_store(void)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
    evolve_store_t *s = NULL;

    o.root = storedir;
    cr_assert_eq(evolve_store_open(&s, &o), 0, "%s", evolve_error_last()->message);
    return s;
}

static void random_tree(const char *home, int files, size_t size, uint64_t seed)
{
    unsigned char *buf = malloc(size);
    char name[64];
    size_t i;
    int f;

    for (f = 0; f < files; f++) {
        for (i = 0; i < size; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[i] = (unsigned char)(seed >> 56);
        }
        snprintf(name, sizeof(name), "workspace/f%03d.bin", f);
        tt_bytes(home, name, buf, size);
    }
    tt_file(home, "workspace/shared.txt", "the same in every tree\n", 0644);
    free(buf);
}

/* Child body: n checkpoints of home; exits 0 when all succeeded. */
static void checkpoint_child(const char *home, int n)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
    evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_store_t *s = NULL;
    int i, bad = 0;

    o.root = storedir;
    co.agent_type = "claude";
    if (evolve_store_open(&s, &o) < 0)
        _exit(2);
    for (i = 0; i < n; i++) {
        if (evolve_store_checkpoint(NULL, s, home, &co) < 0) {
            fprintf(stderr, "child: %s\n", evolve_error_last()->message);
            bad = 1;
        }
    }
    evolve_store_free(s);
    _exit(bad);
}

static void on_damage(void *payload, const char *what, const char *msg)
{
    (void)payload;
    fprintf(stderr, "damage: %s: %s\n", what, msg);
}

Test(sto_crash, two_processes_checkpointing_at_once_corrupt_nothing)
{
    evolve_checkpoint_info_t **list = NULL;
    evolve_store_report_t rep;
    evolve_store_t *s = open_store();
    char h1[700], h2[700];
    pid_t p1, p2;
    int st1, st2;
    size_t n = 0;

    snprintf(h1, sizeof(h1), "%s/h1", base);
    snprintf(h2, sizeof(h2), "%s/h2", base);
    random_tree(h1, 8, 100000, 1);
    random_tree(h2, 8, 100000, 1); /* identical content: both write the same blobs */
    tt_file(h2, "workspace/only-in-2.txt", "2", 0644);
    p1 = fork();
    if (p1 == 0)
        checkpoint_child(h1, 5);
    p2 = fork();
    if (p2 == 0)
        checkpoint_child(h2, 5);
    cr_assert_eq(waitpid(p1, &st1, 0), p1);
    cr_assert_eq(waitpid(p2, &st2, 0), p2);
    cr_assert(WIFEXITED(st1) && WEXITSTATUS(st1) == 0);
    cr_assert(WIFEXITED(st2) && WEXITSTATUS(st2) == 0);
    cr_assert_eq(evolve_store_list(&list, &n, s, 0, NULL), 0);
    cr_assert_eq(n, 10);
    evolve_checkpoint_list_free(list, n);
    cr_assert_eq(evolve_store_verify(&rep, s, on_damage, NULL), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(rep.checkpoints, 10);
    cr_assert_eq(rep.unreferenced, 0);
    evolve_store_free(s);
}

Test(sto_crash, sigkill_mid_checkpoint_leaves_nothing_visible)
{
    evolve_checkpoint_info_t **list = NULL, *info = NULL;
    evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_store_report_t rep;
    evolve_store_t *s = open_store(); /* creates <store>/tmp before the child starts */
    char home[700], tmpdir[700];
    struct pollfd pfd;
    uint64_t deadline;
    size_t n = 9;
    pid_t pid;
    int in, status;

    snprintf(home, sizeof(home), "%s/home", base);
    random_tree(home, 60, 500000, 7); /* 30 MB: the child is still hashing when killed */
    snprintf(tmpdir, sizeof(tmpdir), "%s/tmp", storedir);
    in = inotify_init1(IN_CLOEXEC);
    cr_assert_geq(in, 0);
    cr_assert_geq(inotify_add_watch(in, tmpdir, IN_CREATE), 0);
    pid = fork();
    if (pid == 0)
        checkpoint_child(home, 1);
    /* Wait for the child's first temp file (a blob staged for the group commit), then kill. */
    pfd.fd = in;
    pfd.events = POLLIN;
    deadline = ts_now_ms() + 60000;
    while (poll(&pfd, 1, (int)(deadline - ts_now_ms())) < 0 && errno == EINTR)
        ;
    cr_assert(pfd.revents & POLLIN, "no temp file appeared within 60 s");
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    close(in);
    cr_assert(WIFSIGNALED(status), "the child finished before it was killed");
    cr_assert_gt(tt_count(tmpdir), 0, "the kill left no temp files: nothing was tested");

    cr_assert_eq(evolve_store_list(&list, &n, s, 0, NULL), 0);
    cr_assert_eq(n, 0, "a partial checkpoint is listed");
    evolve_checkpoint_list_free(list, n);
    cr_assert_eq(evolve_store_get(&info, s, "latest"), EVOLVE_ENOTFOUND);
    cr_assert_eq(evolve_store_verify(&rep, s, on_damage, NULL), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(evolve_store_gc(&rep, s), 0, "%s", evolve_error_last()->message);
    cr_assert_eq(tt_count(tmpdir), 0);
    /* and the store still works */
    co.agent_type = "claude";
    cr_assert_eq(evolve_store_checkpoint(&info, s, home, &co), 0, "%s",
                 evolve_error_last()->message);
    cr_assert_eq(evolve_store_verify(&rep, s, on_damage, NULL), 0);
    cr_assert_eq(rep.checkpoints, 1);
    evolve_checkpoint_info_free(info);
    evolve_store_free(s);
}
