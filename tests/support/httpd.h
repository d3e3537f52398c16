/* httpd.h — an in-process HTTP/1.1 test server on 127.0.0.1 (libmicrohttpd, one thread per
 * connection) with routes a test configures: fixed bodies, streamed chunks with delays, 429 with
 * Retry-After then 200, a connection closed mid-stream, a handler that never answers, an echo.
 * It counts requests, connections and requests in flight (and their maximum). Used by
 * tests/concurrency/io_*.c and bench/http.c. */
#ifndef EVOLVE_TEST_HTTPD_H
#define EVOLVE_TEST_HTTPD_H

#include <stddef.h>
#include <stdint.h>

enum ts_httpd_kind {
    TS_HTTPD_FIXED,       /* status (0 = 200) + body, after delay_ms */
    TS_HTTPD_STREAM,      /* 200, chunked: `chunks` chunks of chunk_size bytes (ts_httpd_chunk),
                             delay_ms before each chunk after the first */
    TS_HTTPD_RETRY_AFTER, /* the first fail_first hits get fail_status (0 = 429) with
                             "Retry-After: <retry_after>"; later hits get 200 + body */
    TS_HTTPD_RESET,       /* like STREAM, then the connection is closed before the end
                             (MHD_CONTENT_READER_END_WITH_ERROR) */
    TS_HTTPD_HANG,        /* never answers (until the server stops) */
    TS_HTTPD_ECHO         /* 200 with the request body; headers X-Echo-Method and X-Echo-Test
                             (the request's X-Test header) */
};

struct ts_httpd_route {
    const char *path; /* exact match on the URL path */
    enum ts_httpd_kind kind;
    int status;
    const char *body;
    unsigned chunks;
    size_t chunk_size;
    unsigned delay_ms;
    unsigned fail_first;
    int fail_status;
    const char *retry_after;
};

struct ts_httpd_stats {
    uint64_t requests;      /* requests received (all routes) */
    uint64_t connections;   /* TCP connections accepted */
    unsigned in_flight;     /* requests received and not yet completed */
    unsigned max_in_flight; /* the highest in_flight seen since start or ts_httpd_reset_max */
};

struct ts_httpd;

/* Starts the server on an ephemeral loopback port. Dies on failure. */
struct ts_httpd *ts_httpd_start(void);

/* Stops it: hanging handlers return, connections close, threads are joined. NULL is a no-op. */
void ts_httpd_stop(struct ts_httpd *s);

/* Adds a route (copied; up to 32). Call before sending requests to it. */
void ts_httpd_route(struct ts_httpd *s, const struct ts_httpd_route *route);

/* "http://127.0.0.1:<port><path>" into buf; returns buf. */
char *ts_httpd_url(const struct ts_httpd *s, const char *path, char *buf, size_t size);

unsigned ts_httpd_port(const struct ts_httpd *s);

void ts_httpd_stats(struct ts_httpd *s, struct ts_httpd_stats *out);
void ts_httpd_reset_max(struct ts_httpd *s);

/* Hits of one route, and the monotonic ms of its first and last hit. */
uint64_t ts_httpd_hits(struct ts_httpd *s, const char *path, uint64_t *first_ms, uint64_t *last_ms);

/* The most requests of one route in flight at once since start or ts_httpd_reset_max (a request
 * counts from its headers' arrival until its response is sent or its connection drops). */
unsigned ts_httpd_max_in_flight(struct ts_httpd *s, const char *path);

/* The bytes of chunk i of a streamed body (deterministic, so a test can rebuild it). */
void ts_httpd_chunk(char *buf, unsigned i, size_t size);

#endif
