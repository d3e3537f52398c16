/* examples/batch.c compiles against the public headers and libevolve as its comment says, and
 * runs examples/replay-demo.jsonl: the documented example stays true. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/support.h"

static int run(const char *const *argv)
{
    pid_t pid = fork();
    int st;

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(batch_example, compiles_and_runs_the_demo_manifest, .timeout = 120)
{
    char dir[512], src[1024], inc[1100], exe[800], out[700], home[700], libdir[1100], rpath[1200],
        manifest[1100], *results;
    size_t lines = 0;
    const char *p;

    ts_mkdtemp(dir, sizeof(dir), "example");
    snprintf(src, sizeof(src), "%s/../../examples/batch.c", EVOLVE_TEST_DATA);
    snprintf(inc, sizeof(inc), "-I%s/../../include", EVOLVE_TEST_DATA);
    snprintf(libdir, sizeof(libdir), "-L%s", EVOLVE_BINARY_DIR);
    snprintf(rpath, sizeof(rpath), "-Wl,-rpath,%s", EVOLVE_BINARY_DIR);
    snprintf(exe, sizeof(exe), "%s/batch-example", dir);
    {
#if defined(__SANITIZE_ADDRESS__)
        /* the library of this build is instrumented: the example must load the runtime */
        const char *cc[] = {"cc", "-std=c11", "-Wall", "-Werror",  "-fsanitize=address,undefined",
                            inc,  src,        libdir,  "-levolve", rpath,
                            "-o", exe,        NULL};
#else
        const char *cc[] = {"cc",   "-std=c11", "-Wall", "-Werror", inc, src,
                            libdir, "-levolve", rpath,   "-o",      exe, NULL};
#endif
        cr_assert_eq(run(cc), 0, "examples/batch.c compiles");
    }
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(manifest, sizeof(manifest), "%s/../../examples/replay-demo.jsonl", EVOLVE_TEST_DATA);
    setenv("EVOLVE_HOME", home, 1);
    setenv("EVOLVE_ISOLATION", "none", 1);
    setenv("EVOLVE_SANDBOXD", EVOLVE_BINARY_DIR "/evolve-sandboxd", 1); /* not next to exe */
    unsetenv("EVOLVE_REPLAY_MODE");
    {
        const char *ex[] = {exe, manifest, out, NULL};

        cr_assert_eq(run(ex), 3, "runs; one demo task fails its schema on purpose");
    }
    snprintf(exe, sizeof(exe), "%s/results.jsonl", out);
    results = ts_read_file(exe, NULL);
    cr_assert_not_null(results);
    for (p = results; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 5, "every demo task recorded");
    for (lines = 0, p = results; (p = strstr(p, "\"status\":\"success\"")); p++)
        lines++;
    cr_assert_eq(lines, 4, "%s", results);
    cr_assert_not_null(strstr(results, "\"failureClass\":\"schema-invalid\""));
    free(results);
    ts_rmtree(dir);
}
