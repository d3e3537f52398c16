/* mockhttp.h — test helpers for evolve mock-llm: start it in-process from inline JSON, talk to it
 * with libcurl (easy interface), split SSE bodies into events. */
#ifndef EVOLVE_TEST_MOCKHTTP_H
#define EVOLVE_TEST_MOCKHTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "mockllm/mockllm.h"

struct ts_http {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char retry_after[32]; /* the Retry-After header, or "" */
    char content_type[64];
    uint64_t first_byte_ms; /* after the request was sent: when the first body byte arrived */
    uint64_t total_ms;
};

/* Starts a server on 127.0.0.1 port 0. `scenario` is inline JSON (starts with '{', written to a
 * temp file first) or a name/path. `log_path` may be NULL. Dies on failure. */
struct mock_server *ts_mock_start(const char *scenario, const char *log_path, int log_bodies);

/* POST `body` (JSON) to http://127.0.0.1:port<path>. headers: NULL-terminated "K: V" list or
 * NULL. Dies when the connection fails; any HTTP status is returned in out->status. */
void ts_http_post(struct ts_http *out, uint16_t port, const char *path, const char *body,
                  const char *const *headers);
/* Any method without a body (GET, HEAD). */
void ts_http_req(struct ts_http *out, uint16_t port, const char *method, const char *path);
void ts_http_free(struct ts_http *r);

struct ts_sse {
    char event[64]; /* "" when the event had no event: line */
    json_t *data;   /* parsed data, NULL for "[DONE]" */
    int done;       /* data was [DONE] */
};

/* Splits an SSE body into events (caller frees with ts_sse_free). Dies on an unparsable data
 * line. */
size_t ts_sse_parse(const char *body, struct ts_sse **out);
void ts_sse_free(struct ts_sse *ev, size_t n);

#endif
