/* evolve/runtime.h — the shared runtime: the worker threads that run every sandbox, job and
 * subscriber callback of a program (and, later, the I/O reactor).
 * Ownership: evolve_runtime_new() hands the caller the runtime; evolve_runtime_free() stops it
 * (waiting for queued work to finish) and releases it. Options are read during the call only. */
#ifndef EVOLVE_RUNTIME_H
#define EVOLVE_RUNTIME_H

#include "evolve/common.h"

EVOLVE_BEGIN_DECL

/** The shared runtime (opaque). */
typedef struct evolve_runtime evolve_runtime_t;

/** Options of evolve_runtime_new(). Fields are only ever appended; zero means the default. */
typedef struct evolve_runtime_options {
    unsigned int version;        /**< EVOLVE_RUNTIME_OPTIONS_VERSION */
    unsigned int worker_threads; /**< worker threads; 0 = one per online core */
} evolve_runtime_options_t;

#define EVOLVE_RUNTIME_OPTIONS_VERSION 1
#define EVOLVE_RUNTIME_OPTIONS_INIT                                                                \
    {                                                                                              \
        .version = EVOLVE_RUNTIME_OPTIONS_VERSION                                                  \
    }

/** Fills `opts` with the defaults of `version`.
 *  @return 0, or EVOLVE_EINVAL when `version` is 0 or newer than this library knows.
 *  @thread any */
EVOLVE_API int evolve_runtime_options_init(evolve_runtime_options_t *opts, unsigned int version);

/** Starts a runtime. `out` receives it; release it with evolve_runtime_free(). `opts` may be
 *  NULL (defaults).
 *  @param[out] out the new runtime; NULL on error
 *  @return 0, EVOLVE_EINVAL (unknown options version, too many threads), EVOLVE_ENOMEM, or
 *          EVOLVE_ERROR (a thread could not be started).
 *  @thread any */
EVOLVE_API int evolve_runtime_new(evolve_runtime_t **out, const evolve_runtime_options_t *opts);

/** Stops the runtime: no new work is accepted, pending timers are cancelled, queued messages and
 *  jobs are handled, then the threads are joined and everything is freed. NULL is a no-op.
 *  Must not be called from a callback running on the runtime itself.
 *  @thread any thread that is not one of the runtime's workers */
EVOLVE_API void evolve_runtime_free(evolve_runtime_t *rt);

EVOLVE_END_DECL

#endif
