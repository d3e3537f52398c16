/* evolve/session.h — one agent session in one sandbox: the C twin of the Evolve SDK object
 * (seed 002). Configure with evolve_options_t, then run prompts and commands, stream the events,
 * collect output files, checkpoint, pause, resume, kill.
 *
 * Ownership: evolve_new() hands the caller the session, released by evolve_free() (which kills
 * its sandbox unless evolve_options_t.keep_sandbox). A result from evolve_run() or
 * evolve_execute_command() is the caller's (evolve_result_free). Strings returned through
 * `char **out` are the caller's (free()). Strings passed in are copied before the call returns.
 * Threads: a session's calls may come from any thread; they are serialised per session. Callbacks
 * run on the runtime's worker threads and must not call evolve_run/evolve_execute_command of the
 * same session (they would wait for themselves: EVOLVE_EBUSY is returned). */
#ifndef EVOLVE_SESSION_H
#define EVOLVE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evolve/common.h"
#include "evolve/event.h"

EVOLVE_BEGIN_DECL

typedef struct evolve_runtime evolve_runtime_t;
typedef struct evolve evolve_t;                           /**< a session (opaque) */
typedef struct evolve_result evolve_result_t;             /**< a run's or command's result */
typedef struct evolve_event evolve_event_t;               /**< one event (opaque, refcounted) */
typedef struct evolve_subscription evolve_subscription_t; /**< a subscriber */

/** Session configuration. Frozen at the first operation, as the reference does. */
typedef struct evolve_options {
    unsigned int version;           /**< EVOLVE_OPTIONS_VERSION */
    const char *agent;              /**< "claude" (default), "codex", "gemini", ... */
    const char *model;              /**< NULL: the agent's default */
    const char *api_key;            /**< model provider key; NULL: the agent's env var */
    const char *base_url;           /**< model endpoint; NULL: env var or vendor default */
    const char *provider;           /**< sandbox provider: NULL/"local", "e2b", "daytona" */
    const char *workspace_mode;     /**< "knowledge" (default) or "swe" */
    const char *system_prompt;      /**< appended to the agent's instruction file */
    const char *schema_json;        /**< JSON Schema of output/result.json; NULL: none */
    const char *session_tag_prefix; /**< NULL: "evolve" */
    const char *session_id;         /**< attach to this existing sandbox instead of creating one */
    const char *store_root;         /**< checkpoint store directory; NULL with storage: default */
    bool storage;                   /**< checkpoint after each successful foreground run */
    bool no_network;                /**< local provider: cut the sandbox's network */
    bool keep_sandbox;              /**< evolve_free() detaches instead of killing */
    const char *const *env;         /**< extra "NAME=value" for every process; NULL-terminated */
    const char *session_log_dir;    /**< NULL: ~/.evolve-sdk/observability/sessions */
    bool ask_permission;            /**< agents that support it (autohand) ask before risky
                                         tools; answer with evolve_write_stdin() */
} evolve_options_t;

#define EVOLVE_OPTIONS_VERSION 1
#define EVOLVE_OPTIONS_INIT                                                                        \
    {                                                                                              \
        .version = EVOLVE_OPTIONS_VERSION                                                          \
    }
EVOLVE_API int evolve_options_init(evolve_options_t *opts, unsigned int version);

/** Creates a session on `rt` (which must outlive it). Nothing starts until the first operation.
 *  @return 0, EVOLVE_EINVAL (bad options: unknown agent, unknown provider, invalid schema), or
 *          EVOLVE_ENOMEM. @thread any */
EVOLVE_API int evolve_new(evolve_t **out, evolve_runtime_t *rt, const evolve_options_t *opts);

/** Ends the session: interrupts an active operation, kills the sandbox (or detaches with
 *  keep_sandbox), closes the session log, and frees. No callback starts after it returns.
 *  NULL is a no-op. @thread any thread that is not a runtime worker */
EVOLVE_API void evolve_free(evolve_t *ev);

/** Options of one run. */
typedef struct evolve_run_options {
    unsigned int version;           /**< EVOLVE_RUN_OPTIONS_VERSION */
    const char *prompt;             /**< required */
    uint64_t timeout_ms;            /**< 0: 3,600,000 */
    bool background;                /**< return after the start handshake */
    const char *from;               /**< restore this checkpoint id (or "latest") first */
    const char *checkpoint_comment; /**< comment of the auto-checkpoint */
    int resume;                     /**< -1/0 default: continue the conversation; 1 yes; 2 no */
} evolve_run_options_t;

#define EVOLVE_RUN_OPTIONS_VERSION 1
#define EVOLVE_RUN_OPTIONS_INIT                                                                    \
    {                                                                                              \
        .version = EVOLVE_RUN_OPTIONS_VERSION                                                      \
    }
#define EVOLVE_RESUME_DEFAULT 0
#define EVOLVE_RESUME_YES     1
#define EVOLVE_RESUME_NO      2

/** Runs the agent. Foreground: returns when the agent exits (or times out: exit code -1). On
 *  a timeout or failure the result still arrives with its exit code; only failures to start
 *  return an error. Background: returns once the process started ("Background process started
 *  with ID <n>"); completion arrives as a lifecycle event.
 *  @return 0, EVOLVE_EBUSY ("Agent is already running. ..."), EVOLVE_EINVAL (bad options, 'from'
 *          with an attached session), EVOLVE_ENOTFOUND (checkpoint), or an error from the
 *          sandbox provider. @thread any */
EVOLVE_API int evolve_run(evolve_result_t **out, evolve_t *ev, const evolve_run_options_t *opts);

typedef struct evolve_command_options {
    unsigned int version; /**< EVOLVE_COMMAND_OPTIONS_VERSION */
    uint64_t timeout_ms;  /**< 0: 3,600,000 */
    bool background;
} evolve_command_options_t;
#define EVOLVE_COMMAND_OPTIONS_VERSION 1
#define EVOLVE_COMMAND_OPTIONS_INIT                                                                \
    {                                                                                              \
        .version = EVOLVE_COMMAND_OPTIONS_VERSION                                                  \
    }

/** Runs a shell command (`sh -c command`) in the sandbox's workspace. */
EVOLVE_API int evolve_execute_command(evolve_result_t **out, evolve_t *ev, const char *command,
                                      const evolve_command_options_t *opts);

/** Result accessors; strings are borrowed, valid until evolve_result_free(). */
EVOLVE_API int evolve_result_exit_code(const evolve_result_t *r);
EVOLVE_API const char *evolve_result_stdout(const evolve_result_t *r);
EVOLVE_API const char *evolve_result_stderr(const evolve_result_t *r);
EVOLVE_API const char *evolve_result_run_id(const evolve_result_t *r); /**< NULL for commands */
EVOLVE_API const char *evolve_result_sandbox_id(const evolve_result_t *r);
/** The CheckpointInfo JSON of the auto-checkpoint, or NULL when none was made. */
EVOLVE_API const char *evolve_result_checkpoint_json(const evolve_result_t *r);
/** The whole result as JSON {sandboxId, runId?, exitCode, stdout, stderr, checkpoint?}. */
EVOLVE_API const char *evolve_result_json(const evolve_result_t *r);
EVOLVE_API void evolve_result_free(evolve_result_t *r);

/** Writes `data` to the active run's stdin, for agents that keep it open (autohand's JSON-RPC
 *  replies, e.g. from evolve_autohand_permission_reply()). Small writes only: the bytes must fit
 *  in the pipe now.
 *  @return 0, EVOLVE_ENOTFOUND (no active run with an open stdin) or EVOLVE_EBUSY (the agent is
 *  not reading its stdin). @thread any */
EVOLVE_API int evolve_write_stdin(evolve_t *ev, const void *data, size_t len);

/** Interrupts the active operation (SIGINT to its process group, then SIGKILL after a grace
 *  period). @return 0 (also when nothing was running). */
EVOLVE_API int evolve_interrupt(evolve_t *ev);
/** Freezes / thaws every process of the sandbox. An active foreground run is interrupted first,
 *  as the reference does. @return 0, EVOLVE_EUNSUPPORTED (provider), EVOLVE_ENOTFOUND (none). */
EVOLVE_API int evolve_pause(evolve_t *ev);
EVOLVE_API int evolve_resume(evolve_t *ev);
/** Ends every process and destroys the sandbox; the next operation boots a new one. */
EVOLVE_API int evolve_kill(evolve_t *ev);
/** Attaches to another existing sandbox (interrupting the active operation). */
EVOLVE_API int evolve_set_session(evolve_t *ev, const char *sandbox_id);
/** The attached sandbox id, or NULL. Borrowed until the next call on this session. */
EVOLVE_API const char *evolve_get_session(evolve_t *ev);
/** status() of seed 002 as JSON: {sandboxId, sandbox, agent, activeProcessId, hasRun,
 *  timestamp}. */
EVOLVE_API int evolve_status(char **json_out, evolve_t *ev);
/** A URL reaching `port` inside the sandbox (boots one if needed). */
EVOLVE_API int evolve_get_host(char **url_out, evolve_t *ev, unsigned int port);
/** Uploads `data` to workspace/context/<path> (context) or workspace/<path> (files). */
EVOLVE_API int evolve_upload_context(evolve_t *ev, const char *path, const void *data, size_t len);
EVOLVE_API int evolve_upload_file(evolve_t *ev, const char *path, const void *data, size_t len);

/** Output files changed since the last run or command started, as JSON
 *  {files:{path: text-or-{base64}}, data, error?, rawData?} (seed 002 OutputResult); with a
 *  schema, output/result.json is validated into `data`. */
EVOLVE_API int evolve_get_output_files(char **json_out, evolve_t *ev, bool recursive);
/** Saves the output files under local directory `dir`; every path is confined to it ("..",
 *  absolute names and symlink escapes are refused with EVOLVE_EUNSAFE, nothing written outside).
 */
EVOLVE_API int evolve_save_local_dir(evolve_t *ev, const char *dir, bool recursive);

/** Checkpoints the sandbox now (needs storage and an active sandbox); CheckpointInfo JSON. */
EVOLVE_API int evolve_checkpoint(char **json_out, evolve_t *ev, const char *comment);

/** RunCost / SessionCost of seed 002 from the session's own usage events (no gateway). `run_id`
 *  NULL selects by `index` (1-based; negative from the end). */
EVOLVE_API int evolve_run_cost(char **json_out, evolve_t *ev, const char *run_id, int index);
EVOLVE_API int evolve_session_cost(char **json_out, evolve_t *ev);

/* ---- events ------------------------------------------------------------------------------- */

/** What a subscriber does when it falls behind by `capacity` events. */
typedef enum evolve_backpressure {
    EVOLVE_BACKPRESSURE_BLOCK = 0,   /**< the agent's output waits (its pipe fills) */
    EVOLVE_BACKPRESSURE_DROP_OLDEST, /**< old events are dropped; a GAP event says how many */
} evolve_backpressure_t;

typedef void (*evolve_event_cb)(const evolve_event_t *event, void *payload);

typedef struct evolve_subscribe_options {
    unsigned int version;     /**< EVOLVE_SUBSCRIBE_OPTIONS_VERSION */
    evolve_event_cb callback; /**< NULL: poll with evolve_subscription_poll() */
    void *payload;            /**< handed to callback untouched */
    uint32_t capacity;        /**< queued events; 0: 1024 */
    evolve_backpressure_t backpressure;
    uint32_t kinds; /**< bit set of (1u << evolve_event_kind_t); 0: all */
} evolve_subscribe_options_t;
#define EVOLVE_SUBSCRIBE_OPTIONS_VERSION 1
#define EVOLVE_SUBSCRIBE_OPTIONS_INIT                                                              \
    {                                                                                              \
        .version = EVOLVE_SUBSCRIBE_OPTIONS_VERSION                                                \
    }

/** Subscribes to the session's events (from now on). A callback runs on a worker, in order,
 *  never concurrently with itself. @return 0, EVOLVE_EINVAL, EVOLVE_ENOMEM. */
EVOLVE_API int evolve_subscribe(evolve_subscription_t **out, evolve_t *ev,
                                const evolve_subscribe_options_t *opts);
/** Waits up to timeout_ms for the next event of a poll subscription. The event is the caller's
 *  (evolve_event_unref). @return 0, EVOLVE_ETIMEDOUT, EVOLVE_EINVAL (callback subscription). */
EVOLVE_API int evolve_subscription_poll(evolve_subscription_t *sub, uint32_t timeout_ms,
                                        evolve_event_t **out);
/** Stops the subscription; no callback starts after it returns. NULL is a no-op. */
EVOLVE_API void evolve_subscription_free(evolve_subscription_t *sub);

EVOLVE_API evolve_event_kind_t evolve_event_kind(const evolve_event_t *e);
/** Monotonic per session, starting at 1, so a subscriber can resume from an offset. */
EVOLVE_API uint64_t evolve_event_seq(const evolve_event_t *e);
/** For content events: update.sessionUpdate; EVOLVE_UPDATE_TYPE_COUNT otherwise. */
EVOLVE_API evolve_update_type_t evolve_event_update_type(const evolve_event_t *e);
/** The event as JSON (OutputEvent, LifecycleEvent, {"stdout": ...}, {"gap": n}); borrowed. */
EVOLVE_API const char *evolve_event_json(const evolve_event_t *e, size_t *len_out);
EVOLVE_API void evolve_event_ref(const evolve_event_t *e);
EVOLVE_API void evolve_event_unref(const evolve_event_t *e);

EVOLVE_END_DECL

#endif
