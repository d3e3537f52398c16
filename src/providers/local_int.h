/* providers/local_int.h — the structures shared by local.c, local_daemon.c and local_ops.c.
 * Not for other modules: they use providers/local.h. */
#ifndef EVOLVE_PROVIDERS_LOCAL_INT_H
#define EVOLVE_PROVIDERS_LOCAL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "providers/local.h"

struct prov_local {
    char *evolve_home;       /* $EVOLVE_HOME */
    char *root;              /* evolve_home/sandboxes */
    char *sandboxd;          /* the daemon binary */
    char *bwrap;             /* bubblewrap binary, NULL in mode none */
    char *freezer_root;      /* cgroup v1 freezer mount, NULL when not used */
    enum prov_isolation iso; /* resolved: PROV_ISO_BWRAP or PROV_ISO_NONE */
    char **ro_binds;         /* extra read-only binds (same path inside), NULL-terminated */
};

struct prov_local_box {
    struct prov_box base; /* first (R15); base.id is the sandbox id */
    struct prov_local *pl;
    pthread_mutex_t mu; /* serialises request/reply on ctl and the state below */
    char *dir;          /* root/<id> */
    char *home;         /* dir/home/user: /home/user inside */
    char *cgroup;       /* freezer_root/evolve/<id>, or NULL */
    char **envp;        /* create-time environment, copied, NULL-terminated */
    bool bwrap;         /* started under bubblewrap */
    bool no_network;
    bool killed;
    int ctl;               /* control socket, -1 when no daemon */
    pid_t child;           /* host pid of bwrap or the daemon; 0 when none */
    long long child_start; /* its start time (clock ticks since boot) */
    char pause_mode;       /* SBXD_PAUSE_CGROUP or SBXD_PAUSE_SIGNALS */
    uint32_t next_exec;
};

/* local_daemon.c. All take b->mu themselves except start/stop, which the caller holds it for. */
int prov_local_daemon_start(struct prov_local_box *b);
int prov_local_daemon_stop(struct prov_local_box *b);
int prov_local_daemon_exec(struct prov_proc **out, struct prov_local_box *b,
                           const struct prov_exec_spec *spec);
int prov_local_daemon_signal(struct prov_local_box *b, uint32_t proc_id, int signo);
int prov_local_daemon_pause(struct prov_local_box *b, bool pause);

/* local_owner.c: the owner record and cleanup, shared with local.c */
struct prov_local_meta {
    long owner_pid;        /* 0 when detached */
    long long owner_start; /* start time of owner_pid (clock ticks since boot) */
    long daemon_pid;       /* host pid of bwrap or the daemon */
    long long daemon_start;
    long long created_ms; /* wall clock */
    int network;          /* 0 when cut */
    char mode[16];        /* "bwrap" or "none" */
    char cgroup[1024];    /* "" when none */
};

int prov_local_meta_write(const struct prov_local_box *b, bool detached);
int prov_local_meta_read(struct prov_local_meta *m, const char *dir, const char *id);
/* True when `pid` runs and started at `start` (a reused pid is not mistaken for it). */
bool prov_local_pid_is(long pid, long long start);
/* SIGTERM, then SIGKILL after 2 s, to a daemon that outlived its owner. */
void prov_local_stop_stale(long pid, long long start);
/* rm -rf without following symlinks. */
int prov_local_remove_tree(const char *dir);
/* "local-" + lowercase hex. */
bool prov_local_id_is_valid(const char *id);
/* Start time of `pid` (field 22 of /proc/<pid>/stat), or -1 when it is gone or a zombie. */
long long prov_local_pid_start(pid_t pid);
/* SIGKILLs every task of a freezer cgroup and removes it (waits up to 2 s for it to empty;
 * one still busy then is remembered and retried by the next prov_local_reap_orphans). */
void prov_local_cgroup_destroy(struct prov_local *pl, const char *cgroup);

#endif
