/* fakes.h — loopback fakes of the cloud sandbox providers (spec/provider-apis.md §7), in-process
 * libmicrohttpd servers on 127.0.0.1 that hold each sandbox as a local directory and run its
 * commands as local processes. Used by tests/providers/, tests/session/session.c (provider
 * selected by EVOLVE_TEST_PROVIDER) and bench/providers.c.
 *
 * E2B: control plane (X-API-Key "e2b_test") on one port, envd on another, routed by the
 * E2b-Sandbox-Id / E2b-Sandbox-Port headers as E2B's edge does for IP hosts; Connect streams
 * over HTTP/1.1 chunked. Daytona: API under /api and toolbox under /toolbox/{id} (Bearer
 * "dtn_test").
 *
 * Faults are armed with ts_fake_fault and consumed one per matching request. */
#ifndef EVOLVE_TEST_FAKES_H
#define EVOLVE_TEST_FAKES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ts_fake_kind { TS_FAKE_E2B, TS_FAKE_DAYTONA };

enum ts_fault {
    TS_FAULT_429_CREATE, /* the next create answers 429 with Retry-After: 1 */
    TS_FAULT_503_CREATE, /* the next create answers 503 with a capacity error_code */
    TS_FAULT_500,        /* the next control-plane request (any) answers 500 */
    TS_FAULT_RESET,      /* the next command stream is cut (connection reset) after its first
                            output event; the command keeps running */
    TS_FAULT_STALL,      /* the next command stream goes silent (no keepalives) after start */
    TS_FAULT_COUNT
};

struct ts_fake_opts {
    unsigned latency_ms;      /* added to every request */
    unsigned create_delay_ms; /* added to creates ("slow creates") */
    unsigned keepalive_ms;    /* E2B keepalive event period cap (0 = as the client asks) */
    unsigned started_after;   /* Daytona: GETs before a created sandbox reports "started" */
};

struct ts_fake_stats {
    uint64_t requests;
    uint64_t connections;      /* TCP connections accepted (all ports) */
    unsigned open_connections; /* accepted and not yet closed */
    unsigned sandboxes;        /* live (not killed) */
    unsigned processes;        /* commands still running */
    uint64_t creates, kills;
};

struct ts_fake;

/* Starts a fake on ephemeral loopback ports with sandboxes under a fresh temp dir. Dies on
 * failure. opts may be NULL. */
struct ts_fake *ts_fake_start(enum ts_fake_kind kind, const struct ts_fake_opts *opts);
/* Stops it: streams end, every remaining process is killed, the temp dir removed. */
void ts_fake_stop(struct ts_fake *f);

/* Sets the environment a provider reads so that it talks to this fake (E2B_API_KEY, E2B_API_URL,
 * E2B_SANDBOX_URL, E2B_DOMAIN / DAYTONA_API_KEY, DAYTONA_API_URL). */
void ts_fake_setenv(const struct ts_fake *f);

/* Arms `fault` for the next `count` matching requests (replacing what was armed; 0 disarms). */
void ts_fake_fault(struct ts_fake *f, enum ts_fault fault, unsigned count);

/* Makes sandbox `id` vanish as if the provider lost it: its processes are killed, its streams
 * cut, and every later request for it answers as for an unknown sandbox. 0, or -1 if unknown. */
int ts_fake_vanish(struct ts_fake *f, const char *id);

void ts_fake_stats(struct ts_fake *f, struct ts_fake_stats *out);

/* The host directory that sandbox `id` sees as /home/user, into out; -1 if unknown. */
int ts_fake_home(struct ts_fake *f, const char *id, char *out, size_t size);

/* "http://127.0.0.1:<port>" of the control plane (API; Daytona serves it under /api) and of
 * envd/toolbox. */
const char *ts_fake_api_url(const struct ts_fake *f);
const char *ts_fake_data_url(const struct ts_fake *f);

/* Waits until no process runs and no connection is open, up to timeout_ms. true when so. */
bool ts_fake_quiesce(struct ts_fake *f, unsigned timeout_ms);

/* ---- waiting on provider ops (tests/fakes/provsync.c) ---------------------------------------- */

#include "providers/provider.h"

/* One op's completion, for tests that drive a provider directly. */
struct ts_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    struct prov_status st;
    void *result;
};

void ts_wait_init(struct ts_wait *w);
/* The prov_done_cb to pass with payload = the ts_wait. */
void ts_wait_done(void *payload, const struct prov_status *st, void *result);
/* Waits for the completion (up to timeout_ms; dies past it), returns st.code; *result_out (may
 * be NULL) gets the result. Re-arms the waiter for the next op. */
int ts_wait_for(struct ts_wait *w, unsigned timeout_ms, void **result_out);

/* Reads fd to EOF into a malloc'd NUL-terminated buffer (blocking). */
char *ts_read_fd(int fd, size_t *len_out);

#endif
