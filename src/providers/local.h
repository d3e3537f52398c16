/* providers/local.h — the `local` sandbox provider: its synchronous internal API and the
 * constructor of its async vtable adapter (docs/internals/local-provider.md).
 *
 * A sandbox is `$EVOLVE_HOME/sandboxes/<id>/` (EVOLVE_HOME defaults to ~/.evolve) holding
 * `sandbox.meta` (owner record), `daemon.log` and `home/user/workspace/{context,scripts,temp,
 * output}`. Its processes are children of ONE evolve-sandboxd per sandbox, started under
 * bubblewrap when bubblewrap works (home bound at /home/user, system dirs read-only, private /tmp
 * and /proc, own pid namespace, optional --unshare-net), else as a plain process with HOME and
 * cwd set (said once on stderr), or so on purpose with isolation "none".
 *
 * Ownership: prov_local_open -> prov_local_close; a box from create/connect is the caller's,
 * released by prov_local_box_free (detaches: the daemon and its commands end, files stay) or
 * destroyed by prov_local_kill then freed. Results as in providers/provider.h.
 * Threads: every function may be called from any thread and blocks (fork, socket round trip,
 * file I/O): call them from a worker, never from the reactor. One box's calls are serialised by
 * its lock; box_free must not race with other calls on that box. The sandbox daemon dies with
 * the THREAD that created it (PR_SET_PDEATHSIG): create/connect from a long-lived thread. */
#ifndef EVOLVE_PROVIDERS_LOCAL_H
#define EVOLVE_PROVIDERS_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "providers/provider.h"

enum prov_isolation {
    PROV_ISO_AUTO = 0, /* bubblewrap when it works, else a plain process (said once) */
    PROV_ISO_BWRAP,    /* bubblewrap or fail with EVOLVE_EUNSUPPORTED */
    PROV_ISO_NONE,     /* plain process group, HOME and cwd set: trusted workloads, comparison */
};

struct prov_local_opts {
    unsigned int version;          /* PROV_LOCAL_OPTS_VERSION */
    const char *home;              /* NULL: $EVOLVE_HOME, else $HOME/.evolve. Copied. */
    enum prov_isolation isolation; /* 0: $EVOLVE_ISOLATION (auto|bwrap|none), else auto */
    const char *freezer_root;      /* NULL: /sys/fs/cgroup/freezer; "": never use a cgroup */
    const char *sandboxd;          /* NULL: $EVOLVE_SANDBOXD, next to /proc/self/exe, install */
    /* Extra host directories bound read-only at the same path inside bubblewrap sandboxes
     * (e.g. where agent CLIs are installed outside /usr and /opt), NULL-terminated, absolute,
     * each must exist. NULL: $EVOLVE_SANDBOX_BINDS, a colon-separated list. Copied. */
    const char *const *ro_binds;
};
#define PROV_LOCAL_OPTS_VERSION 1
#define PROV_LOCAL_OPTS_INIT                                                                       \
    {                                                                                              \
        .version = PROV_LOCAL_OPTS_VERSION                                                         \
    }

struct prov_local;
struct prov_local_box;

/* Opens the provider: resolves the root and the daemon binary, probes bubblewrap once per
 * process. EVOLVE_EINVAL (bad opts), EVOLVE_ENOTFOUND (no evolve-sandboxd),
 * EVOLVE_EUNSUPPORTED (isolation bwrap but bubblewrap does not work). */
int prov_local_open(struct prov_local **out, const struct prov_local_opts *opts);
void prov_local_close(struct prov_local *pl);

/* True when bubblewrap works here (probed once per process, running `bwrap --unshare-pid ...
 * true`); `*path_out` (may be NULL) gets its path. */
bool prov_local_bwrap_works(const char **path_out);

/* "bwrap" or "none": the isolation this provider's sandboxes get. */
const char *prov_local_mode(const struct prov_local *pl);
/* $EVOLVE_HOME/sandboxes, the directory holding the sandboxes. Borrowed. */
const char *prov_local_root(const struct prov_local *pl);

/* Creates a sandbox (id "local-" + 16 random hex) and starts its daemon. */
int prov_local_create(struct prov_local_box **out, struct prov_local *pl,
                      const struct prov_create_spec *spec);
/* Reattaches to sandbox `id`, starting a new daemon (the old one, if any survived, is killed).
 * EVOLVE_ENOTFOUND (no such sandbox), EVOLVE_EBUSY (another live handle owns it). */
int prov_local_connect(struct prov_local_box **out, struct prov_local *pl, const char *id,
                       const struct prov_create_spec *spec);

const char *prov_local_box_id(const struct prov_local_box *b);
/* The host directory that commands see as /home/user. Borrowed. */
const char *prov_local_box_home(const struct prov_local_box *b);
/* "bwrap" or "none". */
const char *prov_local_box_mode(const struct prov_local_box *b);
/* "cgroup" (v1 freezer) or "signals" (SIGSTOP/SIGCONT per process group). */
const char *prov_local_box_pause_mode(const struct prov_local_box *b);
/* The host pid of the sandbox's top process (bwrap or the daemon). */
long prov_local_box_daemon_pid(const struct prov_local_box *b);

/* Starts a command; see struct prov_exec_spec. EVOLVE_ENOTFOUND (program not found),
 * EVOLVE_EBUSY (paused), EVOLVE_ESHUTDOWN (killed), EVOLVE_EIO (the daemon died). */
int prov_local_exec(struct prov_proc **out, struct prov_local_box *b,
                    const struct prov_exec_spec *spec);
/* EVOLVE_ENOTFOUND when the command has already ended. */
int prov_local_signal(struct prov_local_box *b, uint32_t proc_id, int signo);
int prov_local_pause(struct prov_local_box *b);
int prov_local_resume(struct prov_local_box *b);
/* Ends every process, removes the cgroup and the directory. The box is then only freed. */
int prov_local_kill(struct prov_local_box *b);
void prov_local_box_free(struct prov_local_box *b);

/* Every sandbox under the root, sorted by id. */
int prov_local_list(struct prov_list **out, struct prov_local *pl);
/* Finds sandboxes whose owner process died (pid reuse guarded by its start time), kills what
 * is left of their processes and removes their directories. `*reaped_out` (may be NULL) gets
 * how many. Sandboxes detached on purpose (box_free) and live owners are left alone. */
int prov_local_reap_orphans(struct prov_local *pl, size_t *reaped_out);

/* Files, confined to the sandbox home (see provider.h). EVOLVE_EUNSAFE on an escape,
 * EVOLVE_ENOTFOUND on a missing path. */
int prov_local_write_file(struct prov_local_box *b, const char *path, const void *data, size_t len);
int prov_local_read_file(struct prov_buf **out, struct prov_local_box *b, const char *path);
int prov_local_list_dir(struct prov_dir **out, struct prov_local_box *b, const char *path);
/* "http://127.0.0.1:<port>": the sandbox shares the host's network namespace unless cut. */
int prov_local_get_host(char **out, struct prov_local_box *b, unsigned int port);

/* The async vtable over the functions above: each op runs as one job through env->defer
 * (required) and calls `done` from that job. `opts` as for prov_local_open. */
int prov_local_new(struct prov **out, const struct prov_local_opts *opts,
                   const struct prov_env *env);
/* The synchronous provider behind a vtable instance made by prov_local_new. Borrowed. */
struct prov_local *prov_local_from(struct prov *p);
/* The synchronous box behind a box delivered by the vtable's create/connect. Borrowed. */
struct prov_local_box *prov_local_box_from(struct prov_box *box);

/* --- internal to src/providers/local*.c --- */

/* Confined file access under `home` (a host directory). `path` as for the file ops. */
int prov_local_fs_write(const char *home, const char *path, const void *data, size_t len);
int prov_local_fs_read(struct prov_buf **out, const char *home, const char *path);
int prov_local_fs_list(struct prov_dir **out, const char *home, const char *path);
/* Tests: resolve by walking components with O_NOFOLLOW even where openat2 exists. */
void prov_local_fs_force_walk(bool on);

#endif
