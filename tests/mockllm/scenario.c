/* Scenario behaviour of evolve mock-llm: the loader's errors name the file and the turn, the turn
 * is chosen from the conversation (deterministic, per conversation, so concurrent sessions each
 * get the whole script, and an agent's own priming reply does not count), injected failures
 * (429 + Retry-After, "times"), per-path scenarios, and the request log (redaction, tokens). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "evolve/common.h"
#include "mockllm/mock_impl.h"
#include "support/mockhttp.h"
#include "support/support.h"

TestSuite(mockllm_scenario, .timeout = 30);

static void expect_parse_error(const char *json, const char *needle)
{
    struct mock_scenario *sc = NULL;
    int rc = mock_scenario_parse(&sc, json, strlen(json), "bad.json");

    cr_assert_eq(rc, EVOLVE_EINVAL, "%s", json);
    cr_assert_null(sc);
    cr_assert(strstr(evolve_error_last()->message, needle), "message \"%s\" lacks \"%s\"",
              evolve_error_last()->message, needle);
}

Test(mockllm_scenario, loader_rejects_bad_files_naming_file_and_turn)
{
    expect_parse_error("{\"turns\":[]}", "bad.json: \"turns\" must be a non-empty array");
    expect_parse_error("{\"turns\":[{\"text\":\"a\"},{\"shel\":\"ls\"}]}",
                       "bad.json: turns[1]: unknown key \"shel\"");
    expect_parse_error("{\"turns\":[{\"shell\":3}]}", "bad.json: turns[0].shell must be a string");
    expect_parse_error("{\"turns\":[{\"write\":{\"path\":\"x\"}}]}",
                       "turns[0].write needs \"path\" and \"content\"");
    expect_parse_error("{\"turns\":[{\"error\":{\"status\":200}}]}",
                       "turns[0].status must be a number in [400, 599]");
    expect_parse_error("{\"turns\":[{\"calls\":[{\"shell\":\"a\",\"write\":{}}]}]}",
                       "turns[0].calls[0] must be an object with one key");
    expect_parse_error("{\"turns\":[{\"text\":\"a\"}],\"pacing\":{\"ttft\":1}}",
                       "unknown key \"ttft\"");
    expect_parse_error("{\"turns\":[{\"text\":\"a\"}]", "bad.json:1:");
}

Test(mockllm_scenario, shipped_scenarios_load_by_name)
{
    static const char *const names[] = {"hello", "tool",       "edit",       "multi-tool", "error",
                                        "slow",  "rate-limit", "overloaded", NULL};
    struct mock_scenario *sc;
    size_t i;

    for (i = 0; names[i]; i++) {
        cr_assert_eq(mock_scenario_load(&sc, names[i], NULL), 0, "%s: %s", names[i],
                     evolve_error_last()->message);
        cr_assert_str_eq(sc->name, names[i]);
        mock_scenario_free(sc);
    }
    cr_assert_eq(mock_scenario_load(&sc, "no-such-scenario", NULL), EVOLVE_ENOTFOUND);
    cr_assert(strstr(evolve_error_last()->message, "no-such-scenario"));
}

/* A chat request whose history holds `assistant_turns` tool-call rounds. */
static void chat_body(char *out, size_t size, int assistant_turns, const char *prompt)
{
    int i;

    snprintf(out, size, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}",
             prompt);
    for (i = 0; i < assistant_turns; i++)
        snprintf(out + strlen(out), size - strlen(out),
                 ",{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c%d\","
                 "\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{}\"}}]},"
                 "{\"role\":\"tool\",\"tool_call_id\":\"c%d\",\"content\":\"ok\"}",
                 i, i);
    snprintf(out + strlen(out), size - strlen(out),
             "],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"parameters\":"
             "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}}}]}");
}

static char *reply_of(uint16_t port, const char *body)
{
    struct ts_http r;
    json_t *o, *msg;
    char *out;

    ts_http_post(&r, port, "/v1/chat/completions", body, NULL);
    cr_assert_eq(r.status, 200, "%s", r.body);
    o = json_loads(r.body, 0, NULL);
    msg = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "message");
    if (json_array_size(json_object_get(msg, "tool_calls")))
        out = strdup(json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(msg, "tool_calls"), 0), "function"),
            "arguments")));
    else
        out = strdup(json_string_value(json_object_get(msg, "content")));
    json_decref(o);
    ts_http_free(&r);
    return out;
}

#define THREE_TURNS                                                                                \
    "{\"turns\":[{\"shell\":\"echo one\"},{\"shell\":\"echo two\"},{\"text\":\"three\"}],"         \
    "\"final_text\":\"over\"}"

struct walker {
    uint16_t port;
    int id;
    int ok;
};

static void *walk(void *arg)
{
    struct walker *w = arg;
    static const char *const want[] = {"{\"command\":\"echo one\"}", "{\"command\":\"echo two\"}",
                                       "three", "over"};
    char body[8192], prompt[32];
    int t;

    snprintf(prompt, sizeof(prompt), "session %d", w->id);
    w->ok = 1;
    for (t = 0; t < 4; t++) {
        char *got;

        chat_body(body, sizeof(body), t, prompt);
        got = reply_of(w->port, body);
        if (strcmp(got, want[t]))
            w->ok = 0;
        free(got);
    }
    return NULL;
}

Test(mockllm_scenario, turns_follow_the_conversation_and_sessions_are_independent)
{
    struct mock_server *srv = ts_mock_start(THREE_TURNS, NULL, 0);
    struct walker w[6];
    pthread_t th[6];
    char body[8192], *a, *b;
    int i;

    /* the same request twice gets the same answer: nothing is remembered between requests */
    chat_body(body, sizeof(body), 1, "p");
    a = reply_of(mock_server_port(srv), body);
    b = reply_of(mock_server_port(srv), body);
    cr_assert_str_eq(a, b);
    cr_assert_str_eq(a, "{\"command\":\"echo two\"}");
    free(a);
    free(b);
    /* concurrent sessions, interleaved, each walk the whole script */
    for (i = 0; i < 6; i++) {
        w[i].port = mock_server_port(srv);
        w[i].id = i;
        pthread_create(&th[i], NULL, walk, &w[i]);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        cr_assert(w[i].ok, "session %d got a wrong turn", i);
    }
    cr_assert_eq(mock_server_requests(srv), 2 + 6 * 4);
    mock_server_stop(srv);
}

Test(mockllm_scenario, agent_priming_reply_does_not_advance_the_script)
{
    struct mock_server *srv = ts_mock_start(THREE_TURNS, NULL, 0);
    /* qwen: context message, its own "Got it." reply, then the prompt */
    char *got = reply_of(
        mock_server_port(srv),
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"context\"},"
        "{\"role\":\"assistant\",\"content\":\"Got it. Thanks for the context!\"},"
        "{\"role\":\"user\",\"content\":\"go\"}],\"tools\":[{\"type\":\"function\",\"function\":{"
        "\"name\":\"bash\",\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{"
        "\"type\":\"string\"}}}}}]}");

    cr_assert_str_eq(got, "{\"command\":\"echo one\"}");
    free(got);
    mock_server_stop(srv);
}

Test(mockllm_scenario, rate_limit_with_retry_after_then_success)
{
    struct mock_server *srv = ts_mock_start("rate-limit", NULL, 0);
    const char *a = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"A\"}]}";
    const char *b = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"B\"}]}";
    struct ts_http r;
    json_t *o;
    int i;

    for (i = 0; i < 2; i++) {
        ts_http_post(&r, mock_server_port(srv), "/v1/messages", a, NULL);
        cr_assert_eq(r.status, 429);
        cr_assert_str_eq(r.retry_after, "1");
        o = json_loads(r.body, 0, NULL);
        cr_assert_str_eq(json_string_value(json_object_get(o, "type")), "error");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "type")),
                         "rate_limit_error");
        json_decref(o);
        ts_http_free(&r);
    }
    /* another conversation has its own count */
    ts_http_post(&r, mock_server_port(srv), "/v1/messages", b, NULL);
    cr_assert_eq(r.status, 429);
    ts_http_free(&r);
    ts_http_post(&r, mock_server_port(srv), "/v1/messages", a, NULL);
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "Hello after two rate limits."));
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_scenario, overloaded_and_500_per_dialect)
{
    struct mock_server *srv = ts_mock_start("{\"turns\":[{\"error\":{\"status\":529}}]}", NULL, 0);
    struct mock_server *srv500 = ts_mock_start("error", NULL, 0);
    struct ts_http r;
    json_t *o;

    ts_http_post(&r, mock_server_port(srv), "/v1/messages",
                 "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL);
    cr_assert_eq(r.status, 529);
    o = json_loads(r.body, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "type")),
                     "overloaded_error");
    json_decref(o);
    ts_http_free(&r);
    ts_http_post(&r, mock_server_port(srv500), "/v1beta/models/g:streamGenerateContent?alt=sse",
                 "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"x\"}]}]}", NULL);
    cr_assert_eq(r.status, 500);
    o = json_loads(r.body, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "error"), "status")),
                     "INTERNAL");
    json_decref(o);
    ts_http_free(&r);
    ts_http_post(&r, mock_server_port(srv500), "/v1/responses", "{\"input\":\"x\"}", NULL);
    cr_assert_eq(r.status, 500);
    cr_assert(strstr(r.body, "scripted internal error"));
    ts_http_free(&r);
    mock_server_stop(srv);
    mock_server_stop(srv500);
}

Test(mockllm_scenario, path_prefix_picks_another_scenario)
{
    struct mock_server *srv = ts_mock_start("hello", NULL, 0);
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
    const char *hdr[] = {"X-Mock-Scenario: error", NULL};
    struct ts_http r;

    ts_http_post(&r, mock_server_port(srv), "/s/rate-limit/v1/chat/completions", body, NULL);
    cr_assert_eq(r.status, 429, "%s", r.body);
    cr_assert_str_eq(r.retry_after, "1");
    ts_http_free(&r);
    ts_http_post(&r, mock_server_port(srv), "/v1/chat/completions", body, hdr);
    cr_assert_eq(r.status, 500);
    ts_http_free(&r);
    ts_http_post(&r, mock_server_port(srv), "/v1/chat/completions", body, NULL);
    cr_assert(strstr(r.body, "Hello from evolve mock-llm."));
    ts_http_free(&r);
    mock_server_stop(srv);
}

Test(mockllm_scenario, log_redacts_secrets_and_counts_tokens)
{
    char dir[512], path[600];
    const char *body = "{\"model\":\"m\",\"api_key\":\"sk-bodysecret123456\",\"messages\":[{"
                       "\"role\":\"user\",\"content\":\"x\"}]}";
    const char *hdr[] = {"Authorization: Bearer sk-live-abcdefghijklmnop",
                         "x-api-key: sk-ant-secretsecretsecret", "x-goog-api-key: AIzaSyXXXXXXXXXX",
                         "X-Custom: access_token=abcdefghijkl", NULL};
    struct mock_server *srv;
    struct ts_http r;
    char *log;
    json_t *e, *h;

    ts_mkdtemp(dir, sizeof(dir), "mocklog");
    snprintf(path, sizeof(path), "%s/requests.jsonl", dir);
    srv = ts_mock_start("hello", path, 1);
    ts_http_post(&r, mock_server_port(srv), "/v1/messages", body, hdr);
    cr_assert_eq(r.status, 200);
    ts_http_free(&r);
    mock_server_stop(srv);
    log = ts_read_file(path, NULL);
    cr_assert_not_null(log);
    cr_assert_null(strstr(log, "sk-live-abcdefghijklmnop"));
    cr_assert_null(strstr(log, "secretsecretsecret"));
    cr_assert_null(strstr(log, "AIzaSyXXXXXXXXXX"));
    cr_assert_null(strstr(log, "abcdefghijkl"));
    cr_assert_null(strstr(log, "bodysecret"));
    e = json_loads(log, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(e, "each log line is JSON");
    h = json_object_get(e, "headers");
    cr_assert_str_eq(json_string_value(json_object_get(h, "Authorization")), "[REDACTED]");
    cr_assert_str_eq(json_string_value(json_object_get(h, "x-api-key")), "[REDACTED]");
    cr_assert_str_eq(json_string_value(json_object_get(e, "dialect")), "anthropic");
    cr_assert_eq(json_integer_value(json_object_get(e, "turn")), 0);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(e, "usage"), "prompt_tokens")),
                 (json_int_t)((strlen(body) + 3) / 4));
    /* "Hello from evolve mock-llm. This is a scripted reply." is 53 bytes: 14 tokens */
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(e, "usage"), "completion_tokens")), 14);
    cr_assert(json_is_object(json_object_get(e, "body")), "redacted body stays JSON");
    json_decref(e);
    free(log);
    ts_rmtree(dir);
}
