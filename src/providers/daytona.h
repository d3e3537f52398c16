/* providers/daytona.h — the `daytona` sandbox provider: Daytona's REST API (Bearer key) and the
 * toolbox of each sandbox (process sessions, files), all on the reactor. Live output comes from
 * polling the command's logs endpoint (Debian's libcurl has no WebSocket), which adds up to one
 * poll period of latency (docs/internals/providers-cloud.md). */
#ifndef EVOLVE_PROVIDERS_DAYTONA_H
#define EVOLVE_PROVIDERS_DAYTONA_H

#include "io/reactor.h"
#include "providers/provider.h"

struct prov_daytona_opts {
    unsigned int version;  /* PROV_DAYTONA_OPTS_VERSION */
    const char *api_key;   /* $DAYTONA_API_KEY (required) */
    const char *api_url;   /* $DAYTONA_API_URL, else https://app.daytona.io/api */
    const char *snapshot;  /* $DAYTONA_SNAPSHOT, else the server's default */
    unsigned poll_ms;      /* logs/status poll period: $DAYTONA_POLL_MS, else 200 */
    unsigned autostop_min; /* idle auto-stop: $DAYTONA_AUTOSTOP_MIN, else 15 (0 = never) */
};
#define PROV_DAYTONA_OPTS_VERSION 1
#define PROV_DAYTONA_OPTS_INIT                                                                     \
    {                                                                                              \
        .version = PROV_DAYTONA_OPTS_VERSION                                                       \
    }

/* The SDK version claimed in X-Daytona-SDK-Version: >= 0.167 makes the toolbox answer logs as
 * JSON with stdout and stderr split (D3 session/common.go). */
#define PROV_DAYTONA_SDK_VERSION "0.190.0"

/* EVOLVE_EINVAL when no API key is configured (message names DAYTONA_API_KEY). @thread any */
int prov_daytona_new(struct prov **out, const struct prov_daytona_opts *opts, struct io_reactor *r);

/* Sets the idle auto-stop interval in minutes (0 = never). result: NULL. */
int prov_daytona_set_autostop(struct prov_box *box, unsigned minutes, prov_done_cb done,
                              void *payload);

/* Deletes sandbox `id` without a handle (reaping). result: NULL; 404 counts as done. */
int prov_daytona_kill_id(struct prov *p, const char *id, prov_done_cb done, void *payload);

#endif
