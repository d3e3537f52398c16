/* extract.c — safe extraction of tar(.gz) archives (libarchive reader, our own writes).
 * Owns: the entry rules (regular files, directories, symlinks and hard links to earlier regular
 * files only; clean relative paths; nothing below a symlink or file; symlinks resolving inside the
 * destination through every symlink of the archive) and the writes: every path is walked from
 * the destination one component at a time with O_NOFOLLOW, so no existing or extracted symlink
 * is ever followed. Errors name the entry. The scan pass checks the whole archive before a byte
 * is written; the run pass checks each entry again as defence in depth.
 * Threads: any (no shared state). */
#include "storage/storage.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

struct rd {
    sto_read_fn fn;
    void *payload;
};

static la_ssize_t on_read(struct archive *a, void *cd, const void **buf)
{
    struct rd *r = cd;
    ssize_t n = r->fn(r->payload, buf);

    if (n < 0)
        archive_set_error(a, EIO, "%s", evolve_error_last()->message);
    return n;
}

struct xs {
    struct archive *a;
    struct rd rd;
    locale_t loc, old;
    struct sto_set *seen; /* path -> type ('f','d','l') */
    char **links, **targets;
    size_t nlinks, caplinks;
    int err; /* an error from our read callback, kept over libarchive's */
};

static void xs_close(struct xs *x)
{
    size_t i;

    if (x->a)
        archive_read_free(x->a);
    if (x->loc) {
        uselocale(x->old);
        freelocale(x->loc);
    }
    sto_set_free(x->seen);
    for (i = 0; i < x->nlinks; i++) {
        free(x->links[i]);
        free(x->targets[i]);
    }
    free(x->links);
    free(x->targets);
}

static int xs_open(struct xs *x, sto_read_fn fn, void *payload)
{
    memset(x, 0, sizeof(*x));
    x->rd.fn = fn;
    x->rd.payload = payload;
    /* Names are read as UTF-8 whatever the process locale is. */
    x->loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    if (x->loc)
        x->old = uselocale(x->loc);
    if (sto_set_new(&x->seen) < 0)
        return EVOLVE_ENOMEM;
    x->a = archive_read_new();
    if (!x->a)
        return core_error_oom();
    archive_read_support_filter_gzip(x->a);
    archive_read_support_filter_none(x->a);
    archive_read_support_format_tar(x->a);
    if (archive_read_open(x->a, &x->rd, NULL, on_read, NULL) != ARCHIVE_OK)
        return core_error_set(EVOLVE_EIO, "archive: %s", archive_error_string(x->a));
    return 0;
}

static const char *type_name(mode_t t)
{
    switch (t) {
    case AE_IFIFO:
        return "p";
    case AE_IFCHR:
        return "c";
    case AE_IFBLK:
        return "b";
    case AE_IFSOCK:
        return "s";
    default:
        return "?";
    }
}

/* Checks one header; fills path (cleaned) and the entry's kind. 1 = the root itself: skip. */
static int check_entry(struct xs *x, struct archive_entry *e, char *path, size_t size, char *kind,
                       char *link_to)
{
    const char *p = archive_entry_pathname_utf8(e), *hl = archive_entry_hardlink_utf8(e);
    const char *sl;
    mode_t t = archive_entry_filetype(e);
    char *s, prev;
    int rc;

    if (!p)
        p = archive_entry_pathname(e);
    if (!p || strlen(p) >= size)
        return core_error_set(EVOLVE_EUNSAFE, "Archive contains unsafe path(s): (unnamed)");
    memcpy(path, p, strlen(p) + 1);
    rc = sto_path_clean(path, "Archive contains unsafe path(s)");
    if (rc < 0)
        return rc;
    if (hl) {
        char tgt[PATH_MAX];
        if (strlen(hl) >= sizeof(tgt))
            return core_error_set(EVOLVE_EUNSAFE, "hard link \"%s\": target too long", path);
        memcpy(tgt, hl, strlen(hl) + 1);
        if (sto_path_clean(tgt, "hard link target") != 0 || sto_set_get(x->seen, tgt) != 'f')
            return core_error_set(EVOLVE_EUNSAFE,
                                  "hard link \"%s\" points outside the "
                                  "destination or to no earlier file (\"%s\")",
                                  p, hl);
        memcpy(link_to, tgt, strlen(tgt) + 1);
        *kind = 'h';
    } else if (t == AE_IFREG) {
        *kind = 'f';
    } else if (t == AE_IFDIR) {
        *kind = 'd';
    } else if (t == AE_IFLNK) {
        sl = archive_entry_symlink_utf8(e);
        if (!sl)
            sl = archive_entry_symlink(e);
        if (!sl || strlen(sl) >= PATH_MAX)
            return core_error_set(EVOLVE_EUNSAFE, "symlink \"%s\" has a bad target", path);
        memcpy(link_to, sl, strlen(sl) + 1);
        *kind = 'l';
    } else {
        return core_error_set(EVOLVE_EUNSAFE,
                              "Archive contains unsupported entry type: \"%s\" "
                              "(%s)",
                              type_name(t), p);
    }
    if (rc == 1)
        return *kind == 'd' ? 1
                            : core_error_set(EVOLVE_EUNSAFE,
                                             "Archive contains unsafe "
                                             "path(s): \"%s\" (replaces the destination)",
                                             p);
    for (s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
        char k;
        prev = *s;
        *s = '\0';
        k = sto_set_get(x->seen, path);
        *s = prev;
        if (k && k != 'd')
            return core_error_set(EVOLVE_EUNSAFE, "entry \"%s\" passes through a %s", path,
                                  k == 'l' ? "symlink" : "file");
    }
    prev = sto_set_get(x->seen, path);
    if (prev && (prev == 'd') != (*kind == 'd'))
        return core_error_set(EVOLVE_EUNSAFE, "entry \"%s\" replaces a %s", path,
                              prev == 'd' ? "directory" : "non-directory");
    return 0;
}

static int remember(struct xs *x, const char *path, char kind, const char *target)
{
    if (sto_set_add(x->seen, path, kind == 'h' ? 'f' : kind) < 0)
        return EVOLVE_ENOMEM;
    if (kind != 'l')
        return 0;
    if (x->nlinks == x->caplinks) {
        size_t nc = x->caplinks ? x->caplinks * 2 : 16;
        char **nl = realloc(x->links, nc * sizeof(*nl)), **nt;
        if (!nl)
            return core_error_oom();
        x->links = nl;
        nt = realloc(x->targets, nc * sizeof(*nt));
        if (!nt)
            return core_error_oom();
        x->targets = nt;
        x->caplinks = nc;
    }
    x->links[x->nlinks] = strdup(path);
    x->targets[x->nlinks] = strdup(target);
    if (!x->links[x->nlinks] || !x->targets[x->nlinks]) {
        free(x->links[x->nlinks]);
        free(x->targets[x->nlinks]);
        return core_error_oom();
    }
    x->nlinks++;
    return 0;
}

static int next_header(struct xs *x, struct archive_entry **e)
{
    int r = archive_read_next_header(x->a, e);

    if (r == ARCHIVE_EOF)
        return 1;
    if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
        return 0;
    return core_error_set(EVOLVE_EIO, "archive: %s", archive_error_string(x->a));
}

int sto_extract_scan(sto_read_fn rd, void *payload)
{
    char path[PATH_MAX], target[PATH_MAX], kind;
    struct archive_entry *e;
    struct xs x;
    size_t i;
    int rc = xs_open(&x, rd, payload);

    while (rc == 0) {
        rc = next_header(&x, &e);
        if (rc == 1) {
            rc = 0;
            break;
        }
        if (rc == 0)
            rc = check_entry(&x, e, path, sizeof(path), &kind, target);
        if (rc == 1) {
            rc = 0;
            continue;
        }
        if (rc == 0)
            rc = remember(&x, path, kind, target);
        if (rc == 0 && archive_read_data_skip(x.a) != ARCHIVE_OK)
            rc = core_error_set(EVOLVE_EIO, "archive: %s", archive_error_string(x.a));
    }
    for (i = 0; rc == 0 && i < x.nlinks; i++)
        rc = sto_symlink_check(x.links[i], x.targets[i], x.links, x.targets, x.nlinks);
    xs_close(&x);
    return rc;
}

/* Opens the parent directory of rel under destfd, creating missing directories (0755), never
 * following a symlink. *leaf points into rel. */
static int open_parent(int destfd, const char *rel, const char **leaf)
{
    char comp[NAME_MAX + 1];
    const char *p = rel, *slash;
    int fd = dup(destfd);

    if (fd < 0)
        return core_error_set(EVOLVE_EIO, "extract: dup: %s", strerror(errno));
    while ((slash = strchr(p, '/'))) {
        size_t n = (size_t)(slash - p);
        int nfd;
        if (n > NAME_MAX) {
            close(fd);
            return core_error_set(EVOLVE_EUNSAFE, "entry \"%s\": name too long", rel);
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT) {
            if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
                int err = errno;
                close(fd);
                return core_error_set(EVOLVE_EIO, "extract: mkdir for \"%s\": %s", rel,
                                      strerror(err));
            }
            nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0) {
            int err = errno;
            close(fd);
            if (err == ELOOP || err == ENOTDIR)
                return core_error_set(EVOLVE_EUNSAFE,
                                      "entry \"%s\" passes through a symlink or "
                                      "file",
                                      rel);
            return core_error_set(EVOLVE_EIO, "extract: open for \"%s\": %s", rel, strerror(err));
        }
        close(fd);
        fd = nfd;
        p = slash + 1;
    }
    *leaf = p;
    return fd;
}

static int clear_leaf(int dfd, const char *leaf, const char *rel)
{
    struct stat st;

    if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return core_error_set(EVOLVE_EUNSAFE, "entry \"%s\" replaces a directory", rel);
    if (unlinkat(dfd, leaf, 0) < 0)
        return core_error_set(EVOLVE_EIO, "extract: unlink \"%s\": %s", rel, strerror(errno));
    return 0;
}

int sto_write_under(int destfd, const char *rel, const void *data, size_t len, uint32_t mode)
{
    const char *leaf;
    const unsigned char *p = data;
    int dfd = open_parent(destfd, rel, &leaf), fd, rc;

    if (dfd < 0)
        return dfd;
    rc = clear_leaf(dfd, leaf, rel);
    fd =
        rc < 0 ? -1 : openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = core_error_set(EVOLVE_EIO, "extract: create \"%s\": %s", rel, strerror(errno));
    while (rc == 0 && len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = core_error_set(EVOLVE_EIO, "extract: write \"%s\": %s", rel, strerror(errno));
        else {
            p += w;
            len -= (size_t)w;
        }
    }
    if (rc == 0 && fchmod(fd, (mode_t)(mode & 01777)) < 0)
        rc = core_error_set(EVOLVE_EIO, "extract: chmod \"%s\": %s", rel, strerror(errno));
    if (fd >= 0)
        close(fd);
    close(dfd);
    return rc;
}

struct dirfix {
    char *path;
    mode_t mode;
    struct timespec mtime;
};

static int write_entry(struct xs *x, int destfd, struct archive_entry *e, const char *path,
                       char kind, const char *target, struct dirfix **dirs, size_t *ndirs)
{
    struct timespec times[2] = {{0, UTIME_OMIT}, {archive_entry_mtime(e), 0}};
    mode_t mode = archive_entry_perm(e) & 01777;
    const char *leaf;
    int dfd = open_parent(destfd, path, &leaf), rc = 0, fd = -1;

    if (dfd < 0)
        return dfd;
    if (kind == 'd') {
        struct dirfix *nd;
        struct stat st;
        if (mkdirat(dfd, leaf, 0700) < 0 &&
            (errno != EEXIST || fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
             !S_ISDIR(st.st_mode)))
            rc = core_error_set(EVOLVE_EUNSAFE, "entry \"%s\": cannot create directory", path);
        nd = rc == 0 ? realloc(*dirs, (*ndirs + 1) * sizeof(**dirs)) : NULL;
        if (rc == 0 && !nd)
            rc = core_error_oom();
        if (rc == 0) {
            *dirs = nd;
            nd[*ndirs].path = strdup(path);
            nd[*ndirs].mode = mode;
            nd[*ndirs].mtime = times[1];
            if (nd[*ndirs].path)
                (*ndirs)++;
        }
    } else if (kind == 'l') {
        rc = clear_leaf(dfd, leaf, path);
        if (rc == 0 && symlinkat(target, dfd, leaf) < 0)
            rc = core_error_set(EVOLVE_EIO, "extract: symlink \"%s\": %s", path, strerror(errno));
        if (rc == 0)
            utimensat(dfd, leaf, times, AT_SYMLINK_NOFOLLOW);
    } else if (kind == 'h') {
        const char *tleaf;
        int tfd = open_parent(destfd, target, &tleaf);
        rc = tfd < 0 ? tfd : clear_leaf(dfd, leaf, path);
        if (rc == 0 && linkat(tfd, tleaf, dfd, leaf, 0) < 0)
            rc = core_error_set(EVOLVE_EIO, "extract: link \"%s\": %s", path, strerror(errno));
        if (tfd >= 0)
            close(tfd);
    } else {
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;
        rc = clear_leaf(dfd, leaf, path);
        if (rc == 0) {
            fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd < 0)
                rc =
                    core_error_set(EVOLVE_EIO, "extract: create \"%s\": %s", path, strerror(errno));
        }
        while (rc == 0 && (r = archive_read_data_block(x->a, &buf, &len, &off)) == ARCHIVE_OK) {
            const unsigned char *p = buf;
            while (rc == 0 && len > 0) {
                ssize_t w = pwrite(fd, p, len, (off_t)off);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    rc = core_error_set(EVOLVE_EIO, "extract: write \"%s\": %s", path,
                                        strerror(errno));
                else {
                    p += w;
                    len -= (size_t)w;
                    off += w;
                }
            }
        }
        if (rc == 0 && r != ARCHIVE_EOF)
            rc = x->err ? x->err
                        : core_error_set(EVOLVE_EIO, "archive: entry \"%s\": %s", path,
                                         archive_error_string(x->a));
        if (rc == 0 && ftruncate(fd, (off_t)archive_entry_size(e)) < 0)
            rc = core_error_set(EVOLVE_EIO, "extract: truncate \"%s\": %s", path, strerror(errno));
        if (rc == 0 && (fchmod(fd, mode) < 0 || futimens(fd, times) < 0))
            rc = core_error_set(EVOLVE_EIO, "extract: attributes of \"%s\": %s", path,
                                strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    close(dfd);
    return rc;
}

/* Applies directory modes and mtimes last, deepest first, so a read-only directory does not stop
 * its own children from being written and child writes do not reset its mtime. */
static void fix_dirs(int destfd, struct dirfix *dirs, size_t n)
{
    while (n-- > 0) {
        const char *leaf;
        struct timespec times[2] = {{0, UTIME_OMIT}, dirs[n].mtime};
        int dfd = open_parent(destfd, dirs[n].path, &leaf);
        if (dfd >= 0) {
            fchmodat(dfd, leaf, dirs[n].mode, 0);
            utimensat(dfd, leaf, times, AT_SYMLINK_NOFOLLOW);
            close(dfd);
        }
        free(dirs[n].path);
    }
    free(dirs);
}

int sto_extract_run(sto_read_fn rd, void *payload, const char *dest)
{
    char path[PATH_MAX], target[PATH_MAX], kind;
    struct dirfix *dirs = NULL;
    size_t ndirs = 0;
    struct archive_entry *e;
    struct xs x;
    int destfd, rc;

    if (mkdir(dest, 0755) < 0 && errno != EEXIST)
        return core_error_set(EVOLVE_EIO, "extract: mkdir %s: %s", dest, strerror(errno));
    destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (destfd < 0)
        return core_error_set(EVOLVE_EIO, "extract: open %s: %s", dest, strerror(errno));
    rc = xs_open(&x, rd, payload);
    while (rc == 0) {
        rc = next_header(&x, &e);
        if (rc == 1) {
            rc = 0;
            break;
        }
        if (rc == 0)
            rc = check_entry(&x, e, path, sizeof(path), &kind, target);
        if (rc == 1) {
            rc = 0;
            continue;
        }
        if (rc == 0 && kind == 'l') /* against the links known so far (scan saw them all) */
            rc = sto_symlink_check(path, target, x.links, x.targets, x.nlinks);
        if (rc == 0)
            rc = remember(&x, path, kind, target);
        if (rc == 0)
            rc = write_entry(&x, destfd, e, path, kind, target, &dirs, &ndirs);
    }
    fix_dirs(destfd, dirs, ndirs);
    xs_close(&x);
    close(destfd);
    return rc;
}

struct file_src {
    int fd;
    unsigned char buf[65536];
};

static ssize_t file_read(void *payload, const void **buf)
{
    struct file_src *f = payload;
    ssize_t n;

    do
        n = read(f->fd, f->buf, sizeof(f->buf));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return core_error_set(EVOLVE_EIO, "archive: read: %s", strerror(errno));
    *buf = f->buf;
    return n;
}

int sto_extract_file(const char *archive, const char *dest)
{
    struct file_src *f = malloc(sizeof(*f));
    int rc;

    if (!f)
        return core_error_oom();
    f->fd = open(archive, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        free(f);
        return core_error_set(EVOLVE_ENOTFOUND, "archive %s: %s", archive, strerror(errno));
    }
    rc = sto_extract_scan(file_read, f);
    if (rc == 0 && lseek(f->fd, 0, SEEK_SET) < 0)
        rc = core_error_set(EVOLVE_EIO, "archive %s: %s", archive, strerror(errno));
    if (rc == 0)
        rc = sto_extract_run(file_read, f, dest);
    close(f->fd);
    free(f);
    return rc;
}
