/* local.c — the `local` sandbox provider: sandbox directories, owner records, lifecycle.
 * Owns: resolving $EVOLVE_HOME, the daemon binary and the isolation mode; creating the layout
 *       `home/user/workspace/{context,scripts,temp,output}`; the owner record `sandbox.meta`
 *       (owner pid + start time, daemon pid + start time, mode, network, cgroup); connect,
 *       kill, detach, list, orphan reaping; the per-sandbox freezer cgroup's life.
 * Does not own: the daemon protocol (local_daemon.c), file confinement (local_fs.c), the async
 *       adapter (local_ops.c).
 * Threads: any (see local.h). The only process-wide state is the once-only fallback notice. */
#include "providers/local_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <limits.h>
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
#define META_NAME       "sandbox.meta"

/* relaxed: only makes the fallback notice appear once; orders nothing else */
static atomic_bool fallback_said;

struct meta {
    long owner_pid;
    long long owner_start;
    long daemon_pid;
    long long daemon_start;
    long long created_ms;
    int network;
    char mode[16];
    char cgroup[1024];
};

long long prov_local_pid_start(pid_t pid)
{
    char path[64], buf[1024];
    const char *p;
    ssize_t n;
    int fd, field;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) S ppid ..." — comm may hold spaces and parens: parse after the LAST ')' */
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -1;
    p += 2;
    if (*p == 'Z' || *p == 'X')
        return -1; /* a zombie is dead for our purposes */
    for (field = 3; field < 22 && *p; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    return strtoll(p, NULL, 10);
}

/* True when `pid` runs and started at `start` (so a reused pid is not mistaken for it). */
static bool pid_is(long pid, long long start)
{
    long long now;

    if (pid <= 0)
        return false;
    now = prov_local_pid_start((pid_t)pid);
    return now >= 0 && now == start;
}

static long long wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

#define TRASH_PREFIX ".trash-"

/* rm -rf without following symlinks; refuses anything but a directory under the root. The
 * directory is first renamed to <root>/.trash-<id>-<pid> in one step, so a process killed in
 * the middle of the removal (kill -9 of a batch) leaves a trash entry the next reap removes,
 * never a half-removed sandbox without its owner record that nobody can attribute. */
static int remove_tree(const char *dir)
{
    char trash[4096];
    const char *base = dir ? strrchr(dir, '/') : NULL;

    if (!dir || strlen(dir) < 2)
        return core_error_set(EVOLVE_EINVAL, "refusing to remove \"%s\"", dir ? dir : "");
    if (base && base > dir &&
        (size_t)snprintf(trash, sizeof(trash), "%.*s/" TRASH_PREFIX "%s-%ld", (int)(base - dir),
                         dir, base + 1, (long)getpid()) < sizeof(trash) &&
        rename(dir, trash) == 0)
        nftw(trash, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    else
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (access(dir, F_OK) == 0)
        return core_error_set(EVOLVE_EIO, "sandbox directory %s could not be removed", dir);
    return 0;
}

/* Removes trash entries whose remover died (its pid is the suffix). */
static void empty_trash(const char *root)
{
    DIR *d = opendir(root);
    struct dirent *de;

    while (d && (de = readdir(d)) != NULL) {
        const char *dash;
        char path[4096];
        long pid;

        if (strncmp(de->d_name, TRASH_PREFIX, strlen(TRASH_PREFIX)) ||
            !(dash = strrchr(de->d_name, '-')))
            continue;
        pid = strtol(dash + 1, NULL, 10);
        if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue; /* its remover is still at work */
        snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    }
    if (d)
        closedir(d);
}

void prov_local_cgroup_destroy(const char *cgroup)
{
    char path[4096], buf[65536];
    struct timespec step = {0, 2000000};
    int tries;

    if (!cgroup)
        return;
    for (tries = 0; tries < 1000; tries++) {
        int fd;
        ssize_t n;
        char *p, *end;

        if (rmdir(cgroup) == 0 || errno == ENOENT)
            return;
        if (errno != EBUSY)
            break;
        /* Tasks left: freeze so nothing forks, SIGKILL each, thaw so they can die. */
        snprintf(path, sizeof(path), "%s/freezer.state", cgroup);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "FROZEN", 6) < 0) {
                /* best effort: the kill below still works on a thawed group */
            }
            close(fd);
        }
        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = '\0';
            for (p = buf; *p; p = end) {
                long pid = strtol(p, &end, 10);

                if (end == p)
                    break;
                if (pid > 0)
                    kill((pid_t)pid, SIGKILL);
                while (*end == '\n')
                    end++;
            }
        }
        snprintf(path, sizeof(path), "%s/freezer.state", cgroup);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "THAWED", 6) < 0) {
                /* see above */
            }
            close(fd);
        }
        nanosleep(&step, NULL); /* the kernel empties the cgroup asynchronously; no event */
    }
    core_log_warn("freezer cgroup %s could not be removed: %s", cgroup, strerror(errno));
}

static int write_meta(const struct prov_local_box *b, bool detached)
{
    char path[4096], tmp[4112], text[2048];
    long long created = wall_ms();
    FILE *f;
    int n;

    /* keep the creation time across rewrites */
    snprintf(path, sizeof(path), "%s/%s", b->dir, META_NAME);
    f = fopen(path, "r");
    if (f) {
        char key[32];
        long long v;

        while (fscanf(f, "%31s %lld", key, &v) == 2)
            if (!strcmp(key, "created_ms"))
                created = v;
        fclose(f);
    }
    n = snprintf(text, sizeof(text),
                 "version 1\nowner_pid %ld\nowner_start %lld\ndaemon_pid %ld\ndaemon_start %lld\n"
                 "created_ms %lld\nnetwork %d\nmode %s\ncgroup %s\n",
                 detached ? 0L : (long)getpid(), detached ? 0LL : prov_local_pid_start(getpid()),
                 detached ? 0L : (long)b->child, detached ? 0LL : b->child_start, created,
                 b->no_network ? 0 : 1, b->bwrap ? "bwrap" : "none", b->cgroup ? b->cgroup : "-");
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f || fwrite(text, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
        if (f)
            fclose(f);
        return core_error_set(EVOLVE_EIO, "sandbox %s: write %s: %s", b->base.id, tmp,
                              strerror(errno));
    }
    if (rename(tmp, path) < 0)
        return core_error_set(EVOLVE_EIO, "sandbox %s: rename %s: %s", b->base.id, tmp,
                              strerror(errno));
    return 0;
}

static int read_meta(struct meta *m, const char *dir, const char *id)
{
    char path[4096], key[32], val[1024];
    FILE *f;

    memset(m, 0, sizeof(*m));
    m->network = 1;
    snprintf(path, sizeof(path), "%s/%s", dir, META_NAME);
    f = fopen(path, "r");
    if (!f)
        return core_error_set(errno == ENOENT ? EVOLVE_ENOTFOUND : EVOLVE_EIO, "sandbox %s: %s: %s",
                              id, path, strerror(errno));
    while (fscanf(f, "%31s %1023s", key, val) == 2) {
        if (!strcmp(key, "owner_pid"))
            m->owner_pid = strtol(val, NULL, 10);
        else if (!strcmp(key, "owner_start"))
            m->owner_start = strtoll(val, NULL, 10);
        else if (!strcmp(key, "daemon_pid"))
            m->daemon_pid = strtol(val, NULL, 10);
        else if (!strcmp(key, "daemon_start"))
            m->daemon_start = strtoll(val, NULL, 10);
        else if (!strcmp(key, "created_ms"))
            m->created_ms = strtoll(val, NULL, 10);
        else if (!strcmp(key, "network"))
            m->network = (int)strtol(val, NULL, 10);
        else if (!strcmp(key, "mode"))
            snprintf(m->mode, sizeof(m->mode), "%.15s", val);
        else if (!strcmp(key, "cgroup") && strcmp(val, "-"))
            snprintf(m->cgroup, sizeof(m->cgroup), "%s", val);
    }
    fclose(f);
    return 0;
}

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

static enum prov_isolation isolation_from_env(void)
{
    const char *v = getenv("EVOLVE_ISOLATION");

    if (v && !strcmp(v, "none"))
        return PROV_ISO_NONE;
    if (v && !strcmp(v, "bwrap"))
        return PROV_ISO_BWRAP;
    return PROV_ISO_AUTO;
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
    iso = opts->isolation ? opts->isolation : isolation_from_env();
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

static bool id_is_valid(const char *id)
{
    size_t i, n = id ? strlen(id) : 0;

    if (n < 7 || n >= 64 || strncmp(id, "local-", 6))
        return false;
    for (i = 6; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
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

    if (b->cgroup && mkdir(b->cgroup, 0755) < 0 && errno != EEXIST) {
        core_log_warn("sandbox %s: freezer cgroup %s: %s; pausing with signals", b->base.id,
                      b->cgroup, strerror(errno));
        free(b->cgroup);
        b->cgroup = NULL;
    }
    rc = prov_local_daemon_start(b);
    if (rc == 0)
        rc = write_meta(b, false);
    if (rc < 0) {
        prov_local_daemon_stop(b);
        prov_local_cgroup_destroy(b->cgroup);
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
    rc = write_meta(b, false);
    for (i = 0; rc == 0 && sub[i]; i++) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", b->dir, sub[i]);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            rc = core_error_set(EVOLVE_EIO, "sandbox %s: create %s: %s", id, path, strerror(errno));
    }
    if (rc == 0)
        rc = box_start(b);
    if (rc < 0) {
        remove_tree(b->dir);
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
    struct meta m;
    char dir[4096];
    int rc;

    *out = NULL;
    if (!id_is_valid(id))
        return core_error_set(EVOLVE_EINVAL, "\"%s\" is not a local sandbox id (local-<hex>)",
                              id ? id : "(null)");
    snprintf(dir, sizeof(dir), "%s/%s", pl->root, id);
    rc = read_meta(&m, dir, id);
    if (rc < 0)
        return rc == EVOLVE_ENOTFOUND
                   ? core_error_set(EVOLVE_ENOTFOUND, "sandbox %s not found in %s", id, pl->root)
                   : rc;
    if (pid_is(m.owner_pid, m.owner_start))
        return core_error_set(EVOLVE_EBUSY, "sandbox %s is in use by process %ld%s", id,
                              m.owner_pid, m.owner_pid == (long)getpid() ? " (this one)" : "");
    /* A daemon that outlived its owner cannot be talked to (its socket died with the owner). */
    if (pid_is(m.daemon_pid, m.daemon_start))
        kill((pid_t)m.daemon_pid, SIGKILL);
    if (m.cgroup[0])
        prov_local_cgroup_destroy(m.cgroup);
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
    prov_local_cgroup_destroy(b->cgroup);
    rc = remove_tree(b->dir);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void prov_local_box_free(struct prov_local_box *b)
{
    if (!b)
        return;
    if (!b->killed) {
        prov_local_daemon_stop(b);
        prov_local_cgroup_destroy(b->cgroup);
        write_meta(b, true); /* detached: kept for connect, skipped by the reaper */
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

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const struct prov_box_info *)a)->id, ((const struct prov_box_info *)b)->id);
}

/* Calls fn for every sandbox directory with a readable owner record. */
static int scan(struct prov_local *pl,
                int (*fn)(void *arg, const char *id, const char *dir, const struct meta *m),
                void *arg)
{
    DIR *d = opendir(pl->root);
    struct dirent *de;
    int rc = 0;

    if (!d)
        return core_error_set(EVOLVE_EIO, "local provider: open %s: %s", pl->root, strerror(errno));
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char dir[4096];
        struct meta m;

        if (!id_is_valid(de->d_name))
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", pl->root, de->d_name);
        if (read_meta(&m, dir, de->d_name) < 0)
            continue; /* being created or removed right now */
        rc = fn(arg, de->d_name, dir, &m);
    }
    closedir(d);
    return rc;
}

static int list_one(void *arg, const char *id, const char *dir, const struct meta *m)
{
    struct prov_list *l = arg;
    struct prov_box_info *ni = realloc(l->items, (l->count + 1) * sizeof(*ni));

    (void)dir;
    if (!ni)
        return core_error_oom();
    l->items = ni;
    ni += l->count++;
    memset(ni, 0, sizeof(*ni));
    snprintf(ni->id, sizeof(ni->id), "%s", id);
    ni->created_ms = m->created_ms;
    ni->owner_pid = m->owner_pid;
    snprintf(ni->state, sizeof(ni->state), "%s",
             m->owner_pid == 0                      ? "detached"
             : pid_is(m->owner_pid, m->owner_start) ? "running"
                                                    : "orphaned");
    return 0;
}

int prov_local_list(struct prov_list **out, struct prov_local *pl)
{
    struct prov_list *l = calloc(1, sizeof(*l));
    int rc;

    *out = NULL;
    if (!l)
        return core_error_oom();
    rc = scan(pl, list_one, l);
    if (rc < 0) {
        prov_list_free(l);
        return rc;
    }
    if (l->count)
        qsort(l->items, l->count, sizeof(l->items[0]), cmp_info);
    *out = l;
    return 0;
}

static int reap_one(void *arg, const char *id, const char *dir, const struct meta *m)
{
    size_t *count = arg;

    if (m->owner_pid == 0 || pid_is(m->owner_pid, m->owner_start))
        return 0; /* detached on purpose, or its owner lives */
    core_log_info("reaping sandbox %s (owner %ld died)", id, m->owner_pid);
    /* The daemon normally died with its owner (PDEATHSIG, socket EOF); make sure. */
    if (pid_is(m->daemon_pid, m->daemon_start))
        kill((pid_t)m->daemon_pid, SIGKILL);
    if (m->cgroup[0])
        prov_local_cgroup_destroy(m->cgroup);
    if (remove_tree(dir) == 0)
        (*count)++;
    return 0;
}

int prov_local_reap_orphans(struct prov_local *pl, size_t *reaped_out)
{
    size_t count = 0;
    int rc = scan(pl, reap_one, &count);

    empty_trash(pl->root);
    if (reaped_out)
        *reaped_out = count;
    return rc;
}
