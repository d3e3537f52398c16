/* checkpoint.c — creating a checkpoint: walk the sandbox home, chunk/hash/deflate every file on a
 * few threads (new chunks only), store the manifest, hash the deterministic archive, make the
 * blobs durable, then write the index record (the commit point).
 * Crash safety: until the record is renamed into index/, nothing of this checkpoint is listed;
 * blobs written before a crash are either in tmp/ (removed by gc) or complete but unreferenced
 * (removed by gc). The store lock is held shared throughout so gc waits for us.
 * Threads: called on one thread; it starts `threads` short-lived pthreads of its own that share
 * the work queue and the backend behind one mutex. */
#include "storage/storage.h"
#include "storage/info.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

#define READ_BUF (4u << 20)

struct job {
    struct sto_store *st;
    struct sto_manifest *m;
    const char *home;
    size_t *order; /* file entries, largest first */
    size_t nfiles;
    atomic_size_t next;
    pthread_mutex_t mu; /* the backend, err */
    int err;
    char msg[512];
};

static void fail(struct job *j, int rc)
{
    pthread_mutex_lock(&j->mu);
    if (!j->err) {
        j->err = rc;
        snprintf(j->msg, sizeof(j->msg), "%s", evolve_error_last()->message);
    }
    pthread_mutex_unlock(&j->mu);
}

static int store_chunk(struct job *j, struct sto_entry *e, const unsigned char *d, size_t n)
{
    char(*grown)[STO_HEX_LEN + 1], key[128];
    unsigned char *blob = NULL;
    size_t blen = 0;
    int rc;

    grown = realloc(e->chunks, (e->nchunks + 1) * sizeof(*e->chunks));
    if (!grown)
        return core_error_oom();
    e->chunks = grown;
    rc = sto_sha256_hex(e->chunks[e->nchunks], d, n);
    if (rc < 0)
        return rc;
    sto_blob_key(key, sizeof(key), e->chunks[e->nchunks]);
    e->nchunks++;
    e->size += n;
    pthread_mutex_lock(&j->mu);
    rc = j->st->be->ops->exists(j->st->be, key);
    pthread_mutex_unlock(&j->mu);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = sto_blob_encode(&blob, &blen, d, n); /* the costly part, outside the lock */
    if (rc == 0) {
        pthread_mutex_lock(&j->mu);
        rc = j->st->be->ops->put(j->st->be, key, blob, blen, STO_PUT_NOSYNC);
        pthread_mutex_unlock(&j->mu);
    }
    free(blob);
    return rc;
}

static int do_file(struct job *j, struct sto_entry *e, unsigned char *buf)
{
    char path[8192];
    size_t have = 0, off;
    bool eof = false;
    int fd, rc = 0;

    snprintf(path, sizeof(path), "%s/%s", j->home, e->path);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return core_error_set(EVOLVE_EIO, "checkpoint: open %s: %s", path, strerror(errno));
    e->size = 0; /* what we read is what the archive holds */
    while (rc == 0 && !(eof && have == 0)) {
        while (!eof && have < READ_BUF) {
            ssize_t r = read(fd, buf + have, READ_BUF - have);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                rc = core_error_set(EVOLVE_EIO, "checkpoint: read %s: %s", path, strerror(errno));
                break;
            }
            if (r == 0)
                eof = true;
            have += (size_t)r;
        }
        for (off = 0; rc == 0 && off < have;) {
            size_t n = sto_chunk_next(buf + off, have - off, eof);
            if (n == 0)
                break;
            rc = store_chunk(j, e, buf + off, n);
            off += n;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    close(fd);
    return rc;
}

static void *worker(void *arg)
{
    struct job *j = arg;
    unsigned char *buf = malloc(READ_BUF);
    size_t i;

    if (!buf) {
        fail(j, core_error_oom());
        return NULL;
    }
    /* relaxed: the counter only hands out indexes; results are published by pthread_join. */
    while ((i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->nfiles) {
        int rc;
        pthread_mutex_lock(&j->mu);
        rc = j->err;
        pthread_mutex_unlock(&j->mu);
        if (rc)
            break;
        rc = do_file(j, &j->m->entries[j->order[i]], buf);
        if (rc < 0)
            fail(j, rc);
    }
    free(buf);
    return NULL;
}

static const struct sto_manifest *sort_m;
static int cmp_size_desc(const void *a, const void *b)
{
    uint64_t x = sort_m->entries[*(const size_t *)a].size;
    uint64_t y = sort_m->entries[*(const size_t *)b].size;

    return x < y ? 1 : x > y ? -1 : 0;
}

static int hash_files(struct sto_store *st, struct sto_manifest *m, const char *home)
{
    struct job j = {.st = st, .m = m, .home = home};
    pthread_t tids[16];
    unsigned int nt = st->threads, started = 0, i;
    size_t k;

    if (nt == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nt = c > 0 ? (unsigned int)c : 1;
    }
    if (nt > 8)
        nt = 8;
    j.order = malloc((m->count ? m->count : 1) * sizeof(*j.order));
    if (!j.order)
        return core_error_oom();
    for (k = 0; k < m->count; k++)
        if (m->entries[k].type == STO_FILE)
            j.order[j.nfiles++] = k;
    /* Largest first so one big file does not finish alone at the end. qsort has no payload
     * argument; the comparison reads the manifest through a file-local pointer, so serialise. */
    {
        static pthread_mutex_t sort_mu = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&sort_mu);
        sort_m = m;
        qsort(j.order, j.nfiles, sizeof(*j.order), cmp_size_desc);
        pthread_mutex_unlock(&sort_mu);
    }
    atomic_init(&j.next, 0);
    pthread_mutex_init(&j.mu, NULL);
    if (nt > j.nfiles)
        nt = j.nfiles ? (unsigned int)j.nfiles : 1;
    for (i = 1; i < nt; i++) {
        if (pthread_create(&tids[started], NULL, worker, &j) != 0)
            break;
        started++;
    }
    worker(&j); /* the calling thread works too */
    for (i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&j.mu);
    free(j.order);
    if (j.err)
        return core_error_set(j.err, "%s", j.msg);
    return 0;
}

static void make_id(char *id, size_t size, uint64_t ms)
{
    static const char b36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    char t[16], r[9];
    unsigned char rnd[8];
    int n = 0, i;

    do {
        t[n++] = b36[ms % 36];
        ms /= 36;
    } while (ms && n < (int)sizeof(t));
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        for (i = 0; i < 8; i++)
            rnd[i] = (unsigned char)((uint64_t)ts.tv_nsec >> (i * 3)) ^ (unsigned char)getpid();
    }
    for (i = 0; i < 8; i++)
        r[i] = b36[rnd[i] % 36];
    r[8] = '\0';
    i = snprintf(id, size, "ckpt_");
    while (n > 0 && (size_t)i + 1 < size)
        id[i++] = t[--n];
    snprintf(id + i, size - (size_t)i, "_%s", r);
}

static void iso_time(char *out, size_t size, const struct timespec *ts)
{
    struct tm tm;

    gmtime_r(&ts->tv_sec, &tm);
    if (snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(ts->tv_nsec / 1000000) % 1000) >= (int)size)
        out[0] = '\0';
}

int sto_checkpoint(struct sto_store *st, const char *home, const evolve_checkpoint_options_t *o,
                   struct sto_record *out)
{
    struct sto_manifest m = {0};
    struct sto_record r = {0};
    struct timespec now, done;
    char id[64], ts[40], hash[STO_HEX_LEN + 1];
    char *text = NULL;
    size_t tlen = 0;
    uint64_t size = 0;
    int rc;

    clock_gettime(CLOCK_REALTIME, &now);
    iso_time(ts, sizeof(ts), &now);
    make_id(id, sizeof(id), (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u);
    rc = sto_store_lock(st, false);
    if (rc < 0)
        return rc;
    rc = sto_manifest_scan(&m, home, o->agent_type,
                           o->workspace_dir ? o->workspace_dir : "workspace");
    if (rc == 0)
        rc = hash_files(st, &m, home);
    if (rc == 0)
        rc = sto_manifest_serialize(&m, &text, &tlen);
    if (rc == 0)
        rc = sto_store_bytes(st, (const unsigned char *)text, tlen, &r.manifest, &r.nmanifest);
    if (rc == 0)
        rc = sto_archive_hash(&m, sto_store_fetch, st, hash, &size);
    if (rc == 0)
        rc = st->be->ops->sync(st->be); /* blobs durable before the record names them */
    if (rc == 0)
        rc = sto_info_new(&r.info, id, hash, o->tag, ts, (int64_t)size, o->agent_type, o->model,
                          o->workspace_mode, o->parent_id, o->comment);
    if (rc == 0) {
        clock_gettime(CLOCK_REALTIME, &done);
        r.created_ns = (int64_t)done.tv_sec * 1000000000 + done.tv_nsec;
        rc = sto_record_write(st, &r);
    }
    if (rc < 0)
        st->be->ops->discard(st->be);
    sto_store_unlock(st);
    free(text);
    sto_manifest_free(&m);
    if (rc < 0) {
        sto_record_free(&r);
        return core_error_prefix("checkpoint of %s: ", home);
    }
    *out = r;
    return 0;
}
