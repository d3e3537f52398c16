/* run.c — `evolve run` (one agent run in a fresh sandbox: stream its events, then print the
 * output files and the run's cost) and `evolve exec` (one shell command in a sandbox). Both are
 * thin over the public session API (evolve/session.h); the exit code is the agent's or the
 * command's, 128 + signal after Ctrl-C/SIGTERM, or 1 with a message naming the failure.
 * Owns: flag parsing, context upload from a directory, the Ctrl-C path (a signal handler that
 * only writes to a self-pipe; a watcher thread reads it and calls evolve_interrupt), and the
 * summary. Showing events is run_view.c.
 * Threads: main; the watcher thread (evolve_interrupt only); the view callback on a worker. */
#include "cli/run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define END_WAIT_MS       10000u
#define CONTEXT_MAX_DEPTH 32

struct run_args {
    const char *cmd; /* "run" or "exec" */
    const char *agent, *model, *provider, *schema_path, *context_dir, *system_prompt;
    const char *base_url, *api_key, *session, *out_dir, *raw_path;
    uint64_t timeout_ms;
    bool json, no_network, keep;
    const char *text; /* the prompt or the command */
};

/* The self-pipe: written by the signal handler (async-signal-safe write only). */
static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo)
{
    int saved = errno;
    unsigned char b = (unsigned char)signo;

    if (write(sig_pipe[1], &b, 1) < 0) {
        /* the pipe is full: an interrupt is already pending */
    }
    errno = saved;
}

struct watcher {
    const char *cmd;
    evolve_t *ev;
    struct cli_view *view;
    int signo; /* the first signal seen; read by main after the join */
};

static void *watch_main(void *arg)
{
    struct watcher *w = arg;
    unsigned char b;

    for (;;) {
        ssize_t n = read(sig_pipe[0], &b, 1);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || b == CLI_WATCH_QUIT)
            break;
        if (b != CLI_WATCH_AGAIN && !w->signo) {
            w->signo = b;
            fprintf(stderr, "\nevolve %s: %s, interrupting\n", w->cmd,
                    b == SIGINT ? "Ctrl-C" : "SIGTERM");
            atomic_store_explicit(&w->view->interrupted, true, memory_order_relaxed);
        }
        evolve_interrupt(w->ev);
    }
    return NULL;
}

static void usage(FILE *to, const char *cmd)
{
    if (!strcmp(cmd, "exec")) {
        fprintf(to,
                "usage: evolve exec [--provider local] [--session ID] [--timeout MS] [--json]\n"
                "                   [--no-network] [--keep] \"COMMAND\"\n\n"
                "Runs `sh -c COMMAND` in a sandbox's workspace and streams its output. The exit\n"
                "code is the command's; --json prints the result as one JSON object instead.\n"
                "--session attaches to a sandbox kept by `evolve run --keep`.\n");
        return;
    }
    fprintf(to, "usage: evolve run [--agent A] [--model M] [--provider local] [--schema FILE]\n"
                "                  [--context DIR] [--system-prompt TEXT] [--timeout MS] [--json]\n"
                "                  [--no-network] [--keep] [--base-url URL] [--api-key KEY]\n"
                "                  [--session ID] [--out DIR] [--raw FILE] \"PROMPT\"\n\n"
                "Runs an agent (claude, codex, gemini, qwen, kimi, opencode, droid, autohand,\n"
                "replay) in a fresh sandbox and streams what it does: readable on a terminal, or\n"
                "one OutputEvent JSON per line with --json (the summary then goes to stderr).\n"
                "Afterwards it prints the output files and the run's cost. --context uploads DIR\n"
                "into workspace/context/, --out saves the output files to DIR, --keep leaves the\n"
                "sandbox for `evolve exec --session ID`, --raw writes the agent's stdout to FILE.\n"
                "The base URL and key default to the agent's own environment variables\n"
                "(ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ...). Local sandboxes see /usr, /etc and\n"
                "/opt; bind more host directories read-only with EVOLVE_SANDBOX_BINDS=DIR:DIR.\n"
                "Exit code: the agent's; 130 after Ctrl-C; 1 when the run could not be done.\n");
}

static int parse_u64(uint64_t *out, const char *s)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_args(struct run_args *a, int argc, char **argv)
{
    static const struct option opts[] = {{"agent", required_argument, NULL, 'a'},
                                         {"model", required_argument, NULL, 'm'},
                                         {"provider", required_argument, NULL, 'P'},
                                         {"schema", required_argument, NULL, 's'},
                                         {"context", required_argument, NULL, 'c'},
                                         {"system-prompt", required_argument, NULL, 'S'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"no-network", no_argument, NULL, 'n'},
                                         {"keep", no_argument, NULL, 'k'},
                                         {"base-url", required_argument, NULL, 'b'},
                                         {"api-key", required_argument, NULL, 'K'},
                                         {"session", required_argument, NULL, 'i'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"raw", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool exec = !strcmp(a->cmd, "exec");
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "a:m:t:jh", opts, NULL)) != -1) {
        if (exec && strchr("amscSbKor", c))
            c = '?'; /* run-only flags */
        switch (c) {
        case 'a':
            a->agent = optarg;
            break;
        case 'm':
            a->model = optarg;
            break;
        case 'P':
            a->provider = optarg;
            break;
        case 's':
            a->schema_path = optarg;
            break;
        case 'c':
            a->context_dir = optarg;
            break;
        case 'S':
            a->system_prompt = optarg;
            break;
        case 'b':
            a->base_url = optarg;
            break;
        case 'K':
            a->api_key = optarg;
            break;
        case 'i':
            a->session = optarg;
            break;
        case 'o':
            a->out_dir = optarg;
            break;
        case 'r':
            a->raw_path = optarg;
            break;
        case 'j':
            a->json = true;
            break;
        case 'n':
            a->no_network = true;
            break;
        case 'k':
            a->keep = true;
            break;
        case 't':
            if (parse_u64(&a->timeout_ms, optarg) < 0 || a->timeout_ms == 0) {
                cli_fail(a->cmd, "--timeout %s: expected a positive number of milliseconds",
                         optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout, a->cmd);
            return 0;
        default:
            usage(stderr, a->cmd);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr, a->cmd);
        return 2;
    }
    a->text = argv[optind];
    return -1; /* go on */
}

static char *read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, len = 0, n;

    if (!f)
        return NULL;
    do {
        if (cap - len < 65536) {
            char *nb = realloc(buf, cap + 65536 + 1);

            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap += 65536;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    if (ferror(f)) {
        free(buf);
        fclose(f);
        errno = EIO;
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    *len_out = len;
    return buf;
}

/* Uploads every regular file under dir/rel into workspace/context/rel. Symlinks are skipped
 * (they could point anywhere on this machine). Returns 0, or 1 after printing the failure. */
static int upload_dir(evolve_t *ev, const char *dir, const char *rel, int depth, size_t *count)
{
    char path[4096], sub[4096];
    struct dirent *de;
    DIR *d;
    int rc = 0;

    snprintf(path, sizeof(path), "%s%s%s", dir, *rel ? "/" : "", rel);
    if (depth > CONTEXT_MAX_DEPTH)
        return cli_fail("run", "--context %s: deeper than %d directories", path, CONTEXT_MAX_DEPTH);
    d = opendir(path);
    if (!d)
        return cli_fail("run", "--context %s: %s", path, strerror(errno));
    while (rc == 0 && (de = readdir(d))) {
        struct stat st;
        char full[8200];

        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
        snprintf(full, sizeof(full), "%s/%s", dir, sub);
        if (lstat(full, &st) < 0) {
            rc = cli_fail("run", "--context %s: %s", full, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = upload_dir(ev, dir, sub, depth + 1, count);
        } else if (S_ISREG(st.st_mode)) {
            size_t len = 0;
            char *data = read_file(full, &len);

            if (!data)
                rc = cli_fail("run", "--context %s: %s", full, strerror(errno));
            else if (evolve_upload_context(ev, sub, data, len) < 0)
                rc = cli_fail("run", "--context %s: %s", full, evolve_error_last()->message);
            else
                (*count)++;
            free(data);
        }
    }
    closedir(d);
    return rc;
}

static int install_signals(void)
{
    struct sigaction sa;

    if (pipe2(sig_pipe, O_CLOEXEC) < 0)
        return -1;
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return 0;
}

static void restore_signals(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
}

/* Output files and cost, after the run. `to` is stdout, or stderr when stdout carries JSONL. */
static void print_summary(FILE *to, evolve_t *ev, const char *run_id)
{
    char *js = NULL;
    json_t *root, *files, *v;
    const char *path;

    if (evolve_get_output_files(&js, ev, true) < 0) {
        fprintf(to, "output files: unavailable (%s)\n", evolve_error_last()->message);
    } else {
        root = json_loads(js, 0, NULL);
        files = json_object_get(root, "files");
        fprintf(to, "output files (%zu):\n", json_object_size(files));
        json_object_foreach(files, path, v)
        {
            if (json_is_string(v))
                fprintf(to, "  output/%s  %zu bytes\n", path, json_string_length(v));
            else
                fprintf(to, "  output/%s  (binary)\n", path);
        }
        if ((v = json_object_get(root, "error")) && json_is_string(v))
            fprintf(to, "result.json: does not match the schema: %s\n", json_string_value(v));
        else if ((v = json_object_get(root, "data")) && !json_is_null(v))
            fprintf(to, "result.json: matches the schema\n");
        json_decref(root);
        free(js);
    }
    js = NULL;
    if (evolve_run_cost(&js, ev, run_id, 0) < 0) {
        fprintf(to, "cost: unavailable (%s)\n", evolve_error_last()->message);
        return;
    }
    root = json_loads(js, 0, NULL);
    v = json_object_get(root, "cost");
    if (json_is_number(v))
        fprintf(to, "cost: $%.6f (%s)", json_number_value(v),
                json_string_value(json_object_get(root, "priced")) ?: "priced");
    else
        fprintf(to, "cost: unpriced");
    files = json_object_get(root, "tokens");
    fprintf(to,
            ", tokens: prompt %" JSON_INTEGER_FORMAT ", completion %" JSON_INTEGER_FORMAT
            ", cached %" JSON_INTEGER_FORMAT "\n",
            json_integer_value(json_object_get(files, "prompt")),
            json_integer_value(json_object_get(files, "completion")),
            json_integer_value(json_object_get(root, "cachedTokens")));
    json_decref(root);
    free(js);
}

/* The process exit code for an operation that ended with `code` (its result). */
static int exit_code_of(const struct run_args *a, int code, const char *stderr_text, double secs)
{
    const char *what = !strcmp(a->cmd, "run") ? (a->agent ? a->agent : "claude") : "the command";

    if (code == 0)
        return 0;
    if (code == -1 && a->timeout_ms && secs * 1000.0 >= (double)a->timeout_ms * 0.9)
        return cli_fail(a->cmd, "%s timed out after %" PRIu64 " ms", what, a->timeout_ms);
    if (code < 0 || code > 255)
        return cli_fail(a->cmd, "%s ended without an exit code (%d)%s%.200s", what, code,
                        stderr_text && *stderr_text ? ": " : "", stderr_text ? stderr_text : "");
    fprintf(stderr, "evolve %s: %s exited with code %d\n", a->cmd, what, code);
    return code;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_main(struct run_args *a)
{
    evolve_options_t o = EVOLVE_OPTIONS_INIT;
    evolve_subscribe_options_t so = EVOLVE_SUBSCRIBE_OPTIONS_INIT;
    evolve_runtime_t *rt = NULL;
    evolve_t *ev = NULL;
    evolve_subscription_t *sub = NULL;
    evolve_result_t *res = NULL;
    struct cli_view view;
    struct watcher w = {0};
    pthread_t watcher;
    bool is_run = !strcmp(a->cmd, "run"), watching = false;
    char *schema = NULL;
    size_t len = 0, uploaded = 0;
    double t0 = now_s();
    int rc = 1, code;

    if (a->schema_path && !(schema = read_file(a->schema_path, &len)))
        return cli_fail(a->cmd, "--schema %s: %s", a->schema_path, strerror(errno));
    o.agent = is_run ? a->agent : "replay"; /* exec runs no agent; any harness will do */
    o.model = a->model;
    o.provider = a->provider;
    o.schema_json = schema;
    o.system_prompt = a->system_prompt;
    o.base_url = a->base_url;
    o.api_key = a->api_key;
    o.session_id = a->session;
    o.no_network = a->no_network;
    o.keep_sandbox = a->keep || a->session;
    if (install_signals() < 0) {
        free(schema);
        return cli_fail(a->cmd, "pipe: %s", strerror(errno));
    }
    cli_view_init(&view,
                  is_run ? (a->json ? CLI_VIEW_JSON : CLI_VIEW_TEXT)
                         : (a->json ? CLI_VIEW_QUIET : CLI_VIEW_RAW),
                  sig_pipe[1]);
    if (a->raw_path && !(view.raw = fopen(a->raw_path, "wb"))) {
        cli_fail(a->cmd, "--raw %s: %s", a->raw_path, strerror(errno));
        goto out;
    }
    if (evolve_runtime_new(&rt, NULL) < 0 || evolve_new(&ev, rt, &o) < 0) {
        cli_fail(a->cmd, NULL);
        goto out;
    }
    so.callback = cli_view_event;
    so.payload = &view;
    so.capacity = 4096;
    so.kinds = (1u << EVOLVE_EVENT_LIFECYCLE) | (1u << EVOLVE_EVENT_STDERR) |
               (is_run ? 1u << EVOLVE_EVENT_CONTENT : 1u << EVOLVE_EVENT_STDOUT) |
               (view.raw ? 1u << EVOLVE_EVENT_STDOUT : 0);
    if (evolve_subscribe(&sub, ev, &so) < 0) {
        cli_fail(a->cmd, NULL);
        goto out;
    }
    w.cmd = a->cmd;
    w.ev = ev;
    w.view = &view;
    if (pthread_create(&watcher, NULL, watch_main, &w) != 0) {
        cli_fail(a->cmd, "cannot start the signal watcher thread");
        goto out;
    }
    watching = true;
    if (a->context_dir && upload_dir(ev, a->context_dir, "", 0, &uploaded) != 0)
        goto out;
    if (atomic_load_explicit(&view.interrupted, memory_order_relaxed))
        goto out;
    if (is_run) {
        evolve_run_options_t ro = EVOLVE_RUN_OPTIONS_INIT;

        ro.prompt = a->text;
        ro.timeout_ms = a->timeout_ms;
        code = evolve_run(&res, ev, &ro);
    } else {
        evolve_command_options_t co = EVOLVE_COMMAND_OPTIONS_INIT;

        co.timeout_ms = a->timeout_ms;
        code = evolve_execute_command(&res, ev, a->text, &co);
    }
    if (code < 0) {
        cli_fail(a->cmd, NULL);
        goto out;
    }
    if (!cli_view_wait_end(&view, END_WAIT_MS))
        fprintf(stderr, "evolve %s: the end of the %s was not seen within %u s\n", a->cmd,
                is_run ? "run" : "command", END_WAIT_MS / 1000);
    cli_view_finish_text(&view);
    code = evolve_result_exit_code(res);
    if (is_run) {
        print_summary(a->json ? stderr : stdout, ev, evolve_result_run_id(res));
        if (view.unknown)
            fprintf(a->json ? stderr : stdout, "(%zu lines not understood; see the session log)\n",
                    view.unknown);
    } else if (a->json) {
        puts(evolve_result_json(res));
    }
    fflush(stdout);
    if (a->out_dir && evolve_save_local_dir(ev, a->out_dir, true) < 0)
        fprintf(stderr, "evolve %s: --out %s: %s\n", a->cmd, a->out_dir,
                evolve_error_last()->message);
    if (a->keep && !a->session && evolve_get_session(ev))
        fprintf(stderr, "evolve %s: sandbox kept: %s (evolve exec --session %s ...)\n", a->cmd,
                evolve_get_session(ev), evolve_get_session(ev));
    if (!atomic_load_explicit(&view.interrupted, memory_order_relaxed))
        rc = exit_code_of(a, code, evolve_result_stderr(res), now_s() - t0);
out:
    if (watching) {
        unsigned char b = CLI_WATCH_QUIT;

        restore_signals();
        if (write(sig_pipe[1], &b, 1) < 0) {
            /* the pipe is full of pending interrupts: the watcher still reads the quit byte */
        }
        pthread_join(watcher, NULL);
    } else {
        restore_signals();
    }
    if (atomic_load_explicit(&view.interrupted, memory_order_relaxed))
        rc = 128 + (w.signo ? w.signo : SIGINT);
    evolve_result_free(res);
    evolve_subscription_free(sub);
    evolve_free(ev);
    evolve_runtime_free(rt);
    if (view.raw && fclose(view.raw) != 0 && rc == 0)
        rc = cli_fail(a->cmd, "--raw %s: %s", a->raw_path, strerror(errno));
    cli_view_dispose(&view);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    sig_pipe[0] = sig_pipe[1] = -1;
    free(schema);
    return rc;
}

int cli_run_main(int argc, char **argv)
{
    struct run_args a = {.cmd = "run"};
    int rc = parse_args(&a, argc, argv);

    return rc >= 0 ? rc : run_main(&a);
}

int cli_exec_main(int argc, char **argv)
{
    struct run_args a = {.cmd = "exec"};
    int rc = parse_args(&a, argc, argv);

    return rc >= 0 ? rc : run_main(&a);
}
