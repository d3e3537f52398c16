/* harness/autohand.h — the Autohand CLI's typed hook notifications for C callers.
 * The CLI (`autohand --mode rpc`) prints JSON-RPC 2.0 notifications `autohand.hook.*` on stdout;
 * hns_autohand_decode() turns one such line into a tagged struct, validated exactly as seed 003
 * prescribes (field types, enums, integral ranges). A line that is not a notification, names an
 * unknown method, or fails any check decodes to HNS_AUTOHAND_UNKNOWN, keeping the exact method and
 * the params value with its original top-level JSON type. docs/internals/autohand.md has the rules.
 * Ownership: a decoded hook owns its JSON tree; every pointer in it (strings, json_t values) is
 * borrowed from the hook and valid until hns_autohand_dispose(). Threads: no shared state; a hook
 * belongs to the thread that decoded it. */
#ifndef EVOLVE_HARNESS_AUTOHAND_H
#define EVOLVE_HARNESS_AUTOHAND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One kind per JSON-RPC method: the seed's 16 hooks in its order, then three non-hook
 * notifications of the same CLI that carry what the event model needs (the id to answer a
 * permission request, the agent's text, its errors). */
#define HNS_AUTOHAND_KIND_MAP(X)                                                                   \
    X(PRE_TOOL, "autohand.hook.preTool", "preTool")                                                \
    X(POST_TOOL, "autohand.hook.postTool", "postTool")                                             \
    X(FILE_MODIFIED, "autohand.hook.fileModified", "fileModified")                                 \
    X(PRE_PROMPT, "autohand.hook.prePrompt", "prePrompt")                                          \
    X(POST_RESPONSE, "autohand.hook.postResponse", "postResponse")                                 \
    X(SESSION_ERROR, "autohand.hook.sessionError", "sessionError")                                 \
    X(STOP, "autohand.hook.stop", "stop")                                                          \
    X(SESSION_START, "autohand.hook.sessionStart", "sessionStart")                                 \
    X(SESSION_END, "autohand.hook.sessionEnd", "sessionEnd")                                       \
    X(SUBAGENT_STOP, "autohand.hook.subagentStop", "subagentStop")                                 \
    X(PERMISSION_REQUEST, "autohand.hook.permissionRequest", "permissionRequest")                  \
    X(NOTIFICATION, "autohand.hook.notification", "notification")                                  \
    X(CONTEXT_COMPACTED, "autohand.hook.contextCompacted", "contextCompacted")                     \
    X(CONTEXT_OVERFLOW, "autohand.hook.contextOverflow", "contextOverflow")                        \
    X(CONTEXT_WARNING, "autohand.hook.contextWarning", "contextWarning")                           \
    X(CONTEXT_CRITICAL, "autohand.hook.contextCritical", "contextCritical")                        \
    X(PERMISSION_PROMPT, "autohand.permissionRequest", "permissionPrompt")                         \
    X(MESSAGE_UPDATE, "autohand.messageUpdate", "messageUpdate")                                   \
    X(ERROR, "autohand.error", "error")

enum hns_autohand_kind {
    HNS_AUTOHAND_UNKNOWN = 0, /* see struct hns_autohand_unknown */
#define HNS_AUTOHAND_KIND_ENUM(name, method, short_name) HNS_AUTOHAND_##name,
    HNS_AUTOHAND_KIND_MAP(HNS_AUTOHAND_KIND_ENUM)
#undef HNS_AUTOHAND_KIND_ENUM
        HNS_AUTOHAND_KIND_COUNT
};

/* The exact JSON-RPC method of a kind ("autohand.hook.preTool"), its short name ("preTool"), or
 * NULL for HNS_AUTOHAND_UNKNOWN and out-of-range values. */
const char *hns_autohand_kind_method(enum hns_autohand_kind kind);
const char *hns_autohand_kind_name(enum hns_autohand_kind kind);

/* tokensUsageStatus: absent or null on the wire -> ABSENT; the wire values are "actual" and
 * "unavailable" (the seed's ACTUAL / UNAVAILABLE / null). */
enum hns_autohand_token_status {
    HNS_AUTOHAND_TOKENS_ABSENT = 0,
    HNS_AUTOHAND_TOKENS_ACTUAL,
    HNS_AUTOHAND_TOKENS_UNAVAILABLE
};
enum hns_autohand_change { HNS_AUTOHAND_CREATE, HNS_AUTOHAND_MODIFY, HNS_AUTOHAND_DELETE };
enum hns_autohand_session_type {
    HNS_AUTOHAND_SESSION_STARTUP,
    HNS_AUTOHAND_SESSION_RESUME,
    HNS_AUTOHAND_SESSION_CLEAR
};
enum hns_autohand_end_reason {
    HNS_AUTOHAND_END_QUIT,
    HNS_AUTOHAND_END_CLEAR,
    HNS_AUTOHAND_END_EXIT,
    HNS_AUTOHAND_END_ERROR
};

/* Top-level JSON type of `params` (the seed's six shapes), or ABSENT when the line had none. */
enum hns_autohand_params_type {
    HNS_AUTOHAND_PARAMS_ABSENT = 0,
    HNS_AUTOHAND_PARAMS_OBJECT,
    HNS_AUTOHAND_PARAMS_ARRAY,
    HNS_AUTOHAND_PARAMS_NULL,
    HNS_AUTOHAND_PARAMS_STRING,
    HNS_AUTOHAND_PARAMS_NUMBER,
    HNS_AUTOHAND_PARAMS_BOOLEAN
};

/* Optional string fields are NULL when absent or JSON null. Objects/arrays are borrowed json_t. */
struct hns_autohand_pre_tool {
    const char *tool_id, *tool_name;
    const json_t *args; /* always an object */
};
struct hns_autohand_post_tool {
    const char *tool_id, *tool_name;
    bool success;
    double duration; /* finite */
    const char *output;
};
struct hns_autohand_file_modified {
    const char *file_path;
    enum hns_autohand_change change_type;
    const char *change_type_name; /* "create" | "modify" | "delete" */
    const char *tool_id;
};
struct hns_autohand_pre_prompt {
    const char *instruction;
    const json_t *mentioned_files; /* array of strings */
};
/* postResponse and stop */
struct hns_autohand_turn_usage {
    int64_t tokens_used;
    enum hns_autohand_token_status tokens_usage_status;
    int32_t tool_calls_count;
    double duration;
};
struct hns_autohand_session_error {
    const char *error, *code;
    const json_t *context; /* object or NULL */
};
struct hns_autohand_session_start {
    enum hns_autohand_session_type session_type;
    const char *session_type_name;
};
struct hns_autohand_session_end {
    enum hns_autohand_end_reason reason;
    const char *reason_name;
    double duration;
};
struct hns_autohand_subagent_stop {
    const char *subagent_id, *subagent_name, *subagent_type;
    bool success;
    double duration;
    const char *error;
};
struct hns_autohand_permission_request {
    const char *tool, *path, *command;
    const json_t *args; /* object or NULL */
};
struct hns_autohand_notification {
    const char *notification_type, *message;
};
struct hns_autohand_context_compacted {
    int64_t cropped_count; /* >= 0 */
    const char *summary;
    double usage_percent; /* finite, >= 0, may exceed 1 */
    const char *reason;
};
struct hns_autohand_context_overflow {
    int64_t tokens_before, tokens_after, cropped_count; /* >= 0 */
    double usage_percent;
};
/* contextWarning and contextCritical */
struct hns_autohand_context_usage {
    double usage_percent;
    int64_t remaining_tokens; /* >= 0 */
};
/* autohand.permissionRequest (not a hook): the request an embedder answers with
 * evolve_autohand_permission_reply(). */
struct hns_autohand_permission_prompt {
    const char *request_id, *tool, *description;
    const json_t *context; /* object or NULL: {command?, path?, args?} */
    const json_t *options; /* array of strings or NULL */
};
/* autohand.messageUpdate (not a hook): a delta of the agent's reply and/or its reasoning. */
struct hns_autohand_message_update {
    const char *delta;      /* required, may be "" */
    const char *message_id; /* NULL when absent */
    const char *thought;    /* NULL when absent */
};
/* autohand.error (not a hook) */
struct hns_autohand_error {
    const char *message;
    bool recoverable;
    bool has_code;
    int64_t code;
};
struct hns_autohand_unknown {
    const char *reason; /* one line: why the line is not a typed hook */
    /* params as parsed; NULL when absent or when a number in it is beyond what jansson holds
     * exactly (then params_raw has the exact text). */
    const json_t *params;
    const char *params_raw;
    enum hns_autohand_params_type params_type;
};

struct hns_autohand_hook {
    enum hns_autohand_kind kind;
    const char *method; /* the exact method (may hold NULs: see method_len); NULL if none */
    size_t method_len;
    const char *timestamp; /* NULL only for HNS_AUTOHAND_UNKNOWN */
    /* true when the line held a number beyond int64/double range outside the validated fields:
     * the hook is valid (as the seed says) but that number is null/approximate in the tree. */
    bool inexact;
    union {
        struct hns_autohand_pre_tool pre_tool;
        struct hns_autohand_post_tool post_tool;
        struct hns_autohand_file_modified file_modified;
        struct hns_autohand_pre_prompt pre_prompt;
        struct hns_autohand_turn_usage turn_usage; /* POST_RESPONSE, STOP */
        struct hns_autohand_session_error session_error;
        struct hns_autohand_session_start session_start;
        struct hns_autohand_session_end session_end;
        struct hns_autohand_subagent_stop subagent_stop;
        struct hns_autohand_permission_request permission_request;
        struct hns_autohand_notification notification;
        struct hns_autohand_context_compacted context_compacted;
        struct hns_autohand_context_overflow context_overflow;
        struct hns_autohand_context_usage context_usage; /* CONTEXT_WARNING, CONTEXT_CRITICAL */
        struct hns_autohand_permission_prompt permission_prompt;
        struct hns_autohand_message_update message_update;
        struct hns_autohand_error error;
        struct hns_autohand_unknown unknown;
    } u;
    const json_t *params; /* the params value of a typed hook (an object), borrowed */
    /* private */
    json_t *root_;
    char *params_raw_;
    char reason_[224];
};

/* Decodes one stdout line (no LF; trailing CR/spaces allowed). Always fills *out, which must be
 * released with hns_autohand_dispose(), even when out->kind is HNS_AUTOHAND_UNKNOWN.
 * Returns 0, or EVOLVE_ENOMEM (then *out is empty and needs no dispose, though one is harmless). */
int hns_autohand_decode(struct hns_autohand_hook *out, const char *line, size_t len);

/* Releases what a decoded hook owns and zeroes it. Idempotent. */
void hns_autohand_dispose(struct hns_autohand_hook *hook);

/* ---- internal to the autohand files (autohand_raw.c) ------------------------------------- */

/* A copy of `line` where every number literal jansson refuses is made readable: an integer past
 * int64 that is a finite double gets ".0" appended (read as an approximate real), a literal past
 * double range becomes null. *changed tells whether any was. malloc'd; NULL on OOM. */
char *hns_autohand_fix_numbers(const char *line, size_t len, size_t *out_len, bool *changed);

/* The [start, end) text of the last top-level "params" member of a line that is a JSON object
 * (checked by the caller). False when there is none. */
bool hns_autohand_params_span(const char *line, size_t len, size_t *start, size_t *end);

#endif
