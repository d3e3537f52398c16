/* evolve mock-llm under concurrency (also run under TSan): many sessions at once on one server,
 * each with its own error_times counter and whole script, plus the shared log; then a stop while
 * paced streams are still waiting. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "support/mockhttp.h"
#include "support/support.h"
#include "support/tap.h"

#define SESSIONS 8

struct sess {
    uint16_t port;
    int id;
    int fails; /* requests whose answer was not the expected one */
};

static size_t keep(char *p, size_t sz, size_t n, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf), len = sz * n;

    if (have + len < 4096) {
        memcpy(buf + have, p, len);
        buf[have + len] = '\0';
    }
    return len;
}

static long post(uint16_t port, const char *body, char *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char url[128];
    long status = 0;

    out[0] = '\0';
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/v1/messages", (unsigned)port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

static void *session(void *arg)
{
    struct sess *s = arg;
    char body[1024], out[4096];

    /* turn 0 fails once (429), then gives a tool call; turn 1 gives the final text */
    snprintf(body, sizeof(body),
             "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"session %d\"}],"
             "\"tools\":[{\"name\":\"Bash\",\"input_schema\":{\"properties\":{\"command\":{"
             "\"type\":\"string\"}}}}]}",
             s->id);
    s->fails += post(s->port, body, out) != 429;
    s->fails += post(s->port, body, out) != 200 || !strstr(out, "tool_use");
    snprintf(body, sizeof(body),
             "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"session %d\"},"
             "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":"
             "\"Bash\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
             "\"tool_use_id\":\"t\",\"content\":\"ok\"}]}]}",
             s->id);
    s->fails += post(s->port, body, out) != 200 || !strstr(out, "all done");
    return NULL;
}

TAP_TEST(concurrent_sessions_each_get_the_whole_script)
{
    char dir[512], path[600];
    struct mock_server *srv;
    struct sess s[SESSIONS];
    pthread_t th[SESSIONS];
    char *log;
    int i, lines = 0;

    ts_mkdtemp(dir, sizeof(dir), "mockconc");
    snprintf(path, sizeof(path), "%s/log.jsonl", dir);
    srv = ts_mock_start("{\"turns\":[{\"error\":{\"status\":429,\"times\":1},\"shell\":\"ls\"},"
                        "{\"text\":\"all done\"}]}",
                        path, 0);
    for (i = 0; i < SESSIONS; i++) {
        s[i].port = mock_server_port(srv);
        s[i].id = i;
        s[i].fails = 0;
        pthread_create(&th[i], NULL, session, &s[i]);
    }
    for (i = 0; i < SESSIONS; i++) {
        pthread_join(th[i], NULL);
        TAP_CHECK(s[i].fails == 0, "session %d: %d wrong answers", i, s[i].fails);
    }
    TAP_CHECK(mock_server_requests(srv) == 3 * SESSIONS, "%llu requests",
              (unsigned long long)mock_server_requests(srv));
    mock_server_stop(srv);
    log = ts_read_file(path, NULL);
    TAP_CHECK(log != NULL, "log written");
    for (char *p = log; (p = strchr(p, '\n')); p++)
        lines++;
    free(log);
    ts_rmtree(dir);
    TAP_CHECK(lines == 3 * SESSIONS, "%d log lines, one per request", lines);
}

static void *waiting_client(void *arg)
{
    char out[4096];

    post(*(uint16_t *)arg, "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
         out);
    return NULL;
}

TAP_TEST(stop_with_waiting_streams)
{
    struct mock_server *srv =
        ts_mock_start("{\"pacing\":{\"ttft_ms\":30000},\"turns\":[{\"text\":\"late\"}]}", NULL, 0);
    uint16_t port = mock_server_port(srv);
    uint64_t deadline = ts_now_ms() + 10000, t0;
    pthread_t th[4];
    int i;

    for (i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, waiting_client, &port);
    while (mock_server_requests(srv) < 4 && ts_now_ms() < deadline)
        usleep(1000);
    TAP_CHECK(mock_server_requests(srv) == 4, "4 requests in flight");
    t0 = ts_now_ms();
    mock_server_stop(srv);
    TAP_CHECK(ts_now_ms() - t0 < 5000, "stop took %llu ms", (unsigned long long)(ts_now_ms() - t0));
    for (i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
    static const struct tap_case cases[] = {TAP_CASE(concurrent_sessions_each_get_the_whole_script),
                                            TAP_CASE(stop_with_waiting_streams),
                                            {NULL, NULL}};
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = tap_run(cases, argc, argv);
    curl_global_cleanup();
    return rc;
}
