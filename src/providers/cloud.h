/* providers/cloud.h — what the network providers (e2b, daytona) share: a buffered REST call on
 * the reactor, pipes fed from the reactor thread, the error model (HTTP status -> EVOLVE_E* ->
 * batch failure class), sandbox path confinement, labels, base64 and RFC 3339 helpers.
 * docs/internals/providers-cloud.md describes the providers built on it.
 *
 * Threads: cloud_call_start and the helpers from any thread; cloud_call callbacks and everything
 * taking a struct cloud_pipe run on the reactor thread. */
#ifndef EVOLVE_PROVIDERS_CLOUD_H
#define EVOLVE_PROVIDERS_CLOUD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch/failure.h"
#include "io/http.h"
#include "io/reactor.h"
#include "providers/provider.h"

/* ---- buffered REST calls ------------------------------------------------------------------- */

/* The outcome of one REST call, valid during the callback only. */
struct cloud_reply {
    const struct io_http_result *res; /* transport outcome, status, headers */
    const char *body;                 /* NUL-terminated; "" when none */
    size_t len;
};

typedef void (*cloud_reply_fn)(const struct cloud_reply *rep, void *payload);

/* Starts a request whose whole body is collected (up to max_bytes, 0 = 64 MiB) and handed to
 * fn on the reactor thread, once. Returns 0 or < 0 (fn never runs, error set). @thread any */
int cloud_call_start(struct io_reactor *r, const struct io_http_request *req, size_t max_bytes,
                     cloud_reply_fn fn, void *payload);

/* A response header's value (case-insensitive name), or NULL. */
const char *cloud_header(const struct io_http_result *res, const char *name);

/* ---- errors -------------------------------------------------------------------------------- */

/* Fills `st` for a failed call: the EVOLVE_E* that the HTTP status (or transport error) maps to,
 * and a message "<what>: <provider's message> (HTTP <n>[, retry after <ms> ms])". The provider's
 * message comes from the JSON body's "message" field when there is one. Returns st->code.
 *   400/415/422 EINVAL, 401/403 EUNSUPPORTED (credentials), 404 ENOTFOUND, 409 EBUSY,
 *   408/504 ETIMEDOUT, 410/502 (sandbox gone) ENOTFOUND, 429/503/5xx EIO, transport codes as is. */
int cloud_status_from(struct prov_status *st, const struct cloud_reply *rep, const char *what);

/* Sets a status with a formatted message. Returns code. */
int cloud_status_set(struct prov_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a failed provider operation means to a batch: the class and whether the provider asked
 * to slow down. `st` is the status an op reported; `during_create` says whether it was the
 * create (or connect) of the sandbox. http_status_out and retry_after_ms_out (may be NULL) get
 * the HTTP status (0 if none) and the Retry-After in ms (-1 if none) parsed back from the
 * message tail written by cloud_status_from:
 *   create + 429/503/504 or a capacity code -> CAPACITY (retryable, feed the admission bucket),
 *   create + other 4xx/5xx or transport     -> CREATE_REJECTED,
 *   later  + 404/410/502 or transport       -> SANDBOX_LOST,
 *   anything else                           -> INTERNAL.  @thread any (pure) */
enum bat_failure prov_cloud_failure(const struct prov_status *st, bool during_create,
                                    int *http_status_out, int64_t *retry_after_ms_out);

/* Reaps orphans of an e2b or daytona provider: lists the sandboxes carrying this process's
 * labels (owner, batch) and kills those created more than older_than_ms ago. result: size_t *
 * (malloc'd) = how many were killed. A restarted batch first connects the ids it still wants,
 * then reaps the rest. @thread any */
int prov_cloud_reap(struct prov *p, uint64_t older_than_ms, prov_done_cb done, void *payload);

/* ---- pipes fed from the reactor ------------------------------------------------------------ */

/* The provider's end of one pipe whose other end the caller owns: bytes queued here are written
 * when the pipe has room (EPOLLOUT watch), so the reactor never blocks on a slow reader. A pipe
 * closed with bytes still queued lives on until they are out (or the reader goes away), then
 * frees itself. */
struct cloud_pipe;

/* Makes a pipe: *caller_fd gets the read end (blocking, CLOEXEC), *out the write end.
 * Returns 0, EVOLVE_ENOMEM or EVOLVE_EIO. @thread any */
int cloud_pipe_open(struct cloud_pipe **out, int *caller_fd);
/* The descriptors of a remote command (struct prov_proc): stdout, stderr and status pipes fed
 * from the reactor, and, when want_stdin, a pipe whose read end (*stdin_read, non-blocking) the
 * provider drains towards the remote process. `who` prefixes error messages ("e2b exec").
 * Returns 0, EVOLVE_ENOMEM or EVOLVE_EIO; on error the caller still frees what was opened.
 * @thread any */
int cloud_proc_pipes(struct prov_proc *proc, struct cloud_pipe **out, struct cloud_pipe **err,
                     struct cloud_pipe **status, bool want_stdin, int *stdin_read, const char *who);
/* Queues bytes (copied). NULL is a no-op. @thread reactor */
void cloud_pipe_write(struct io_reactor *r, struct cloud_pipe *p, const void *data, size_t len);
/* Closes the write end once the queued bytes are out and gives the pipe up (it frees itself).
 * NULL is a no-op. @thread reactor */
void cloud_pipe_close(struct io_reactor *r, struct cloud_pipe *p);
/* Closes and frees at once, dropping queued bytes. NULL is a no-op. @thread reactor, or any
 * thread for a pipe that was never written */
void cloud_pipe_abort(struct io_reactor *r, struct cloud_pipe *p);

/* ---- sandbox paths, labels, encodings ------------------------------------------------------ */

#define CLOUD_HOME "/home/user"

/* Resolves `path` (relative to /home/user, or absolute under it) to an absolute path with no
 * "." or ".." components. EVOLVE_EUNSAFE naming the path when it would leave /home/user,
 * EVOLVE_EINVAL when it does not fit. */
int cloud_sandbox_path(char *out, size_t size, const char *path);

/* The labels given to every sandbox of this process (and that list filters on): "evolve=1",
 * "evolve.owner=<$EVOLVE_SANDBOX_OWNER or user@host>", and "evolve.batch=<$EVOLVE_BATCH_ID>"
 * when set. Writes up to max pairs into keys/values (static strings of this process).
 * Returns the count. @thread any */
size_t cloud_labels(const char **keys, const char **values, size_t max);

/* Standard base64 with padding. Returns a malloc'd NUL-terminated string, or NULL (OOM). */
char *cloud_b64_encode(const void *data, size_t len);
/* Accepts padded, unpadded and URL-safe input. Returns the byte count, or -1 on bad input.
 * `out` needs len * 3 / 4 + 3 bytes. */
long cloud_b64_decode(const char *in, size_t len, unsigned char *out);

/* RFC 3339 ("2026-11-30T05:40:47.123456789Z", offsets allowed) to ms since the epoch; -1 when
 * not valid. */
long long cloud_rfc3339_ms(const char *s);

/* Reads an integer env var within [lo, hi], else `dflt`. */
long cloud_env_long(const char *name, long dflt, long lo, long hi);

/* A malloc'd "Name: value" header line, or NULL (OOM). */
char *cloud_hdr(const char *name, const char *value);

#endif
