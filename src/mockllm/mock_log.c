/* mock_log.c — the request log of evolve mock-llm (one JSON line per request, written whole under
 * a mutex) and what goes into it: headers and query arguments with credentials redacted (always
 * for the credential headers, through core_log_redact for everything else), the reply summary,
 * the redacted body. Also the fixed model list the GET endpoints answer with.
 * Threads: any connection thread; the file is shared under lg->lock. */
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/error.h"
#include "core/log.h"
#include "mockllm/mock_impl.h"

int mock_log_open(struct mock_log *lg, const char *path)
{
    pthread_mutex_init(&lg->lock, NULL);
    lg->f = NULL;
    if (path && !(lg->f = fopen(path, "a")))
        return core_error_set(EVOLVE_EIO, "mock-llm: log %s: cannot open for append", path);
    return 0;
}

void mock_log_close(struct mock_log *lg)
{
    if (lg->f)
        fclose(lg->f);
    lg->f = NULL;
    pthread_mutex_destroy(&lg->lock);
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    static const char *const secret[] = {"authorization",
                                         "proxy-authorization",
                                         "x-api-key",
                                         "x-goog-api-key",
                                         "api-key",
                                         "cookie",
                                         NULL};
    char line[4096];
    size_t i, kl;

    (void)kind;
    if (!key)
        return MHD_YES;
    for (i = 0; secret[i]; i++)
        if (!strcasecmp(key, secret[i])) {
            json_object_set_new(cls, key, json_string("[REDACTED]"));
            return MHD_YES;
        }
    /* Everything else through the logging layer's redaction ("token=...", "sk-..." keys). */
    snprintf(line, sizeof(line), "%s: %s", key, value ? value : "");
    kl = strlen(key) + 2;
    core_log_redact(line, strlen(line));
    json_object_set_new(cls, key, json_string(strlen(line) >= kl ? line + kl : ""));
    return MHD_YES;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    if (key) {
        char v[1024];

        /* ?key=... is how Gemini clients may pass the API key */
        if (!strcasecmp(key, "key")) {
            json_object_set_new(cls, key, json_string("[REDACTED]"));
            return MHD_YES;
        }
        snprintf(v, sizeof(v), "%s=%s", key, value ? value : "");
        core_log_redact(v, strlen(v));
        json_object_set_new(cls, key, json_string(strchr(v, '=') + 1));
    }
    return MHD_YES;
}

json_t *mock_log_reply(const struct mock_reply *r)
{
    json_t *blocks;
    size_t i;

    if (r->error_status)
        return json_pack("{sI ss sI}", "status", (json_int_t)r->error_status, "error",
                         r->error_message, "retry_after", (json_int_t)r->retry_after_s);
    blocks = json_array();
    for (i = 0; i < r->nblocks; i++) {
        const struct mock_block *b = &r->blocks[i];

        if (b->kind == MOCK_BLOCK_CALL)
            json_array_append_new(blocks,
                                  json_pack("{ss ss ss ss}", "type", "tool_call", "id", b->id,
                                            "name", b->tool_name, "input", b->args_json));
        else
            json_array_append_new(blocks,
                                  json_pack("{ss ss}", "type",
                                            b->kind == MOCK_BLOCK_TEXT ? "text" : "thinking",
                                            "text", b->text));
    }
    if (r->json_value)
        json_array_append_new(blocks, json_pack("{ss sO}", "type", "json", "value", r->json_value));
    return json_pack("{si so}", "status", 200, "blocks", blocks);
}

/* Writes one JSONL line (steals entry). */
void mock_log_write(struct mock_log *lg, json_t *entry)
{
    char *line;

    if (!lg->f || !entry) {
        json_decref(entry);
        return;
    }
    line = json_dumps(entry, JSON_COMPACT);
    json_decref(entry);
    if (!line)
        return;
    pthread_mutex_lock(&lg->lock);
    fputs(line, lg->f);
    fputc('\n', lg->f);
    fflush(lg->f);
    pthread_mutex_unlock(&lg->lock);
    free(line);
}

json_t *mock_log_entry(struct MHD_Connection *conn, uint64_t seq, const char *method,
                       const char *url)
{
    json_t *headers = json_object(), *query = json_object();
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header, headers);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_arg, query);
    return json_pack("{sI sf ss ss so so}", "seq", (json_int_t)seq, "ts",
                     (double)ts.tv_sec + ts.tv_nsec / 1e9, "method", method, "path", url, "query",
                     query, "headers", headers);
}

/* The body for the log, redacted: re-parsed when redaction kept it valid JSON. */
json_t *mock_log_body(const json_t *body)
{
    char *s = json_dumps(body, JSON_COMPACT);
    json_t *out;

    if (!s)
        return json_null();
    core_log_redact(s, strlen(s));
    out = json_loads(s, 0, NULL);
    if (!out)
        out = json_string(s);
    free(s);
    return out;
}

json_t *mock_models_list(const char *path)
{
    static const char *const models[] = {"mock-model", "claude-sonnet-4-5", "claude-opus-4-8",
                                         "gpt-5.5",    "gemini-2.5-pro",    "gemini-2.5-flash",
                                         NULL};
    json_t *arr = json_array();
    size_t i;

    for (i = 0; models[i]; i++) {
        if (strstr(path, "v1beta"))
            json_array_append_new(arr, json_pack("{ss ss s[ss]}", "name", "models/", "displayName",
                                                 models[i], "supportedGenerationMethods",
                                                 "generateContent", "countTokens"));
        else
            json_array_append_new(arr, json_pack("{ss ss ss sI ss ss}", "id", models[i], "object",
                                                 "model", "type", "model", "created",
                                                 (json_int_t)1767225600, "created_at",
                                                 "2026-01-01T00:00:00Z", "owned_by", "mock-llm"));
        if (strstr(path, "v1beta")) {
            char n[96];

            snprintf(n, sizeof(n), "models/%s", models[i]);
            json_object_set_new(json_array_get(arr, i), "name", json_string(n));
        }
    }
    if (strstr(path, "v1beta"))
        return json_pack("{so}", "models", arr);
    return json_pack("{ss so sb ss ss}", "object", "list", "data", arr, "has_more", 0, "first_id",
                     models[0], "last_id", "gemini-2.5-flash");
}
