/* With EVOLVE_LOG=debug, io_http logs each request by method and URL — never a header value and
 * never the query string (which may carry keys). A separate program because the log level is
 * read once per process. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evolve/common.h"
#include "io/http.h"
#include "support/httpd.h"
#include "support/latch.h"
#include "support/support.h"
#include "support/tap.h"

static struct ts_latch done;
static char message[512];

static void on_done(const struct io_http_result *res, void *payload)
{
    (void)payload;
    snprintf(message, sizeof(message), "%s", res->message);
    ts_latch_add(&done, 1);
}

TAP_TEST(debug_log_shows_requests_without_headers_or_query)
{
    static const struct ts_httpd_route route = {.path = "/echo", .kind = TS_HTTPD_ECHO};
    static const char *const hdrs[] = {"X-Test: plain-header-value",
                                       "Authorization: Bearer sk-live-0123456789", NULL};
    static const struct io_http_callbacks cbs = {NULL, NULL, on_done};
    struct ts_httpd *srv = ts_httpd_start();
    struct io_http_request req = {.headers = hdrs, .body = "payload", .body_len = 7};
    struct io_reactor *r;
    char url[160], logpath[256], *log;
    int saved, fd;
    size_t len;

    ts_httpd_route(srv, &route);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/echo?api_key=querysecret", ts_httpd_port(srv));
    req.url = url;
    snprintf(logpath, sizeof(logpath), "%s/io_http_log.%d.txt", EVOLVE_BINARY_DIR, (int)getpid());
    fflush(stderr);
    saved = dup(2);
    fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    TAP_CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2, "redirecting stderr");
    close(fd);
    TAP_CHECK(io_reactor_new(&r) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(io_http_start(NULL, r, &req, &cbs, NULL) == 0, "%s", evolve_error_last()->message);
    TAP_CHECK(ts_latch_wait(&done, 1, 20000), "no completion");
    io_reactor_free(r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ts_httpd_stop(srv);
    log = ts_read_file(logpath, &len);
    unlink(logpath);
    TAP_CHECK(log != NULL, "no log file");
    TAP_CHECK(strstr(log, "http: POST http://127.0.0.1:") && strstr(log, "/echo"),
              "the request was not logged: %s", log);
    TAP_CHECK(!strstr(log, "plain-header-value") && !strstr(log, "sk-live"),
              "a header value reached the log: %s", log);
    TAP_CHECK(!strstr(log, "querysecret") && !strstr(message, "querysecret"),
              "the query string reached the log: %s", log);
    free(log);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {
        TAP_CASE(debug_log_shows_requests_without_headers_or_query), {0}};
    int rc;

    setenv("EVOLVE_LOG", "debug", 1); /* before anything logs: the level is read once */
    ts_latch_init(&done);
    rc = tap_run(cases, argc, argv);
    ts_latch_dispose(&done);
    return rc;
}
