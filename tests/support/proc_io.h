/* proc_io.h — test helpers for sandbox commands: drain a command's descriptors with a deadline,
 * find processes by command line. */
#ifndef EVOLVE_TEST_PROC_IO_H
#define EVOLVE_TEST_PROC_IO_H

#include <stddef.h>

#include "providers/provider.h"

struct ts_run {
    char *out; /* NUL-terminated, malloc'd */
    size_t out_len;
    char *err;
    size_t err_len;
    struct prov_exit exit;
};

/* Writes `in` (may be NULL) to the command's stdin and closes it, reads stdout and stderr to EOF
 * and the exit record, all within `timeout_ms`. Returns 0, or -1 on timeout / I/O error (with a
 * message on stderr). Closes and clears the proc's descriptors it used. */
int ts_proc_collect(struct prov_proc *proc, const char *in, struct ts_run *run, int timeout_ms);
void ts_run_dispose(struct ts_run *run);

/* How many live (non-zombie) processes have `needle` as one of their argv elements. */
int ts_count_procs_with_arg(const char *needle);

/* Waits until ts_count_procs_with_arg(needle) == want, up to timeout_ms. Returns the last count. */
int ts_wait_procs_with_arg(const char *needle, int want, int timeout_ms);

#endif
