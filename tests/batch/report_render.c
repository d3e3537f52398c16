/* The report of a real batch renders: headless Chromium (Debian's chromium, started with
 * --headless --no-sandbox) screenshots OUTDIR/report.html, and the PNG is not blank (several
 * times the bytes of a blank page's screenshot at the same size: the status bar, histogram and
 * table are drawn). Skipped when chromium is not installed (scripts/install-deps.sh installs it).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evolve/evolve.h"
#include "fake.h"
#include "support/support.h"

static int run(const char *const *argv)
{
    pid_t pid = fork();
    int st;

    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);

        dup2(devnull, 1);
        dup2(devnull, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static long screenshot(const char *dir, const char *html, const char *png)
{
    char shot[800], url[800], profile[700];
    const char *argv[] = {"timeout",
                          "90",
                          "chromium",
                          "--headless",
                          "--no-sandbox",
                          "--disable-gpu",
                          "--hide-scrollbars",
                          "--window-size=1000,900",
                          profile,
                          shot,
                          url,
                          NULL};
    struct stat st;
    char *head;

    snprintf(profile, sizeof(profile), "--user-data-dir=%s/chromium-profile", dir);
    snprintf(shot, sizeof(shot), "--screenshot=%s", png);
    snprintf(url, sizeof(url), "file://%s", html);
    cr_assert_eq(run(argv), 0, "chromium ran");
    cr_assert_eq(stat(png, &st), 0, "%s written", png);
    head = ts_read_file(png, NULL);
    cr_assert(head && !memcmp(head, "\x89PNG", 4), "a PNG");
    free(head);
    return (long)st.st_size;
}

Test(batch_report, renders_in_headless_chromium, .timeout = 180)
{
    const char *probe[] = {"sh", "-c", "command -v chromium", NULL};
    char dir[512], home[700], out[700], html[800], blank[800], png[800], bpng[800], marks[700],
        manifest[700];
    evolve_runtime_t *rt;
    evolve_batch_t *b;
    evolve_batch_options_t o = EVOLVE_BATCH_OPTIONS_INIT;
    long report_bytes, blank_bytes;
    size_t i;

    if (run(probe) != 0)
        cr_skip_test("chromium is not installed (scripts/install-deps.sh installs it)");
    ts_mkdtemp(dir, sizeof(dir), "report");
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(out, sizeof(out), "%s/out", dir);
    snprintf(marks, sizeof(marks), "%s/marks", dir);
    snprintf(manifest, sizeof(manifest), "%s/tasks.jsonl", dir);
    mkdir(marks, 0755);
    setenv("EVOLVE_HOME", home, 1);
    setenv("EVOLVE_REPLAY_MODE", "sh", 1);
    setenv("EVOLVE_ISOLATION", "none", 1);
    fake_write_trace(dir);
    cr_assert_eq(evolve_runtime_new(&rt, NULL), 0);
    o.outdir = out;
    o.concurrency = 4;
    cr_assert_eq(evolve_batch_new(&b, rt, &o), 0, "%s", evolve_error_last()->message);
    for (i = 0; i < 8; i++) {
        char id[16], *l;

        snprintf(id, sizeof(id), "r%zu", i);
        l = fake_task_line(id, i % 4 == 3 ? FAKE_CRASH : FAKE_OK, marks);
        cr_assert_eq(evolve_batch_add_task(b, l), 0, "%s", evolve_error_last()->message);
        free(l);
    }
    cr_assert_eq(evolve_batch_wait(b, 60000), 0, "%s", evolve_error_last()->message);
    evolve_batch_free(b);
    evolve_runtime_free(rt);

    snprintf(html, sizeof(html), "%s/report.html", out);
    snprintf(blank, sizeof(blank), "%s/blank.html", dir);
    ts_write_file(blank, "<!doctype html><html><body></body></html>", 42);
    snprintf(png, sizeof(png), "%s/report.png", dir);
    snprintf(bpng, sizeof(bpng), "%s/blank.png", dir);
    blank_bytes = screenshot(dir, blank, bpng);
    report_bytes = screenshot(dir, html, png);
    cr_log_info("report.png %ld bytes, blank page %ld bytes", report_bytes, blank_bytes);
    cr_assert_gt(report_bytes, 3 * blank_bytes, "the report is drawn (%ld vs blank %ld bytes)",
                 report_bytes, blank_bytes);
    ts_rmtree(dir);
}
