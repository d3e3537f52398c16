/* local.c — the `local` sandbox provider: opening it and the life of one sandbox.
 * Owns: resolving $EVOLVE_HOME, the daemon binary and the isolation mode; creating the layout
 *       `home/user/workspace/{context,scripts,temp,output}` and the freezer cgroup; create,
 *       connect, kill, detach, and the thin synchronous ops over the daemon and the files.
 * Does not own: the owner record, list and reaping (local_owner.c), the daemon protocol
 *       (local_daemon.c), file confinement (local_fs.c), the async adapter (local_ops.c).
 * Threads: any (see local.h). The only process-wide state is the once-only fallback notice. */
#include "providers/local_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

#ifndef EVOLVE_SANDBOXD_PATH
#define EVOLVE_SANDBOXD_PATH "/usr/local/libexec/evolve-sandboxd"
#endif
#define DEFAULT_FREEZER "/sys/fs/cgroup/freezer"

/* relaxed: only makes the fallback notice appear once; orders nothing else */
static atomic_bool fallback_said;

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *dup_printf(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return NULL;
    return strdup(buf);
}

static int mkdir_p(const char *path)
{
    char buf[4096];
    char *p;

    snprintf(buf, sizeof(buf), "%s", path);
    for (p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static char *find_sandboxd(const char *given)
{
    const char *env = getenv("EVOLVE_SANDBOXD");
    char self[PATH_MAX], cand[PATH_MAX + 32];
    ssize_t n;

    if (given && *given)
        return access(given, X_OK) == 0 ? strdup(given) : NULL;
    if (env && *env)
        return access(env, X_OK) == 0 ? strdup(env) : NULL;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        char *slash;

        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(cand, sizeof(cand), "%s/evolve-sandboxd", self);
            if (access(cand, X_OK) == 0)
                return strdup(cand);
        }
    }
    return access(EVOLVE_SANDBOXD_PATH, X_OK) == 0 ? strdup(EVOLVE_SANDBOXD_PATH) : NULL;
}

static int isolation_from_env(enum prov_isolation *out)
{
    const char *v = getenv("EVOLVE_ISOLATION");

    if (!v || !*v || !strcmp(v, "auto"))
        *out = PROV_ISO_AUTO;
    else if (!strcmp(v, "none"))
        *out = PROV_ISO_NONE;
    else if (!strcmp(v, "bwrap"))
        *out = PROV_ISO_BWRAP;
    else
        return core_error_set(EVOLVE_EINVAL, "EVOLVE_ISOLATION=%s: expected auto, bwrap or none",
                              v);
    return 0;
}

/* Copies the extra read-only binds (opts, else $EVOLVE_SANDBOX_BINDS split on ':'), checking
 * that each is an absolute path to an existing directory or file. */
static int load_binds(struct prov_local *pl, const char *const *given)
{
    const char *env = getenv("EVOLVE_SANDBOX_BINDS");
    char *list = NULL, *p, *next;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (!given && env && *env) {
        list = strdup(env);
        if (!list)
            return core_error_oom();
    }
    for (p = list; p || (given && given[n]);) {
        const char *path;
        struct stat st;
        char **nb;

        if (given) {
            path = given[n];
        } else {
            next = strchr(p, ':');
            if (next)
                *next++ = '\0';
            path = p;
            p = next;
            if (!*path)
                continue;
        }
        if (path[0] != '/' || stat(path, &st) < 0) {
            rc = core_error_set(EVOLVE_EINVAL, "local provider: sandbox bind %s: %s", path,
                                path[0] != '/' ? "not an absolute path" : strerror(errno));
            break;
        }
        if (n + 2 > cap) {
            cap = cap ? cap * 2 : 4;
            nb = realloc(pl->ro_binds, cap * sizeof(*nb));
            if (!nb) {
                rc = core_error_oom();
                break;
            }
            pl->ro_binds = nb;
        }
        pl->ro_binds[n] = strdup(path);
        pl->ro_binds[n + 1] = NULL;
        if (!pl->ro_binds[n]) {
            rc = core_error_oom();
            break;
        }
        n++;
    }
    free(list);
    return rc;
}

int prov_local_open(struct prov_local **out, const struct prov_local_opts *opts)
{
    struct prov_local_opts defaults = PROV_LOCAL_OPTS_INIT;
    struct prov_local *pl;
    enum prov_isolation iso;
    const char *bwrap = NULL;
    int rc;

    *out = NULL;
    if (!opts)
        opts = &defaults;
    if (opts->version == 0 || opts->version > PROV_LOCAL_OPTS_VERSION)
        return core_error_set(EVOLVE_EINVAL, "prov_local_opts: version %u unknown", opts->version);
    pl = calloc(1, sizeof(*pl));
    if (!pl)
        return core_error_oom();
    if (opts->home && *opts->home) {
        pl->evolve_home = strdup(opts->home);
    } else if (getenv("EVOLVE_HOME") && *getenv("EVOLVE_HOME")) {
        pl->evolve_home = strdup(getenv("EVOLVE_HOME"));
    } else {
        const char *h = getenv("HOME");

        pl->evolve_home = dup_printf("%s/.evolve", h && *h ? h : "/tmp");
    }
    pl->root = pl->evolve_home ? dup_printf("%s/sandboxes", pl->evolve_home) : NULL;
    if (!pl->root) {
        rc = core_error_oom();
        goto fail;
    }
    if (mkdir_p(pl->root) < 0) {
        rc = core_error_set(EVOLVE_EIO, "local provider: create %s: %s", pl->root, strerror(errno));
        goto fail;
    }
    pl->sandboxd = find_sandboxd(opts->sandboxd);
    if (!pl->sandboxd) {
        rc =
            core_error_set(EVOLVE_ENOTFOUND,
                           "local provider: evolve-sandboxd not found (%s, $EVOLVE_SANDBOXD, next "
                           "to this program, %s)",
                           opts->sandboxd ? opts->sandboxd : "no path given", EVOLVE_SANDBOXD_PATH);
        goto fail;
    }
    iso = opts->isolation;
    if (iso == PROV_ISO_AUTO) {
        rc = isolation_from_env(&iso);
        if (rc < 0)
            goto fail;
    } else if (iso != PROV_ISO_BWRAP && iso != PROV_ISO_NONE) {
        rc = core_error_set(EVOLVE_EINVAL, "prov_local_opts: isolation %d unknown", (int)iso);
        goto fail;
    }
    if (iso != PROV_ISO_NONE && prov_local_bwrap_works(&bwrap)) {
        pl->iso = PROV_ISO_BWRAP;
        pl->bwrap = strdup(bwrap);
        if (!pl->bwrap) {
            rc = core_error_oom();
            goto fail;
        }
    } else if (iso == PROV_ISO_BWRAP) {
        rc = core_error_set(EVOLVE_EUNSUPPORTED,
                            "local provider: isolation bwrap asked for, but bubblewrap is missing "
                            "or cannot create namespaces here");
        goto fail;
    } else {
        pl->iso = PROV_ISO_NONE;
        if (iso == PROV_ISO_AUTO &&
            !atomic_exchange_explicit(&fallback_said, true, memory_order_relaxed))
            fprintf(stderr, "evolve: bubblewrap is not usable here; local sandboxes run as plain "
                            "processes (HOME and cwd set, no isolation)\n");
    }
    rc = load_binds(pl, opts->ro_binds);
    if (rc < 0)
        goto fail;
    {
        const char *fr = opts->freezer_root ? opts->freezer_root : DEFAULT_FREEZER;
        char probe[4096];

        snprintf(probe, sizeof(probe), "%s/evolve", fr);
        if (*fr && access(fr, W_OK) == 0 && mkdir_p(probe) == 0) {
            pl->freezer_root = strdup(fr);
            if (!pl->freezer_root) {
                rc = core_error_oom();
                goto fail;
            }
        }
    }
    *out = pl;
    return 0;
fail:
    prov_local_close(pl);
    return rc;
}

void prov_local_close(struct prov_local *pl)
{
    if (!pl)
        return;
    free(pl->evolve_home);
    free(pl->root);
    free(pl->sandboxd);
    free(pl->bwrap);
    free(pl->freezer_root);
    for (size_t i = 0; pl->ro_binds && pl->ro_binds[i]; i++)
        free(pl->ro_binds[i]);
    free(pl->ro_binds);
    free(pl);
}

const char *prov_local_mode(const struct prov_local *pl)
{
    return pl->iso == PROV_ISO_BWRAP ? "bwrap" : "none";
}

const char *prov_local_root(const struct prov_local *pl)
{
    return pl->root;
}

static void box_release(struct prov_local_box *b)
{
    size_t i;

    if (!b)
        return;
    if (b->ctl >= 0 || b->child > 0)
        prov_local_daemon_stop(b);
    for (i = 0; b->envp && b->envp[i]; i++)
        free(b->envp[i]);
    free(b->envp);
    free(b->dir);
    free(b->home);
    free(b->cgroup);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static int box_alloc(struct prov_local_box **out, struct prov_local *pl, const char *id,
                     const struct prov_create_spec *spec, bool no_network)
{
    struct prov_local_box *b = calloc(1, sizeof(*b));
    size_t n = 0, i;

    *out = NULL;
    if (!b)
        return core_error_oom();
    pthread_mutex_init(&b->mu, NULL);
    b->ctl = -1;
    b->pl = pl;
    b->bwrap = pl->iso == PROV_ISO_BWRAP;
    b->no_network = no_network;
    b->pause_mode = 's';
    snprintf(b->base.id, sizeof(b->base.id), "%s", id);
    b->dir = dup_printf("%s/%s", pl->root, id);
    b->home = dup_printf("%s/%s/home/user", pl->root, id);
    if (pl->freezer_root)
        b->cgroup = dup_printf("%s/evolve/%s", pl->freezer_root, id);
    while (spec && spec->envp && spec->envp[n])
        n++;
    b->envp = calloc(n + 1, sizeof(*b->envp));
    for (i = 0; b->envp && i < n; i++)
        if (!(b->envp[i] = strdup(spec->envp[i])))
            break;
    if (!b->dir || !b->home || (pl->freezer_root && !b->cgroup) || !b->envp || i < n) {
        box_release(b);
        return core_error_oom();
    }
    *out = b;
    return 0;
}

/* Starts the daemon and records ownership; on failure the daemon is not running. */
static int box_start(struct prov_local_box *b)
{
    int rc;

    char cmds[4096];

    if (b->cgroup)
        snprintf(cmds, sizeof(cmds), "%s/cmds", b->cgroup);
    if (b->cgroup && ((mkdir(b->cgroup, 0755) < 0 && errno != EEXIST) ||
                      (mkdir(cmds, 0755) < 0 && errno != EEXIST))) {
        core_log_warn("sandbox %s: freezer cgroup %s: %s; pausing with signals", b->base.id,
                      b->cgroup, strerror(errno));
        free(b->cgroup);
        b->cgroup = NULL;
    }
    rc = prov_local_daemon_start(b);
    if (rc == 0)
        rc = prov_local_meta_write(b, false);
    if (rc < 0) {
        prov_local_daemon_stop(b);
        prov_local_cgroup_destroy(b->pl, b->cgroup);
    }
    return rc;
}

int prov_local_create(struct prov_local_box **out, struct prov_local *pl,
                      const struct prov_create_spec *spec)
{
    static const char *const sub[] = {"home",
                                      "home/user",
                                      "home/user/workspace",
                                      "home/user/workspace/context",
                                      "home/user/workspace/scripts",
                                      "home/user/workspace/temp",
                                      "home/user/workspace/output",
                                      NULL};
    struct prov_local_box *b = NULL;
    unsigned char rnd[8];
    char id[32];
    size_t i;
    int rc, tries;

    *out = NULL;
    if (spec && (spec->version == 0 || spec->version > PROV_CREATE_SPEC_VERSION))
        return core_error_set(EVOLVE_EINVAL, "prov_create_spec: version %u unknown", spec->version);
    if (spec && spec->no_network && pl->iso != PROV_ISO_BWRAP)
        return core_error_set(EVOLVE_EUNSUPPORTED, "local provider: cutting the network needs "
                                                   "bubblewrap (isolation is \"none\" here)");
    for (tries = 0;; tries++) {
        char dir[4096];

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
            return core_error_set(EVOLVE_EIO, "local provider: getrandom: %s", strerror(errno));
        snprintf(id, sizeof(id), "local-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
                 rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        snprintf(dir, sizeof(dir), "%s/%s", pl->root, id);
        if (mkdir(dir, 0755) == 0)
            break;
        if (errno != EEXIST || tries > 8)
            return core_error_set(EVOLVE_EIO, "local provider: create %s: %s", dir,
                                  strerror(errno));
    }
    rc = box_alloc(&b, pl, id, spec, spec && spec->no_network);
    if (rc < 0) {
        char dir[4096];

        snprintf(dir, sizeof(dir), "%s/%s", pl->root, id);
        rmdir(dir);
        return rc;
    }
    /* The owner record first: a crash from here on leaves a sandbox the reaper can find. */
    rc = prov_local_meta_write(b, false);
    for (i = 0; rc == 0 && sub[i]; i++) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", b->dir, sub[i]);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            rc = core_error_set(EVOLVE_EIO, "sandbox %s: create %s: %s", id, path, strerror(errno));
    }
    if (rc == 0)
        rc = box_start(b);
    if (rc < 0) {
        prov_local_remove_tree(b->dir);
        box_release(b);
        return rc;
    }
    *out = b;
    return 0;
}

int prov_local_connect(struct prov_local_box **out, struct prov_local *pl, const char *id,
                       const struct prov_create_spec *spec)
{
    struct prov_local_box *b = NULL;
    struct prov_local_meta m;
    char dir[4096];
    int rc;

    *out = NULL;
    if (!prov_local_id_is_valid(id))
        return core_error_set(EVOLVE_EINVAL, "\"%s\" is not a local sandbox id (local-<hex>)",
                              id ? id : "(null)");
    snprintf(dir, sizeof(dir), "%s/%s", pl->root, id);
    rc = prov_local_meta_read(&m, dir, id);
    if (rc < 0)
        return rc == EVOLVE_ENOTFOUND
                   ? core_error_set(EVOLVE_ENOTFOUND, "sandbox %s not found in %s", id, pl->root)
                   : rc;
    if (prov_local_pid_is(m.owner_pid, m.owner_start))
        return core_error_set(EVOLVE_EBUSY, "sandbox %s is in use by process %ld%s", id,
                              m.owner_pid, m.owner_pid == (long)getpid() ? " (this one)" : "");
    /* A daemon that outlived its owner cannot be talked to (its socket died with the owner). */
    prov_local_stop_stale(m.daemon_pid, m.daemon_start);
    if (m.cgroup[0])
        prov_local_cgroup_destroy(pl, m.cgroup);
    rc = box_alloc(&b, pl, id, spec, m.network == 0);
    if (rc < 0)
        return rc;
    rc = box_start(b);
    if (rc < 0) {
        box_release(b);
        return rc;
    }
    *out = b;
    return 0;
}

const char *prov_local_box_id(const struct prov_local_box *b)
{
    return b->base.id;
}

const char *prov_local_box_home(const struct prov_local_box *b)
{
    return b->home;
}

const char *prov_local_box_mode(const struct prov_local_box *b)
{
    return b->bwrap ? "bwrap" : "none";
}

const char *prov_local_box_pause_mode(const struct prov_local_box *b)
{
    return b->pause_mode == 'c' ? "cgroup" : "signals";
}

long prov_local_box_daemon_pid(const struct prov_local_box *b)
{
    return (long)b->child;
}

int prov_local_exec(struct prov_proc **out, struct prov_local_box *b,
                    const struct prov_exec_spec *spec)
{
    *out = NULL;
    if (!spec || spec->version == 0 || spec->version > PROV_EXEC_SPEC_VERSION)
        return core_error_set(EVOLVE_EINVAL, "exec in sandbox %s: bad prov_exec_spec", b->base.id);
    if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
        return core_error_set(EVOLVE_EINVAL, "exec in sandbox %s: empty argv", b->base.id);
    return prov_local_daemon_exec(out, b, spec);
}

int prov_local_signal(struct prov_local_box *b, uint32_t proc_id, int signo)
{
    if (signo <= 0 || signo >= 65)
        return core_error_set(EVOLVE_EINVAL, "sandbox %s: signal %d is out of range", b->base.id,
                              signo);
    return prov_local_daemon_signal(b, proc_id, signo);
}

int prov_local_pause(struct prov_local_box *b)
{
    return prov_local_daemon_pause(b, true);
}

int prov_local_resume(struct prov_local_box *b)
{
    return prov_local_daemon_pause(b, false);
}

int prov_local_kill(struct prov_local_box *b)
{
    int rc;

    pthread_mutex_lock(&b->mu);
    if (b->killed) {
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    b->killed = true;
    prov_local_daemon_stop(b);
    prov_local_cgroup_destroy(b->pl, b->cgroup);
    rc = prov_local_remove_tree(b->dir);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void prov_local_box_free(struct prov_local_box *b)
{
    if (!b)
        return;
    if (!b->killed) {
        prov_local_daemon_stop(b);
        prov_local_cgroup_destroy(b->pl, b->cgroup);
        prov_local_meta_write(b, true); /* detached: kept for connect, skipped by the reaper */
    }
    box_release(b);
}

int prov_local_get_host(char **out, struct prov_local_box *b, unsigned int port)
{
    *out = NULL;
    if (port == 0 || port > 65535)
        return core_error_set(EVOLVE_EINVAL, "sandbox %s: port %u is out of range", b->base.id,
                              port);
    *out = dup_printf("http://127.0.0.1:%u", port);
    return *out ? 0 : core_error_oom();
}

int prov_local_write_file(struct prov_local_box *b, const char *path, const void *data, size_t len)
{
    int rc = prov_local_fs_write(b->home, path, data, len);

    return rc < 0 ? core_error_prefix("sandbox %s: ", b->base.id) : 0;
}

int prov_local_read_file(struct prov_buf **out, struct prov_local_box *b, const char *path)
{
    int rc = prov_local_fs_read(out, b->home, path);

    return rc < 0 ? core_error_prefix("sandbox %s: ", b->base.id) : 0;
}

int prov_local_list_dir(struct prov_dir **out, struct prov_local_box *b, const char *path)
{
    int rc = prov_local_fs_list(out, b->home, path);

    return rc < 0 ? core_error_prefix("sandbox %s: ", b->base.id) : 0;
}
