/* harness/harness.h — the agent harnesses: per agent, the command line it runs with and the
 * incremental parser of its output stream into OutputEvents (DESIGN.md §4-5).
 * Ownership: a parser is the caller's (hns_parser_new/_free); every event handed to the emit
 * callback is a new json_t reference the callback owns. A command built by an agent is the
 * caller's, released with hns_command_dispose(). Agent descriptors are static and never freed.
 * Threads: a parser is used by one thread at a time (the sandbox actor running it); descriptors
 * and the registry are read-only and safe from any thread. */
#ifndef EVOLVE_HARNESS_H
#define EVOLVE_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "evolve/event.h"

struct hns_parser;

/* Receives one OutputEvent object ({sessionId?, update, timestamp?, model?, messageId?,
 * parentToolCallId?, extra?}); the callee owns the reference. `type` is update.sessionUpdate. */
typedef void (*hns_emit_fn)(void *payload, evolve_update_type_t type, json_t *event);

/* What a command builder needs to know about one run. Strings are borrowed for the call. */
struct hns_run_spec {
    const char *prompt;     /* the user's prompt, verbatim (never shell-escaped) */
    const char *model;      /* NULL: the agent's default */
    const char *api_key;    /* key for the model endpoint (agent-specific env var) */
    const char *base_url;   /* model endpoint base URL; NULL: the vendor's */
    const char *home;       /* the agent's HOME, e.g. "/home/user" */
    const char *workdir;    /* the run's cwd, e.g. "/home/user/workspace" */
    const char *session_id; /* a known agent session id for resume (droid); may be NULL */
    const char *reasoning;  /* reasoning effort / variant; NULL: default */
    bool resume;            /* continue the previous conversation (spec §2.3) */
    bool offline;           /* add the settings that keep a CLI from calling home */
    bool ask_permission;    /* the agent asks before risky tools (an embedder answers them);
                             * false: headless, the CLI's own "allow all" mode */
};

/* A file the builder wants written (relative to the agent's HOME) before the process starts. */
struct hns_file {
    char *path;    /* relative to home, e.g. ".codex/config.toml" */
    char *content; /* malloc'd bytes */
    size_t len;
    mode_t mode; /* 0600 for credentials, 0644 otherwise */
};

/* The process to run. All arrays and strings are malloc'd and owned by the command. */
struct hns_command {
    char **argv;            /* NULL-terminated; argv[0] is the program name (PATH lookup) */
    char **env;             /* NULL-terminated "NAME=value" entries added to the base env */
    struct hns_file *files; /* config files to write first */
    size_t files_count;
    char *stdin_data; /* bytes to write on the child's stdin, then close it; may be NULL */
    size_t stdin_len;
    bool stdin_keep_open; /* stdin stays open after stdin_data for evolve_write_stdin (an
                           * RPC agent's replies); it closes when the run ends */
};

/* One agent. Exactly one static const descriptor per src/harness/<agent>.c, listed in
 * registry.c. */
struct hns_agent {
    const char *name;              /* "claude" */
    const char *instruction_file;  /* read by the agent from its cwd: "CLAUDE.md" */
    const char *const *state_dirs; /* dirs under HOME checkpointed with the workspace, NULL-ended */
    const char *const *state_excludes; /* paths under state_dirs never checkpointed (credentials);
                                        * NULL-ended; may be NULL */
    const char *default_model;         /* used when the run names none; may be NULL */
    const char *api_key_env;  /* env var the CLI reads its key from, e.g. ANTHROPIC_API_KEY */
    const char *base_url_env; /* env var for the endpoint, e.g. ANTHROPIC_BASE_URL */
    /* Per-run parser state. state_new may leave *out NULL for stateless parsers. */
    int (*state_new)(void **out);
    void (*state_free)(void *state);
    /* Parses one line (no LF; may carry a trailing CR or spaces), emitting 0..n events through
     * hns_emit(). Returns 0, or EVOLVE_ENOMEM. Never fails on bad input: that becomes an
     * `unknown` event. */
    int (*parse_line)(struct hns_parser *p, const char *line, size_t len);
    /* Called once after the last line (end of stream); may emit pending events. May be NULL. */
    int (*finish)(struct hns_parser *p);
    /* Builds argv/env/files for one run. Returns 0 or EVOLVE_EINVAL/EVOLVE_ENOMEM. */
    int (*build_command)(struct hns_command *out, const struct hns_run_spec *spec);
};

struct hns_parser {
    const struct hns_agent *agent;
    hns_emit_fn emit;
    void *payload;
    uint64_t line_no; /* 1-based number of the line being parsed, counting blank lines */
    void *state;      /* the agent's */
};

/* The agent named `name`, or NULL. */
const struct hns_agent *hns_agent_find(const char *name);

/* All agents, NULL-terminated, in a stable order. */
const struct hns_agent *const *hns_agent_list(void);

/* Creates a parser for `agent_name` delivering events to emit(payload, ...).
 * Returns 0, EVOLVE_ENOTFOUND (unknown agent, message lists the known ones) or EVOLVE_ENOMEM. */
int hns_parser_new(struct hns_parser **out, const char *agent_name, hns_emit_fn emit,
                   void *payload);

/* Feeds one line (without its LF). Blank or whitespace-only lines are counted and skipped, as the
 * reference's run loop does. Returns 0 or EVOLVE_ENOMEM. */
int hns_parser_feed(struct hns_parser *p, const char *line, size_t len);

/* Signals end of stream (calls the agent's finish). Returns 0 or EVOLVE_ENOMEM. */
int hns_parser_finish(struct hns_parser *p);

/* Releases the parser. NULL is a no-op. */
void hns_parser_free(struct hns_parser *p);

/* ---- helpers for agent implementations ---------------------------------------------------- */

/* Emits `event` (stolen) whose update is `update` (its sessionUpdate decides the type). Returns 0,
 * or EVOLVE_ENOMEM when event is NULL (a failed jansson build). */
int hns_emit(struct hns_parser *p, json_t *event);

/* Builds {sessionId?, update} stealing `update`; NULL only on OOM. */
json_t *hns_event_new(const char *session_id, json_t *update);

/* Emits an `unknown` update {sessionUpdate:"unknown", raw:<line verbatim>, reason}. */
int hns_emit_unknown(struct hns_parser *p, const char *line, size_t len, const char *reason);

/* Emits an `error` update {sessionUpdate:"error", message, fatal} with an optional sessionId. */
int hns_emit_error(struct hns_parser *p, const char *session_id, const char *message, bool fatal);

/* ---- JavaScript value semantics the reference's parsers rely on (spec harness-wire §1.6) ---- */

/* JS truthiness: false for NULL (absent), null, false, 0, -0, NaN and "". */
bool hns_js_truthy(const json_t *v);

/* JS Number -> string in shortest round-trip form ("1", "0.1", "1e+21", "-0" prints "0").
 * Writes at most `size` bytes (size >= 32 is always enough) and returns `buf`. */
char *hns_js_number(double d, char *buf, size_t size);

/* JS String(v): strings verbatim, numbers as hns_js_number, true/false, null -> "null",
 * NULL (absent) -> "undefined", arrays joined with "," (null/absent elements empty),
 * objects -> "[object Object]". malloc'd; NULL only on OOM. */
char *hns_js_string(const json_t *v);

/* JSON.stringify(v), compact, JS-compatible escaping and numbers (implemented in jsstringify.c).
 * malloc'd; NULL only on OOM. */
char *hns_js_stringify(const json_t *v);

/* "```\n" + s + "\n```": the fence used for tool error output. malloc'd; NULL only on OOM. */
char *hns_fence(const char *s);

/* hns_command helpers: append a copy of `arg`/"NAME=value"/a file; 0 or EVOLVE_ENOMEM. */
int hns_command_arg(struct hns_command *cmd, const char *arg);
int hns_command_env(struct hns_command *cmd, const char *name, const char *value);
int hns_command_file(struct hns_command *cmd, const char *path, const char *content, mode_t mode);
/* Sets the bytes written on the child's stdin (a copy of `data`, then stdin is closed). */
int hns_command_stdin(struct hns_command *cmd, const char *data, size_t len);
void hns_command_dispose(struct hns_command *cmd);

/* ---- harness-b block: event fields, line parsing and usage helpers (src/harness/fields.c),
 * shared by the qwen, kimi, opencode and droid parsers; any agent may use them. ---------- */

/* Optional OutputEvent fields of one wire line (DESIGN.md §4). Every pointer is borrowed; NULL
 * means absent. Values are shared into the event (json_incref), never copied or coerced. */
struct hns_meta {
    const json_t *session_id;          /* the harness's session id value, verbatim */
    const json_t *timestamp;           /* ISO 8601 string (see hns_iso_time_ms) */
    const json_t *model;               /* string */
    const json_t *message_id;          /* string */
    const json_t *parent_tool_call_id; /* string */
    const json_t *extra;               /* object; omitted when empty */
};

/* Emits {sessionId?, update, timestamp?, model?, messageId?, parentToolCallId?, extra?},
 * stealing `update` (NULL = a failed build: returns EVOLVE_ENOMEM). `m` may be NULL. */
int hns_emit_update(struct hns_parser *p, const struct hns_meta *m, json_t *update);

/* Parses one wire line. Returns a new object reference, or NULL after emitting an `unknown`
 * update (not JSON, or JSON that is not an object) and storing 0 or EVOLVE_ENOMEM in *rc.
 * Integers beyond 64 bits are read as reals (JS reads every number as a double); strings may
 * hold U+0000. */
json_t *hns_parse_object(struct hns_parser *p, const char *line, size_t len, int *rc);

/* JS `Date(ms).toISOString()`: "2026-11-30T04:06:33.721Z"; NULL when `v` is not a finite number
 * in the JS date range, or on OOM. */
json_t *hns_iso_time_ms(const json_t *v);

/* {type:"text", text} and {type:"content", content:{type:"text", text}}; NULL only on OOM. */
json_t *hns_text_block(const char *s, size_t len);
json_t *hns_text_content(const char *s, size_t len);

/* {sessionUpdate:kind, content} stealing `content`; NULL on OOM (content released). */
json_t *hns_chunk_update(const char *kind, json_t *content);

/* The numeric sum of the numbers among a, b, c (NULL or non-numbers skipped): an integer when
 * every operand is one, a real otherwise; NULL when none is a number. A new reference. */
json_t *hns_number_sum(const json_t *a, const json_t *b, const json_t *c);

/* {sessionUpdate:"usage", scope, usage:{promptTokens?, completionTokens?, cachedTokens?,
 * costUsd?, extra?}} stealing the four values and `extra` (each may be NULL; an empty extra is
 * omitted). NULL on OOM. */
json_t *hns_usage_update(const char *scope, json_t *prompt, json_t *completion, json_t *cached,
                         json_t *cost, json_t *extra);

/* Copies every member of `src` whose key is not in the NULL-terminated `skip` list into a new
 * object (values shared). NULL on OOM; an object (maybe empty) otherwise. */
json_t *hns_object_except(const json_t *src, const char *const *skip);

/* JS `String(v || fallback)` (the title idiom of the reference parsers). malloc'd; NULL on OOM. */
char *hns_str_or(const json_t *v, const char *fallback);

/* Droid session capture (spec harness-wire §2.4, the session runtime's job): finds a non-empty
 * string `sessionId` or `session_id` in the raw line, at top level, then recursively under
 * `result`, `params`, `notification`. Writes it NUL-terminated into out (size bytes) and
 * returns its length; 0 when the line has none (or is not a JSON object); EVOLVE_EINVAL when
 * the id does not fit in `size`. */
int hns_droid_session_id(const char *line, size_t len, char *out, size_t size);
/* ---- end harness-b block ---- */

#endif
