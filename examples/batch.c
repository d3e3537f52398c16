/* examples/batch.c — running a task manifest from C with the batch API: every task in its own
 * sandbox, at most 4 at once, results printed as they are recorded.
 *
 *   cc -std=c11 examples/batch.c $(pkg-config --cflags --libs evolve) -o batch-example
 *   ./batch-example examples/replay-demo.jsonl demo-out
 *
 * (From a build tree: cc -std=c11 -Iinclude examples/batch.c -Lbuild -levolve
 *  -Wl,-rpath,$PWD/build -o batch-example.) */
#include <stdio.h>
#include <stdlib.h>

#include <evolve/evolve.h>

/* Runs on a runtime worker after the result is fsync'd in results.jsonl: keep it short. */
static void on_result(const char *task_id, const char *result_json, void *payload)
{
    (void)payload;
    printf("%s: %s\n", task_id, result_json);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    evolve_runtime_t *rt = NULL;
    evolve_batch_t *batch = NULL;
    evolve_batch_options_t opts = EVOLVE_BATCH_OPTIONS_INIT;
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    char *problems = NULL;
    size_t added = 0, skipped = 0;
    int rc = 1;

    if (argc != 3) {
        fprintf(stderr, "usage: %s MANIFEST OUTDIR\n", argv[0]);
        return 2;
    }
    if (evolve_runtime_new(&rt, NULL) < 0)
        goto fail;
    opts.outdir = argv[2];
    opts.concurrency = 4;
    opts.retries = 2; /* infrastructure failures only */
    opts.on_result = on_result;
    if (evolve_batch_new(&batch, rt, &opts) < 0)
        goto fail;
    if (evolve_batch_add_manifest(batch, argv[1], 0, 0, false, &problems, &added, &skipped) < 0) {
        if (problems)
            fputs(problems, stderr);
        goto fail;
    }
    fprintf(stderr, "%zu tasks to run, %zu already done\n", added, skipped);
    if (evolve_batch_wait(batch, 0) < 0) /* starts the batch, returns when every task is done */
        goto fail;
    evolve_batch_progress(batch, &p);
    fprintf(stderr, "%zu succeeded, %zu failed; see %s/report.html\n", p.succeeded, p.failed,
            argv[2]);
    rc = p.failed ? 3 : 0;
    goto done;
fail:
    fprintf(stderr, "error: %s\n", evolve_error_last()->message);
done:
    free(problems);
    evolve_batch_free(batch);
    evolve_runtime_free(rt);
    return rc;
}
