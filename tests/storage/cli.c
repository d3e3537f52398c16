/* The `evolve checkpoint` command end to end: create, list --json, show, files, download,
 * restore, verify and gc --json, and the errors users see. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/support.h"
#include "support/tree.h"

static char base[512], home[600], storedir[600];

static void setup(void)
{
    ts_mkdtemp(base, sizeof(base), "sto-cli");
    snprintf(home, sizeof(home), "%s/home", base);
    snprintf(storedir, sizeof(storedir), "%s/store", base);
}

static void teardown(void)
{
    ts_rmtree(base);
}

TestSuite(sto_cli, .init = setup, .fini = teardown, .timeout = 60);

/* Runs `evolve checkpoint <args...> --store <storedir>`; returns the exit code, stdout in out. */
static int run(char *out, size_t size, const char *const *args)
{
    const char *cli = getenv("EVOLVE_CLI");
    char *argv[32];
    int fds[2], st = 0, n = 0, i;
    size_t len = 0;
    ssize_t r;
    pid_t pid;

    cr_assert_not_null(cli, "EVOLVE_CLI is not set (run through ctest)");
    argv[n++] = (char *)cli;
    argv[n++] = "checkpoint";
    for (i = 0; args[i]; i++)
        argv[n++] = (char *)args[i];
    argv[n++] = "--store";
    argv[n++] = storedir;
    argv[n] = NULL;
    cr_assert_eq(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(cli, argv);
        _exit(127);
    }
    close(fds[1]);
    while ((r = read(fds[0], out + len, size - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fds[0]);
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(sto_cli, create_list_show_files_restore_verify_gc)
{
    static char out[65536];
    json_t *j;
    char id[64], parent[64], dest[700];

    tt_file(home, "workspace/output/result.json", "{\"answer\":42}", 0644);
    tt_file(home, ".codex/config.toml", "model = \"x\"", 0644);
    {
        const char *a[] = {"create", "--home",    home,    "--agent", "codex", "--tag",
                           "t1",     "--comment", "first", "--json",  NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0, "%s", out);
    }
    j = json_loads(out, 0, NULL);
    cr_assert_not_null(j, "not JSON: %s", out);
    snprintf(parent, sizeof(parent), "%s", json_string_value(json_object_get(j, "id")));
    cr_assert_str_eq(json_string_value(json_object_get(j, "agentType")), "codex");
    cr_assert_eq(strlen(json_string_value(json_object_get(j, "hash"))), 64);
    json_decref(j);
    {
        const char *a[] = {"create", "--home",  home,    "--agent", "codex", "--parent",
                           parent,   "--model", "gpt-x", "--json",  NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0, "%s", out);
    }
    j = json_loads(out, 0, NULL);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
    cr_assert_str_eq(json_string_value(json_object_get(j, "parentId")), parent);
    json_decref(j);
    {
        const char *a[] = {"list", "--json", "--tag", "t1", NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0);
    }
    j = json_loads(out, 0, NULL);
    cr_assert_eq(json_array_size(j), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "comment")), "first");
    json_decref(j);
    {
        const char *a[] = {"show", "latest", "--json", NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0);
        cr_assert_not_null(strstr(out, id));
    }
    {
        const char *a[] = {"files", id, "--glob", "**/*.json", "--json", NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0);
        cr_assert_not_null(strstr(out, "workspace/output/result.json"), "%s", out);
        cr_assert_null(strstr(out, "config.toml"));
    }
    snprintf(dest, sizeof(dest), "%s/restored", base);
    {
        const char *a[] = {"restore", parent, "--to", dest, NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0);
    }
    {
        char p[800], *got;
        snprintf(p, sizeof(p), "%s/.codex/config.toml", dest);
        got = ts_read_file(p, NULL);
        cr_assert_str_eq(got, "model = \"x\"");
        free(got);
    }
    {
        const char *a[] = {"verify", "--json", NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0, "%s", out);
    }
    j = json_loads(out, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "result")), "ok");
    cr_assert_eq(json_integer_value(json_object_get(j, "checkpoints")), 2);
    json_decref(j);
    {
        const char *a[] = {"gc", "--json", NULL};
        cr_assert_eq(run(out, sizeof(out), a), 0);
        cr_assert_not_null(strstr(out, "\"removed\": 0"), "%s", out);
    }
}

Test(sto_cli, errors_exit_non_zero)
{
    static char out[4096];
    const char *a1[] = {"show", "ckpt_missing_1", NULL};
    const char *a2[] = {"show", "latest", NULL};
    const char *a3[] = {"create", "--home", "/x", NULL};
    const char *a4[] = {"bogus", NULL};

    cr_assert_eq(run(out, sizeof(out), a1), 1);
    cr_assert_eq(run(out, sizeof(out), a2), 1);
    cr_assert_eq(run(out, sizeof(out), a3), 2);
    cr_assert_eq(run(out, sizeof(out), a4), 2);
}
