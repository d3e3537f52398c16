/* io/http_int.h — what io/http.c (the reactor side) and io/http_api.c (the entry points other
 * threads call) share: the request object and the functions posted from one to the other.
 * Private to src/io. */
#ifndef EVOLVE_IO_HTTP_INT_H
#define EVOLVE_IO_HTTP_INT_H

#include <curl/curl.h>
#include <stdatomic.h>

#include "io/http.h"

#define IO_HTTP_DEFAULT_HOST_LIMIT 64

enum h_state { H_POSTED, H_QUEUED, H_ACTIVE, H_BACKOFF, H_DONE };

struct http_host; /* io/http.c */

struct io_http {
    atomic_int refs; /* the caller's (if it took a handle) + the reactor's + pending cancels */
    struct io_reactor *r;

    /* Immutable after io_http_start (published to the reactor by io_reactor_post). */
    char *method, *url, *display, *host_key;
    struct curl_slist *headers;
    char *body;
    size_t body_len;
    bool has_body, has_reader;
    struct io_http_body_reader reader;
    struct io_http_request opt; /* scalar options; pointer fields are not used */
    struct io_http_callbacks cbs;
    void *payload;

    /* Reactor thread only. */
    enum h_state state;
    bool cancel_pending;
    struct http_host *host;
    struct io_http *qprev, *qnext; /* host queue */
    struct io_http *aprev, *anext; /* ctx->all */
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    long status;
    bool suppress, headers_delivered, headers_done, too_large, reader_failed, body_read;
    struct io_http_header *hdrs;
    size_t nhdrs, caphdrs;
    uint64_t bytes;
    int64_t retry_after_ms;
    unsigned attempts;
    long connects;
    struct io_timer *backoff;
    char msg[400];
};

struct io_http_limit_msg {
    char *host; /* NULL = the default for every host */
    unsigned limit;
};

/* Frees a request and everything it owns. @thread whoever drops the last reference */
void io_http_free_request(struct io_http *h);

/* Drops one reference; the last frees. @thread any */
void io_http_unref(struct io_http *h);

/* Posted by io_http_start / io_http_cancel / io_http_limit; arg is the request (start, cancel:
 * carrying one reference) or a struct io_http_limit_msg (freed here). @thread reactor */
void io_http_on_start(struct io_reactor *r, void *arg);
void io_http_on_cancel(struct io_reactor *r, void *arg);
void io_http_on_limit(struct io_reactor *r, void *arg);

#endif
