/* mockllm/mockllm.h — the scripted model endpoint behind `evolve mock-llm`, started in-process.
 * Internal API (not exported): used by the CLI, the tests and bench/e2e drivers.
 * Ownership: mock_server_start() gives the caller a server it must release with
 * mock_server_stop(); strings in the config are copied before start returns. */
#ifndef EVOLVE_MOCKLLM_H
#define EVOLVE_MOCKLLM_H

#include <stdint.h>

struct mock_server; /* opaque */

struct mock_config {
    /* A scenario file path, or a name looked up as <dir>/<name>.json in, in order,
     * $EVOLVE_SCENARIO_DIR, scenario_dir, the source tree's data/scenarios and the installed
     * share/evolve/scenarios. Required. */
    const char *scenario;
    const char *scenario_dir; /* optional extra directory for names (see above) */
    const char *host;         /* loopback only: "127.0.0.1" (default), "localhost", 127.x */
    uint16_t port;            /* 0 picks a free port; read it back with mock_server_port() */
    const char *log_path;     /* JSONL request log appended to; NULL logs nothing */
    int log_bodies;           /* 1: the request body goes into the log too (redacted) */
};

/* Loads the scenario, binds host:port and starts serving on libmicrohttpd threads (one per
 * connection). `out` receives the server.
 * @return 0, EVOLVE_EINVAL (bad config or scenario, message names the file and turn),
 *         EVOLVE_ENOTFOUND (no scenario of that name), EVOLVE_EIO (bind failed or log file).
 * @thread any */
int mock_server_start(struct mock_server **out, const struct mock_config *cfg);

/* The bound TCP port (the real one when the config asked for 0). @thread any */
uint16_t mock_server_port(const struct mock_server *srv);

/* Number of model requests answered so far (all dialects, errors included). @thread any */
uint64_t mock_server_requests(const struct mock_server *srv);

/* Stops accepting, wakes paced streams so they end at once, joins every connection thread and
 * frees the server. NULL is a no-op. @thread any but not a server thread */
void mock_server_stop(struct mock_server *srv);

#endif
