/* Async HTTP against a real loopback server (tests/support/httpd.c, libmicrohttpd in-process):
 * concurrency, streaming order, Retry-After, resets, timeouts, admission, cancel, shutdown. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "evolve/common.h"
#include "io/http.h"
#include "support/httpd.h"
#include "support/latch.h"
#include "support/support.h"
#include "support/tap.h"

static struct ts_httpd *srv;
static struct ts_latch done; /* bumped by every on_done */

/* What the callbacks saw for one request. Written on the reactor thread, read by the test after
 * the latch says on_done ran (the latch's mutex orders the two). */
struct rec {
    long status_hdr;
    int headers_calls, done_calls, misordered;
    char *body;
    size_t len, cap;
    size_t chunks;
    int code;
    long status;
    unsigned attempts;
    long connects;
    int64_t retry_after_ms;
    char message[400];
    char echo_method[16], echo_test[64];
    uint64_t done_ms;
};

static void rec_headers(long status, const struct io_http_header *h, size_t n, void *payload)
{
    struct rec *r = payload;
    size_t i;

    if (r->chunks || r->done_calls)
        r->misordered++;
    r->headers_calls++;
    r->status_hdr = status;
    for (i = 0; i < n; i++) {
        if (!strcasecmp(h[i].name, "X-Echo-Method"))
            snprintf(r->echo_method, sizeof(r->echo_method), "%s", h[i].value);
        if (!strcasecmp(h[i].name, "X-Echo-Test"))
            snprintf(r->echo_test, sizeof(r->echo_test), "%s", h[i].value);
    }
}

static void rec_chunk(const char *data, size_t len, void *payload)
{
    struct rec *r = payload;

    if (!r->headers_calls || r->done_calls)
        r->misordered++;
    if (r->len + len + 1 > r->cap) {
        r->cap = (r->len + len + 1) * 2;
        r->body = realloc(r->body, r->cap);
    }
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
    r->chunks++;
}

static void rec_done(const struct io_http_result *res, void *payload)
{
    struct rec *r = payload;

    r->done_calls++;
    r->code = res->code;
    r->status = res->status;
    r->attempts = res->attempts;
    r->connects = res->connects;
    r->retry_after_ms = res->retry_after_ms;
    r->done_ms = ts_now_ms();
    snprintf(r->message, sizeof(r->message), "%s", res->message);
    ts_latch_add(&done, 1);
}

static const struct io_http_callbacks cbs = {rec_headers, rec_chunk, rec_done};

static void rec_free(struct rec *r, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(r[i].body);
    free(r);
}

static char *url(const char *path)
{
    static char buf[128];

    return ts_httpd_url(srv, path, buf, sizeof(buf));
}

/* Starts n GETs of path; returns when all are posted. */
static int start_gets(struct io_reactor *r, const char *path, struct rec *recs, size_t n,
                      const struct io_http_request *tmpl)
{
    struct io_http_request req = {0};
    size_t i;

    if (tmpl)
        req = *tmpl;
    req.url = url(path);
    for (i = 0; i < n; i++)
        if (io_http_start(NULL, r, &req, &cbs, &recs[i]) < 0)
            return -1;
    return 0;
}

TAP_TEST(five_hundred_concurrent_requests_complete)
{
    struct io_reactor *r;
    struct rec *recs = calloc(500, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct ts_httpd_stats st;
    size_t i;
    int bad = 0;

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_limit(r, NULL, 0) == 0, "unlimited");
    ts_httpd_reset_max(srv);
    TAP_CHECK(start_gets(r, "/slowhello", recs, 500, NULL) == 0, "%s",
              evolve_error_last()->message);
    TAP_CHECK(ts_latch_wait(&done, base + 500, 60000), "%lu of 500 done",
              ts_latch_get(&done) - base);
    io_reactor_free(r);
    for (i = 0; i < 500; i++)
        bad += recs[i].code != 0 || recs[i].status != 200 || !recs[i].body ||
               strcmp(recs[i].body, "hello\n") || recs[i].done_calls != 1 || recs[i].misordered;
    st.max_in_flight = ts_httpd_max_in_flight(srv, "/slowhello");
    printf("# server saw up to %u requests in flight\n", st.max_in_flight);
    TAP_CHECK(bad == 0, "%d requests failed (first: %d %s)", bad, recs[0].code, recs[0].message);
    TAP_CHECK(st.max_in_flight > 50, "requests did not overlap: max %u in flight",
              st.max_in_flight);
    rec_free(recs, 500);
}

TAP_TEST(streamed_bodies_arrive_intact_and_in_order)
{
    struct io_reactor *r;
    struct rec *recs = calloc(4, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    size_t i, want_len = 60 * 1500;
    char *want = malloc(want_len + 1);

    for (i = 0; i < 60; i++)
        ts_httpd_chunk(want + i * 1500, (unsigned)i, 1500);
    want[want_len] = '\0';
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/stream", recs, 4, NULL) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 4, 30000), "streams did not finish");
    io_reactor_free(r);
    for (i = 0; i < 4; i++) {
        TAP_CHECK(recs[i].code == 0 && recs[i].status == 200, "%d %s", recs[i].code,
                  recs[i].message);
        TAP_CHECK(recs[i].headers_calls == 1 && recs[i].status_hdr == 200, "on_headers %d",
                  recs[i].headers_calls);
        TAP_CHECK(recs[i].misordered == 0, "callbacks out of order");
        TAP_CHECK(recs[i].len == want_len && !memcmp(recs[i].body, want, want_len),
                  "body differs (%zu bytes)", recs[i].len);
        TAP_CHECK(recs[i].chunks > 1, "body arrived in one piece: not streamed");
    }
    free(want);
    rec_free(recs, 4);
}

TAP_TEST(retry_after_on_429_is_honoured)
{
    struct io_reactor *r;
    struct rec *recs = calloc(1, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.retry = {.max_attempts = 3, .base_ms = 1, .cap_ms = 5}};
    uint64_t first = 0, last = 0, hits;

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/r429", recs, 1, &req) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 1, 20000), "no completion");
    io_reactor_free(r);
    hits = ts_httpd_hits(srv, "/r429", &first, &last);
    TAP_CHECK(recs[0].code == 0 && recs[0].status == 200, "%d %ld %s", recs[0].code, recs[0].status,
              recs[0].message);
    TAP_CHECK(recs[0].attempts == 2 && hits == 2, "attempts %u, server hits %llu", recs[0].attempts,
              (unsigned long long)hits);
    TAP_CHECK(last - first >= 1000, "retried after %llu ms, Retry-After said 1 s",
              (unsigned long long)(last - first));
    TAP_CHECK(recs[0].headers_calls == 1 && !strcmp(recs[0].body, "finally\n"),
              "the 429 attempt leaked to the caller: %d header calls, body %s",
              recs[0].headers_calls, recs[0].body ? recs[0].body : "(none)");
    rec_free(recs, 1);
}

TAP_TEST(status_503_is_retried_only_when_idempotent)
{
    struct io_reactor *r;
    struct rec *recs = calloc(2, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.retry = {.max_attempts = 4, .base_ms = 1, .cap_ms = 5}};

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/r503a", &recs[0], 1, &req) == 0, "start");
    req.idempotent = true;
    TAP_CHECK(start_gets(r, "/r503b", &recs[1], 1, &req) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 2, 20000), "no completion");
    io_reactor_free(r);
    TAP_CHECK(recs[0].status == 503 && recs[0].attempts == 1, "non-idempotent: %ld after %u",
              recs[0].status, recs[0].attempts);
    TAP_CHECK(recs[0].retry_after_ms == 0, "Retry-After 0 reported as %lld",
              (long long)recs[0].retry_after_ms);
    TAP_CHECK(recs[1].status == 200 && recs[1].attempts == 3, "idempotent: %ld after %u",
              recs[1].status, recs[1].attempts);
    rec_free(recs, 2);
}

TAP_TEST(connection_reset_mid_stream_is_eio_after_the_chunks_sent)
{
    struct io_reactor *r;
    struct rec *recs = calloc(1, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.idempotent = true, .retry = {.max_attempts = 3}};

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/reset", recs, 1, &req) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 1, 20000), "no completion");
    io_reactor_free(r);
    TAP_CHECK(recs[0].code == EVOLVE_EIO, "code %d (%s)", recs[0].code, recs[0].message);
    TAP_CHECK(strstr(recs[0].message, "GET http://127.0.0.1:") && strstr(recs[0].message, "/reset"),
              "message names the request: %s", recs[0].message);
    TAP_CHECK(recs[0].len == 3 * 100, "got %zu of the 300 bytes sent before the reset",
              recs[0].len);
    TAP_CHECK(recs[0].attempts == 1, "retried after delivering chunks (%u attempts)",
              recs[0].attempts);
    rec_free(recs, 1);
}

TAP_TEST(timeout_is_etimedout)
{
    struct io_reactor *r;
    struct rec *recs = calloc(1, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.timeout_ms = 300};
    uint64_t t0 = ts_now_ms();

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/hang", recs, 1, &req) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 1, 20000), "no completion");
    io_reactor_free(r);
    TAP_CHECK(recs[0].code == EVOLVE_ETIMEDOUT, "code %d (%s)", recs[0].code, recs[0].message);
    TAP_CHECK(recs[0].done_ms - t0 >= 300, "timed out after %llu ms",
              (unsigned long long)(recs[0].done_ms - t0));
    TAP_CHECK(recs[0].headers_calls == 0, "no headers were sent");
    rec_free(recs, 1);
}

TAP_TEST(admission_limit_holds_and_queue_time_is_not_timeout_time)
{
    struct io_reactor *r;
    struct rec *recs = calloc(60, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.timeout_ms = 400};
    char host[64];
    size_t i;
    unsigned max;
    int bad = 0;

    snprintf(host, sizeof(host), "127.0.0.1:%u", ts_httpd_port(srv));
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_limit(r, host, 4) == 0, "limit");
    ts_httpd_reset_max(srv);
    /* 60 requests of 50 ms, 4 at a time: ~750 ms in all, far longer than each one's 400 ms
     * timeout, which therefore must start at admission. */
    TAP_CHECK(start_gets(r, "/slow", recs, 60, &req) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 60, 30000), "not all done");
    io_reactor_free(r);
    for (i = 0; i < 60; i++)
        bad += recs[i].code != 0 || recs[i].status != 200;
    TAP_CHECK(bad == 0, "%d failed (e.g. %s)", bad, recs[59].message);
    max = ts_httpd_max_in_flight(srv, "/slow");
    TAP_CHECK(max <= 4, "server saw %u in flight, limit 4", max);
    TAP_CHECK(max >= 2, "requests never overlapped (max %u)", max);
    printf("# admission: server max in flight %u (limit 4)\n", max);
    rec_free(recs, 60);
}

TAP_TEST(cancel_ends_queued_and_running_requests_once)
{
    struct io_reactor *r;
    struct rec *recs = calloc(2, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {0};
    struct io_http *h[2];
    char host[64];
    int i;

    snprintf(host, sizeof(host), "127.0.0.1:%u", ts_httpd_port(srv));
    req.url = url("/hang");
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_limit(r, host, 1) == 0, "limit");
    for (i = 0; i < 2; i++)
        TAP_CHECK(io_http_start(&h[i], r, &req, &cbs, &recs[i]) == 0, "start");
    io_http_cancel(h[1]); /* queued behind h[0] */
    io_http_cancel(h[0]); /* in flight */
    io_http_cancel(h[0]); /* twice: still one on_done */
    TAP_CHECK(ts_latch_wait(&done, base + 2, 10000), "cancel did not complete");
    io_http_release(h[0]);
    io_http_release(h[1]);
    io_reactor_free(r);
    for (i = 0; i < 2; i++)
        TAP_CHECK(recs[i].code == EVOLVE_ECANCELED && recs[i].done_calls == 1, "%d: code %d x%d", i,
                  recs[i].code, recs[i].done_calls);
    rec_free(recs, 2);
}

TAP_TEST(reactor_free_ends_everything_outstanding_with_eshutdown_once)
{
    struct io_reactor *r;
    struct rec *recs = calloc(6, sizeof(*recs));
    char host[64];
    int i;

    snprintf(host, sizeof(host), "127.0.0.1:%u", ts_httpd_port(srv));
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_limit(r, host, 3) == 0, "limit");
    TAP_CHECK(start_gets(r, "/hang", recs, 6, NULL) == 0, "start"); /* 3 running, 3 queued */
    io_reactor_free(r);
    for (i = 0; i < 6; i++)
        TAP_CHECK(recs[i].code == EVOLVE_ESHUTDOWN && recs[i].done_calls == 1, "%d: code %d x%d", i,
                  recs[i].code, recs[i].done_calls);
    rec_free(recs, 6);
}

struct reader {
    const char *data;
    size_t len, off;
    int rewinds;
};

static long read_body(char *buf, size_t len, void *payload)
{
    struct reader *rd = payload;
    size_t n = rd->len - rd->off < len ? rd->len - rd->off : len;

    if (n > 1000)
        n = 1000; /* many small reads */
    memcpy(buf, rd->data + rd->off, n);
    rd->off += n;
    return (long)n;
}

TAP_TEST(request_bodies_from_memory_and_reader_and_headers_reach_the_server)
{
    struct io_reactor *r;
    struct rec *recs = calloc(2, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    static const char *const hdrs[] = {"X-Test: forty-two", "Authorization: Bearer sk-secret",
                                       NULL};
    size_t n = 100000, i;
    char *body = malloc(n);
    struct reader rd = {0};
    struct io_http_body_reader reader = {read_body, NULL, &rd, -1};
    struct io_http_request req = {0};

    for (i = 0; i < n; i++)
        body[i] = (char)('A' + i % 23);
    rd.data = body;
    rd.len = n;
    req.url = url("/echo");
    req.headers = hdrs;
    req.body = body;
    req.body_len = n;
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, &recs[0]) == 0, "start");
    req.body = NULL;
    req.body_len = 0;
    req.reader = &reader;
    req.method = "PUT";
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, &recs[1]) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 2, 20000), "no completion");
    io_reactor_free(r);
    for (i = 0; i < 2; i++) {
        TAP_CHECK(recs[i].code == 0 && recs[i].status == 200, "%d %s", recs[i].code,
                  recs[i].message);
        TAP_CHECK(recs[i].len == n && !memcmp(recs[i].body, body, n), "echo %zu: %zu bytes", i,
                  recs[i].len);
        TAP_CHECK(!strcmp(recs[i].echo_test, "forty-two"), "X-Test: %s", recs[i].echo_test);
    }
    TAP_CHECK(!strcmp(recs[0].echo_method, "POST") && !strcmp(recs[1].echo_method, "PUT"),
              "methods %s %s", recs[0].echo_method, recs[1].echo_method);
    free(body);
    rec_free(recs, 2);
}

TAP_TEST(bad_input_fails_synchronously_without_callbacks)
{
    struct io_reactor *r;
    struct rec rec = {0};
    struct io_http_request req = {.url = "ftp://127.0.0.1/x"};

    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, &rec) == EVOLVE_EINVAL, "ftp accepted");
    TAP_CHECK(strstr(evolve_error_last()->message, "ftp"), "%s", evolve_error_last()->message);
    req.url = "http://[broken?key=sk-hidden";
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, &rec) == EVOLVE_EINVAL, "bad URL accepted");
    TAP_CHECK(strstr(evolve_error_last()->message, "http://[broken") &&
                  !strstr(evolve_error_last()->message, "sk-hidden"),
              "%s", evolve_error_last()->message);
    io_reactor_free(r);
    TAP_CHECK(rec.done_calls == 0, "a callback ran after a failed start");
}

TAP_TEST(oversized_response_is_eproto_and_refused_connection_is_retried_then_eio)
{
    struct io_reactor *r;
    struct rec *recs = calloc(2, sizeof(*recs));
    unsigned long base = ts_latch_get(&done);
    struct io_http_request req = {.max_response_bytes = 1000};
    struct sockaddr_in sa = {0};
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char dead[64];

    /* A loopback port nobody listens on: bind, read the port, close. */
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    TAP_CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind");
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%u/x", ntohs(sa.sin_port));
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(start_gets(r, "/stream", &recs[0], 1, &req) == 0, "start");
    req.url = dead;
    req.max_response_bytes = 0;
    req.retry = (struct io_retry_policy){.max_attempts = 3, .base_ms = 1, .cap_ms = 2};
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, &recs[1]) == 0, "start");
    TAP_CHECK(ts_latch_wait(&done, base + 2, 20000), "no completion");
    io_reactor_free(r);
    TAP_CHECK(recs[0].code == EVOLVE_EPROTO && strstr(recs[0].message, "max_response_bytes"),
              "code %d: %s", recs[0].code, recs[0].message);
    TAP_CHECK(recs[0].len <= 1000, "delivered %zu bytes past the cap", recs[0].len);
    TAP_CHECK(recs[1].code == EVOLVE_EIO && recs[1].attempts == 3, "code %d after %u: %s",
              recs[1].code, recs[1].attempts, recs[1].message);
    rec_free(recs, 2);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(five_hundred_concurrent_requests_complete),
        TAP_CASE(streamed_bodies_arrive_intact_and_in_order),
        TAP_CASE(retry_after_on_429_is_honoured),
        TAP_CASE(status_503_is_retried_only_when_idempotent),
        TAP_CASE(connection_reset_mid_stream_is_eio_after_the_chunks_sent),
        TAP_CASE(timeout_is_etimedout),
        TAP_CASE(admission_limit_holds_and_queue_time_is_not_timeout_time),
        TAP_CASE(cancel_ends_queued_and_running_requests_once),
        TAP_CASE(reactor_free_ends_everything_outstanding_with_eshutdown_once),
        TAP_CASE(request_bodies_from_memory_and_reader_and_headers_reach_the_server),
        TAP_CASE(bad_input_fails_synchronously_without_callbacks),
        TAP_CASE(oversized_response_is_eproto_and_refused_connection_is_retried_then_eio),
        {0}};
    static const struct ts_httpd_route routes[] = {
        {.path = "/slowhello", .kind = TS_HTTPD_FIXED, .body = "hello\n", .delay_ms = 100},
        {.path = "/stream",
         .kind = TS_HTTPD_STREAM,
         .chunks = 60,
         .chunk_size = 1500,
         .delay_ms = 2},
        {.path = "/r429",
         .kind = TS_HTTPD_RETRY_AFTER,
         .fail_first = 1,
         .retry_after = "1",
         .body = "finally\n"},
        {.path = "/r503a",
         .kind = TS_HTTPD_RETRY_AFTER,
         .fail_first = 2,
         .fail_status = 503,
         .retry_after = "0",
         .body = "ok\n"},
        {.path = "/r503b",
         .kind = TS_HTTPD_RETRY_AFTER,
         .fail_first = 2,
         .fail_status = 503,
         .retry_after = "0",
         .body = "ok\n"},
        {.path = "/reset", .kind = TS_HTTPD_RESET, .chunks = 3, .chunk_size = 100, .delay_ms = 5},
        {.path = "/hang", .kind = TS_HTTPD_HANG},
        {.path = "/slow", .kind = TS_HTTPD_FIXED, .body = "slow\n", .delay_ms = 50},
        {.path = "/echo", .kind = TS_HTTPD_ECHO},
    };
    size_t i;
    int rc;

    ts_latch_init(&done);
    srv = ts_httpd_start();
    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        ts_httpd_route(srv, &routes[i]);
    rc = tap_run(cases, argc, argv);
    ts_httpd_stop(srv);
    ts_latch_dispose(&done);
    return rc;
}
