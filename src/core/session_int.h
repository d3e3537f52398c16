/* core/session_int.h — the session's private structures, shared by session.c (public API and
 * the synchronous call mechanism), sandbox.c (the session actor: sandbox lifecycle and state
 * machine), proc.c (runs and commands) and output.c (output files). Not a module boundary. */
#ifndef EVOLVE_CORE_SESSION_INT_H
#define EVOLVE_CORE_SESSION_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "actors/actors.h"
#include "actors/bus.h"
#include "core/event.h"
#include "core/ledger.h"
#include "core/pump.h"
#include "core/sessionlog.h"
#include "evolve/session.h"
#include "evolve/storage.h"
#include "harness/harness.h"
#include "providers/provider.h"

#define SESS_HOME               "/home/user"
#define SESS_WORKDIR            "/home/user/workspace"
#define SESS_DEFAULT_TIMEOUT_MS 3600000u
#define SESS_OUTPUT_CAP         (16u << 20) /* accumulated stdout/stderr kept for the result */

enum sb_state { SB_STOPPED, SB_BOOTING, SB_READY, SB_RUNNING, SB_PAUSED, SB_ERROR, SB_COUNT };
enum ag_state { AG_IDLE, AG_RUNNING, AG_INTERRUPTED, AG_ERROR, AG_COUNT };

/* What a synchronous API call asks the actor to do. */
enum call_op {
    CALL_RUN,
    CALL_COMMAND,
    CALL_INTERRUPT,
    CALL_PAUSE,
    CALL_RESUME,
    CALL_KILL,
    CALL_SET_SESSION,
    CALL_STATUS,
    CALL_HOST,
    CALL_UPLOAD,
    CALL_OUTPUT,
    CALL_RUN_COST,
    CALL_SESSION_COST,
    CALL_CHECKPOINT,
    CALL_STDIN,
    CALL_CLOSE,
};

/* Message types of the session actor. */
enum sess_msg_type {
    MSG_CALL = 1,
    MSG_PROV_DONE,
    MSG_CHUNK,
    MSG_END,
    MSG_TIMEOUT,
    MSG_KILL_GRACE,
    MSG_WAKE,
    MSG_JOB_DONE,
};

/* A caller's request; lives on the caller's stack until `done`. */
struct call {
    struct act_msg hdr; /* first; free = NULL: the caller owns it */
    enum call_op op;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    int rc;
    char err[512];
    /* inputs */
    const char *text; /* prompt, command, sandbox id or upload path */
    const void *data; /* upload bytes */
    size_t len;
    bool context; /* upload: into context/ */
    evolve_run_options_t run;
    uint64_t timeout_ms;
    bool background;
    unsigned int port;
    bool recursive;
    int index;
    /* outputs */
    evolve_result_t *result;
    char *text_out;
    struct call *next; /* waiting for the sandbox to boot */
};

/* A provider op's completion, posted back to the actor. */
struct prov_done_msg {
    struct act_msg hdr;
    struct sess *s;
    int step;            /* what the actor was doing */
    uint64_t generation; /* box generation it belongs to */
    struct prov_status status;
    void *result;
    void *ctx; /* step-specific */
};

struct chunk_msg {
    struct act_msg hdr;
    uint64_t op_id;
    int stream;
    char *data;
    size_t len;
};

struct end_msg {
    struct act_msg hdr;
    uint64_t op_id;
    struct prov_exit exit;
    bool lost;
};

struct op_msg {
    struct act_msg hdr;
    uint64_t op_id;
};

struct line_events;

/* An event waiting for room on the bus (backpressure). */
struct pending_event {
    struct evolve_event *ev;
    uint64_t resume;
    struct pending_event *next;
};

/* The active run or command. */
struct proc_op {
    uint64_t id;
    bool is_run;
    bool background;
    struct call *call; /* the foreground caller, NULL once answered */
    char run_id[40];
    uint32_t proc_id; /* provider's id for signal */
    long pid;
    struct core_pump *pump;
    struct hns_parser *parser;
    struct hns_command cmd;
    size_t files_pending; /* config files still being written before exec */
    char *line;           /* partial stdout line */
    size_t line_len, line_cap;
    char *out, *err; /* accumulated, capped */
    size_t out_len, err_len;
    bool out_truncated, err_truncated;
    uint64_t timer_id, grace_timer_id;
    bool timed_out, interrupted, ended;
    struct call *interrupt_waiters;
    char error_tail[1024];  /* last error-update messages and stderr, for classification */
    struct line_events *le; /* the line being parsed (proc.c), NULL between lines */
    int stdin_fd;           /* kept open for evolve_write_stdin (stdin_keep_open), else -1 */
    size_t error_tail_len;
};

/* The public session object. Fields above `st` are set in evolve_new and read-only after. */
struct evolve {
    uint32_t magic;
    evolve_runtime_t *rt;
    struct act_actor *actor;
    struct act_bus *bus;
    const struct hns_agent *agent;
    char *model, *api_key, *base_url, *provider_name, *workspace_mode, *system_prompt;
    json_t *schema;
    char *tag_prefix, *attach_id, *store_root, *log_dir;
    char **env;
    bool storage, no_network, keep_sandbox, ask_permission;
    evolve_store_t *store; /* open when storage is on */
    atomic_uint_fast64_t seq;
    pthread_mutex_t id_lock; /* guards sandbox_id for evolve_get_session */
    char sandbox_id[64];
    struct sess *st; /* actor state, touched only by the actor */
};

/* The actor's state. */
struct sess {
    struct evolve *ev;
    struct prov *prov;
    struct prov_box *box;
    uint64_t box_gen; /* bumps when the box changes, to drop stale completions */
    enum sb_state sb;
    enum ag_state ag;
    bool has_run;
    bool booting;
    char tag[64];
    char prev_tag[64];
    struct call *boot_waiters;
    size_t setup_pending; /* boot: workspace files still being written */
    int setup_rc;
    char setup_err[512];
    struct core_sessionlog *log;
    struct core_ledger *ledger;
    int64_t last_op_ms; /* wall clock when the last run or command started */
    uint64_t op_counter;
    struct proc_op *active;
    struct pending_event *pend_head, *pend_tail;
    bool wake_armed;
    bool closed;
    size_t inflight;          /* provider ops started and not yet completed */
    struct call *after_idle;  /* calls waiting for the active operation to end */
    struct call *close_call;  /* evolve_free waiting for in-flight work to finish */
    size_t jobs;              /* worker jobs (checkpoint, restore) not yet reported back */
    char last_checkpoint[96]; /* lineage: parent of the next checkpoint */
    char *restore_from;       /* boot: restore this checkpoint into the fresh sandbox */
};

/* session.c */
void sess_call_complete(struct call *c, int rc);
int sess_call_fail(struct call *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* sandbox.c */
void sess_behaviour(struct act_actor *self, void *state, struct act_msg *msg);
void sess_state_free(void *state);
void sess_publish(struct sess *s, struct evolve_event *ev);
void sess_lifecycle(struct sess *s, enum sb_state sb, enum ag_state ag, const char *reason);
void sess_set_state(struct sess *s, enum sb_state sb, enum ag_state ag);
/* Runs `c` once a sandbox is ready (booting one when needed); fails it if boot fails. */
void sess_with_sandbox(struct sess *s, struct call *c);
void sess_dispatch_ready(struct sess *s, struct call *c);
void sess_prov_done(void *payload, const struct prov_status *st, void *result);
/* A completion message for a provider op about to start (counted in s->inflight); NULL on OOM. */
struct prov_done_msg *sess_prov_msg(struct sess *s, int step, void *ctx);
/* Undoes sess_prov_msg when the op refused to start (its done will never run). */
void sess_prov_msg_cancel(struct sess *s, struct prov_done_msg *m);
/* Writes `data` (malloc'd; freed by the step's completion handler, reachable from ctx) to
 * `path` under the sandbox home. */
int sess_start_write(struct sess *s, int step, const char *path, char *data, size_t len, void *ctx);
/* After the active operation ended: re-dispatches parked calls. */
void sess_after_op(struct sess *s);
void sess_handle_call(struct sess *s, struct call *c);
void sess_result_set_checkpoint(evolve_result_t *r, const char *checkpoint_json);
evolve_result_t *sess_result_new(int exit_code, char *out, char *err, const char *run_id,
                                 const char *sandbox_id, const char *checkpoint_json);

/* proc.c */
void sess_start_run(struct sess *s, struct call *c);
void sess_start_command(struct sess *s, struct call *c);
void sess_on_chunk(struct sess *s, struct chunk_msg *m);
void sess_on_end(struct sess *s, struct end_msg *m);
void sess_on_timeout(struct sess *s, struct op_msg *m);
void sess_on_kill_grace(struct sess *s, struct op_msg *m);
void sess_interrupt(struct sess *s, struct call *c, int signo);
void sess_write_stdin(struct sess *s, struct call *c);
void sess_proc_prov_done(struct sess *s, struct prov_done_msg *m);
void sess_flush_pending(struct sess *s);

/* checkpoint.c */
/* A CPU/disk job for a worker: fn runs there, then done(s, job) runs back on the actor. */
struct sess_job {
    struct act_msg hdr;
    struct sess *s;
    void (*fn)(struct sess_job *job);
    void (*done)(struct sess *s, struct sess_job *job);
    int rc;
    char err[512];
    void *ctx;
    evolve_checkpoint_info_t *info;
    char *home;
    char *id;
    char *comment;
};
int sess_job_start(struct sess *s, struct sess_job *job);
/* After a successful foreground run: checkpoint, then answer `c` (result already built). */
void sess_auto_checkpoint(struct sess *s, struct call *c);
void sess_checkpoint_call(struct sess *s, struct call *c);
/* Boot with restore: the sandbox was created; restore s->restore_from into it, then `then`. */
void sess_restore_into_box(struct sess *s, void (*then)(struct sess *s, int rc, const char *err));
/* Resolves c->run.from ("latest" included) and checks storage; returns 0 or fails the call. */
int sess_prepare_restore(struct sess *s, struct call *c);
/* The sandbox home on this host, or NULL with the error set (remote providers). */
const char *sess_host_home(struct sess *s);

/* output.c */
void sess_output_files(struct sess *s, struct call *c);
void sess_output_prov_done(struct sess *s, struct prov_done_msg *m);

/* Provider steps (prov_done_msg.step). */
enum sess_step {
    STEP_CREATED = 1,
    STEP_SETUP_WRITE,
    STEP_CMD_FILE_WRITTEN,
    STEP_EXEC_STARTED,
    STEP_SIGNAL_SENT,
    STEP_PAUSED,
    STEP_RESUMED,
    STEP_KILLED,
    STEP_HOST,
    STEP_UPLOADED,
    STEP_OUT_LIST,
    STEP_OUT_READ,
    STEP_STAGE_LIST,
    STEP_STAGE_READ,
    STEP_STAGE_WRITE,
};

#endif
