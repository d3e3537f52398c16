/* mockllm/mock_impl.h — types shared by the files of the mockllm module only: the scenario, the
 * dialect-neutral view of a request, the reply plan and the paced output stream.
 *
 * Flow of one request: mock_server.c receives it (libmicrohttpd) → the dialect's inspect()
 * builds a mock_view from the JSON body → mock_plan() picks the scenario turn and resolves its
 * calls against the tools the request advertises → the dialect's render() turns the plan into
 * a mock_stream (SSE events or one JSON body, each chunk with the time it is due) → the server
 * writes the chunks out, sleeping until each is due. */
#ifndef EVOLVE_MOCK_IMPL_H
#define EVOLVE_MOCK_IMPL_H

#include <jansson.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "evolve/common.h"

/* ---- scenario (mock_scenario.c) ---- */

enum mock_call_kind { MOCK_CALL_SHELL, MOCK_CALL_WRITE, MOCK_CALL_EDIT };

struct mock_call {
    enum mock_call_kind kind;
    char *command;  /* shell */
    char *path;     /* write, edit: relative paths are made absolute with the agent's cwd */
    char *content;  /* write */
    char *old_text; /* edit */
    char *new_text; /* edit */
};

struct mock_pacing {
    uint32_t ttft_ms;         /* nothing is sent before this */
    double tokens_per_second; /* 0: no pacing */
};

struct mock_turn {
    char *thinking; /* NULL: none */
    char *text;     /* NULL: none */
    struct mock_call *calls;
    size_t ncalls;
    int error_status;     /* 0: no failure; else 429, 500, 529, ... */
    int retry_after_s;    /* Retry-After header when > 0 */
    char *error_message;  /* NULL: a default per status */
    unsigned error_times; /* 0: fail every time; n: the first n requests at this turn */
    int has_pacing;
    struct mock_pacing pacing;
};

struct mock_scenario {
    char *name;
    char *source; /* the file it came from */
    struct mock_turn *turns;
    size_t nturns;
    char *final_text; /* past the last turn */
    char *side_text;  /* a turn with calls, but the request advertises no tools */
    struct mock_pacing pacing;
    double cache_read_fraction, cache_write_fraction; /* of prompt tokens, for usage */
};

/* Resolves `name_or_path` (see struct mock_config) and parses it into *out (caller frees with
 * mock_scenario_free). @return 0, EVOLVE_ENOTFOUND, EVOLVE_EINVAL (message: file and field). */
int mock_scenario_load(struct mock_scenario **out, const char *name_or_path, const char *extra_dir);
int mock_scenario_parse(struct mock_scenario **out, const char *json, size_t len,
                        const char *source);
void mock_scenario_free(struct mock_scenario *sc);

/* ---- request view (filled by a dialect's inspect) ---- */

enum mock_tool_kind { MOCK_TOOL_FUNCTION, MOCK_TOOL_CUSTOM, MOCK_TOOL_LOCAL_SHELL };

struct mock_tool {
    const char *name; /* borrowed from the request body */
    const char *description;
    json_t *schema; /* borrowed; may be NULL */
    enum mock_tool_kind kind;
};

#define MOCK_MAX_TOOLS 128
#define MOCK_MAX_RUNS  256

/* One assistant response already in the conversation (a run of assistant items). */
struct mock_run {
    int has_call;
    const char *text; /* its first text, borrowed; NULL when it has none */
};

struct mock_view {
    json_t *body; /* borrowed */
    const char *model;
    int stream;
    unsigned turn; /* this mock's responses already in the conversation (mock_select_turn) */
    struct mock_run runs[MOCK_MAX_RUNS];
    unsigned nruns;
    struct mock_tool tools[MOCK_MAX_TOOLS];
    size_t ntools;
    int include_usage;  /* chat: stream_options.include_usage */
    int json_mode;      /* gemini: responseMimeType application/json */
    json_t *out_schema; /* gemini: the JSON schema to fill in json_mode (borrowed) */
    char cwd[1024];     /* the agent's working directory found in the prompt, or "" */
    uint64_t conv_key;  /* identifies the conversation (first user text + session header) */
    unsigned prompt_tokens;
};

/* ---- reply plan (mock_plan.c) ---- */

enum mock_block_kind { MOCK_BLOCK_THINKING, MOCK_BLOCK_TEXT, MOCK_BLOCK_CALL };

struct mock_block {
    enum mock_block_kind kind;
    char *text;      /* thinking, text */
    char *tool_name; /* call: the advertised name, verbatim */
    enum mock_tool_kind tool_kind;
    json_t *args;    /* call, function tools: the argument object (owned) */
    char *input;     /* call, custom tools (apply_patch): the freeform input */
    char *args_json; /* call: args serialised compactly, or a copy of input */
    char id[48];     /* call id */
};

#define MOCK_MAX_BLOCKS 16

struct mock_reply {
    int error_status;
    int retry_after_s;
    const char *error_message; /* borrowed from the scenario or static */
    struct mock_block blocks[MOCK_MAX_BLOCKS];
    size_t nblocks;
    int has_calls;
    json_t *json_value; /* gemini json_mode: the filled schema (owned) */
    unsigned turn;      /* the turn index answered */
    unsigned prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens;
    struct mock_pacing pacing;
    char id[48]; /* message / response id */
};

struct mock_errcount; /* per (conversation, turn) failure counters for error_times */

/* Builds the reply for `view` from `sc`. Counters may be NULL (then error_times is ignored).
 * @return 0 or EVOLVE_ENOMEM. */
int mock_plan(struct mock_reply *out, const struct mock_scenario *sc, const struct mock_view *view,
              struct mock_errcount *counters, uint64_t seq);
void mock_reply_clear(struct mock_reply *r);

struct mock_errcount *mock_errcount_new(void);
void mock_errcount_free(struct mock_errcount *c);

/* ---- tools (mock_tools.c) ---- */

const struct mock_tool *mock_find_shell_tool(const struct mock_view *v);
const struct mock_tool *mock_find_write_tool(const struct mock_view *v);
const struct mock_tool *mock_find_edit_tool(const struct mock_view *v);
const struct mock_tool *mock_find_patch_tool(const struct mock_view *v);

/* Fills block `b` with a call that carries out `call` through the agent's own tools.
 * @return 0, EVOLVE_ENOTFOUND (no usable tool advertised) or EVOLVE_ENOMEM. */
int mock_resolve_call(struct mock_block *b, const struct mock_call *call,
                      const struct mock_view *v);

/* A plausible value for a JSON schema (enum's first value, minimum of ranges, ...). */
json_t *mock_fill_schema(const json_t *schema);

/* Finds the agent's working directory in the raw request text (markers each CLI prints:
 * "Primary working directory: ", "<cwd>", "Working directory: ", ...). */
void mock_find_cwd(const char *raw, size_t len, char *out, size_t size);

/* ---- paced output (mock_stream.c) ---- */

struct mock_chunk {
    char *data;
    size_t len;
    uint32_t due_ms; /* after the response starts */
};

struct mock_stream {
    struct mock_chunk *v;
    size_t n, cap;
    int status;
    const char *content_type;
    int retry_after_s;
    uint32_t clock_ms;
    double ms_per_token; /* 0: unpaced */
    int failed;          /* an allocation failed; the stream is unusable */
};

void mock_stream_init(struct mock_stream *s, const struct mock_pacing *p);
void mock_stream_free(struct mock_stream *s);
/* Appends "event: <event>\ndata: <json>\n\n" (no event line when event is NULL); steals obj. */
void mock_stream_sse(struct mock_stream *s, const char *event, json_t *obj);
void mock_stream_raw(struct mock_stream *s, const char *data, size_t len);
/* Appends `obj` serialised (steals it). */
void mock_stream_json(struct mock_stream *s, json_t *obj);
/* Advances the pacing clock by the time `tokens` take at the scenario's rate. */
void mock_stream_tokens(struct mock_stream *s, unsigned tokens);
/* A whole non-streamed reply: status, JSON body, due after ttft + all tokens. */
void mock_stream_error(struct mock_stream *s, int status, int retry_after_s, json_t *body);

/* Splits text into pieces of about `n` bytes on UTF-8 boundaries: calls fn for each piece. */
void mock_split(const char *text, size_t n, void (*fn)(const char *p, size_t len, void *ud),
                void *ud);

/* The deterministic tokenizer: ceil(bytes / 4), at least 1 for non-empty input. */
unsigned mock_tokens(size_t bytes);

/* ---- request log (mock_log.c) ---- */

struct MHD_Connection;

struct mock_log {
    FILE *f; /* NULL: no log */
    pthread_mutex_t lock;
};

/* Opens `path` for append (NULL: logging off). @return 0 or EVOLVE_EIO. */
int mock_log_open(struct mock_log *lg, const char *path);
/* Closes the file. Call once, also after a failed open. */
void mock_log_close(struct mock_log *lg);
/* Writes `entry` as one line and frees it. */
void mock_log_write(struct mock_log *lg, json_t *entry);
/* A new entry: seq, ts, method, path, query and headers, credentials redacted. */
json_t *mock_log_entry(struct MHD_Connection *conn, uint64_t seq, const char *method,
                       const char *url);
/* The reply as logged: status, blocks (text, thinking, tool_call with its input) or error. */
json_t *mock_log_reply(const struct mock_reply *r);
/* The request body, redacted. */
json_t *mock_log_body(const json_t *body);
/* The fixed model list for GET .../models (OpenAI/Anthropic shape, or Gemini's for v1beta). */
json_t *mock_models_list(const char *path);

/* ---- dialects ---- */

struct mock_dialect {
    const char *name;
    /* Fills the view from the parsed body (view->body is set). @return 0 or EVOLVE_EINVAL. */
    int (*inspect)(struct mock_view *view);
    /* Renders the reply (success or error) into `out`. */
    void (*render)(const struct mock_reply *r, const struct mock_view *view,
                   struct mock_stream *out);
};

extern const struct mock_dialect mock_dialect_anthropic;
extern const struct mock_dialect mock_dialect_chat;
extern const struct mock_dialect mock_dialect_responses;
extern const struct mock_dialect mock_dialect_gemini;     /* generateContent, unary */
extern const struct mock_dialect mock_dialect_gemini_sse; /* streamGenerateContent?alt=sse */
extern const struct mock_dialect mock_dialect_gemini_arr; /* streamGenerateContent, JSON array */

/* Helpers shared by the dialects (mock_plan.c). */
void mock_add_tool(struct mock_view *v, const char *name, const char *desc, json_t *schema,
                   enum mock_tool_kind kind);
/* Records the maximal runs of assistant items of `items` in v->runs. classify returns 0 for a
 * non-assistant item, 1 for an assistant item, 2 for an assistant item with a tool call, and
 * sets *text to the item's first text when it has one. */
void mock_collect_runs(struct mock_view *v, const json_t *items,
                       int (*classify)(const json_t *item, const char **text));
/* Sets v->turn: the runs that this mock produced — those with a tool call, without text, or
 * whose text is one of the scenario's texts. Runs an agent put in itself (qwen's "Got it.
 * Thanks for the context!" after its context message) do not advance the script. */
void mock_select_turn(struct mock_view *v, const struct mock_scenario *sc);
/* FNV-1a over a string, continuing from h (start with MOCK_FNV_INIT). */
#define MOCK_FNV_INIT 1469598103934665603ULL
uint64_t mock_fnv(uint64_t h, const char *s);
/* The text of a content value: a string, or the text fields of an array of parts. */
const char *mock_first_text(const json_t *content);
/* Default error message and type for a status. */
const char *mock_error_text(int status);

#endif
