/* autohand_decode.c — one Autohand stdout line -> a validated, typed hook (harness/autohand.h).
 * Owns: the JSON-RPC envelope rules (a notification is an object with "jsonrpc":"2.0", a string
 * "method" and no "id"), the per-hook field/enum/range validation of seed 003, and the fallback
 * that keeps method + params of anything else. Numbers beyond what jansson holds (integers past
 * int64, reals past double) make jansson reject the whole line, so such a line is re-read from a
 * copy where those literals are made parseable (autohand_raw.c), and params text is kept verbatim.
 * Does not own: the mapping into OutputEvents (autohand.c). Threads: any; no shared state. */
#include "harness/autohand.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *const kind_methods[HNS_AUTOHAND_KIND_COUNT] = {
#define KIND_METHOD(name, method, short_name) [HNS_AUTOHAND_##name] = method,
    HNS_AUTOHAND_KIND_MAP(KIND_METHOD)
#undef KIND_METHOD
};

static const char *const kind_names[HNS_AUTOHAND_KIND_COUNT] = {
#define KIND_NAME(name, method, short_name) [HNS_AUTOHAND_##name] = short_name,
    HNS_AUTOHAND_KIND_MAP(KIND_NAME)
#undef KIND_NAME
};

const char *hns_autohand_kind_method(enum hns_autohand_kind kind)
{
    return (unsigned)kind < HNS_AUTOHAND_KIND_COUNT ? kind_methods[kind] : NULL;
}

const char *hns_autohand_kind_name(enum hns_autohand_kind kind)
{
    return (unsigned)kind < HNS_AUTOHAND_KIND_COUNT ? kind_names[kind] : NULL;
}

/* ---- validation ---------------------------------------------------------------------------- */

struct check {
    struct hns_autohand_hook *h;
    const json_t *p; /* params object */
    const char *method;
};

static bool bad(struct check *c, const char *key, const char *what)
{
    snprintf(c->h->reason_, sizeof(c->h->reason_), "invalid %s params: \"%s\" %s", c->method, key,
             what);
    return false;
}

static bool req_string(struct check *c, const char *key, const char **dst)
{
    const json_t *v = json_object_get(c->p, key);

    if (!json_is_string(v))
        return bad(c, key, "must be a string");
    *dst = json_string_value(v);
    return true;
}

/* Absent and null both mean "not given" (the seed's SDK treats them alike). */
static bool opt_string(struct check *c, const char *key, const char **dst)
{
    const json_t *v = json_object_get(c->p, key);

    *dst = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_string(v))
        return bad(c, key, "must be a string when present");
    *dst = json_string_value(v);
    return true;
}

static bool opt_object(struct check *c, const char *key, const json_t **dst)
{
    const json_t *v = json_object_get(c->p, key);

    *dst = NULL;
    if (!v || json_is_null(v))
        return true;
    if (!json_is_object(v))
        return bad(c, key, "must be an object when present");
    *dst = v;
    return true;
}

static bool req_object(struct check *c, const char *key, const json_t **dst)
{
    const json_t *v = json_object_get(c->p, key);

    if (!json_is_object(v))
        return bad(c, key, "must be an object");
    *dst = v;
    return true;
}

static bool string_array(const json_t *v)
{
    size_t i;

    if (!json_is_array(v))
        return false;
    for (i = 0; i < json_array_size(v); i++)
        if (!json_is_string(json_array_get(v, i)))
            return false;
    return true;
}

static bool req_string_array(struct check *c, const char *key, const json_t **dst)
{
    const json_t *v = json_object_get(c->p, key);

    if (!string_array(v))
        return bad(c, key, "must be an array of strings");
    *dst = v;
    return true;
}

static bool req_bool(struct check *c, const char *key, bool *dst)
{
    const json_t *v = json_object_get(c->p, key);

    if (!json_is_boolean(v))
        return bad(c, key, "must be a boolean");
    *dst = json_is_true(v);
    return true;
}

/* jansson holds only finite reals, and a literal past double range became null in the re-read
 * copy, so "is a number" here means "is a finite JSON number". */
static bool req_finite(struct check *c, const char *key, double *dst, bool non_negative)
{
    const json_t *v = json_object_get(c->p, key);

    if (!json_is_number(v))
        return bad(c, key, "must be a finite number");
    *dst = json_number_value(v);
    if (non_negative && !(*dst >= 0))
        return bad(c, key, "must be a finite non-negative number");
    return true;
}

/* Integral = an integer literal (no fraction, no exponent: 1.0 and 1e3 are not, as in the seed's
 * SDK) that fits int64. jansson types exactly those JSON_INTEGER; literals past int64 became reals
 * or null in the re-read copy, so they fail here too. */
static bool req_integral(struct check *c, const char *key, int64_t *dst, int64_t min, int64_t max,
                         const char *what)
{
    const json_t *v = json_object_get(c->p, key);
    json_int_t x;

    if (!json_is_integer(v))
        return bad(c, key, what);
    x = json_integer_value(v);
    if (x < min || x > max)
        return bad(c, key, what);
    *dst = (int64_t)x;
    return true;
}

#define INT64_RANGE  "must be an integral number within signed 64-bit range"
#define INT32_RANGE  "must be an integral number within signed 32-bit range"
#define NONNEG_RANGE "must be a non-negative integral number within signed 64-bit range"

static bool req_enum(struct check *c, const char *key, const char *const *names, int count,
                     int *dst, const char **name)
{
    const json_t *v = json_object_get(c->p, key);
    int i;

    if (!json_is_string(v))
        return bad(c, key, "must be a string");
    for (i = 0; i < count; i++)
        if (json_string_length(v) == strlen(names[i]) && !strcmp(json_string_value(v), names[i])) {
            *dst = i;
            *name = names[i];
            return true;
        }
    return bad(c, key, "has a value outside its enum");
}

static const char *const change_names[] = {"create", "modify", "delete"};
static const char *const session_names[] = {"startup", "resume", "clear"};
static const char *const end_names[] = {"quit", "clear", "exit", "error"};
static const char *const status_names[] = {"actual", "unavailable"};

static bool check_turn_usage(struct check *c, struct hns_autohand_turn_usage *u)
{
    const json_t *st = json_object_get(c->p, "tokensUsageStatus");
    int64_t calls;
    int idx;
    const char *name;

    if (!req_integral(c, "tokensUsed", &u->tokens_used, INT64_MIN, INT64_MAX, INT64_RANGE) ||
        !req_integral(c, "toolCallsCount", &calls, INT32_MIN, INT32_MAX, INT32_RANGE) ||
        !req_finite(c, "duration", &u->duration, false))
        return false;
    u->tool_calls_count = (int32_t)calls;
    u->tokens_usage_status = HNS_AUTOHAND_TOKENS_ABSENT;
    if (st && !json_is_null(st)) {
        if (!req_enum(c, "tokensUsageStatus", status_names, 2, &idx, &name))
            return false;
        u->tokens_usage_status =
            idx == 0 ? HNS_AUTOHAND_TOKENS_ACTUAL : HNS_AUTOHAND_TOKENS_UNAVAILABLE;
    }
    return true;
}

/* Validates params for h->kind, filling h->u. False with h->reason_ set on the first failure. */
static bool validate(struct hns_autohand_hook *h, const json_t *p)
{
    struct check c = {h, p, kind_methods[h->kind]};
    int idx = 0;

    if (!json_is_object(p)) {
        snprintf(h->reason_, sizeof(h->reason_), "invalid %s params: not an object", c.method);
        return false;
    }
    if (!req_string(&c, "timestamp", &h->timestamp))
        return false;
    switch (h->kind) {
    case HNS_AUTOHAND_PRE_TOOL: {
        struct hns_autohand_pre_tool *u = &h->u.pre_tool;

        return req_string(&c, "toolId", &u->tool_id) && req_string(&c, "toolName", &u->tool_name) &&
               req_object(&c, "args", &u->args);
    }
    case HNS_AUTOHAND_POST_TOOL: {
        struct hns_autohand_post_tool *u = &h->u.post_tool;

        return req_string(&c, "toolId", &u->tool_id) && req_string(&c, "toolName", &u->tool_name) &&
               req_bool(&c, "success", &u->success) &&
               req_finite(&c, "duration", &u->duration, false) &&
               opt_string(&c, "output", &u->output);
    }
    case HNS_AUTOHAND_FILE_MODIFIED: {
        struct hns_autohand_file_modified *u = &h->u.file_modified;

        if (!req_string(&c, "filePath", &u->file_path) ||
            !req_enum(&c, "changeType", change_names, 3, &idx, &u->change_type_name))
            return false;
        u->change_type = (enum hns_autohand_change)idx;
        return req_string(&c, "toolId", &u->tool_id);
    }
    case HNS_AUTOHAND_PRE_PROMPT: {
        struct hns_autohand_pre_prompt *u = &h->u.pre_prompt;

        return req_string(&c, "instruction", &u->instruction) &&
               req_string_array(&c, "mentionedFiles", &u->mentioned_files);
    }
    case HNS_AUTOHAND_POST_RESPONSE:
    case HNS_AUTOHAND_STOP:
        return check_turn_usage(&c, &h->u.turn_usage);
    case HNS_AUTOHAND_SESSION_ERROR: {
        struct hns_autohand_session_error *u = &h->u.session_error;

        return req_string(&c, "error", &u->error) && opt_string(&c, "code", &u->code) &&
               opt_object(&c, "context", &u->context);
    }
    case HNS_AUTOHAND_SESSION_START: {
        struct hns_autohand_session_start *u = &h->u.session_start;

        if (!req_enum(&c, "sessionType", session_names, 3, &idx, &u->session_type_name))
            return false;
        u->session_type = (enum hns_autohand_session_type)idx;
        return true;
    }
    case HNS_AUTOHAND_SESSION_END: {
        struct hns_autohand_session_end *u = &h->u.session_end;

        if (!req_enum(&c, "reason", end_names, 4, &idx, &u->reason_name))
            return false;
        u->reason = (enum hns_autohand_end_reason)idx;
        return req_finite(&c, "duration", &u->duration, false);
    }
    case HNS_AUTOHAND_SUBAGENT_STOP: {
        struct hns_autohand_subagent_stop *u = &h->u.subagent_stop;

        return req_string(&c, "subagentId", &u->subagent_id) &&
               req_string(&c, "subagentName", &u->subagent_name) &&
               req_string(&c, "subagentType", &u->subagent_type) &&
               req_bool(&c, "success", &u->success) &&
               req_finite(&c, "duration", &u->duration, false) &&
               opt_string(&c, "error", &u->error);
    }
    case HNS_AUTOHAND_PERMISSION_REQUEST: {
        struct hns_autohand_permission_request *u = &h->u.permission_request;

        return req_string(&c, "tool", &u->tool) && opt_string(&c, "path", &u->path) &&
               opt_string(&c, "command", &u->command) && opt_object(&c, "args", &u->args);
    }
    case HNS_AUTOHAND_NOTIFICATION: {
        struct hns_autohand_notification *u = &h->u.notification;

        return req_string(&c, "notificationType", &u->notification_type) &&
               req_string(&c, "message", &u->message);
    }
    case HNS_AUTOHAND_CONTEXT_COMPACTED: {
        struct hns_autohand_context_compacted *u = &h->u.context_compacted;

        return req_integral(&c, "croppedCount", &u->cropped_count, 0, INT64_MAX, NONNEG_RANGE) &&
               opt_string(&c, "summary", &u->summary) &&
               req_finite(&c, "usagePercent", &u->usage_percent, true) &&
               req_string(&c, "reason", &u->reason);
    }
    case HNS_AUTOHAND_CONTEXT_OVERFLOW: {
        struct hns_autohand_context_overflow *u = &h->u.context_overflow;

        return req_integral(&c, "tokensBefore", &u->tokens_before, 0, INT64_MAX, NONNEG_RANGE) &&
               req_integral(&c, "tokensAfter", &u->tokens_after, 0, INT64_MAX, NONNEG_RANGE) &&
               req_integral(&c, "croppedCount", &u->cropped_count, 0, INT64_MAX, NONNEG_RANGE) &&
               req_finite(&c, "usagePercent", &u->usage_percent, true);
    }
    case HNS_AUTOHAND_CONTEXT_WARNING:
    case HNS_AUTOHAND_CONTEXT_CRITICAL: {
        struct hns_autohand_context_usage *u = &h->u.context_usage;

        return req_finite(&c, "usagePercent", &u->usage_percent, true) &&
               req_integral(&c, "remainingTokens", &u->remaining_tokens, 0, INT64_MAX,
                            NONNEG_RANGE);
    }
    case HNS_AUTOHAND_PERMISSION_PROMPT: {
        struct hns_autohand_permission_prompt *u = &h->u.permission_prompt;
        const json_t *opts = json_object_get(p, "options");

        if (!req_string(&c, "requestId", &u->request_id) || !req_string(&c, "tool", &u->tool) ||
            !opt_string(&c, "description", &u->description) ||
            !opt_object(&c, "context", &u->context))
            return false;
        u->options = NULL;
        if (opts && !json_is_null(opts)) {
            if (!string_array(opts))
                return bad(&c, "options", "must be an array of strings when present");
            u->options = opts;
        }
        return true;
    }
    case HNS_AUTOHAND_MESSAGE_UPDATE: {
        struct hns_autohand_message_update *u = &h->u.message_update;

        return req_string(&c, "delta", &u->delta) && opt_string(&c, "messageId", &u->message_id) &&
               opt_string(&c, "thought", &u->thought);
    }
    case HNS_AUTOHAND_ERROR: {
        struct hns_autohand_error *u = &h->u.error;
        const json_t *code = json_object_get(p, "code");

        if (!req_string(&c, "message", &u->message) ||
            !req_bool(&c, "recoverable", &u->recoverable))
            return false;
        u->has_code = code && !json_is_null(code);
        return !u->has_code ||
               req_integral(&c, "code", &u->code, INT32_MIN, INT32_MAX, INT32_RANGE);
    }
    default:
        return false;
    }
}

/* ---- the envelope -------------------------------------------------------------------------- */

static enum hns_autohand_params_type params_type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return HNS_AUTOHAND_PARAMS_OBJECT;
    case JSON_ARRAY:
        return HNS_AUTOHAND_PARAMS_ARRAY;
    case JSON_STRING:
        return HNS_AUTOHAND_PARAMS_STRING;
    case JSON_INTEGER:
    case JSON_REAL:
        return HNS_AUTOHAND_PARAMS_NUMBER;
    case JSON_TRUE:
    case JSON_FALSE:
        return HNS_AUTOHAND_PARAMS_BOOLEAN;
    default:
        return HNS_AUTOHAND_PARAMS_NULL;
    }
}

static enum hns_autohand_params_type params_type_of_text(char first)
{
    switch (first) {
    case '{':
        return HNS_AUTOHAND_PARAMS_OBJECT;
    case '[':
        return HNS_AUTOHAND_PARAMS_ARRAY;
    case '"':
        return HNS_AUTOHAND_PARAMS_STRING;
    case 't':
    case 'f':
        return HNS_AUTOHAND_PARAMS_BOOLEAN;
    case 'n':
        return HNS_AUTOHAND_PARAMS_NULL;
    default:
        return HNS_AUTOHAND_PARAMS_NUMBER;
    }
}

/* Length of the well-formed UTF-8 sequence at s, or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0], cp, n, i;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 1, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 2, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 3, cp = c & 0x07;
    else
        return 0;
    for (i = 1; i <= n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n + 1;
}

/* The reason becomes a JSON string: jansson's error text quotes input bytes ("near '...'") and
 * truncation may split a character, so bytes that are not well-formed UTF-8 become '?'. */
static void utf8_scrub(char *s)
{
    while (*s) {
        size_t n = utf8_seq((const unsigned char *)s);

        if (n == 0)
            *s++ = '?';
        else
            s += n;
    }
}

static void set_reason(struct hns_autohand_hook *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_reason(struct hns_autohand_hook *h, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(h->reason_, sizeof(h->reason_), fmt, ap);
    va_end(ap);
    utf8_scrub(h->reason_);
}

/* Parses line into h->root_, re-reading a number-fixed copy when jansson refuses a literal.
 * Returns 0 (root_ may be NULL: not JSON, reason set) or EVOLVE_ENOMEM. */
static int load(struct hns_autohand_hook *h, const char *line, size_t len)
{
    json_error_t err;
    char *copy;
    size_t copy_len = 0;
    bool changed = false;

    h->root_ = json_loadb(line, len, JSON_ALLOW_NUL, &err);
    if (h->root_)
        return 0;
    if (json_error_code(&err) == json_error_out_of_memory)
        return core_error_oom();
    if (json_error_code(&err) != json_error_numeric_overflow) {
        set_reason(h, "not JSON: %s at column %d", err.text, err.column);
        return 0;
    }
    copy = hns_autohand_fix_numbers(line, len, &copy_len, &changed);
    if (!copy)
        return core_error_oom();
    h->root_ = json_loadb(copy, copy_len, JSON_ALLOW_NUL, &err);
    free(copy);
    if (h->root_) {
        h->inexact = changed;
        return 0;
    }
    if (json_error_code(&err) == json_error_out_of_memory)
        return core_error_oom();
    set_reason(h, "not JSON: %s", err.text);
    return 0;
}

static enum hns_autohand_kind find_kind(const char *m, size_t n)
{
    int k;

    for (k = 1; k < HNS_AUTOHAND_KIND_COUNT; k++)
        if (strlen(kind_methods[k]) == n && !memcmp(kind_methods[k], m, n))
            return (enum hns_autohand_kind)k;
    return HNS_AUTOHAND_UNKNOWN;
}

/* Fills the unknown variant's params fields (exact value, or verbatim text when inexact). */
static int keep_params(struct hns_autohand_hook *h, const json_t *params, const char *line,
                       size_t len)
{
    size_t a, b;

    if (!params)
        return 0;
    if (!h->inexact) {
        h->u.unknown.params = params;
        h->u.unknown.params_type = params_type_of(params);
        return 0;
    }
    if (!hns_autohand_params_span(line, len, &a, &b) || a >= b)
        return 0;
    h->params_raw_ = malloc(b - a + 1);
    if (!h->params_raw_)
        return core_error_oom();
    memcpy(h->params_raw_, line + a, b - a);
    h->params_raw_[b - a] = '\0';
    h->u.unknown.params_raw = h->params_raw_;
    h->u.unknown.params_type = params_type_of_text(line[a]);
    return 0;
}

int hns_autohand_decode(struct hns_autohand_hook *out, const char *line, size_t len)
{
    const json_t *method, *params, *ver;
    struct hns_autohand_unknown kept;
    enum hns_autohand_kind kind;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = load(out, line, len);
    if (rc < 0)
        return rc;
    if (!out->root_)
        goto unknown;
    if (!json_is_object(out->root_)) {
        set_reason(out, "not a JSON-RPC message: the line is a JSON %s, not an object",
                   json_is_array(out->root_) ? "array" : "value");
        goto unknown;
    }
    method = json_object_get(out->root_, "method");
    params = json_object_get(out->root_, "params");
    if (json_is_string(method)) {
        out->method = json_string_value(method);
        out->method_len = json_string_length(method);
    }
    rc = keep_params(out, params, line, len);
    if (rc < 0) {
        hns_autohand_dispose(out);
        return rc;
    }
    ver = json_object_get(out->root_, "jsonrpc");
    if (!json_is_string(ver) || json_string_length(ver) != 3 ||
        strcmp(json_string_value(ver), "2.0")) {
        set_reason(out, "not JSON-RPC 2.0: \"jsonrpc\" is not \"2.0\"");
        goto unknown;
    }
    if (json_object_get(out->root_, "id")) {
        set_reason(out, "%s",
                   out->method ? "JSON-RPC request (it has an id), not a notification"
                   : json_object_get(out->root_, "error") ? "JSON-RPC error response"
                                                          : "JSON-RPC response");
        goto unknown;
    }
    if (!out->method) {
        set_reason(out, "JSON-RPC notification without a string \"method\"");
        goto unknown;
    }
    kind = find_kind(out->method, out->method_len);
    if (kind == HNS_AUTOHAND_UNKNOWN) {
        set_reason(out, "unknown method");
        goto unknown;
    }
    out->kind = kind;
    kept = out->u.unknown;
    if (validate(out, params)) {
        out->params = params;
        return 0;
    }
    out->timestamp = NULL;
    /* typed fields written before the failing check overlap the unknown variant: restore it */
    memset(&out->u, 0, sizeof(out->u));
    out->u.unknown = kept;
unknown:
    out->kind = HNS_AUTOHAND_UNKNOWN;
    out->u.unknown.reason = out->reason_;
    return 0;
}

void hns_autohand_dispose(struct hns_autohand_hook *hook)
{
    if (!hook)
        return;
    json_decref(hook->root_);
    free(hook->params_raw_);
    memset(hook, 0, sizeof(*hook));
}
