/* The local provider under concurrency: 50 commands started at once in one sandbox from 50
 * threads each get exactly their own output and exit code (one daemon multiplexes them), and
 * sandboxes created, used and killed from several threads at once stay separate. Runs in both
 * isolation modes ("auto" = bubblewrap here, and "none"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "providers/local.h"
#include "support/proc_io.h"
#include "support/support.h"
#include "support/tap.h"

#define EXECS 50
#define LINES 200
#define BOXES 6

struct exec_arg {
    struct prov_local_box *box;
    pthread_barrier_t *start;
    int n;
    char fail[256];
};

static void *exec_one(void *p)
{
    struct exec_arg *a = p;
    char tag[32], code[32], want_err[64];
    const char *const env[] = {tag, code, NULL};
    const char *const argv[] = {
        "sh", "-c",
        "i=0; while [ $i -lt 200 ]; do echo \"$TAG-$i\"; i=$((i+1)); done; echo \"err-$TAG\" >&2;"
        " exit $CODE",
        NULL};
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    struct prov_proc *proc = NULL;
    struct ts_run r;
    char *line, *save = NULL;
    int i = 0;

    snprintf(tag, sizeof(tag), "TAG=t%d", a->n);
    snprintf(code, sizeof(code), "CODE=%d", a->n % 7);
    spec.argv = argv;
    spec.envp = env;
    pthread_barrier_wait(a->start);
    if (prov_local_exec(&proc, a->box, &spec) < 0) {
        snprintf(a->fail, sizeof(a->fail), "exec %d: %s", a->n, evolve_error_last()->message);
        return NULL;
    }
    if (ts_proc_collect(proc, NULL, &r, 60000) < 0) {
        snprintf(a->fail, sizeof(a->fail), "exec %d did not finish", a->n);
        prov_proc_free(proc);
        return NULL;
    }
    prov_proc_free(proc);
    snprintf(want_err, sizeof(want_err), "err-t%d\n", a->n);
    if (r.exit.code != a->n % 7 || strcmp(r.err, want_err))
        snprintf(a->fail, sizeof(a->fail), "exec %d: exit %d stderr \"%s\"", a->n, r.exit.code,
                 r.err);
    for (line = strtok_r(r.out, "\n", &save); line && !a->fail[0];
         line = strtok_r(NULL, "\n", &save), i++) {
        char want[48];

        snprintf(want, sizeof(want), "t%d-%d", a->n, i);
        if (strcmp(line, want))
            snprintf(a->fail, sizeof(a->fail), "exec %d line %d: \"%s\"", a->n, i, line);
    }
    if (!a->fail[0] && i != LINES)
        snprintf(a->fail, sizeof(a->fail), "exec %d: %d lines", a->n, i);
    ts_run_dispose(&r);
    return NULL;
}

static void fifty_execs(int *tap_failed_, enum prov_isolation iso)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
    struct prov_local *pl = NULL;
    struct prov_local_box *b = NULL;
    static struct exec_arg args[EXECS];
    pthread_t t[EXECS];
    pthread_barrier_t start;
    char home[512];
    int i;

    ts_mkdtemp(home, sizeof(home), "local-conc");
    o.home = home;
    o.isolation = iso;
    TAP_CHECK(prov_local_open(&pl, &o) == 0, "%s", evolve_error_last()->message);
    printf("# mode %s\n", prov_local_mode(pl));
    TAP_CHECK(prov_local_create(&b, pl, NULL) == 0, "%s", evolve_error_last()->message);
    pthread_barrier_init(&start, NULL, EXECS);
    for (i = 0; i < EXECS; i++) {
        memset(&args[i], 0, sizeof(args[i]));
        args[i].box = b;
        args[i].start = &start;
        args[i].n = i;
        TAP_CHECK(pthread_create(&t[i], NULL, exec_one, &args[i]) == 0, "pthread_create");
    }
    for (i = 0; i < EXECS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (i = 0; i < EXECS; i++)
        TAP_CHECK(!args[i].fail[0], "%s", args[i].fail);
    TAP_CHECK(prov_local_kill(b) == 0, "%s", evolve_error_last()->message);
    prov_local_box_free(b);
    prov_local_close(pl);
    ts_rmtree(home);
}

TAP_TEST(fifty_concurrent_execs_get_their_own_output_auto)
{
    fifty_execs(tap_failed_, PROV_ISO_AUTO);
}

TAP_TEST(fifty_concurrent_execs_get_their_own_output_none)
{
    fifty_execs(tap_failed_, PROV_ISO_NONE);
}

struct box_arg {
    struct prov_local *pl;
    char id[64];
    char dir[1024];
    char fail[256];
};

static void *box_life(void *p)
{
    struct box_arg *a = p;
    struct prov_local_box *b = NULL;
    struct prov_proc *proc = NULL;
    struct prov_exec_spec spec = PROV_EXEC_SPEC_INIT;
    const char *const argv[] = {"cat", "workspace/id", NULL};
    struct ts_run r;

    if (prov_local_create(&b, a->pl, NULL) < 0) {
        snprintf(a->fail, sizeof(a->fail), "create: %s", evolve_error_last()->message);
        return NULL;
    }
    snprintf(a->id, sizeof(a->id), "%s", prov_local_box_id(b));
    snprintf(a->dir, sizeof(a->dir), "%s/%s", prov_local_root(a->pl), a->id);
    spec.argv = argv;
    spec.cwd = "/home/user";
    if (prov_local_write_file(b, "workspace/id", a->id, strlen(a->id)) < 0 ||
        prov_local_exec(&proc, b, &spec) < 0)
        snprintf(a->fail, sizeof(a->fail), "%s: %s", a->id, evolve_error_last()->message);
    else if (ts_proc_collect(proc, NULL, &r, 30000) < 0)
        snprintf(a->fail, sizeof(a->fail), "%s: cat did not finish", a->id);
    else {
        if (strcmp(r.out, a->id))
            snprintf(a->fail, sizeof(a->fail), "%s read \"%s\"", a->id, r.out);
        ts_run_dispose(&r);
    }
    prov_proc_free(proc);
    if (prov_local_kill(b) < 0 && !a->fail[0])
        snprintf(a->fail, sizeof(a->fail), "kill %s: %s", a->id, evolve_error_last()->message);
    prov_local_box_free(b);
    return NULL;
}

TAP_TEST(sandboxes_created_and_killed_from_many_threads_stay_separate)
{
    struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
    struct prov_local *pl = NULL;
    struct box_arg args[BOXES];
    pthread_t t[BOXES];
    char home[512];
    int i, j;

    ts_mkdtemp(home, sizeof(home), "local-boxes");
    o.home = home;
    TAP_CHECK(prov_local_open(&pl, &o) == 0, "%s", evolve_error_last()->message);
    for (i = 0; i < BOXES; i++) {
        memset(&args[i], 0, sizeof(args[i]));
        args[i].pl = pl;
        TAP_CHECK(pthread_create(&t[i], NULL, box_life, &args[i]) == 0, "pthread_create");
    }
    for (i = 0; i < BOXES; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < BOXES; i++) {
        TAP_CHECK(!args[i].fail[0], "%s", args[i].fail);
        TAP_CHECK(access(args[i].dir, F_OK) != 0, "%s survived kill", args[i].dir);
        for (j = 0; j < i; j++)
            TAP_CHECK(strcmp(args[i].id, args[j].id), "two sandboxes got id %s", args[i].id);
    }
    prov_local_close(pl);
    ts_rmtree(home);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(fifty_concurrent_execs_get_their_own_output_auto),
        TAP_CASE(fifty_concurrent_execs_get_their_own_output_none),
        TAP_CASE(sandboxes_created_and_killed_from_many_threads_stay_separate),
        {0}};
    return tap_run(cases, argc, argv);
}
