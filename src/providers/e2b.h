/* providers/e2b.h — the `e2b` sandbox provider: E2B's control plane (REST, X-API-Key) and envd
 * in each sandbox (Connect protocol with the JSON codec, /files), all of it on the reactor
 * (docs/internals/providers-cloud.md). */
#ifndef EVOLVE_PROVIDERS_E2B_H
#define EVOLVE_PROVIDERS_E2B_H

#include "io/reactor.h"
#include "providers/provider.h"

/* Configuration; every NULL/0 field falls back to the environment, then to E2B's defaults. */
struct prov_e2b_opts {
    unsigned int version;    /* PROV_E2B_OPTS_VERSION */
    const char *api_key;     /* $E2B_API_KEY (required) */
    const char *domain;      /* $E2B_DOMAIN, else "e2b.app" */
    const char *api_url;     /* $E2B_API_URL, else https://api.<domain> */
    const char *sandbox_url; /* $E2B_SANDBOX_URL, else https://sandbox.<domain>; envd is routed
                                by the E2b-Sandbox-Id / E2b-Sandbox-Port headers */
    const char *template_id; /* $E2B_TEMPLATE, else "base" */
    unsigned timeout_s;      /* sandbox TTL: $E2B_SANDBOX_TIMEOUT, else 3600 */
    unsigned keepalive_s;    /* envd keepalive period on streams: $E2B_KEEPALIVE_S, else 50; a
                                stream silent for 3 periods is treated as dropped */
};
#define PROV_E2B_OPTS_VERSION 1
#define PROV_E2B_OPTS_INIT                                                                         \
    {                                                                                              \
        .version = PROV_E2B_OPTS_VERSION                                                           \
    }

/* Creates the provider on reactor `r` (borrowed; must outlive the provider's requests).
 * EVOLVE_EINVAL when no API key is configured (message names E2B_API_KEY) or a URL is bad.
 * @thread any */
int prov_e2b_new(struct prov **out, const struct prov_e2b_opts *opts, struct io_reactor *r);

/* Sets the sandbox TTL (seconds from now) of a box. result: NULL. @thread any */
int prov_e2b_set_timeout(struct prov_box *box, unsigned seconds, prov_done_cb done, void *payload);

/* Kills sandbox `id` without a handle (reaping). result: NULL; 404 counts as done. */
int prov_e2b_kill_id(struct prov *p, const char *id, prov_done_cb done, void *payload);

#endif
