/* manifest.c — a checkpoint's manifest: every entry (path, type, mode, mtime, size, symlink target,
 * chunk ids) of the archived part of a sandbox home. Owns: the tree walk with the excludes, the
 * deterministic text form (one compact JSON object per line, entries sorted bytewise by path)
 * and its checked parser. Threads: any (no shared state). */
#include "storage/storage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

#define MANIFEST_VERSION 1

void sto_manifest_free(struct sto_manifest *m)
{
    size_t i;

    if (!m)
        return;
    for (i = 0; i < m->count; i++) {
        free(m->entries[i].path);
        free(m->entries[i].target);
        free(m->entries[i].chunks);
    }
    free(m->entries);
    m->entries = NULL;
    m->count = 0;
}

struct scan {
    struct sto_manifest *m;
    size_t cap;
    const char *home;
    const char *ws;
    const char *const *excl;
    char rel[PATH_MAX]; /* the path being visited, relative to home */
    size_t rel_len;
};

static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        int n = *p < 0x80             ? 0
                : (*p & 0xe0) == 0xc0 ? 1
                : (*p & 0xf0) == 0xe0 ? 2
                : (*p & 0xf8) == 0xf0 ? 3
                                      : -1;
        if (n < 0 || (n == 1 && *p < 0xc2))
            return false;
        for (p++; n > 0; n--, p++)
            if ((*p & 0xc0) != 0x80)
                return false;
    }
    return true;
}

static int add(struct scan *s, const struct stat *st, char *target)
{
    struct sto_entry *e;

    if (s->m->count == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 256;
        struct sto_entry *ne = realloc(s->m->entries, ncap * sizeof(*ne));
        if (!ne)
            return core_error_oom();
        s->m->entries = ne;
        s->cap = ncap;
    }
    e = &s->m->entries[s->m->count];
    memset(e, 0, sizeof(*e));
    e->path = strdup(s->rel);
    if (!e->path)
        return core_error_oom();
    s->m->count++;
    e->type = S_ISDIR(st->st_mode) ? STO_DIR : S_ISLNK(st->st_mode) ? STO_LINK : STO_FILE;
    e->mode = S_ISLNK(st->st_mode) ? 0777 : (uint32_t)(st->st_mode & 07777);
    e->mtime = (int64_t)st->st_mtim.tv_sec;
    e->size = e->type == STO_FILE ? (uint64_t)st->st_size : 0;
    e->target = target;
    return 0;
}

/* Visits s->rel, which is `name` inside the directory open as dfd. Recursion keeps only a few
 * words per level on the stack (paths live in struct scan), so deep trees are fine on small
 * worker stacks. */
static int visit(struct scan *s, int dfd, const char *name)
{
    struct stat st;
    struct dirent *de;
    char *target = NULL;
    DIR *d;
    int rc, fd;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0; /* vanished, or a missing agent dir: not an error */
        return core_error_set(EVOLVE_EIO, "checkpoint: %s/%s: %s", s->home, s->rel,
                              strerror(errno));
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
        core_log_debug("checkpoint: skipping special file %s/%s", s->home, s->rel);
        return 0;
    }
    if (!valid_utf8(s->rel)) {
        core_log_warn("checkpoint: skipping %s/%s: name is not UTF-8", s->home, s->rel);
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        ssize_t n;
        target = malloc(PATH_MAX);
        if (!target)
            return core_error_oom();
        n = readlinkat(dfd, name, target, PATH_MAX - 1);
        if (n >= 0)
            target[n] = '\0';
        if (n < 0 || !valid_utf8(target)) {
            core_log_warn("checkpoint: skipping symlink %s/%s", s->home, s->rel);
            free(target);
            return 0;
        }
    }
    rc = add(s, &st, target);
    if (rc < 0) {
        free(target);
        return rc;
    }
    if (!S_ISDIR(st.st_mode))
        return 0;
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        rc = core_error_set(EVOLVE_EIO, "checkpoint: open %s/%s: %s", s->home, s->rel,
                            strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    while (rc == 0 && (de = readdir(d))) {
        size_t n = strlen(de->d_name), keep = s->rel_len;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (keep + 1 + n >= sizeof(s->rel)) {
            rc = core_error_set(EVOLVE_EINVAL, "checkpoint: path too long: %s/%s", s->rel,
                                de->d_name);
            break;
        }
        s->rel[keep] = '/';
        memcpy(s->rel + keep + 1, de->d_name, n + 1);
        s->rel_len = keep + 1 + n;
        if (!sto_excluded(s->rel, s->ws, s->excl))
            rc = visit(s, dirfd(d), de->d_name);
        s->rel_len = keep;
        s->rel[keep] = '\0';
    }
    closedir(d);
    return rc;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct sto_entry *)a)->path, ((const struct sto_entry *)b)->path);
}

int sto_manifest_scan(struct sto_manifest *m, const char *home, const char *agent,
                      const char *workspace_dir)
{
    const char *const *dirs, *const *excl;
    struct scan *s;
    char ws[PATH_MAX];
    size_t i;
    int rc, hfd;

    memset(m, 0, sizeof(*m));
    rc = sto_agent_dirs(agent, &dirs, &excl);
    if (rc < 0)
        return rc;
    if ((size_t)snprintf(ws, sizeof(ws), "%s", workspace_dir) >= sizeof(ws) ||
        sto_path_clean(ws, "workspace dir") != 0 || strcmp(ws, workspace_dir))
        return core_error_set(EVOLVE_EINVAL, "workingDir resolves to invalid path: %s",
                              workspace_dir);
    hfd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (hfd < 0)
        return core_error_set(EVOLVE_ENOTFOUND, "checkpoint: sandbox home %s is not a directory",
                              home);
    s = calloc(1, sizeof(*s));
    if (!s) {
        close(hfd);
        return core_error_oom();
    }
    s->m = m;
    s->home = home;
    s->ws = workspace_dir;
    s->excl = excl;
    for (i = 0, rc = 0; rc == 0 && (i == 0 || dirs[i - 1]); i++) {
        const char *top = i == 0 ? workspace_dir : dirs[i - 1], *leaf = top, *sl;
        int pfd = dup(hfd);
        /* Walk ".local/share" of ".local/share/opencode" without following symlinks: a link
         * planted there must not make us archive a directory outside the sandbox home. */
        while (pfd >= 0 && (sl = strchr(leaf, '/'))) {
            char comp[NAME_MAX + 1];
            size_t n = (size_t)(sl - leaf);
            int nfd = -1;
            if (n <= NAME_MAX) {
                memcpy(comp, leaf, n);
                comp[n] = '\0';
                nfd = openat(pfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }
            close(pfd);
            pfd = nfd;
            leaf = sl + 1;
        }
        if (pfd < 0)
            continue; /* missing (or not a plain directory): nothing to archive */
        s->rel_len = strlen(top);
        memcpy(s->rel, top, s->rel_len + 1);
        rc = visit(s, pfd, leaf);
        close(pfd);
    }
    close(hfd);
    free(s);
    if (rc < 0) {
        sto_manifest_free(m);
        return rc;
    }
    qsort(m->entries, m->count, sizeof(m->entries[0]), cmp_entry);
    return 0;
}

int sto_manifest_serialize(const struct sto_manifest *m, char **out, size_t *out_len)
{
    size_t cap = 4096 + m->count * 128, len = 0, i, k;
    char *buf = malloc(cap);
    int rc = 0;

    if (!buf)
        return core_error_oom();
    len = (size_t)snprintf(buf, cap, "{\"evolveManifest\":%d,\"entries\":%zu}\n", MANIFEST_VERSION,
                           m->count);
    for (i = 0; rc == 0 && i < m->count; i++) {
        const struct sto_entry *e = &m->entries[i];
        json_t *o = json_pack("{s:s,s:s#,s:I,s:I}", "p", e->path, "t", &e->type, (size_t)1, "m",
                              (json_int_t)e->mode, "mt", (json_int_t)e->mtime);
        char *line;
        size_t n;
        if (o && e->type == STO_FILE) {
            json_t *c = json_array();
            json_object_set_new(o, "s", json_integer((json_int_t)e->size));
            for (k = 0; c && k < e->nchunks; k++)
                json_array_append_new(c, json_string(e->chunks[k]));
            if (!c || json_object_set_new(o, "c", c) < 0)
                rc = core_error_oom();
        } else if (o && e->type == STO_LINK) {
            if (json_object_set_new(o, "l", json_string(e->target)) < 0)
                rc = core_error_oom();
        }
        line = o && rc == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!line) {
            rc = core_error_oom();
            break;
        }
        n = strlen(line);
        if (len + n + 2 > cap) {
            char *nb;
            cap = (len + n + 2) * 2;
            nb = realloc(buf, cap);
            if (!nb) {
                free(line);
                rc = core_error_oom();
                break;
            }
            buf = nb;
        }
        memcpy(buf + len, line, n);
        buf[len + n] = '\n';
        len += n + 1;
        free(line);
    }
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

static const struct sto_entry *find(const struct sto_manifest *m, const char *p, size_t n)
{
    size_t lo = 0, hi = m->count;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *q = m->entries[mid].path;
        int c = strncmp(q, p, n);
        if (c == 0)
            c = q[n] ? 1 : 0;
        if (c == 0)
            return &m->entries[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int parse_entry(struct sto_entry *e, json_t *o, const char *what, size_t line)
{
    const char *p = NULL, *t = NULL, *l = NULL;
    json_int_t mode = -1, mt = 0, size = 0;
    json_t *c = NULL;
    size_t k;

    if (json_unpack(o, "{s:s,s:s,s:I,s:I,s?I,s?o,s?s}", "p", &p, "t", &t, "m", &mode, "mt", &mt,
                    "s", &size, "c", &c, "l", &l) < 0 ||
        strlen(t) != 1 || !strchr("fdl", t[0]) || mode < 0 || mode > 07777 || size < 0)
        return core_error_set(EVOLVE_ECORRUPT, "%s: manifest line %zu is malformed", what, line);
    e->path = strdup(p);
    if (!e->path)
        return core_error_oom();
    if (sto_path_clean(e->path, what) != 0 || strcmp(e->path, p))
        return core_error_set(EVOLVE_EUNSAFE, "%s: unsafe path \"%s\" in manifest", what, p);
    e->type = t[0];
    e->mode = (uint32_t)mode;
    e->mtime = (int64_t)mt;
    e->size = (uint64_t)size;
    if (e->type == STO_LINK) {
        if (!l)
            return core_error_set(EVOLVE_ECORRUPT, "%s: symlink %s has no target", what, p);
        e->target = strdup(l);
        if (!e->target)
            return core_error_oom();
    }
    if (e->type == STO_FILE) {
        if (!json_is_array(c))
            return core_error_set(EVOLVE_ECORRUPT, "%s: file %s has no chunks", what, p);
        e->nchunks = json_array_size(c);
        e->chunks = calloc(e->nchunks ? e->nchunks : 1, sizeof(*e->chunks));
        if (!e->chunks)
            return core_error_oom();
        for (k = 0; k < e->nchunks; k++) {
            const char *id = json_string_value(json_array_get(c, k));
            if (!sto_is_hex_id(id))
                return core_error_set(EVOLVE_ECORRUPT, "%s: file %s has a bad chunk id", what, p);
            memcpy(e->chunks[k], id, STO_HEX_LEN + 1);
        }
    }
    return 0;
}

/* Checks what a manifest as a whole promises: sorted unique paths, no entry below a symlink or
 * a file, every symlink resolving inside the root. */
static int check_tree(const struct sto_manifest *m, const char *what)
{
    char **links = NULL, **targets = NULL;
    size_t i, n = 0;
    int rc = 0;

    for (i = 0; i < m->count; i++) {
        const char *p = m->entries[i].path, *s;
        if (i && strcmp(m->entries[i - 1].path, p) >= 0)
            return core_error_set(EVOLVE_ECORRUPT, "%s: manifest is not sorted at %s", what, p);
        for (s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
            const struct sto_entry *up = find(m, p, (size_t)(s - p));
            if (up && up->type != STO_DIR)
                return core_error_set(EVOLVE_EUNSAFE, "%s: entry \"%s\" passes through %s \"%s\"",
                                      what, p, up->type == STO_LINK ? "symlink" : "file", up->path);
        }
        if (m->entries[i].type == STO_LINK)
            n++;
    }
    if (!n)
        return 0;
    links = calloc(n, sizeof(*links));
    targets = calloc(n, sizeof(*targets));
    if (!links || !targets) {
        free(links);
        free(targets);
        return core_error_oom();
    }
    for (i = 0, n = 0; i < m->count; i++)
        if (m->entries[i].type == STO_LINK) {
            links[n] = m->entries[i].path;
            targets[n++] = m->entries[i].target;
        }
    for (i = 0; rc == 0 && i < n; i++)
        rc = sto_symlink_check(links[i], targets[i], links, targets, n);
    free(links);
    free(targets);
    if (rc < 0)
        core_error_prefix("%s: ", what);
    return rc;
}

int sto_manifest_parse(struct sto_manifest *m, const char *text, size_t len, const char *what)
{
    const char *p = text, *end = text + len;
    json_int_t version = 0, count = -1;
    size_t line = 0;
    json_t *o;
    int rc = 0;

    memset(m, 0, sizeof(*m));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        o = json_loadb(p, n, 0, NULL);
        if (!o) {
            rc = core_error_set(EVOLVE_ECORRUPT, "%s: manifest line %zu is not JSON", what, line);
            break;
        }
        if (line == 1) {
            if (json_unpack(o, "{s:I,s:I}", "evolveManifest", &version, "entries", &count) < 0 ||
                version != MANIFEST_VERSION || count < 0 || (size_t)count > len) {
                json_decref(o);
                rc = core_error_set(EVOLVE_ECORRUPT, "%s: bad manifest header", what);
                break;
            }
            m->entries = calloc((size_t)count ? (size_t)count : 1, sizeof(*m->entries));
            if (!m->entries) {
                json_decref(o);
                rc = core_error_oom();
                break;
            }
        } else if (m->count >= (size_t)count) {
            json_decref(o);
            rc = core_error_set(EVOLVE_ECORRUPT, "%s: manifest has extra lines", what);
            break;
        } else {
            rc = parse_entry(&m->entries[m->count++], o, what, line);
        }
        json_decref(o);
        if (rc < 0)
            break;
        p += n + (nl ? 1 : 0);
    }
    if (rc == 0 && (line == 0 || m->count != (size_t)count))
        rc = core_error_set(EVOLVE_ECORRUPT, "%s: manifest is truncated", what);
    if (rc == 0)
        rc = check_tree(m, what);
    if (rc < 0)
        sto_manifest_free(m);
    return rc;
}
