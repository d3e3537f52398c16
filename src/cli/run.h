/* cli/run.h — shared by run.c (`evolve run`, `evolve exec`) and run_view.c (showing events).
 * Threads: see run_view.c. */
#ifndef EVOLVE_CLI_RUN_H
#define EVOLVE_CLI_RUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "evolve/evolve.h"

/* Bytes on the Ctrl-C pipe besides signal numbers. */
#define CLI_WATCH_QUIT  0xff /* the watcher thread stops */
#define CLI_WATCH_AGAIN 0xfe /* interrupt again: the operation started after the signal */

enum cli_view_mode {
    CLI_VIEW_TEXT,  /* readable lines (colour on a TTY) */
    CLI_VIEW_JSON,  /* OutputEvent JSONL on stdout */
    CLI_VIEW_RAW,   /* exec: the command's stdout and stderr bytes */
    CLI_VIEW_QUIET, /* exec --json: nothing until the result */
};

struct cli_view {
    enum cli_view_mode mode;
    bool color;
    FILE *raw;               /* run --raw: the agent's stdout lines, verbatim; or NULL */
    bool in_text;            /* streamed message text not yet ended by a newline (worker) */
    size_t content, unknown; /* counters (worker; read by main after the end) */
    int interrupt_fd;        /* write end of the Ctrl-C pipe, or -1 */
    atomic_bool interrupted; /* set by the watcher thread on SIGINT/SIGTERM */
    pthread_mutex_t mu;      /* guards ended, end_reason */
    pthread_cond_t cv;
    bool ended;
    char end_reason[32];
};

void cli_view_init(struct cli_view *v, enum cli_view_mode mode, int interrupt_fd);
void cli_view_dispose(struct cli_view *v);
/* The subscription callback (payload: the view). */
void cli_view_event(const evolve_event_t *e, void *payload);
/* Waits until the operation's terminal lifecycle event was shown; false after timeout_ms. */
bool cli_view_wait_end(struct cli_view *v, unsigned int timeout_ms);
/* Ends pending message text with a newline (call after the end). */
void cli_view_finish_text(struct cli_view *v);

#endif
