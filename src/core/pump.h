/* core/pump.h — moves a sandbox command's output from its descriptors (struct prov_proc) to the
 * session actor: the reactor reads stdout, stderr and the exit record, and hands each chunk to a
 * callback that posts it on. */
#ifndef EVOLVE_CORE_PUMP_H
#define EVOLVE_CORE_PUMP_H

#include <stdbool.h>
#include <stddef.h>

#include "io/reactor.h"
#include "providers/provider.h"

struct core_pump;

struct core_pump_cbs {
    /* A chunk of stdout (stream 1) or stderr (stream 2). `data` is malloc'd and now the
     * callee's. Runs on the reactor thread: post it, do not parse it here. */
    void (*on_chunk)(void *payload, int stream, char *data, size_t len);
    /* Exactly once, last, after both pipes reached EOF (or stayed open 2 s past the exit: a
     * grandchild holding them) and the exit record arrived. `lost` = the status descriptor ended
     * without a record (the sandbox died); then `ex` is zeroed. Reactor thread. */
    void (*on_end)(void *payload, const struct prov_exit *ex, bool lost);
};

/* Takes the stdout, stderr and status descriptors of `proc` (sets them to -1 in it) and starts
 * reading them on `r`. `payload` must live until on_end. Returns 0, EVOLVE_ENOMEM or
 * EVOLVE_ESHUTDOWN (the descriptors are closed, no callback runs). @thread any */
int core_pump_start(struct core_pump **out, struct io_reactor *r, struct prov_proc *proc,
                    const struct core_pump_cbs *cbs, void *payload);

/* Stops / restarts reading stdout (backpressure reaches the process through its pipe). */
int core_pump_pause(struct core_pump *p);
int core_pump_resume(struct core_pump *p);

/* Drops the caller's reference; the pump lives until on_end has run. NULL is a no-op. */
void core_pump_release(struct core_pump *p);

#endif
