/* tree.c — directory tree helpers for tests (see tree.h). */
#include "support/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/support.h"

static void join(char *out, size_t n, const char *root, const char *rel)
{
    if ((size_t)snprintf(out, n, "%s/%s", root, rel) >= n)
        ts_die("path too long: %s/%s", root, rel);
}

void tt_bytes(const char *root, const char *rel, const void *data, size_t len)
{
    char p[4096];

    join(p, sizeof(p), root, rel);
    ts_write_file(p, data, len);
}

void tt_file(const char *root, const char *rel, const char *content, mode_t mode)
{
    char p[4096];

    join(p, sizeof(p), root, rel);
    ts_write_file(p, content, strlen(content));
    if (chmod(p, mode) < 0)
        ts_die("chmod %s: %s", p, strerror(errno));
}

void tt_link(const char *root, const char *rel, const char *target)
{
    char p[4096], *s;

    join(p, sizeof(p), root, rel);
    for (s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    if (symlink(target, p) < 0)
        ts_die("symlink %s: %s", p, strerror(errno));
}

void tt_dir(const char *root, const char *rel, mode_t mode)
{
    char p[4096], *s;

    join(p, sizeof(p), root, rel);
    for (s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        ts_die("mkdir %s: %s", p, strerror(errno));
    if (strcmp(rel, ".") && chmod(p, mode) < 0)
        ts_die("chmod %s: %s", p, strerror(errno));
}

void tt_mtime(const char *root, const char *rel, int64_t sec)
{
    struct timespec t[2] = {{(time_t)sec, 0}, {(time_t)sec, 0}};
    char p[4096];

    join(p, sizeof(p), root, rel);
    if (utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW) < 0)
        ts_die("utimensat %s: %s", p, strerror(errno));
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0;

    *out = NULL;
    if (!d)
        return 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        v = realloc(v, (n + 1) * sizeof(*v));
        v[n++] = strdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof(*v), cmp_names);
    *out = v;
    return n;
}

static void free_list(char **v, size_t n)
{
    while (n-- > 0)
        free(v[n]);
    free(v);
}

int tt_compare(const char *a, const char *b, char *why, size_t ws)
{
    char **la, **lb, pa[4096], pb[4096];
    size_t na = list(a, &la), nb = list(b, &lb), i;
    int rc = 0;

    if (na != nb) {
        snprintf(why, ws, "%s has %zu entries, %s has %zu", a, na, b, nb);
        rc = 1;
    }
    for (i = 0; rc == 0 && i < na; i++) {
        struct stat sa, sb;
        if (strcmp(la[i], lb[i])) {
            snprintf(why, ws, "%s/%s vs %s/%s", a, la[i], b, lb[i]);
            rc = 1;
            break;
        }
        join(pa, sizeof(pa), a, la[i]);
        join(pb, sizeof(pb), b, lb[i]);
        lstat(pa, &sa);
        lstat(pb, &sb);
        if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT) ||
            (!S_ISLNK(sa.st_mode) && (sa.st_mode & 07777) != (sb.st_mode & 07777))) {
            snprintf(why, ws, "%s: mode %o vs %o", pb, (unsigned)sa.st_mode, (unsigned)sb.st_mode);
            rc = 1;
        } else if (S_ISDIR(sa.st_mode)) {
            rc = tt_compare(pa, pb, why, ws);
        } else if (S_ISLNK(sa.st_mode)) {
            char ta[4096] = {0}, tb[4096] = {0};
            if (readlink(pa, ta, sizeof(ta) - 1) < 0 || readlink(pb, tb, sizeof(tb) - 1) < 0 ||
                strcmp(ta, tb)) {
                snprintf(why, ws, "%s: link %s vs %s", pb, ta, tb);
                rc = 1;
            }
        } else {
            size_t ca = 0, cb = 0;
            char *da = ts_read_file(pa, &ca), *db = ts_read_file(pb, &cb);
            if (!da || !db || ca != cb || memcmp(da, db, ca)) {
                snprintf(why, ws, "%s: content differs", pb);
                rc = 1;
            } else if (sa.st_mtim.tv_sec != sb.st_mtim.tv_sec) {
                snprintf(why, ws, "%s: mtime %ld vs %ld", pb, (long)sa.st_mtim.tv_sec,
                         (long)sb.st_mtim.tv_sec);
                rc = 1;
            }
            free(da);
            free(db);
        }
    }
    free_list(la, na);
    free_list(lb, nb);
    return rc;
}

size_t tt_count(const char *dir)
{
    char **v;
    size_t n = list(dir, &v);

    free_list(v, n);
    return n;
}

uint64_t tt_bytes_under(const char *dir)
{
    char **v, p[4096];
    size_t n = list(dir, &v), i;
    uint64_t sum = 0;

    for (i = 0; i < n; i++) {
        struct stat st;
        join(p, sizeof(p), dir, v[i]);
        if (lstat(p, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode))
            sum += tt_bytes_under(p);
        else if (S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    }
    free_list(v, n);
    return sum;
}
