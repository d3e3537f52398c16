/* harness/hline.h — building blocks shared by the jdoc-based parsers (claude, codex, gemini,
 * replay): the per-line event envelope, update/content constructors, a string builder with JS
 * String() semantics, a string map for tool-call pairing, usage updates and markdownEscape.
 * Ownership: constructors return new jansson references (NULL only on OOM); functions taking a
 * json_t * "steal" it as noted. Threads: per-parser state, one thread at a time. */
#ifndef EVOLVE_HARNESS_HLINE_H
#define EVOLVE_HARNESS_HLINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "harness/harness.h"
#include "harness/jdoc.h"

/* What every event of one input line carries besides its update (DESIGN §4 envelope). Token
 * indexes are into `d`; -1 = absent. `extra` is shared by every event of the line. */
struct hns_line {
    struct hns_parser *p;
    struct hns_jdoc *d;
    int session_id;           /* any JSON value, copied verbatim */
    const char *session_text; /* fallback when session_id < 0 (sticky id); may be NULL */
    int timestamp;            /* string (ISO) or number (epoch ms), copied verbatim */
    int model;                /* string */
    const char *model_text;   /* fallback when model < 0 (e.g. gemini's init line); may be NULL */
    int message_id;           /* string */
    int parent;               /* string: parentToolCallId */
    json_t *extra;            /* owned; NULL or an object, attached (shared) to each event */
    unsigned emitted;         /* events emitted for this line */
};

void hns_line_begin(struct hns_line *l, struct hns_parser *p, struct hns_jdoc *d);

/* The prologue every jdoc-based parser runs on a line: begins `l`, tokenizes the line, turns a
 * non-JSON line or a non-object into an `unknown` update (reason prefixed with `agent`), and
 * skips evolve's own session-log metadata (_meta, _prompt, _sessionEnd). Returns 1 when the line
 * is a JSON object for the parser to handle, else what the parser should return (0 or < 0). */
int hns_line_open(struct hns_line *l, struct hns_parser *p, struct hns_jdoc *d, const char *line,
                  size_t len, const char *agent);
void hns_line_end(struct hns_line *l);

/* Wraps `update` (stolen) in the line's envelope and emits it. 0 or EVOLVE_ENOMEM. */
int hns_line_emit(struct hns_line *l, json_t *update);

/* Emits the line verbatim as an `unknown` update with `reason`. */
int hns_line_unknown(struct hns_line *l, const char *reason);

/* Adds key -> value (stolen) to the line's extra object, creating it. NULL value is ignored. */
int hns_line_extra(struct hns_line *l, const char *key, json_t *value);

/* {sessionUpdate: type}. */
json_t *hns_upd(const char *type);
/* {type:"text", text} from bytes. */
json_t *hns_text(const char *s, size_t n);
/* {type:"content", content: block} (block stolen). */
json_t *hns_content(json_t *block);
/* Sets o[key] = v (stolen); returns o, or NULL (and frees o) when v is NULL or on OOM. */
json_t *hns_put(json_t *o, const char *key, json_t *v);
/* Sets o[key] = the JSON of token `tok` when tok >= 0 (absent stays absent); returns o, or NULL
 * (o freed) on OOM. */
json_t *hns_put_tok(json_t *o, const char *key, struct hns_jdoc *d, int tok);
/* Sets o[key] = v (stolen) only when v is not NULL; returns o. */
json_t *hns_put_opt(json_t *o, const char *key, json_t *v);

/* A growable byte string. On OOM `oom` is set and later appends do nothing. */
struct hns_buf {
    char *p;
    size_t len, cap;
    bool oom;
};
void hns_buf_add(struct hns_buf *b, const char *s, size_t n);
void hns_buf_addz(struct hns_buf *b, const char *s);
/* Appends JS String(value) of token i ("undefined" when i < 0). */
void hns_buf_add_js(struct hns_buf *b, struct hns_jdoc *d, int i);
/* Takes the text as a jansson string and resets the buffer; NULL on OOM. */
json_t *hns_buf_json(struct hns_buf *b);
void hns_buf_free(struct hns_buf *b);

/* String map id -> small value (tool name), for tool-call pairing. */
struct hns_smap {
    struct hns_smap_slot *slots;
    size_t cap, used, live;
};
void hns_smap_init(struct hns_smap *m);
void hns_smap_free(struct hns_smap *m);
/* Stores key -> val (both copied). 0 or EVOLVE_ENOMEM. */
int hns_smap_put(struct hns_smap *m, const char *key, size_t klen, const char *val, size_t vlen);
/* Removes `key`; copies its value into out (NUL-terminated, truncated to size) and returns true
 * when it was present. */
bool hns_smap_take(struct hns_smap *m, const char *key, size_t klen, char *out, size_t size);

/* Claude's markdownEscape (harness-wire §1.6): fences `s` with a backtick run longer than any
 * line-leading run of three or more. Returns a jansson string or NULL on OOM. */
json_t *hns_markdown_escape(const char *s, size_t n);
/* "```\n" + s + "\n```" as a jansson string. */
json_t *hns_fence_json(const char *s, size_t n);

/* Token counts for a usage update; a value < 0 means absent. */
struct hns_usage {
    double prompt, completion, cached, cost;
    json_t *extra; /* stolen; NULL or object */
};
/* {sessionUpdate:"usage", scope, usage:{promptTokens?, completionTokens?, cachedTokens?,
 * costUsd?, extra?}}; consumes u->extra. */
json_t *hns_line_usage_update(const char *scope, struct hns_usage *u);

/* Appends the JSON text of token i with insignificant whitespace removed: JSON.stringify of
 * the parsed value for every input that has no escapes or numbers JS would normalise. */
void hns_buf_add_compact(struct hns_buf *b, struct hns_jdoc *d, int i);

/* The number at o[key] (>= 0 means present); -1 when absent or not a number. */
double hns_jnum_at(struct hns_jdoc *d, int obj, const char *key);

#endif
