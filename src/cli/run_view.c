/* run_view.c — how `evolve run` and `evolve exec` show a session's events: readable lines
 * (message text, thinking, tool calls with their status, plans, usage, errors; colour on a TTY),
 * OutputEvent JSONL (--json: each content event's JSON exactly as the library gives it), or raw
 * stdout/stderr bytes (exec). Also notices the end of the operation (its terminal lifecycle
 * event), so the command prints its summary only after every event of the run was shown.
 * Owns: struct cli_view and its rendering. Does not own: the session (run.c).
 * Threads: cli_view_event runs on a runtime worker, never concurrently with itself (the library
 * serialises a subscription's callback); cli_view_wait_end on the main thread; the end flag is
 * guarded by the view's mutex. */
#include "cli/run.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evolve/evolve.h"

#define C_DIM    "\033[2m"
#define C_BOLD   "\033[1m"
#define C_RED    "\033[31m"
#define C_GREEN  "\033[32m"
#define C_YELLOW "\033[33m"
#define C_CYAN   "\033[36m"
#define C_OFF    "\033[0m"

/* Lifecycle reasons that end the foreground operation this command started. */
static const char *const terminal_reasons[] = {
    "run_complete",   "run_failed",          "run_interrupted", "command_complete",
    "command_failed", "command_interrupted", "sandbox_error",   NULL};

void cli_view_init(struct cli_view *v, enum cli_view_mode mode, int interrupt_fd)
{
    memset(v, 0, sizeof(*v));
    v->mode = mode;
    v->color = mode == CLI_VIEW_TEXT && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
    v->interrupt_fd = interrupt_fd;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
}

void cli_view_dispose(struct cli_view *v)
{
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
}

static const char *col(const struct cli_view *v, const char *code)
{
    return v->color ? code : "";
}

/* Ends a run of streamed message text with a newline before anything else is printed. */
static void break_text(struct cli_view *v)
{
    if (v->in_text) {
        fputc('\n', stdout);
        v->in_text = false;
    }
}

/* The text of a content block {type:"text", text} or {type:"content", content:{...}}. */
static const char *block_text(const json_t *c)
{
    const json_t *inner = json_object_get(c, "content");

    if (json_is_object(inner))
        c = inner;
    return json_string_value(json_object_get(c, "text"));
}

/* First line of `s`, at most `max` bytes, for one-line summaries. */
static void print_first_line(const char *s, int max)
{
    int n = 0;

    while (s[n] && s[n] != '\n' && n < max)
        n++;
    fwrite(s, 1, (size_t)n, stdout);
    if (s[n] && s[n] != '\n')
        fputs("...", stdout);
}

static void show_tool_call(struct cli_view *v, const json_t *up)
{
    const char *name = json_string_value(json_object_get(up, "toolName"));
    const char *title = json_string_value(json_object_get(up, "title"));
    const char *status = json_string_value(json_object_get(up, "status"));

    break_text(v);
    printf("%s-> %s%s%s", col(v, C_CYAN), col(v, C_BOLD), name ? name : "tool", col(v, C_OFF));
    if (title && (!name || strcmp(title, name))) {
        fputs(": ", stdout);
        print_first_line(title, 160);
    }
    printf(" %s[%s]%s\n", col(v, C_DIM), status ? status : "pending", col(v, C_OFF));
}

static void show_tool_update(struct cli_view *v, const json_t *up)
{
    const char *status = json_string_value(json_object_get(up, "status"));
    const char *title = json_string_value(json_object_get(up, "title"));
    const json_t *content = json_object_get(up, "content");
    const char *text = NULL;
    bool failed = status && !strcmp(status, "failed");

    if (!status && !title)
        return; /* a content-only progress update: shown by the completion */
    if (json_is_array(content) && json_array_size(content) > 0)
        text = block_text(json_array_get(content, 0));
    break_text(v);
    printf("   %s%s%s", col(v, failed ? C_RED : C_GREEN), status ? status : "updated",
           col(v, C_OFF));
    if (title) {
        fputs(" ", stdout);
        print_first_line(title, 120);
    }
    if (text && *text) {
        printf("%s: ", col(v, C_DIM));
        print_first_line(text, 120);
        fputs(col(v, C_OFF), stdout);
    }
    fputc('\n', stdout);
}

static void show_plan(struct cli_view *v, const json_t *up)
{
    const json_t *entries = json_object_get(up, "entries"), *e;
    size_t i;

    break_text(v);
    printf("%splan:%s\n", col(v, C_BOLD), col(v, C_OFF));
    json_array_foreach(entries, i, e)
    {
        const char *st = json_string_value(json_object_get(e, "status"));
        const char *mark = !st                          ? " "
                           : !strcmp(st, "completed")   ? "x"
                           : !strcmp(st, "in_progress") ? ">"
                                                        : " ";
        const char *text = json_string_value(json_object_get(e, "content"));

        printf("  [%s] %s\n", mark, text ? text : "");
    }
}

static void print_number(const char *label, const json_t *v)
{
    if (json_is_integer(v))
        printf(" %s %lld", label, (long long)json_integer_value(v));
    else if (json_is_number(v))
        printf(" %s %.0f", label, json_number_value(v));
}

static void show_usage(struct cli_view *v, const json_t *up)
{
    const json_t *u = json_object_get(up, "usage");
    const char *scope = json_string_value(json_object_get(up, "scope"));
    const json_t *cost = json_object_get(u, "costUsd");

    /* Call usage repeats per content line of a message; the run total says it all. */
    if (scope && !strcmp(scope, "call"))
        return;
    break_text(v);
    printf("%susage (%s):", col(v, C_DIM), scope ? scope : "?");
    print_number("prompt", json_object_get(u, "promptTokens"));
    print_number("completion", json_object_get(u, "completionTokens"));
    print_number("cached", json_object_get(u, "cachedTokens"));
    if (json_is_number(cost))
        printf(" cost $%.6f", json_number_value(cost));
    printf("%s\n", col(v, C_OFF));
}

static void show_content(struct cli_view *v, evolve_update_type_t type, const char *js, size_t len)
{
    json_t *root = json_loadb(js, len, 0, NULL);
    const json_t *up = json_object_get(root, "update");
    const char *text;

    if (!root)
        return;
    switch (type) {
    case EVOLVE_UPDATE_AGENT_MESSAGE_CHUNK:
        text = block_text(json_object_get(up, "content"));
        if (text && *text) {
            fputs(text, stdout);
            v->in_text = text[strlen(text) - 1] != '\n';
        }
        break;
    case EVOLVE_UPDATE_AGENT_THOUGHT_CHUNK:
        text = block_text(json_object_get(up, "content"));
        if (text && *text) {
            break_text(v);
            printf("%sthinking: ", col(v, C_DIM));
            print_first_line(text, 200);
            printf("%s\n", col(v, C_OFF));
        }
        break;
    case EVOLVE_UPDATE_TOOL_CALL:
        show_tool_call(v, up);
        break;
    case EVOLVE_UPDATE_TOOL_CALL_UPDATE:
        show_tool_update(v, up);
        break;
    case EVOLVE_UPDATE_PLAN:
        show_plan(v, up);
        break;
    case EVOLVE_UPDATE_USAGE:
        show_usage(v, up);
        break;
    case EVOLVE_UPDATE_ERROR:
        text = json_string_value(json_object_get(up, "message"));
        break_text(v);
        printf("%serror%s:%s %s\n", col(v, C_RED),
               json_is_true(json_object_get(up, "fatal")) ? " (fatal)" : "", col(v, C_OFF),
               text ? text : "");
        break;
    case EVOLVE_UPDATE_UNKNOWN:
        v->unknown++;
        break;
    default: /* user_message_chunk: the prompt echoed back */
        break;
    }
    json_decref(root);
}

/* Writes the bytes of a raw-output event ({"stream": "stdout", "data": "..."}) to `to`. */
static void write_raw(FILE *to, const char *js, size_t len)
{
    json_t *root = json_loadb(js, len, JSON_ALLOW_NUL, NULL);
    const json_t *s = json_object_get(root, "data");

    if (json_is_string(s))
        fwrite(json_string_value(s), 1, json_string_length(s), to);
    json_decref(root);
}

static void on_lifecycle(struct cli_view *v, const char *js, size_t len)
{
    json_t *root = json_loadb(js, len, 0, NULL);
    const char *reason = json_string_value(json_object_get(root, "reason"));
    size_t i;

    if (!reason) {
        json_decref(root);
        return;
    }
    /* A Ctrl-C that came while the sandbox was still booting found nothing to interrupt: ask
     * again now that the operation runs (the watcher thread calls evolve_interrupt). */
    if ((!strcmp(reason, "run_start") || !strcmp(reason, "command_start")) &&
        atomic_load_explicit(&v->interrupted, memory_order_relaxed) && v->interrupt_fd >= 0) {
        unsigned char b = CLI_WATCH_AGAIN;

        if (write(v->interrupt_fd, &b, 1) < 0) {
            /* the watcher is gone: the command is ending anyway */
        }
    }
    for (i = 0; terminal_reasons[i]; i++)
        if (!strcmp(reason, terminal_reasons[i]))
            break;
    if (terminal_reasons[i]) {
        pthread_mutex_lock(&v->mu);
        v->ended = true;
        snprintf(v->end_reason, sizeof(v->end_reason), "%s", reason);
        pthread_cond_signal(&v->cv);
        pthread_mutex_unlock(&v->mu);
    }
    json_decref(root);
}

void cli_view_event(const evolve_event_t *e, void *payload)
{
    struct cli_view *v = payload;
    size_t len = 0;
    const char *js = evolve_event_json(e, &len);

    switch (evolve_event_kind(e)) {
    case EVOLVE_EVENT_CONTENT:
        v->content++;
        if (v->mode == CLI_VIEW_JSON) {
            fwrite(js, 1, len, stdout);
            fputc('\n', stdout);
        } else if (v->mode == CLI_VIEW_TEXT) {
            show_content(v, evolve_event_update_type(e), js, len);
        }
        fflush(stdout);
        break;
    case EVOLVE_EVENT_STDOUT:
        if (v->raw) {
            write_raw(v->raw, js, len);
        } else if (v->mode == CLI_VIEW_RAW) {
            write_raw(stdout, js, len);
            fflush(stdout);
        }
        break;
    case EVOLVE_EVENT_STDERR:
        /* The agent's or command's stderr always goes to ours: stdout stays clean JSONL. */
        if (v->mode != CLI_VIEW_QUIET) {
            write_raw(stderr, js, len);
            fflush(stderr);
        }
        break;
    case EVOLVE_EVENT_LIFECYCLE:
        on_lifecycle(v, js, len);
        break;
    case EVOLVE_EVENT_GAP:
    default:
        break;
    }
}

void cli_view_finish_text(struct cli_view *v)
{
    break_text(v);
    fflush(stdout);
}

bool cli_view_wait_end(struct cli_view *v, unsigned int timeout_ms)
{
    struct timespec dl;
    bool ended;

    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&v->mu);
    while (!v->ended)
        if (pthread_cond_timedwait(&v->cv, &v->mu, &dl) != 0)
            break;
    ended = v->ended;
    pthread_mutex_unlock(&v->mu);
    return ended;
}
