/* batch.c — `evolve batch MANIFEST -o OUTDIR ...` (run a task manifest through the batch engine
 * with a progress display, SIGINT/SIGTERM handling) and `evolve batch merge -o OUT DIR...`.
 * Threads: main only. SIGINT/SIGTERM are blocked in every thread (set before the runtime
 * starts) and taken here with sigtimedwait: the first cancels the batch, the second exits at
 * once. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "evolve/evolve.h"

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: evolve batch MANIFEST -o OUTDIR [-j N] [--provider P] [--agent A]\n"
        "                    [--model M] [--timeout MS] [--schema FILE] [--system-prompt T]\n"
        "                    [--retries N] [--retry-agent-failures] [--rerun-failed]\n"
        "                    [--skip-invalid] [--shard I/N] [--create-rate R] [--quiet]\n"
        "                    [--checkpoint [--store DIR]] [--reuse-sandboxes]\n"
        "       evolve batch merge -o OUTDIR DIR...\n\n"
        "Runs every task of a JSONL manifest (README \"Batch manifest\") in its own sandbox,\n"
        "at most N at once (default 4). Results go to OUTDIR/results.jsonl (fsync'd per\n"
        "task), events to OUTDIR/events/<id>.jsonl, outputs to OUTDIR/outputs/<id>/, then\n"
        "summary.json and report.html. Rerunning the same command skips finished tasks.\n"
        "Infrastructure failures are retried up to --retries times (backoff with jitter);\n"
        "agent failures only with --retry-agent-failures. SIGINT/SIGTERM stops admitting,\n"
        "interrupts running tasks (recorded as interrupted) and exits; a second one exits at\n"
        "once. --checkpoint checkpoints each successful task into the store (--store DIR,\n"
        "default ~/.evolve/store; identical content is stored once); a task's \"from\" restores\n"
        "one first. --shard I/N runs the I-th of N disjoint parts (for N machines); merge their\n"
        "OUTDIRs with 'evolve batch merge'. Exit: 0 all succeeded, 3 some failed, 130\n"
        "interrupted, 1 error.\n");
}

static int merge_main(int argc, char **argv)
{
    const char *out = NULL;
    int i, n = 0;
    const char **dirs = calloc((size_t)argc + 1, sizeof(char *));

    if (!dirs)
        return cli_fail("batch merge", "out of memory");
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            free(dirs);
            return 0;
        } else
            dirs[n++] = argv[i];
    }
    if (!out || !n) {
        free(dirs);
        usage(stderr);
        return 2;
    }
    if (evolve_batch_merge(out, dirs, (size_t)n) < 0) {
        free(dirs);
        return cli_fail("batch merge", NULL);
    }
    free(dirs);
    printf("merged %d director%s into %s\n", n, n == 1 ? "y" : "ies", out);
    return 0;
}

static void fmt_dur(char *buf, size_t size, double secs)
{
    if (secs < 0 || secs > 1e7)
        snprintf(buf, size, "?");
    else if (secs < 120)
        snprintf(buf, size, "%.0fs", secs);
    else if (secs < 7200)
        snprintf(buf, size, "%.0fm%02.0fs", secs / 60 - 0.5, secs - 60 * (double)(long)(secs / 60));
    else
        snprintf(buf, size, "%.1fh", secs / 3600);
}

static void progress(evolve_batch_t *b, bool tty, double elapsed, bool final)
{
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    size_t finished, remaining;
    double rate;
    char eta[32], slow[96];

    if (evolve_batch_progress(b, &p) < 0)
        return;
    finished = p.succeeded + p.failed + p.interrupted;
    remaining = p.total - p.skipped - finished;
    rate = elapsed > 0 ? (double)finished / elapsed : 0;
    fmt_dur(eta, sizeof(eta), rate > 0 ? (double)remaining / rate : -1);
    slow[0] = '\0';
    if (p.slowest_id[0]) {
        char d[32];

        fmt_dur(d, sizeof(d), (double)p.slowest_ms / 1000.0);
        snprintf(slow, sizeof(slow), " slowest %.32s %s", p.slowest_id, d);
    }
    fprintf(stderr,
            "%s%zu/%zu done (%zu ok, %zu failed%s%.0zu) %zu running %zu queued | %.1f/s ETA %s | "
            "tokens %llu/%llu cost $%.4f%s%s",
            tty ? "\r\033[K" : "", finished + p.skipped, p.total, p.succeeded, p.failed,
            p.skipped ? ", skipped " : "", p.skipped, p.running, p.queued, rate, eta,
            (unsigned long long)p.tokens_prompt, (unsigned long long)p.tokens_completion,
            p.cost_usd, p.unpriced ? "+unpriced" : "", slow);
    if (!tty || final)
        fputc('\n', stderr);
}

struct flags {
    evolve_batch_options_t o;
    const char *manifest;
    unsigned shard_i, shard_n;
    bool skip_invalid, quiet;
};

static int parse_uint(const char *s, unsigned long long *out, const char *flag)
{
    char *end;

    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-')
        return cli_fail("batch", "%s: '%s' is not a non-negative integer", flag, s);
    return 0;
}

static int parse_flags(struct flags *f, int argc, char **argv)
{
    enum {
        O_PROVIDER = 256,
        O_AGENT,
        O_MODEL,
        O_TIMEOUT,
        O_CKPT,
        O_REUSE,
        O_RETRIES,
        O_RETRY_AGENT,
        O_RERUN,
        O_SKIP,
        O_SHARD,
        O_QUIET,
        O_SCHEMA,
        O_SYSPROMPT,
        O_RATE,
        O_STORE
    };
    static const struct option longs[] = {
        {"output", required_argument, NULL, 'o'},
        {"jobs", required_argument, NULL, 'j'},
        {"provider", required_argument, NULL, O_PROVIDER},
        {"agent", required_argument, NULL, O_AGENT},
        {"model", required_argument, NULL, O_MODEL},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"checkpoint", no_argument, NULL, O_CKPT},
        {"reuse-sandboxes", no_argument, NULL, O_REUSE},
        {"retries", required_argument, NULL, O_RETRIES},
        {"retry-agent-failures", no_argument, NULL, O_RETRY_AGENT},
        {"rerun-failed", no_argument, NULL, O_RERUN},
        {"skip-invalid", no_argument, NULL, O_SKIP},
        {"shard", required_argument, NULL, O_SHARD},
        {"quiet", no_argument, NULL, O_QUIET},
        {"schema", required_argument, NULL, O_SCHEMA},
        {"system-prompt", required_argument, NULL, O_SYSPROMPT},
        {"create-rate", required_argument, NULL, O_RATE},
        {"store", required_argument, NULL, O_STORE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned long long n;
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:j:hq", longs, NULL)) != -1) {
        switch (c) {
        case 'o':
            f->o.outdir = optarg;
            break;
        case 'j':
            if (parse_uint(optarg, &n, "-j") || n == 0 || n > 100000)
                return n == 0 ? cli_fail("batch", "-j must be 1..100000") : 1;
            f->o.concurrency = (unsigned)n;
            break;
        case O_PROVIDER:
            f->o.provider = optarg;
            break;
        case O_AGENT:
            f->o.agent = optarg;
            break;
        case O_MODEL:
            f->o.model = optarg;
            break;
        case O_TIMEOUT:
            if (parse_uint(optarg, &n, "--timeout"))
                return 1;
            f->o.timeout_ms = n;
            break;
        case O_CKPT:
            f->o.checkpoint = true;
            break;
        case O_REUSE:
            f->o.reuse_sandboxes = true;
            break;
        case O_RETRIES:
            if (parse_uint(optarg, &n, "--retries") || n > 100)
                return n > 100 ? cli_fail("batch", "--retries must be 0..100") : 1;
            f->o.retries = (unsigned)n;
            break;
        case O_RETRY_AGENT:
            f->o.retry_agent_failures = true;
            break;
        case O_RERUN:
            f->o.rerun_failed = true;
            break;
        case O_SKIP:
            f->skip_invalid = true;
            break;
        case O_SHARD: {
            char *end;
            unsigned long i = strtoul(optarg, &end, 10), k = 0;

            if (*end == '/')
                k = strtoul(end + 1, &end, 10);
            if (*end || i < 1 || k < 1 || i > k || k > 1000000)
                return cli_fail("batch", "--shard: '%s' is not I/N with 1 <= I <= N", optarg);
            f->shard_i = (unsigned)i;
            f->shard_n = (unsigned)k;
            break;
        }
        case 'q':
        case O_QUIET:
            f->quiet = true;
            break;
        case O_SCHEMA:
            f->o.schema_path = optarg;
            break;
        case O_SYSPROMPT:
            f->o.system_prompt = optarg;
            break;
        case O_RATE: {
            char *end;
            double r = strtod(optarg, &end);

            if (*end || !(r > 0))
                return cli_fail("batch", "--create-rate: '%s' is not a positive number", optarg);
            f->o.create_rate = r;
            break;
        }
        case 'h':
            usage(stdout);
            return -1;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !f->o.outdir) {
        usage(stderr);
        return 2;
    }
    f->manifest = argv[optind];
    return 0;
}

static int run(struct flags *f, sigset_t *sigs)
{
    evolve_runtime_t *rt = NULL;
    evolve_batch_t *b = NULL;
    evolve_batch_progress_t p = {.version = EVOLVE_BATCH_PROGRESS_VERSION};
    struct timespec t0, now, zero = {0, 0};
    char *problems = NULL;
    size_t added = 0, skipped = 0;
    bool tty = isatty(STDERR_FILENO), canceled = false;
    double elapsed, last_print = 0;
    int rc;

    if (evolve_runtime_new(&rt, NULL) < 0)
        return cli_fail("batch", NULL);
    if (evolve_batch_new(&b, rt, &f->o) < 0) {
        rc = cli_fail("batch", NULL);
        goto out;
    }
    rc = evolve_batch_add_manifest(b, f->manifest, f->shard_i, f->shard_n, f->skip_invalid,
                                   &problems, &added, &skipped);
    if (problems)
        fputs(problems, stderr);
    if (rc == EVOLVE_EINVAL && !f->skip_invalid) {
        fprintf(stderr, "evolve batch: %s has invalid lines; fix them or pass --skip-invalid\n",
                f->manifest);
        rc = 1;
        goto out;
    }
    if (rc < 0 && rc != EVOLVE_EINVAL) {
        rc = cli_fail("batch", NULL);
        goto out;
    }
    if (!f->quiet)
        fprintf(stderr, "evolve batch: %zu task%s to run, %zu already finished\n", added,
                added == 1 ? "" : "s", skipped);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    evolve_batch_start(b);
    for (;;) {
        siginfo_t si;

        rc = evolve_batch_wait(b, tty ? 250 : 500);
        if (rc != EVOLVE_ETIMEDOUT)
            break;
        if (sigtimedwait(sigs, &si, &zero) > 0) {
            if (canceled) {
                fprintf(stderr, "\nevolve batch: second signal, exiting now\n");
                _exit(130);
            }
            canceled = true;
            fprintf(stderr,
                    "\nevolve batch: %s: stopping (interrupting running tasks; send "
                    "again to exit at once)\n",
                    strsignal(si.si_signo));
            evolve_batch_cancel(b);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        elapsed = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (!f->quiet && (tty || elapsed - last_print >= 10)) {
            progress(b, tty, elapsed, false);
            last_print = elapsed;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    elapsed = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
    if (!f->quiet)
        progress(b, tty, elapsed, true);
    if (rc < 0) {
        rc = cli_fail("batch", NULL);
        goto out;
    }
    evolve_batch_progress(b, &p);
    if (!f->quiet)
        printf("results: %s/results.jsonl  report: %s/report.html\n", f->o.outdir, f->o.outdir);
    rc = canceled || p.interrupted ? 130 : p.failed ? 3 : 0;
out:
    free(problems);
    evolve_batch_free(b);
    evolve_runtime_free(rt);
    return rc;
}

int cli_batch_main(int argc, char **argv)
{
    struct flags f;
    sigset_t sigs;
    int rc;

    if (argc >= 2 && !strcmp(argv[1], "merge"))
        return merge_main(argc - 1, argv + 1);
    memset(&f, 0, sizeof(f));
    f.o.version = EVOLVE_BATCH_OPTIONS_VERSION;
    rc = parse_flags(&f, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    /* Blocked before any thread exists, so every thread inherits it and only sigtimedwait in
     * run() takes them (sandbox processes get a clean mask from the provider). */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    return run(&f, &sigs);
}
