/* evolve_runtime.c — the public evolve_runtime_t: a thin wrapper owning the actor runtime.
 * Owns: struct evolve_runtime. Other modules hang their shared machinery off it (the I/O
 * reactor goes next to `act`; see "Hooks" below) and reach the actor runtime through
 * act_runtime_of().
 * Threads: evolve_runtime_new/free from any thread that is not a worker of the runtime. */
#include "actors/runtime_public.h"

#include <stdlib.h>

#include "core/error.h"

struct evolve_runtime {
    struct act_runtime *act; /* workers, actors, timers */
    /* Hooks: the reactor (src/io) and other shared services are added here, started in
     * evolve_runtime_new after `act` and stopped in evolve_runtime_free before it. */
};

static int check_version(unsigned int version)
{
    if (version == 0 || version > EVOLVE_RUNTIME_OPTIONS_VERSION)
        return core_error_set(EVOLVE_EINVAL,
                              "evolve_runtime_options_t: version %u is not supported (1..%u)",
                              version, (unsigned)EVOLVE_RUNTIME_OPTIONS_VERSION);
    return 0;
}

int evolve_runtime_options_init(evolve_runtime_options_t *opts, unsigned int version)
{
    int rc = check_version(version);

    if (rc < 0)
        return rc;
    *opts = (evolve_runtime_options_t){.version = version};
    return 0;
}

int evolve_runtime_new(evolve_runtime_t **out, const evolve_runtime_options_t *opts)
{
    struct act_runtime_config cfg = {0};
    struct evolve_runtime *rt;
    int rc;

    *out = NULL;
    if (opts) {
        rc = check_version(opts->version);
        if (rc < 0)
            return rc;
        cfg.worker_threads = opts->worker_threads;
    }
    rt = calloc(1, sizeof(*rt));
    if (!rt)
        return core_error_oom();
    rc = act_runtime_new(&rt->act, &cfg);
    if (rc < 0) {
        free(rt);
        return rc;
    }
    *out = rt;
    return 0;
}

void evolve_runtime_free(evolve_runtime_t *rt)
{
    if (!rt)
        return;
    act_runtime_free(rt->act);
    free(rt);
}

struct act_runtime *act_runtime_of(evolve_runtime_t *rt)
{
    return rt->act;
}
