/* runtime.c — the public evolve_runtime_t: the actor runtime, the I/O reactor and the shared
 * sandbox providers of one program.
 * Owns: their creation order (workers, then the reactor) and the reverse on free (providers,
 * reactor, workers), so no callback can reach a freed piece.
 * Threads: new/free from any thread that is not a worker; accessors from any thread. */
#include "core/runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/ledger.h"
#include "providers/local.h"

struct evolve_runtime {
    struct act_runtime *act;
    struct io_reactor *io;
    pthread_mutex_t lock; /* guards the lazily created members below */
    struct prov *local;
    json_t *pricing;
    int pricing_loaded;
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
    pthread_mutex_init(&rt->lock, NULL);
    rc = act_runtime_new(&rt->act, &cfg);
    if (rc < 0)
        goto fail;
    rc = io_reactor_new(&rt->io);
    if (rc < 0)
        goto fail;
    *out = rt;
    return 0;
fail:
    evolve_runtime_free(rt);
    return rc;
}

void evolve_runtime_free(evolve_runtime_t *rt)
{
    if (!rt)
        return;
    /* Sessions are gone by now (their owners freed them); queued jobs may still hold provider
     * work, so the workers drain before the providers go. */
    if (rt->act)
        act_runtime_shutdown(rt->act);
    if (rt->local)
        rt->local->ops->free(rt->local);
    io_reactor_free(rt->io);
    act_runtime_free(rt->act);
    json_decref(rt->pricing);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
}

struct act_runtime *act_runtime_of(evolve_runtime_t *rt)
{
    return rt->act;
}

struct io_reactor *core_runtime_io(evolve_runtime_t *rt)
{
    return rt->io;
}

static void defer_on_workers(void *ctx, void (*fn)(void *arg), void *arg)
{
    /* A provider job that cannot be queued (shutdown) runs here: its done callback then reports
     * the provider's own shutdown error, which is better than never completing. */
    if (act_runtime_submit(ctx, fn, arg) < 0)
        fn(arg);
}

int core_runtime_provider(struct prov **out, evolve_runtime_t *rt, const char *name)
{
    int rc = 0;

    if (!name || !strcmp(name, "local")) {
        pthread_mutex_lock(&rt->lock);
        if (!rt->local) {
            struct prov_local_opts o = PROV_LOCAL_OPTS_INIT;
            struct prov_env env = {.defer = defer_on_workers, .defer_ctx = rt->act};

            rc = prov_local_new(&rt->local, &o, &env);
        }
        *out = rt->local;
        pthread_mutex_unlock(&rt->lock);
        return rc;
    }
    if (!strcmp(name, "modal"))
        return core_error_set(EVOLVE_EUNSUPPORTED, "Modal is not supported yet");
    return core_error_set(EVOLVE_ENOTFOUND, "unknown sandbox provider \"%s\" (known: local)", name);
}

json_t *core_runtime_pricing(evolve_runtime_t *rt)
{
    json_t *p;

    pthread_mutex_lock(&rt->lock);
    if (!rt->pricing_loaded) {
        rt->pricing_loaded = 1;
        if (core_pricing_load(&rt->pricing, NULL) < 0)
            rt->pricing = NULL;
    }
    p = rt->pricing;
    pthread_mutex_unlock(&rt->lock);
    return p;
}
