/* providers/provider.h — the sandbox provider interface (DESIGN.md §6, spec/provider-apis.md §6,
 * STYLE.md R15): one `static const struct prov_ops` per provider, version-checked by prov_init();
 * an instance embeds `struct prov` as its first member, a sandbox handle embeds `struct prov_box`.
 *
 * The asynchronous contract (every op in struct prov_ops):
 *   - An op validates its arguments, starts the work and returns at once.
 *   - On 0, `done(payload, status, result)` runs EXACTLY ONCE, LATER (never inside the op call),
 *     on a thread the provider chooses: the worker behind the `defer` hook of struct prov_env, or
 *     the reactor thread for network providers. `status->code` is 0 or a negative EVOLVE_E*, with
 *     a one-line message naming the sandbox/path at fault (errors from other threads arrive as
 *     data, R4). `result` is op-specific (below) and owned by the callback from then on; it is
 *     NULL whenever status->code < 0.
 *   - On a negative return (bad arguments, shutting down), `done` never runs and the message is
 *     in evolve_error_last().
 * Providers whose work is synchronous (local) run it inside a deferred job: the caller supplies
 * `defer(ctx, fn, arg)` when creating the provider (the runtime points it at its worker pool;
 * tests may use an immediate queue drained by the test), so `done` still runs later.
 *
 * Processes: exec hands back plain file descriptors (struct prov_proc): stdout and stderr stream
 * the command's bytes until EOF, stdin (unless absent) is the command's standard input, and the
 * status descriptor yields exactly one struct prov_exit when the command has ended, then EOF. The
 * caller owns the descriptors and may put them in any event loop (src/io). A network provider
 * implements the same contract by pumping its streams into pipes on the reactor thread.
 *
 * Paths given to file ops are relative to the sandbox home (/home/user), or absolute under it.
 * Anything resolving outside (`..`, other absolute paths, symlinks leaving it) fails with
 * EVOLVE_EUNSAFE naming the path.
 *
 * Ownership: a `struct prov` is freed with ops->free (required); a box with ops->box_free; results
 * with the free function named at each op. Strings in specs are copied before the op returns;
 * the data buffer of write_file must stay valid until its `done` runs.
 * Threads: ops may be called from any thread; one box's ops are serialised by the provider. */
#ifndef EVOLVE_PROVIDERS_PROVIDER_H
#define EVOLVE_PROVIDERS_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evolve/common.h"

#define PROV_OPS_VERSION 1

/* Capability flags (struct prov_ops.caps): what a provider CAN do; callers test before asking,
 * and an op a provider lacks fails with EVOLVE_EUNSUPPORTED rather than being emulated. */
#define PROV_CAP_PAUSE         (1u << 0) /* pause/resume keep the same sandbox id */
#define PROV_CAP_INTERRUPT     (1u << 1) /* signal(SIGINT) reaches a running command */
#define PROV_CAP_SIGNAL_ANY    (1u << 2) /* any signal, not just TERM/KILL */
#define PROV_CAP_STDIN         (1u << 3) /* exec gives a writable stdin */
#define PROV_CAP_SPLIT_STREAMS (1u << 4)
#define PROV_CAP_BINARY_OUTPUT (1u << 5) /* output bytes arrive unmodified */
#define PROV_CAP_RECONNECT     (1u << 6) /* connect(id) reattaches to a sandbox */
#define PROV_CAP_NO_NETWORK    (1u << 7) /* create can cut the network */

struct prov;
struct prov_box;

/* Runs fn(arg) later, on some other thread or turn; never inline. Supplied by the embedder. */
typedef void (*prov_defer_fn)(void *ctx, void (*fn)(void *arg), void *arg);

/* What the runtime hands a provider at creation. Copied. */
struct prov_env {
    prov_defer_fn defer; /* required by synchronous providers (local) */
    void *defer_ctx;
};

/* The outcome an async op reports. */
struct prov_status {
    int code;          /* 0 or a negative EVOLVE_E* */
    char message[512]; /* "" on success; else one line naming the input at fault */
};

typedef void (*prov_done_cb)(void *payload, const struct prov_status *status, void *result);

/* A provider instance: embedded FIRST in each implementation's struct (R15). */
struct prov {
    const struct prov_ops *ops;
    struct prov_env env;
};

/* A sandbox handle: embedded FIRST in each implementation's box struct. */
struct prov_box {
    struct prov *prov;
    char id[64]; /* provider's sandbox id, e.g. "local-3f9c..." */
};

/* Creating (or reconnecting to) a sandbox. */
struct prov_create_spec {
    unsigned int version;    /* PROV_CREATE_SPEC_VERSION */
    const char *const *envp; /* "KEY=VALUE", NULL-terminated, merged into every exec; or NULL */
    bool no_network;         /* cut the network (PROV_CAP_NO_NETWORK); create only */
};
#define PROV_CREATE_SPEC_VERSION 1
#define PROV_CREATE_SPEC_INIT                                                                      \
    {                                                                                              \
        .version = PROV_CREATE_SPEC_VERSION                                                        \
    }

#define PROV_EXEC_BACKGROUND 0x1u /* stdin is /dev/null; output still streams on the fds */
#define PROV_EXEC_NO_STDIN   0x2u /* stdin is /dev/null; stdin_fd is -1 */

/* One command. The prompt travels as an argv element: there is no shell unless argv asks. */
struct prov_exec_spec {
    unsigned int version;    /* PROV_EXEC_SPEC_VERSION */
    const char *const *argv; /* required, NULL-terminated; argv[0] is looked up in PATH */
    const char *const *envp; /* "KEY=VALUE" over the sandbox's environment; or NULL */
    const char *cwd;         /* as seen inside the sandbox; NULL = /home/user/workspace */
    unsigned int flags;      /* PROV_EXEC_* */
};
#define PROV_EXEC_SPEC_VERSION 1
#define PROV_EXEC_SPEC_INIT                                                                        \
    {                                                                                              \
        .version = PROV_EXEC_SPEC_VERSION                                                          \
    }

/* A started command. The descriptors are the caller's (CLOEXEC, blocking; set O_NONBLOCK as
 * needed); -1 when absent. prov_proc_free closes those still >= 0: set a field to -1 after
 * taking ownership of it elsewhere. */
struct prov_proc {
    uint32_t id;   /* for ops->signal */
    long pid;      /* inside the sandbox (its own pid namespace under bubblewrap) */
    int stdin_fd;  /* write end */
    int stdout_fd; /* read end */
    int stderr_fd; /* read end */
    int status_fd; /* read end: one struct prov_exit, then EOF */
};

/* A command's end: `code` is its exit code, or 128 + signal when a signal ended it (then
 * `signo` is that signal, else 0). Layout identical to the wire record (sandboxd_proto.h). */
struct prov_exit {
    int32_t code;
    int32_t signo;
};

struct prov_box_info {
    char id[64];
    char state[16];       /* "running" (owner alive), "detached", "orphaned" (owner died) */
    long long created_ms; /* wall clock, ms since the epoch */
    long owner_pid;       /* 0 when detached */
};

struct prov_list {
    size_t count;
    struct prov_box_info *items;
};

enum prov_dirent_type { PROV_DT_FILE, PROV_DT_DIR, PROV_DT_SYMLINK, PROV_DT_OTHER };

struct prov_dirent {
    char *name;
    enum prov_dirent_type type;
    uint64_t size;
    unsigned int mode; /* permission bits */
    long long mtime_ms;
};

struct prov_dir {
    size_t count;
    struct prov_dirent *items; /* sorted by name */
};

struct prov_buf {
    unsigned char *data; /* NUL-terminated for convenience (not counted in len) */
    size_t len;
};

/* The vtable. Each op: see the contract at the top. `result` types are named per op. */
struct prov_ops {
    unsigned int version; /* PROV_OPS_VERSION */
    const char *name;     /* "local", "e2b", "daytona", "modal" */
    unsigned int caps;    /* PROV_CAP_* */

    /* result: struct prov_box * (free with box_free) */
    int (*create)(struct prov *p, const struct prov_create_spec *spec, prov_done_cb done,
                  void *payload);
    /* result: struct prov_box *, reattached to sandbox `id` */
    int (*connect)(struct prov *p, const char *id, const struct prov_create_spec *spec,
                   prov_done_cb done, void *payload);
    /* result: NULL. Freeze / thaw every process of the sandbox; the id stays the same. */
    int (*pause)(struct prov_box *box, prov_done_cb done, void *payload);
    int (*resume)(struct prov_box *box, prov_done_cb done, void *payload);
    /* result: NULL. Ends every process and destroys the sandbox; the box is then only freed. */
    int (*kill)(struct prov_box *box, prov_done_cb done, void *payload);
    /* result: struct prov_list * (free with prov_list_free) */
    int (*list)(struct prov *p, prov_done_cb done, void *payload);
    /* result: struct prov_proc * (free with prov_proc_free). Completes when the command has
     * started (or failed to: EVOLVE_ENOTFOUND for a missing program); its end arrives on
     * status_fd. A PROV_EXEC_BACKGROUND command is the same with stdin at /dev/null. */
    int (*exec)(struct prov_box *box, const struct prov_exec_spec *spec, prov_done_cb done,
                void *payload);
    /* result: NULL. Sends `signo` to the command's process group. */
    int (*signal)(struct prov_box *box, uint32_t proc_id, int signo, prov_done_cb done,
                  void *payload);
    /* result: NULL. Creates parent directories; replaces the file atomically. */
    int (*write_file)(struct prov_box *box, const char *path, const void *data, size_t len,
                      prov_done_cb done, void *payload);
    /* result: struct prov_buf * (free with prov_buf_free) */
    int (*read_file)(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
    /* result: struct prov_dir * (free with prov_dir_free) */
    int (*list_dir)(struct prov_box *box, const char *path, prov_done_cb done, void *payload);
    /* result: char * URL reaching `port` inside the sandbox (free with free()) */
    int (*get_host)(struct prov_box *box, unsigned int port, prov_done_cb done, void *payload);
    /* Releases a handle without destroying the sandbox (it can be connected to again). Must not
     * race with an op on the same box. Synchronous; NULL is a no-op. */
    void (*box_free)(struct prov_box *box);
    /* Required. Frees the provider; every box must have been freed first. */
    void (*free)(struct prov *p);
};

/* Checks `ops` (version, name, free and every op present) and fills `p`. EVOLVE_EINVAL names the
 * provider and the missing member. @thread any */
int prov_init(struct prov *p, const struct prov_ops *ops, const struct prov_env *env);

static inline bool prov_can_pause(const struct prov *p)
{
    return (p->ops->caps & PROV_CAP_PAUSE) != 0;
}

static inline bool prov_can_interrupt(const struct prov *p)
{
    return (p->ops->caps & PROV_CAP_INTERRUPT) != 0;
}

/* Result destructors; NULL is a no-op. */
void prov_proc_free(struct prov_proc *proc);
void prov_list_free(struct prov_list *list);
void prov_dir_free(struct prov_dir *dir);
void prov_buf_free(struct prov_buf *buf);

/* Reads the exit record from a status descriptor (blocking; retries EINTR). Returns 0, or
 * EVOLVE_EIO when the descriptor ended without a record (the sandbox died). @thread any */
int prov_exit_read(int status_fd, struct prov_exit *out);

#endif
