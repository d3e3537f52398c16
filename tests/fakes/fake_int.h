/* fake_int.h — internals shared by tests/fakes/*.c: the server, sandboxes as directories,
 * commands as local processes with a pump thread each. */
#ifndef EVOLVE_TEST_FAKE_INT_H
#define EVOLVE_TEST_FAKE_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "fakes/fakes.h"

#define FAKE_MAX_SBX 16384

struct fsbx;

struct fproc {
    struct ts_fake *f;
    struct fsbx *sb;
    pid_t pid;
    int out_fd, err_fd, in_fd;
    pthread_t pump;
    uint64_t deadline_ms; /* 0 = none (E2B Connect-Timeout-Ms) */
    char cmd_id[40];      /* Daytona command id */
    /* guarded by f->mu */
    char *q; /* queued output for the subscriber: records [stream 1 byte][len 4][bytes] */
    size_t qlen, qcap;
    int subscribers;
    bool retain; /* keep all output (Daytona logs) */
    char *all[2];
    size_t all_len[2], all_cap[2];
    bool exited;
    int exit_code; /* -1 when a signal ended it (then signo) */
    int signo;
    uint64_t end_ms;
};

struct fsbx {
    char id[40];
    char token[40];
    char root[700]; /* host dir; the sandbox's /home/user is root + "/home/user" */
    json_t *meta, *env;
    json_t *sessions; /* Daytona: {sessionId: {cmdId: pid}} */
    int state;        /* 0 running, 1 paused, 2 gone */
    uint64_t created_ms, deadline_ms;
    unsigned gets; /* Daytona: GETs seen, for the creating -> started flip */
    struct fproc **procs;
    size_t nprocs;
};

struct ts_fake {
    enum ts_fake_kind kind;
    struct ts_fake_opts o;
    struct MHD_Daemon *api, *data;
    unsigned api_port, data_port;
    char api_url[64], data_url[64], dir[512];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    unsigned faults[TS_FAULT_COUNT];
    struct fsbx *sbx[FAKE_MAX_SBX];
    size_t nsbx;
    uint64_t seq;
    struct ts_fake_stats st;
};

/* One request: the accumulated body and where it arrived. */
struct freq {
    struct ts_fake *f;
    struct MHD_Connection *c;
    const char *method, *url;
    bool data_port;
    char *body;
    size_t len, cap;
};

/* Per-kind request handlers (e2b_fake.c, daytona_fake.c). */
enum MHD_Result fake_e2b_handle(struct freq *r);
enum MHD_Result fake_daytona_handle(struct freq *r);

/* Replies; body copied. ctype NULL = application/json. */
enum MHD_Result fake_reply(struct freq *r, unsigned status, const char *ctype, const void *body,
                           size_t len);
enum MHD_Result fake_reply_json(struct freq *r, unsigned status, json_t *j); /* steals j */
const char *fake_header(struct freq *r, const char *name);
const char *fake_query(struct freq *r, const char *name);

/* Takes one armed fault; true when it was armed. Locks f->mu. */
bool fake_take_fault(struct ts_fake *f, enum ts_fault fault);

/* New sandbox (under f->mu): id with prefix, directories made. NULL when full. */
struct fsbx *fake_sbx_new(struct ts_fake *f, const char *prefix);
/* Finds a sandbox by id in any state (under f->mu). */
struct fsbx *fake_sbx_find(struct ts_fake *f, const char *id);
/* Kills its processes and removes its files; state gone (under f->mu). */
void fake_sbx_destroy(struct ts_fake *f, struct fsbx *sb);
/* SIGSTOP/SIGCONT to its processes (under f->mu). */
void fake_sbx_signal_all(struct fsbx *sb, int sig);

/* Maps a sandbox path (absolute under /home/user, or relative to it) to a host path. -1 when it
 * leaves /home/user. */
int fake_map_path(const struct fsbx *sb, const char *path, char *out, size_t size);

/* Starts a command (under f->mu): argv[0] looked up in PATH, env = sandbox env + envs (json
 * object or NULL), cwd a sandbox path. want_stdin keeps a stdin pipe. NULL + errno on failure. */
struct fproc *fake_spawn(struct ts_fake *f, struct fsbx *sb, const char *const *argv, json_t *envs,
                         const char *cwd, bool want_stdin, bool retain);
struct fproc *fake_proc_by_pid(struct fsbx *sb, pid_t pid);

/* mkdir -p. */
int fake_mkdirs(const char *path, mode_t mode);

char *fake_b64(const void *data, size_t len);
long fake_unb64(const char *in, unsigned char *out);

uint64_t fake_now_ms(void);
void fake_sleep_ms(unsigned ms);

#endif
