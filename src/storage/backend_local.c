/* backend_local.c — the local key/value backend: key "a/b/c" is the file <root>/a/b/c.
 * Owns: atomic puts (write a temp file in <root>/tmp, fsync, rename, fsync the directory), reads,
 * listing, deletes, and group commit for NOSYNC puts: they stay in tmp/ (visible to this handle
 * only) until sync() flushes the file system once and renames them all into place, so a blob
 * never has its final name before its bytes are durable.
 * Threads: one handle per thread; handles in many threads/processes may share a root (every file
 * appears by rename, and concurrent writers of one key write identical bytes). */
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

struct pending {
    char *key;
    char *tmp;
};

struct local {
    struct sto_backend base; /* first */
    char *root;
    bool nosync;
    struct pending *pend; /* open addressing, power-of-two capacity */
    size_t npend, cap;
    uint64_t seq;
};

static size_t key_hash(const char *k)
{
    size_t h = 1469598103934665603ull;

    while (*k)
        h = (h ^ (unsigned char)*k++) * 1099511628211ull;
    return h;
}

static struct pending *pend_find(struct local *l, const char *key)
{
    size_t i;

    if (!l->cap)
        return NULL;
    for (i = key_hash(key) & (l->cap - 1); l->pend[i].key; i = (i + 1) & (l->cap - 1))
        if (!strcmp(l->pend[i].key, key))
            return &l->pend[i];
    return NULL;
}

static int pend_add(struct local *l, char *key, char *tmp)
{
    size_t i;

    if ((l->npend + 1) * 2 > l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256, j;
        struct pending *np = calloc(ncap, sizeof(*np));
        if (!np)
            return core_error_oom();
        for (j = 0; j < l->cap; j++) {
            if (!l->pend[j].key)
                continue;
            for (i = key_hash(l->pend[j].key) & (ncap - 1); np[i].key; i = (i + 1) & (ncap - 1))
                ;
            np[i] = l->pend[j];
        }
        free(l->pend);
        l->pend = np;
        l->cap = ncap;
    }
    for (i = key_hash(key) & (l->cap - 1); l->pend[i].key; i = (i + 1) & (l->cap - 1))
        ;
    l->pend[i].key = key;
    l->pend[i].tmp = tmp;
    l->npend++;
    return 0;
}

static char *path_of(struct local *l, const char *key)
{
    size_t n = strlen(l->root) + strlen(key) + 2;
    char *p = malloc(n);

    if (p)
        snprintf(p, n, "%s/%s", l->root, key);
    return p;
}

static int mkdirs_for(char *path)
{
    char *s;

    for (s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            *s = '/';
            return core_error_set(EVOLVE_EIO, "store: mkdir %s: %s", path, strerror(e));
        }
        *s = '/';
    }
    return 0;
}

static int fsync_dir_of(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int fd, rc = 0;

    if (!slash || (size_t)(slash - path) >= sizeof(dir))
        return 0;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0)
        rc = core_error_set(EVOLVE_EIO, "store: fsync %s: %s", dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Writes data to a new temp file under <root>/tmp; returns its malloc'd path. */
static int write_tmp(struct local *l, const void *data, size_t len, bool sync, char **out)
{
    size_t n = strlen(l->root) + 64;
    char *tmp = malloc(n);
    const unsigned char *p = data;
    struct timespec ts;
    int fd, rc = 0;

    if (!tmp)
        return core_error_oom();
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, n, "%s/tmp/%ld.%llx.%lx", l->root, (long)getpid(), (unsigned long long)++l->seq,
             (unsigned long)ts.tv_nsec ^ (unsigned long)(uintptr_t)l);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = core_error_set(EVOLVE_EIO, "store: create %s: %s", tmp, strerror(errno));
        free(tmp);
        return rc;
    }
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = core_error_set(EVOLVE_EIO, "store: write %s: %s", tmp,
                                w < 0 ? strerror(errno) : "short write");
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    if (rc == 0 && sync && fsync(fd) < 0)
        rc = core_error_set(EVOLVE_EIO, "store: fsync %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc < 0) {
        unlink(tmp);
        free(tmp);
        return rc;
    }
    *out = tmp;
    return 0;
}

static int install(struct local *l, const char *tmp, const char *key, bool sync)
{
    char *dst = path_of(l, key);
    int rc = 0;

    if (!dst)
        return core_error_oom();
    rc = mkdirs_for(dst);
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = core_error_set(EVOLVE_EIO, "store: rename to %s: %s", dst, strerror(errno));
    if (rc == 0 && sync)
        rc = fsync_dir_of(dst);
    free(dst);
    return rc;
}

static int l_put(struct sto_backend *b, const char *key, const void *data, size_t len,
                 unsigned int flags)
{
    struct local *l = (struct local *)b;
    bool group = (flags & STO_PUT_NOSYNC) && !l->nosync;
    char *tmp = NULL, *k;
    int rc;

    if (group && pend_find(l, key))
        return 0;
    rc = write_tmp(l, data, len, !l->nosync && !group, &tmp);
    if (rc < 0)
        return rc;
    if (!group) {
        rc = install(l, tmp, key, !l->nosync);
        if (rc < 0)
            unlink(tmp);
        free(tmp);
        return rc;
    }
    k = strdup(key);
    if (!k || pend_add(l, k, tmp) < 0) {
        free(k);
        unlink(tmp);
        free(tmp);
        return core_error_oom();
    }
    return 0;
}

static int read_all(const char *path, const char *key, unsigned char **out, size_t *out_len)
{
    struct stat st;
    unsigned char *buf;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

    if (fd < 0)
        return core_error_set(errno == ENOENT ? EVOLVE_ENOTFOUND : EVOLVE_EIO, "store: %s: %s", key,
                              strerror(errno));
    if (fstat(fd, &st) < 0) {
        close(fd);
        return core_error_set(EVOLVE_EIO, "store: %s: %s", key, strerror(errno));
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return core_error_oom();
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = core_error_set(EVOLVE_EIO, "store: read %s: %s", key,
                                r < 0 ? strerror(errno) : "file shrank");
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *out = buf;
    *out_len = got;
    return 0;
}

static int l_get(struct sto_backend *b, const char *key, unsigned char **out, size_t *out_len)
{
    struct local *l = (struct local *)b;
    struct pending *pe = pend_find(l, key);
    char *p;
    int rc;

    if (pe)
        return read_all(pe->tmp, key, out, out_len);
    p = path_of(l, key);
    if (!p)
        return core_error_oom();
    rc = read_all(p, key, out, out_len);
    free(p);
    return rc;
}

static int l_exists(struct sto_backend *b, const char *key)
{
    struct local *l = (struct local *)b;
    struct stat st;
    char *p;
    int rc;

    if (pend_find(l, key))
        return 1;
    p = path_of(l, key);
    if (!p)
        return core_error_oom();
    rc = stat(p, &st) == 0 ? 1 : 0;
    if (rc == 0 && errno != ENOENT)
        rc = core_error_set(EVOLVE_EIO, "store: stat %s: %s", key, strerror(errno));
    free(p);
    return rc;
}

/* Recursive walk of <root>/<dir>, reporting keys that start with prefix. */
static int walk(struct local *l, const char *dir, const char *prefix,
                int (*cb)(void *, const char *, uint64_t), void *payload)
{
    char *p = path_of(l, dir);
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (!p)
        return core_error_oom();
    d = opendir(p);
    free(p);
    if (!d)
        return errno == ENOENT
                   ? 0
                   : core_error_set(EVOLVE_EIO, "store: list %s: %s", dir, strerror(errno));
    while (rc == 0 && (de = readdir(d))) {
        char key[PATH_MAX];
        struct stat st;
        char *full;
        if (de->d_name[0] == '.')
            continue;
        snprintf(key, sizeof(key), "%s/%s", dir, de->d_name);
        full = path_of(l, key);
        if (!full) {
            rc = core_error_oom();
            break;
        }
        if (lstat(full, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rc = walk(l, key, prefix, cb, payload);
            else if (S_ISREG(st.st_mode) && !strncmp(key, prefix, strlen(prefix)))
                rc = cb(payload, key, (uint64_t)st.st_size);
        }
        free(full);
    }
    closedir(d);
    return rc;
}

static int l_list(struct sto_backend *b, const char *prefix,
                  int (*cb)(void *, const char *, uint64_t), void *payload)
{
    char top[PATH_MAX];
    const char *slash = strchr(prefix, '/');
    size_t n = slash ? (size_t)(slash - prefix) : strlen(prefix);

    if (n == 0 || n >= sizeof(top))
        return core_error_set(EVOLVE_EINVAL, "store: list needs a top-level prefix");
    memcpy(top, prefix, n);
    top[n] = '\0';
    return walk((struct local *)b, top, prefix, cb, payload);
}

static int l_del(struct sto_backend *b, const char *key)
{
    char *p = path_of((struct local *)b, key);
    int rc = 0;

    if (!p)
        return core_error_oom();
    if (unlink(p) < 0 && errno != ENOENT)
        rc = core_error_set(EVOLVE_EIO, "store: delete %s: %s", key, strerror(errno));
    free(p);
    return rc;
}

static int sync_root(struct local *l)
{
    int fd = open(l->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

    if (fd < 0 || syncfs(fd) < 0)
        rc = core_error_set(EVOLVE_EIO, "store: syncfs %s: %s", l->root, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

static void pend_clear(struct local *l, bool unlink_tmp)
{
    size_t i;

    for (i = 0; i < l->cap; i++) {
        if (!l->pend[i].key)
            continue;
        if (unlink_tmp)
            unlink(l->pend[i].tmp);
        free(l->pend[i].key);
        free(l->pend[i].tmp);
        l->pend[i].key = NULL;
    }
    l->npend = 0;
}

static int l_sync(struct sto_backend *b)
{
    struct local *l = (struct local *)b;
    size_t i;
    int rc;

    if (l->nosync || !l->npend)
        return 0;
    rc = sync_root(l); /* the bytes of every pending file, before any gets its name */
    for (i = 0; rc == 0 && i < l->cap; i++)
        if (l->pend[i].key)
            rc = install(l, l->pend[i].tmp, l->pend[i].key, false);
    if (rc == 0)
        rc = sync_root(l); /* the renames */
    pend_clear(l, rc < 0);
    return rc;
}

static void l_discard(struct sto_backend *b)
{
    pend_clear((struct local *)b, true);
}

static void l_free(struct sto_backend *b)
{
    struct local *l = (struct local *)b;

    if (!l)
        return;
    pend_clear(l, true); /* never synced: their checkpoint did not commit */
    free(l->pend);
    free(l->root);
    free(l);
}

static const struct sto_backend_ops local_ops = {
    .version = STO_BACKEND_OPS_VERSION,
    .name = "local",
    .put = l_put,
    .get = l_get,
    .exists = l_exists,
    .list = l_list,
    .del = l_del,
    .sync = l_sync,
    .discard = l_discard,
    .free = l_free,
};

int sto_backend_local_new(struct sto_backend **out, const char *root)
{
    struct local *l = calloc(1, sizeof(*l));
    char *tmp;
    int rc;

    if (!l)
        return core_error_oom();
    l->base.ops = &local_ops;
    l->root = strdup(root);
    if (!l->root) {
        free(l);
        return core_error_oom();
    }
    tmp = path_of(l, "tmp/x");
    rc = tmp ? mkdirs_for(tmp) : core_error_oom();
    free(tmp);
    if (rc < 0) {
        l_free(&l->base);
        return rc;
    }
    *out = &l->base;
    return 0;
}

const char *sto_backend_local_root(struct sto_backend *b)
{
    return b && b->ops == &local_ops ? ((struct local *)b)->root : NULL;
}

void sto_backend_local_set_nosync(struct sto_backend *b, bool nosync)
{
    if (b && b->ops == &local_ops)
        ((struct local *)b)->nosync = nosync;
}
