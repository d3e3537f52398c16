/* autohand_reply.c — the public permission-reply builder (evolve/autohand.h).
 * Owns: the `autohand.permissionResponse` request line and the decision names the Autohand CLI
 * accepts. Does not own: writing it to the agent's stdin (the session runtime does).
 * Threads: any; no shared state. */
#include "evolve/autohand.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *const decision_names[EVOLVE_PERMISSION_DECISION_COUNT] = {
    [EVOLVE_PERMISSION_ALLOW_ONCE] = "allow_once",
    [EVOLVE_PERMISSION_ALLOW_SESSION] = "allow_session",
    [EVOLVE_PERMISSION_ALLOW_ALWAYS] = "allow_always_project",
    [EVOLVE_PERMISSION_DENY] = "deny_once",
    [EVOLVE_PERMISSION_DENY_ALWAYS] = "deny_always_project",
};

const char *evolve_permission_decision_name(evolve_permission_decision_t decision)
{
    return (unsigned)decision < EVOLVE_PERMISSION_DECISION_COUNT ? decision_names[decision] : NULL;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF), as JSON needs. */
static bool utf8_valid(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n, cp, i;

        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            n = 3, cp = c & 0x07;
        else
            return false;
        for (i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        s += n + 1;
    }
    return true;
}

int evolve_autohand_permission_reply(char **json_out, const char *request_id,
                                     evolve_permission_decision_t decision)
{
    static const char prefix[] = "evolve-permission-";
    const char *name = evolve_permission_decision_name(decision);
    json_t *id, *req;
    char *text, *line;
    size_t n;
    bool allowed = decision == EVOLVE_PERMISSION_ALLOW_ONCE ||
                   decision == EVOLVE_PERMISSION_ALLOW_SESSION ||
                   decision == EVOLVE_PERMISSION_ALLOW_ALWAYS;

    if (!json_out)
        return core_error_set(EVOLVE_EINVAL, "autohand permission reply: json_out is NULL");
    *json_out = NULL;
    if (!name)
        return core_error_set(EVOLVE_EINVAL, "autohand permission reply: unknown decision %d",
                              (int)decision);
    if (!request_id || !*request_id)
        return core_error_set(EVOLVE_EINVAL, "autohand permission reply: empty request id");
    if (!utf8_valid((const unsigned char *)request_id))
        return core_error_set(EVOLVE_EINVAL,
                              "autohand permission reply: request id is not valid UTF-8");
    n = strlen(request_id);
    line = malloc(sizeof(prefix) + n);
    if (!line)
        return core_error_oom();
    memcpy(line, prefix, sizeof(prefix) - 1);
    memcpy(line + sizeof(prefix) - 1, request_id, n + 1);
    id = json_string(line);
    free(line);
    if (!id)
        return core_error_oom();
    req = json_pack("{s:s, s:o, s:s, s:{s:s, s:s, s:b}}", "jsonrpc", "2.0", "id", id, "method",
                    "autohand.permissionResponse", "params", "requestId", request_id, "decision",
                    name, "allowed", allowed);
    if (!req)
        return core_error_oom();
    text = json_dumps(req, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(req);
    if (!text)
        return core_error_oom();
    n = strlen(text);
    line = malloc(n + 2);
    if (!line) {
        free(text);
        return core_error_oom();
    }
    memcpy(line, text, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    free(text);
    *json_out = line;
    return 0;
}

void evolve_autohand_reply_free(char *json)
{
    free(json);
}
