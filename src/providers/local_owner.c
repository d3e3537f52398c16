/* local_owner.c — who owns a local sandbox, and cleaning up after owners that died.
 * Owns: the owner record `sandbox.meta` (write atomically, read), process identity by pid + start
 *       time, stopping daemons that outlived their owner, removing sandbox trees and freezer
 *       cgroups (remembering busy ones for a retry), and list / reap over the sandboxes root.
 * Does not own: creating sandboxes or talking to daemons (local.c, local_daemon.c).
 * Threads: any. `stale_mu` guards the remembered-cgroups file within this process; across
 *       processes each update is one append or one rename. */
#include "providers/local_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

#define META_NAME "sandbox.meta"

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
bool prov_local_pid_is(long pid, long long start)
{
    long long now;

    if (pid <= 0)
        return false;
    now = prov_local_pid_start((pid_t)pid);
    return now >= 0 && now == start;
}

/* Ends a daemon that outlived its owner: SIGTERM first, so a plain daemon kills its commands
 * itself (without a cgroup nothing else can find them), SIGKILL after 2 s. */
void prov_local_stop_stale(long pid, long long start)
{
    int i;

    if (!prov_local_pid_is(pid, start))
        return;
    kill((pid_t)pid, SIGTERM);
    for (i = 0; i < 1000 && prov_local_pid_is(pid, start); i++) {
        struct timespec step = {0, 2000000};

        nanosleep(&step, NULL); /* not our child: no pidfd wait without racing pid reuse */
    }
    if (prov_local_pid_is(pid, start))
        kill((pid_t)pid, SIGKILL);
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
int prov_local_remove_tree(const char *dir)
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

static pthread_mutex_t stale_mu = PTHREAD_MUTEX_INITIALIZER; /* guards <root>/.stale-cgroups */

/* Remembers a cgroup that could not be removed yet (its killed tasks are zombies of a parent
 * that has not reaped them), so the next prov_local_reap_orphans retries it. */
static void remember_stale(struct prov_local *pl, const char *cgroup)
{
    char path[4096], line[4200];
    int fd, n;

    snprintf(path, sizeof(path), "%s/.stale-cgroups", pl->root);
    n = snprintf(line, sizeof(line), "%s\n", cgroup);
    pthread_mutex_lock(&stale_mu);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) < 0) {
            /* best effort: the cgroup is only an empty directory in cgroupfs */
        }
        close(fd);
    }
    pthread_mutex_unlock(&stale_mu);
}

/* Retries the cgroups remembered by remember_stale; keeps those still busy. */
static void retry_stale(struct prov_local *pl)
{
    char path[4096], tmp[4112], line[4200], prefix[4096];
    FILE *in, *out;

    if (!pl->freezer_root)
        return;
    snprintf(path, sizeof(path), "%s/.stale-cgroups", pl->root);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    snprintf(prefix, sizeof(prefix), "%s/evolve/local-", pl->freezer_root);
    pthread_mutex_lock(&stale_mu);
    in = fopen(path, "r");
    out = in ? fopen(tmp, "w") : NULL;
    while (in && out && fgets(line, sizeof(line), in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, prefix, strlen(prefix)) || strstr(line, ".."))
            continue; /* not one of ours: drop it */
        if (rmdir(line) < 0 && errno != ENOENT)
            fprintf(out, "%s\n", line);
    }
    if (in)
        fclose(in);
    if (out && fclose(out) == 0)
        rename(tmp, path);
    pthread_mutex_unlock(&stale_mu);
}

/* Empties one freezer cgroup (freeze so nothing forks, SIGKILL each task, thaw so they can
 * die) and removes it; waits up to 2 s. Returns 0 once it is gone. */
static int drain_and_remove(const char *cg)
{
    char path[4096], buf[65536];
    struct timespec step = {0, 2000000};
    int tries;

    for (tries = 0; tries < 1000; tries++) {
        int fd;
        ssize_t n;
        char *p, *end;

        if (rmdir(cg) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        snprintf(path, sizeof(path), "%s/freezer.state", cg);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "FROZEN", 6) < 0) {
                /* best effort: the kill below still works on a thawed group */
            }
            close(fd);
        }
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
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
        snprintf(path, sizeof(path), "%s/freezer.state", cg);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "THAWED", 6) < 0) {
                /* see above */
            }
            close(fd);
        }
        nanosleep(&step, NULL); /* the kernel empties the cgroup asynchronously; no event */
    }
    return -1;
}

void prov_local_cgroup_destroy(struct prov_local *pl, const char *cgroup)
{
    char cmds[4096];

    if (!cgroup)
        return;
    snprintf(cmds, sizeof(cmds), "%s/cmds", cgroup);
    if (drain_and_remove(cmds) == 0 && drain_and_remove(cgroup) == 0)
        return;
    core_log_info("freezer cgroup %s not removable yet (%s); retried at the next reap", cgroup,
                  strerror(errno));
    remember_stale(pl, cgroup);
}

/* True when the cgroup dir `cg` has no task. */
static bool cgroup_empty(const char *cg)
{
    char path[4200], c;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, &c, 1);
    close(fd);
    return n == 0;
}

/* Removes sandbox cgroups nobody uses: a live sandbox always has its daemon in its cgroup, so
 * one with no task in it or in cmds/, older than a minute (not being set up right now), belongs
 * to a sandbox whose daemon is gone, whichever $EVOLVE_HOME it lived in. Cgroups without cmds/
 * (another layout) are left alone. */
static void sweep_cgroups(struct prov_local *pl)
{
    char base[4096];
    struct dirent *de;
    DIR *d;
    time_t now = time(NULL);

    if (!pl->freezer_root)
        return;
    snprintf(base, sizeof(base), "%s/evolve", pl->freezer_root);
    d = opendir(base);
    if (!d)
        return;
    while ((de = readdir(d)) != NULL) {
        char cg[4400], cmds[4500];
        struct stat st;

        if (!prov_local_id_is_valid(de->d_name))
            continue;
        snprintf(cg, sizeof(cg), "%s/%s", base, de->d_name);
        snprintf(cmds, sizeof(cmds), "%s/cmds", cg);
        if (stat(cmds, &st) < 0 || now - st.st_mtime < 60)
            continue;
        if (cgroup_empty(cg) && cgroup_empty(cmds) && rmdir(cmds) == 0)
            rmdir(cg);
    }
    closedir(d);
}

int prov_local_meta_write(const struct prov_local_box *b, bool detached)
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

int prov_local_meta_read(struct prov_local_meta *m, const char *dir, const char *id)
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

bool prov_local_id_is_valid(const char *id)
{
    size_t i, n = id ? strlen(id) : 0;

    if (n < 7 || n >= 64 || strncmp(id, "local-", 6))
        return false;
    for (i = 6; i < n; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const struct prov_box_info *)a)->id, ((const struct prov_box_info *)b)->id);
}

/* Calls fn for every sandbox directory with a readable owner record. */
static int scan(struct prov_local *pl,
                int (*fn)(void *arg, const char *id, const char *dir,
                          const struct prov_local_meta *m),
                void *arg)
{
    DIR *d = opendir(pl->root);
    struct dirent *de;
    int rc = 0;

    if (!d)
        return core_error_set(EVOLVE_EIO, "local provider: open %s: %s", pl->root, strerror(errno));
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char dir[4096];
        struct prov_local_meta m;

        if (!prov_local_id_is_valid(de->d_name))
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", pl->root, de->d_name);
        if (prov_local_meta_read(&m, dir, de->d_name) < 0)
            continue; /* being created or removed right now */
        rc = fn(arg, de->d_name, dir, &m);
    }
    closedir(d);
    return rc;
}

static int list_one(void *arg, const char *id, const char *dir, const struct prov_local_meta *m)
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
             m->owner_pid == 0                                 ? "detached"
             : prov_local_pid_is(m->owner_pid, m->owner_start) ? "running"
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

struct reap {
    struct prov_local *pl;
    size_t count;
};

static int reap_one(void *arg, const char *id, const char *dir, const struct prov_local_meta *m)
{
    struct reap *r = arg;

    if (m->owner_pid == 0 || prov_local_pid_is(m->owner_pid, m->owner_start))
        return 0; /* detached on purpose, or its owner lives */
    core_log_info("reaping sandbox %s (owner %ld died)", id, m->owner_pid);
    /* The daemon normally died with its owner (PDEATHSIG, socket EOF); make sure. */
    prov_local_stop_stale(m->daemon_pid, m->daemon_start);
    if (m->cgroup[0])
        prov_local_cgroup_destroy(r->pl, m->cgroup);
    if (prov_local_remove_tree(dir) == 0)
        r->count++;
    return 0;
}

int prov_local_reap_orphans(struct prov_local *pl, size_t *reaped_out)
{
    struct reap r = {pl, 0};
    int rc;

    retry_stale(pl);
    sweep_cgroups(pl);
    rc = scan(pl, reap_one, &r);
    empty_trash(pl->root);
    if (reaped_out)
        *reaped_out = r.count;
    return rc;
}
