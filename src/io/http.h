/* io/http.h — asynchronous HTTP on the reactor: curl multi (one CURLM per reactor, HTTP/2
 * multiplexing and connection reuse), a per-host admission limit above curl, and retries with
 * exponential backoff, full jitter and Retry-After.
 *
 * Callback contract. on_headers, on_chunk and on_done run ON THE REACTOR THREAD and must be
 * short and non-blocking (copy, post to a mailbox, return). For one request they arrive in this
 * order: on_headers at most once, then on_chunk zero or more times with the body bytes in order,
 * then on_done exactly once — whether the request succeeded, failed, was cancelled or the reactor
 * stopped. After on_done nothing more is called for that request. When io_http_start returns < 0
 * no callback is ever called. Pointers handed to callbacks are borrowed for the call only.
 *
 * Ownership. io_http_start copies the request (method, URL, headers, memory body); the caller's
 * structs may be freed when it returns. The handle it returns is the caller's reference, dropped
 * with io_http_release (the request itself runs on; payload must stay valid until on_done).
 *
 * Secrets. Header values are never logged here; error messages name the method and the URL
 * without its query string. */
#ifndef EVOLVE_IO_HTTP_H
#define EVOLVE_IO_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/reactor.h"

struct io_http;

/* When and how to retry. max_attempts 0 or 1 = one attempt, no retry.
 * The delay before attempt n+1 (n >= 1) is uniform in [0, min(cap_ms, base_ms * 2^(n-1))]
 * ("full jitter"); a Retry-After on a 429 or 503 replaces it when longer. */
struct io_retry_policy {
    unsigned max_attempts;
    uint32_t base_ms;            /* 0 = 200 */
    uint32_t cap_ms;             /* 0 = 30000 */
    uint32_t retry_after_max_ms; /* a longer Retry-After ends retrying; 0 = 120000 */
};

struct io_http_header {
    const char *name;
    const char *value;
};

/* A request body produced on demand, on the reactor thread. read fills up to len bytes and
 * returns the count, 0 at the end, or < 0 to abort the request (on_done gets EVOLVE_EUSER).
 * rewind restarts the body from its first byte for a retry; without it a request with a read
 * body is never retried once its body has been read. */
struct io_http_body_reader {
    long (*read)(char *buf, size_t len, void *payload);
    int (*rewind)(void *payload); /* 0 on success; may be NULL */
    void *payload;
    int64_t size; /* bytes, or -1 = unknown (chunked upload) */
};

struct io_http_request {
    const char *method;         /* NULL = "GET" (or "POST" when there is a body) */
    const char *url;            /* http:// or https:// */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; may be NULL */
    const void *body;           /* memory body (copied), or NULL */
    size_t body_len;            /* bytes of body */
    const struct io_http_body_reader *reader; /* streamed body instead of `body`; may be NULL */
    uint32_t timeout_ms;         /* whole transfer, counted from admission; 0 = no limit */
    uint32_t connect_timeout_ms; /* 0 = 30000 */
    bool http1_only;             /* false = HTTP/2 allowed (negotiated over TLS, no prior
                                    knowledge on plain http) */
    uint64_t max_response_bytes; /* body cap, 0 = unlimited; exceeding it ends with EVOLVE_EPROTO */
    bool idempotent;             /* retries after connection errors and 5xx are allowed */
    struct io_retry_policy retry;
};

/* The outcome of a request, valid during on_done only. */
struct io_http_result {
    int code;            /* 0 or EVOLVE_E*: ETIMEDOUT, EIO (connection failed or reset),
                            ECANCELED, ESHUTDOWN, EPROTO, EUSER, EINVAL, ERROR */
    const char *message; /* one line naming method and URL; "" when code is 0 */
    long status;         /* HTTP status of the last attempt, 0 when none was received */
    const struct io_http_header *headers; /* response headers of the last attempt */
    size_t nheaders;
    uint64_t body_bytes;    /* body bytes received in the attempt that was delivered */
    int64_t retry_after_ms; /* from a Retry-After header of the last attempt, -1 if none */
    unsigned attempts;      /* attempts made */
    long connects;          /* new TCP connections the attempts opened (CURLINFO_NUM_CONNECTS) */
};

struct io_http_callbacks {
    /* Status and headers of the response that will be delivered. Retried attempts are never
     * shown: their status, headers and body are swallowed. May be NULL. */
    void (*on_headers)(long status, const struct io_http_header *headers, size_t n, void *payload);
    /* The next len bytes of the body, in order. May be NULL. */
    void (*on_chunk)(const char *data, size_t len, void *payload);
    /* Required. Called exactly once. */
    void (*on_done)(const struct io_http_result *result, void *payload);
};

/* Starts a request: validates and copies it, then posts the work to the reactor. The request
 * waits in its host's queue until the host has a free slot (see io_http_limit); its timeout
 * starts when admitted. Retries follow req->retry: a 429 is always retryable; a 5xx, a timeout
 * or a connection error is retried only when req->idempotent (a connection that could not be
 * opened at all is retried either way); nothing is retried once a body chunk of the attempt has
 * been delivered.
 * @param[out] out  the caller's handle (release with io_http_release); may be NULL
 * @return 0, EVOLVE_EINVAL (no URL, bad URL, both body and reader), EVOLVE_ENOMEM or
 *         EVOLVE_ESHUTDOWN. On < 0 no callback is ever called.
 * @thread any */
int io_http_start(struct io_http **out, struct io_reactor *r, const struct io_http_request *req,
                  const struct io_http_callbacks *cbs, void *payload);

/* Cancels the request: unless it already finished, on_done comes with EVOLVE_ECANCELED (later,
 * on the reactor thread). Idempotent. @thread any */
void io_http_cancel(struct io_http *h);

/* Drops the caller's reference. The request is not cancelled. NULL is a no-op. @thread any */
void io_http_release(struct io_http *h);

/* Sets the admission limit (requests in flight) for one host ("host:port", e.g.
 * "api.e2b.dev:443"), or the default for hosts without their own when host is NULL. 0 means
 * unlimited. The default default is 64. Applied in posting order relative to io_http_start from
 * the same thread. @return 0, EVOLVE_ENOMEM or EVOLVE_ESHUTDOWN. @thread any */
int io_http_limit(struct io_reactor *r, const char *host, unsigned max_in_flight);

/* ---- the retry arithmetic, exposed for callers that drive their own retries (and tests) ------ */

/* Whether a finished attempt should be retried (ignoring the attempt count).
 * @thread any (pure) */
bool io_retry_wanted(int code, long status, bool idempotent, bool connect_failed);

/* Delay before attempt `attempt + 1` after `attempt` attempts (>= 1): full jitter over
 * min(cap, base * 2^(attempt-1)) using `rnd` (64 random bits), replaced by retry_after_ms when
 * that is >= 0 and longer. @thread any (pure) */
uint64_t io_retry_delay_ms(const struct io_retry_policy *p, unsigned attempt,
                           int64_t retry_after_ms, uint64_t rnd);

/* Parses a Retry-After value: delta-seconds or an HTTP-date (relative to now_unix, seconds since
 * the epoch). @return milliseconds >= 0, or -1 when the value is not valid. @thread any */
int64_t io_retry_after_parse(const char *value, int64_t now_unix);

#endif
