/* Pacing of evolve mock-llm, measured loosely: nothing arrives before ttft_ms, a paced reply takes
 * about tokens / tokens_per_second, non-streamed replies are paced too, and stopping the server
 * ends a stream that is still waiting instead of waiting it out. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <pthread.h>
#include <string.h>

#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_pacing, .timeout = 60);

/* 400 bytes of text: 100 tokens */
#define TEXT400                                                                                    \
    "01234567890123456789012345678901234567890123456789012345678901234567890123456789"             \
    "01234567890123456789012345678901234567890123456789012345678901234567890123456789"             \
    "01234567890123456789012345678901234567890123456789012345678901234567890123456789"             \
    "01234567890123456789012345678901234567890123456789012345678901234567890123456789"             \
    "01234567890123456789012345678901234567890123456789012345678901234567890123456789"

Test(mockllm_pacing, first_byte_not_before_ttft_and_rate_holds)
{
    struct mock_server *srv = ts_mock_start(
        "{\"pacing\":{\"ttft_ms\":300,\"tokens_per_second\":200},\"turns\":[{\"text\":\"" TEXT400
        "\"}]}",
        NULL, 0);
    struct ts_http r;

    cr_assert_eq(strlen(TEXT400), 400);
    ts_http_post(&r, mock_server_port(srv), "/v1/chat/completions",
                 "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_geq(r.first_byte_ms, 300, "first byte after %llu ms",
                  (unsigned long long)r.first_byte_ms);
    /* 100 tokens at 200/s = 500 ms after ttft; allow scheduling slack both ways */
    cr_assert_geq(r.total_ms, 300 + 400, "total %llu ms", (unsigned long long)r.total_ms);
    cr_assert_lt(r.total_ms, 10000);
    ts_http_free(&r);

    /* unary replies wait for ttft and their tokens too */
    ts_http_post(&r, mock_server_port(srv), "/v1/messages",
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_geq(r.first_byte_ms, 300 + 400);
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_pacing, unpaced_is_fast)
{
    struct mock_server *srv = ts_mock_start("hello", NULL, 0);
    struct ts_http r;

    ts_http_post(&r, mock_server_port(srv), "/v1/chat/completions",
                 "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL);
    cr_assert_eq(r.status, 200);
    cr_assert_lt(r.total_ms, 2000);
    ts_http_free(&r);
    mock_server_stop(srv);
}

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return sz * n;
}

static void *slow_client(void *arg)
{
    uint16_t port = *(uint16_t *)arg;
    CURL *c = curl_easy_init();
    char url[128];

    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/chat/completions", (unsigned)port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS,
                     "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_perform(c); /* ends with an error when the server stops: expected */
    curl_easy_cleanup(c);
    return NULL;
}

Test(mockllm_pacing, stop_ends_a_waiting_stream)
{
    struct mock_server *srv =
        ts_mock_start("{\"pacing\":{\"ttft_ms\":20000},\"turns\":[{\"text\":\"late\"}]}", NULL, 0);
    uint16_t port = mock_server_port(srv);
    uint64_t deadline = ts_now_ms() + 10000, t0;
    pthread_t th;

    pthread_create(&th, NULL, slow_client, &port);
    while (mock_server_requests(srv) < 1 && ts_now_ms() < deadline)
        sched_yield();
    cr_assert_eq(mock_server_requests(srv), 1, "the request reached the server");
    t0 = ts_now_ms();
    mock_server_stop(srv);
    cr_assert_lt(ts_now_ms() - t0, 5000, "stop took %llu ms",
                 (unsigned long long)(ts_now_ms() - t0));
    pthread_join(th, NULL);
}
