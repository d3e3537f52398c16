/* local_fs.c — file access confined to a local sandbox's home directory.
 * Owns: turning a user path into a relative one (refusing `..` and absolute paths outside
 *       /home/user), resolving it beneath the home with openat2(RESOLVE_BENEATH) where the kernel
 *       has it, else by walking components with O_NOFOLLOW (which refuses every symlink), and
 *       the write (temp + rename), read and list operations on the result.
 * Threads: any; the only shared state is the test switch `force_walk` (relaxed atomic). */
#include "providers/local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/error.h"

#define SANDBOX_HOME "/home/user"
#define FILE_MAX     (1ull << 30) /* read_file refuses files over 1 GiB: use exec for those */

/* relaxed: a test toggles it before any file op; no ordering with other data is needed */
static atomic_bool force_walk;
static atomic_uint tmp_counter;

void prov_local_fs_force_walk(bool on)
{
    atomic_store_explicit(&force_walk, on, memory_order_relaxed);
}

/* Writes the normalised relative form of `path` ("." for the home itself) into `out`. */
static int rel_path(char *out, size_t size, const char *path)
{
    const char *p = path, *end;
    size_t len = 0;

    if (!path || !*path)
        return core_error_set(EVOLVE_EINVAL, "empty path");
    if (*p == '/') {
        size_t hl = strlen(SANDBOX_HOME);

        if (strncmp(p, SANDBOX_HOME, hl) || (p[hl] != '\0' && p[hl] != '/'))
            return core_error_set(EVOLVE_EUNSAFE, "path %s is outside the sandbox home %s", path,
                                  SANDBOX_HOME);
        p += hl;
    }
    for (; *p; p = end) {
        size_t n;

        while (*p == '/')
            p++;
        if (!*p)
            break;
        end = strchr(p, '/');
        if (!end)
            end = p + strlen(p);
        n = (size_t)(end - p);
        if (n == 1 && p[0] == '.')
            continue;
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return core_error_set(EVOLVE_EUNSAFE, "path %s: '..' is not allowed", path);
        if (len + n + 2 > size)
            return core_error_set(EVOLVE_EINVAL, "path %s is too long", path);
        if (len)
            out[len++] = '/';
        memcpy(out + len, p, n);
        len += n;
    }
    if (!len)
        out[len++] = '.';
    out[len] = '\0';
    return 0;
}

static int errno_to_error(int err, const char *path, const char *what)
{
    switch (err) {
    case ENOENT:
        return core_error_set(EVOLVE_ENOTFOUND, "%s %s: no such file or directory", what, path);
    case EXDEV:
    case ELOOP:
        return core_error_set(EVOLVE_EUNSAFE, "%s %s: resolves outside the sandbox home", what,
                              path);
    case ENOTDIR:
        return core_error_set(EVOLVE_EINVAL, "%s %s: a component is not a directory", what, path);
    case EISDIR:
        return core_error_set(EVOLVE_EINVAL, "%s %s: is a directory", what, path);
    default:
        return core_error_set(EVOLVE_EIO, "%s %s: %s", what, path, strerror(err));
    }
}

static int try_openat2(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how;

    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)flags;
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

/* Walks `rel` (a directory) from `homefd` one component at a time, never following a symlink;
 * with `create`, missing directories are made. Returns an O_PATH fd or a negative error. */
static int walk_dir(int homefd, const char *rel, bool create, const char *path, const char *what)
{
    char buf[4096];
    char *comp, *next;
    int cur = dup(homefd);

    if (cur < 0)
        return errno_to_error(errno, path, what);
    snprintf(buf, sizeof(buf), "%s", rel);
    for (comp = buf; comp && *comp; comp = next) {
        int fd;

        next = strchr(comp, '/');
        if (next)
            *next++ = '\0';
        if (!strcmp(comp, "."))
            continue;
        fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
            if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
                int e = errno;

                close(cur);
                return errno_to_error(e, path, what);
            }
            fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0) {
            int e = errno;
            struct stat st;

            if ((e == ENOTDIR || e == ELOOP) && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode)) {
                close(cur);
                return core_error_set(EVOLVE_EUNSAFE, "%s %s: symlink %s is not followed", what,
                                      path, comp);
            }
            close(cur);
            return errno_to_error(e, path, what);
        }
        close(cur);
        cur = fd;
    }
    return cur;
}

/* Opens directory `rel` beneath `home` as an O_PATH fd. */
static int open_dir(const char *home, const char *rel, bool create, const char *path,
                    const char *what)
{
    int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd;

    if (homefd < 0)
        return core_error_set(EVOLVE_ENOTFOUND, "sandbox home %s: %s", home, strerror(errno));
    if (!atomic_load_explicit(&force_walk, memory_order_relaxed)) {
        fd = try_openat2(homefd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd >= 0 || (errno != ENOSYS && !(errno == ENOENT && create))) {
            int e = errno;

            close(homefd);
            return fd >= 0 ? fd : errno_to_error(e, path, what);
        }
    }
    fd = walk_dir(homefd, rel, create, path, what);
    close(homefd);
    return fd;
}

/* Splits `rel` into its parent ("." when none) and final name, in place. */
static const char *split_name(char *rel)
{
    char *slash = strrchr(rel, '/');

    if (!slash) {
        static const char dot[] = ".";
        static _Thread_local char name[4096];

        snprintf(name, sizeof(name), "%s", rel);
        memcpy(rel, dot, sizeof(dot));
        return name;
    }
    *slash = '\0';
    return slash + 1;
}

int prov_local_fs_write(const char *home, const char *path, const void *data, size_t len)
{
    char rel[4096], tmp[300];
    const char *name;
    int dfd, fd, rc = 0;
    size_t off = 0;

    rc = rel_path(rel, sizeof(rel), path);
    if (rc < 0)
        return rc;
    if (!strcmp(rel, "."))
        return core_error_set(EVOLVE_EINVAL, "write %s: is the sandbox home", path);
    name = split_name(rel);
    if (strlen(name) > 200)
        return core_error_set(EVOLVE_EINVAL, "write %s: file name too long", path);
    dfd = open_dir(home, rel, true, path, "write");
    if (dfd < 0)
        return dfd;
    snprintf(tmp, sizeof(tmp), ".%s.evolve-tmp-%ld-%u", name, (long)getpid(),
             atomic_fetch_add_explicit(&tmp_counter, 1, memory_order_relaxed));
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = errno_to_error(errno, path, "write");
        goto out;
    }
    while (off < len) {
        ssize_t n = write(fd, (const char *)data + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = errno_to_error(errno, path, "write");
            break;
        }
        off += (size_t)n;
    }
    close(fd);
    /* rename replaces whatever the name was (a symlink included) without following it */
    if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
        rc = errno_to_error(errno, path, "write");
    if (rc < 0)
        unlinkat(dfd, tmp, 0);
out:
    close(dfd);
    return rc;
}

int prov_local_fs_read(struct prov_buf **out, const char *home, const char *path)
{
    char rel[4096];
    struct prov_buf *buf = NULL;
    struct stat st;
    int fd = -1, rc;
    size_t off = 0;

    *out = NULL;
    rc = rel_path(rel, sizeof(rel), path);
    if (rc < 0)
        return rc;
    if (!atomic_load_explicit(&force_walk, memory_order_relaxed)) {
        int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (homefd < 0)
            return core_error_set(EVOLVE_ENOTFOUND, "sandbox home %s: %s", home, strerror(errno));
        fd = try_openat2(homefd, rel, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0 && errno != ENOSYS) {
            int e = errno;

            close(homefd);
            return errno_to_error(e, path, "read");
        }
        close(homefd);
    }
    if (fd < 0) {
        const char *name = split_name(rel);
        int dfd = open_dir(home, rel, false, path, "read");

        if (dfd < 0)
            return dfd;
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        rc = fd < 0 ? errno : 0;
        close(dfd);
        if (fd < 0)
            return rc == ELOOP ? core_error_set(EVOLVE_EUNSAFE,
                                                "read %s: symlink %s is not followed", path, name)
                               : errno_to_error(rc, path, "read");
    }
    if (fstat(fd, &st) < 0) {
        rc = errno_to_error(errno, path, "read");
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = errno_to_error(EISDIR, path, "read");
        goto fail;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > FILE_MAX) {
        rc = core_error_set(EVOLVE_EINVAL, "read %s: not a regular file under 1 GiB", path);
        goto fail;
    }
    buf = calloc(1, sizeof(*buf));
    if (buf)
        buf->data = malloc((size_t)st.st_size + 1);
    if (!buf || !buf->data) {
        rc = core_error_oom();
        goto fail;
    }
    while (off < (size_t)st.st_size) {
        ssize_t n = read(fd, buf->data + off, (size_t)st.st_size - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = errno_to_error(errno, path, "read");
            goto fail;
        }
        if (n == 0)
            break; /* shrank while reading: return what is there */
        off += (size_t)n;
    }
    buf->data[off] = '\0';
    buf->len = off;
    close(fd);
    *out = buf;
    return 0;
fail:
    prov_buf_free(buf);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int cmp_dirent(const void *a, const void *b)
{
    return strcmp(((const struct prov_dirent *)a)->name, ((const struct prov_dirent *)b)->name);
}

int prov_local_fs_list(struct prov_dir **out, const char *home, const char *path)
{
    char rel[4096];
    struct prov_dir *dir = NULL;
    struct dirent *de;
    DIR *d = NULL;
    size_t cap = 0;
    int pfd, fd, rc;

    *out = NULL;
    if (!path || !*path)
        path = ".";
    rc = rel_path(rel, sizeof(rel), path);
    if (rc < 0)
        return rc;
    pfd = open_dir(home, rel, false, path, "list");
    if (pfd < 0)
        return pfd;
    fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(pfd);
    if (fd < 0)
        return errno_to_error(errno, path, "list");
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return errno_to_error(errno, path, "list");
    }
    dir = calloc(1, sizeof(*dir));
    if (!dir) {
        rc = core_error_oom();
        goto fail;
    }
    while ((de = readdir(d)) != NULL) {
        struct prov_dirent *e;
        struct stat st;

        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* removed meanwhile */
        if (dir->count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct prov_dirent *ni = realloc(dir->items, ncap * sizeof(*ni));

            if (!ni) {
                rc = core_error_oom();
                goto fail;
            }
            dir->items = ni;
            cap = ncap;
        }
        e = &dir->items[dir->count];
        e->name = strdup(de->d_name);
        if (!e->name) {
            rc = core_error_oom();
            goto fail;
        }
        dir->count++;
        e->type = S_ISREG(st.st_mode)   ? PROV_DT_FILE
                  : S_ISDIR(st.st_mode) ? PROV_DT_DIR
                  : S_ISLNK(st.st_mode) ? PROV_DT_SYMLINK
                                        : PROV_DT_OTHER;
        e->size = (uint64_t)st.st_size;
        e->mode = (unsigned int)(st.st_mode & 07777);
        e->mtime_ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    }
    closedir(d);
    if (dir->count)
        qsort(dir->items, dir->count, sizeof(dir->items[0]), cmp_dirent);
    *out = dir;
    return 0;
fail:
    closedir(d);
    prov_dir_free(dir);
    return rc;
}
