/* pathsafe.c — the rules that keep archive paths inside their destination: path normalisation,
 * symlink targets resolved through the archive's own symlinks, and the reference's glob syntax.
 * Owns: pure string checks (no file system access). Threads: any. */
#include "storage/storage.h"

#include <limits.h>
#include <string.h>

#include "core/error.h"

int sto_path_clean(char *path, const char *what)
{
    char *r = path, *w = path;

    if (!*path)
        return core_error_set(EVOLVE_EUNSAFE, "%s: empty path", what);
    if (*path == '/')
        return core_error_set(EVOLVE_EUNSAFE, "%s: unsafe path \"%s\" (absolute)", what, path);
    while (*r) {
        char *end = strchr(r, '/');
        size_t n = end ? (size_t)(end - r) : strlen(r);
        if (n == 2 && r[0] == '.' && r[1] == '.')
            return core_error_set(EVOLVE_EUNSAFE, "%s: unsafe path \"%s\" (contains \"..\")", what,
                                  path);
        if (n > 0 && !(n == 1 && r[0] == '.')) {
            if (w != path)
                *w++ = '/';
            memmove(w, r, n);
            w += n;
        }
        r += n;
        if (*r == '/')
            r++;
    }
    *w = '\0';
    return *path ? 0 : 1; /* 1: the destination itself ("." or "./") */
}

struct walk {
    char buf[PATH_MAX];
    size_t len;
    size_t marks[PATH_MAX / 2]; /* buf length before each pushed component */
    size_t depth;
    char *const *links;
    char *const *targets;
    size_t n;
};

static int resolve(struct walk *w, const char *target, int hops, const char *link);

static const char *link_target(struct walk *w)
{
    size_t i;

    for (i = 0; i < w->n; i++)
        if (strlen(w->links[i]) == w->len && !memcmp(w->links[i], w->buf, w->len))
            return w->targets[i];
    return NULL;
}

static int push(struct walk *w, const char *c, size_t n, const char *link)
{
    size_t need = w->len + (w->len ? 1 : 0) + n;

    if (need >= sizeof(w->buf) || w->depth >= sizeof(w->marks) / sizeof(w->marks[0]))
        return core_error_set(EVOLVE_EUNSAFE, "symlink \"%s\": target path too long", link);
    w->marks[w->depth++] = w->len;
    if (w->len)
        w->buf[w->len++] = '/';
    memcpy(w->buf + w->len, c, n);
    w->len += n;
    w->buf[w->len] = '\0';
    return 0;
}

static int resolve(struct walk *w, const char *target, int hops, const char *link)
{
    const char *r = target;

    if (hops > 40)
        return core_error_set(EVOLVE_EUNSAFE, "symlink \"%s\": too many levels of symlinks", link);
    if (*target == '/')
        return core_error_set(EVOLVE_EUNSAFE,
                              "symlink \"%s\" points outside the destination "
                              "(absolute target \"%s\")",
                              link, target);
    while (*r) {
        const char *end = strchr(r, '/');
        size_t n = end ? (size_t)(end - r) : strlen(r);
        const char *t;
        int rc;
        if (n == 2 && r[0] == '.' && r[1] == '.') {
            if (!w->depth)
                return core_error_set(EVOLVE_EUNSAFE,
                                      "symlink \"%s\" points outside the "
                                      "destination",
                                      link);
            w->len = w->marks[--w->depth];
            w->buf[w->len] = '\0';
        } else if (n > 0 && !(n == 1 && r[0] == '.')) {
            rc = push(w, r, n, link);
            if (rc < 0)
                return rc;
            t = link_target(w);
            if (t) { /* follow it, from the directory that holds it */
                w->len = w->marks[--w->depth];
                w->buf[w->len] = '\0';
                rc = resolve(w, t, hops + 1, link);
                if (rc < 0)
                    return rc;
            }
        }
        r += n;
        if (*r == '/')
            r++;
    }
    return 0;
}

int sto_symlink_check(const char *link, const char *target, char *const *links,
                      char *const *targets, size_t n)
{
    static _Thread_local struct walk w;
    const char *slash = strrchr(link, '/');

    if (!*target)
        return core_error_set(EVOLVE_EUNSAFE, "symlink \"%s\" has an empty target", link);
    memset(&w, 0, sizeof(w.buf));
    w.len = 0;
    w.depth = 0;
    w.links = links;
    w.targets = targets;
    w.n = n;
    if (slash) { /* start in the link's directory */
        char dir[PATH_MAX];
        size_t dl = (size_t)(slash - link);
        int rc;
        if (dl >= sizeof(dir))
            return core_error_set(EVOLVE_EUNSAFE, "symlink \"%s\": path too long", link);
        memcpy(dir, link, dl);
        dir[dl] = '\0';
        rc = resolve(&w, dir, 0, link);
        if (rc < 0)
            return rc;
    }
    return resolve(&w, target, 0, link);
}

bool sto_glob_match(const char *p, const char *s)
{
    size_t i;

    while (*p) {
        if (p[0] == '*' && p[1] == '*' && p[2] == '/') { /* zero or more leading directories */
            if (sto_glob_match(p + 3, s))
                return true;
            for (i = 0; s[i]; i++)
                if (s[i] == '/' && sto_glob_match(p + 3, s + i + 1))
                    return true;
            return false;
        }
        if (p[0] == '*' && p[1] == '*') { /* anything, '/' included */
            for (i = 0;; i++) {
                if (sto_glob_match(p + 2, s + i))
                    return true;
                if (!s[i])
                    return false;
            }
        }
        if (*p == '*') { /* anything but '/' */
            for (i = 0;; i++) {
                if (sto_glob_match(p + 1, s + i))
                    return true;
                if (!s[i] || s[i] == '/')
                    return false;
            }
        }
        if (*p == '?') {
            if (!*s || *s == '/')
                return false;
        } else if (*p != *s) {
            return false;
        }
        p++;
        s++;
    }
    return *s == '\0';
}
