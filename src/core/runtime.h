/* core/runtime.h — what the public evolve_runtime_t owns, for the modules that run on it. */
#ifndef EVOLVE_CORE_RUNTIME_H
#define EVOLVE_CORE_RUNTIME_H

#include <jansson.h>

#include "actors/runtime_public.h"
#include "io/reactor.h"
#include "providers/provider.h"

/* The I/O reactor of the runtime. Borrowed. @thread any */
struct io_reactor *core_runtime_io(evolve_runtime_t *rt);

/* The provider named `name` ("local", "e2b", "daytona", or "auto": core_provider_resolve), created
 * on first use and shared by every session of the runtime. Borrowed until evolve_runtime_free.
 * Returns 0, EVOLVE_ENOTFOUND (unknown name, message lists the known ones) or the provider's
 * own error. @thread any */
int core_runtime_provider(struct prov **out, evolve_runtime_t *rt, const char *name);

/* Auto-resolution of the sandbox provider (seed 002), used for provider "auto": "e2b" when
 * E2B_API_KEY is set, else EVOLVE_EUNSUPPORTED "Modal is not supported yet" when MODAL_TOKEN_ID
 * and MODAL_TOKEN_SECRET are set, else "daytona" when DAYTONA_API_KEY is set, else
 * EVOLVE_ENOTFOUND "No sandbox provider configured: ...". *out is a static string. @thread any */
int core_provider_resolve(const char **out);

/* The pricing table (data/pricing.json or $EVOLVE_PRICING), loaded once; NULL when it cannot be
 * loaded (then nothing is priced by table). Borrowed. @thread any */
json_t *core_runtime_pricing(evolve_runtime_t *rt);

#endif
