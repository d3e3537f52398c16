/* bench/checkpoint.c — checkpoint and restore times beside tar, and the store size of 100
 * near-identical checkpoints.
 * Tree: generated deterministically under the build dir (EVOLVE_BENCH_MB, default 100 MB): half
 * the bytes text-like source files (1-64 KB), half incompressible binaries (64 KB - 2 MB), plus
 * an agent session log; fixed mtimes. Figures (one JSON object per line on stdout):
 *   checkpoint_s   first checkpoint into an empty store (fsync on, the default) vs
 *                  `tar czf - workspace .claude | sha256sum`
 *   restore_s      restore into an empty dir vs `tar xzf` of the same archive
 *   archive_bytes  our tar.gz vs GNU tar+gzip -6 of the same files (compression cost of chunking)
 *   store_ratio    store bytes after 100 checkpoints, each after editing 1% of the files in place
 *                  (a 64-byte overwrite at a random offset), over the store bytes after one
 *                  (EVOLVE_BENCH_DEDUP_MB tree, default 25 to keep the run short)
 * Human text on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evolve/evolve.h"

#define RUNS 5

static char root[1024], home[1100], storedir[1100], out[1100];
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sh(const char *cmd)
{
    pid_t pid = fork();
    int st = 0;

    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "bench: command failed: %s\n", cmd);
        exit(1);
    }
    return 0;
}

static void write_file(const char *rel, const unsigned char *data, size_t len)
{
    char p[2048], *s;
    FILE *f;

    snprintf(p, sizeof(p), "%s/%s", home, rel);
    for (s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "bench: write %s: %s\n", p, strerror(errno));
        exit(1);
    }
    {
        struct timespec t[2] = {{1700000000, 0}, {1700000000, 0}};
        utimensat(AT_FDCWD, p, t, 0);
    }
}

static char **names;
static size_t nnames, total_bytes;

static void gen_tree(size_t mb)
{
    static const char *words[] = {"int",    "return", "if",     "for",  "while", "static", "const",
                                  "char",   "size_t", "struct", "void", "=",     "+",      "(",
                                  ")",      "{",      "}",      ";",    "x",     "y",      "count",
                                  "buffer", "error",  "\n",     "    "};
    size_t target = mb << 20, text = 0, bin = 0, i;
    unsigned char *buf = malloc(2u << 20);
    char rel[256];

    while (text + bin < target) {
        bool want_text = text <= bin;
        size_t len;
        if (want_text) {
            size_t n = 0;
            len = 1024 + next() % (63 * 1024);
            while (n < len) {
                const char *w = words[next() % (sizeof(words) / sizeof(words[0]))];
                size_t wl = strlen(w);
                if (n + wl + 1 > len)
                    break;
                memcpy(buf + n, w, wl);
                n += wl;
                buf[n++] = ' ';
            }
            len = n;
            snprintf(rel, sizeof(rel), "workspace/src/d%02zu/f%05zu.c", nnames % 40, nnames);
            text += len;
        } else {
            len = 65536 + next() % (2u << 20) - 65536 / 2;
            if (len > (2u << 20))
                len = 2u << 20;
            for (i = 0; i + 8 <= len; i += 8) {
                uint64_t v = next();
                memcpy(buf + i, &v, 8);
            }
            snprintf(rel, sizeof(rel), "workspace/assets/b%05zu.bin", nnames);
            bin += len;
        }
        write_file(rel, buf, len);
        names = realloc(names, (nnames + 1) * sizeof(*names));
        names[nnames++] = strdup(rel);
    }
    for (i = 0; i < 2000; i++) { /* a session log */
        int n = snprintf((char *)buf + i * 50, 51,
                         "{\"type\":\"assistant\",\"n\":%05zu,\"x\":\"ab\"}\n", i);
        (void)n;
    }
    write_file(".claude/projects/p/session.jsonl", buf, 2000 * 50 - 1);
    write_file(".claude/settings.json", (const unsigned char *)"{}", 2);
    total_bytes = text + bin;
    free(buf);
}

static uint64_t du_bytes, du_blocks;
static int du_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)p;
    (void)f;
    if (flag == FTW_F) {
        du_bytes += (uint64_t)st->st_size;
        du_blocks += (uint64_t)st->st_blocks * 512;
    }
    return 0;
}

static void store_size(uint64_t *bytes, uint64_t *disk)
{
    char p[1200];

    du_bytes = du_blocks = 0;
    snprintf(p, sizeof(p), "%s/blobs", storedir);
    nftw(p, du_one, 32, FTW_PHYS);
    snprintf(p, sizeof(p), "%s/index", storedir);
    nftw(p, du_one, 32, FTW_PHYS);
    *bytes = du_bytes;
    *disk = du_blocks;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void emit(const char *figure, const char *unit, double *v, int runs, double *base,
                 const char *checksum)
{
    json_t *o;
    double med;

    qsort(v, (size_t)runs, sizeof(*v), cmp_d);
    med = v[runs / 2];
    o = json_pack("{s:s,s:s,s:s,s:f,s:f,s:f,s:i,s:I,s:I,s:s}", "bench", "checkpoint", "figure",
                  figure, "unit", unit, "median", med, "min", v[0], "max", v[runs - 1], "runs",
                  runs, "bytes", (json_int_t)total_bytes, "files", (json_int_t)nnames, "checksum",
                  checksum);
    if (base) {
        qsort(base, (size_t)runs, sizeof(*base), cmp_d);
        json_object_set_new(o, "baseline_median", json_real(base[runs / 2]));
        json_object_set_new(o, "ratio", json_real(med / base[runs / 2]));
    }
    json_dumpf(o, stdout, JSON_COMPACT);
    putchar('\n');
    fflush(stdout);
    json_decref(o);
}

static evolve_store_t *fresh_store(bool no_sync)
{
    evolve_store_options_t o = EVOLVE_STORE_OPTIONS_INIT;
    evolve_store_t *s = NULL;
    char cmd[1300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", storedir);
    sh(cmd);
    o.root = storedir;
    o.no_sync = no_sync;
    if (evolve_store_open(&s, &o) < 0) {
        fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
        exit(1);
    }
    return s;
}

static evolve_checkpoint_info_t *checkpoint(evolve_store_t *s)
{
    evolve_checkpoint_options_t co = EVOLVE_CHECKPOINT_OPTIONS_INIT;
    evolve_checkpoint_info_t *info = NULL;

    co.agent_type = "claude";
    if (evolve_store_checkpoint(&info, s, home, &co) < 0) {
        fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
        exit(1);
    }
    return info;
}

int main(void)
{
    const char *mbs = getenv("EVOLVE_BENCH_MB"), *dmbs = getenv("EVOLVE_BENCH_DEDUP_MB");
    size_t mb = mbs ? strtoul(mbs, NULL, 10) : 100, dmb = dmbs ? strtoul(dmbs, NULL, 10) : 25;
    double ck[RUNS], tarc[RUNS], rs[RUNS], tarx[RUNS], t0, v[1];
    evolve_checkpoint_info_t *info = NULL;
    evolve_store_t *s;
    char cmd[4000], hash[65] = "", archive[1200];
    uint64_t one_b, one_d, all_b, all_d;
    int r, k;

    snprintf(root, sizeof(root), "%s/bench-checkpoint", EVOLVE_BINARY_DIR);
    snprintf(home, sizeof(home), "%s/home", root);
    snprintf(storedir, sizeof(storedir), "%s/store", root);
    snprintf(out, sizeof(out), "%s/out", root);
    snprintf(archive, sizeof(archive), "%s/tar.tar.gz", root);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", root, root);
    sh(cmd);
    gen_tree(mb);
    fprintf(stderr, "bench: tree of %zu files, %zu bytes in %s\n", nnames, total_bytes, home);

    for (r = 0; r < RUNS; r++) {
        s = fresh_store(false);
        sh("sync");
        t0 = now_s();
        info = checkpoint(s);
        ck[r] = now_s() - t0;
        snprintf(hash, sizeof(hash), "%s", info->hash);
        snprintf(cmd, sizeof(cmd), "cd '%s' && tar czf - workspace .claude | sha256sum >/dev/null",
                 home);
        t0 = now_s();
        sh(cmd);
        tarc[r] = now_s() - t0;
        fprintf(stderr, "bench: checkpoint %.3f s, tar czf | sha256sum %.3f s\n", ck[r], tarc[r]);

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
        sh(cmd);
        t0 = now_s();
        if (evolve_store_restore(NULL, s, info->id, out) < 0) {
            fprintf(stderr, "bench: %s\n", evolve_error_last()->message);
            return 1;
        }
        rs[r] = now_s() - t0;
        if (r == 0) {
            snprintf(cmd, sizeof(cmd), "cd '%s' && tar czf '%s' workspace .claude", home, archive);
            sh(cmd);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", out, out);
        sh(cmd);
        snprintf(cmd, sizeof(cmd), "tar xzf '%s' -C '%s'", archive, out);
        t0 = now_s();
        sh(cmd);
        tarx[r] = now_s() - t0;
        fprintf(stderr, "bench: restore %.3f s, tar xzf %.3f s\n", rs[r], tarx[r]);
        if (r < RUNS - 1)
            evolve_checkpoint_info_free(info);
        evolve_store_free(s);
    }
    emit("checkpoint_s", "s", ck, RUNS, tarc, hash);
    emit("restore_s", "s", rs, RUNS, tarx, hash);
    {
        struct stat st;
        double a[1] = {(double)info->size_bytes}, b[1];
        stat(archive, &st);
        b[0] = (double)st.st_size;
        emit("archive_bytes", "bytes", a, 1, b, hash);
        fprintf(stderr, "bench: our tar.gz %lld bytes, tar czf %lld bytes\n",
                (long long)info->size_bytes, (long long)st.st_size);
    }
    evolve_checkpoint_info_free(info);

    if (dmb != mb) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
        sh(cmd);
        for (k = 0; k < (int)nnames; k++)
            free(names[k]);
        nnames = 0;
        gen_tree(dmb);
    }
    s = fresh_store(false);
    info = checkpoint(s);
    store_size(&one_b, &one_d);
    t0 = now_s();
    for (k = 1; k < 100; k++) {
        size_t n = nnames / 100 ? nnames / 100 : 1, i;
        evolve_checkpoint_info_free(info);
        for (i = 0; i < n; i++) {
            char p[2048];
            const char *rel = names[next() % nnames];
            unsigned char patch[64];
            struct stat st;
            FILE *f;
            size_t j;
            snprintf(p, sizeof(p), "%s/%s", home, rel);
            f = fopen(p, "r+b");
            if (!f || fstat(fileno(f), &st) < 0)
                return 1;
            for (j = 0; j < sizeof(patch); j++)
                patch[j] = (unsigned char)('a' + next() % 26);
            fseek(f, (long)(next() % (uint64_t)(st.st_size > 64 ? st.st_size - 64 : 1)), SEEK_SET);
            fwrite(patch, 1, st.st_size >= 64 ? 64 : (size_t)st.st_size, f);
            fclose(f);
        }
        info = checkpoint(s);
    }
    fprintf(stderr, "bench: 99 incremental checkpoints in %.1f s\n", now_s() - t0);
    store_size(&all_b, &all_d);
    v[0] = (double)all_b / (double)one_b;
    {
        double d[1] = {(double)all_d / (double)one_d};
        emit("store_ratio_100", "x", v, 1, NULL, info->hash);
        emit("store_disk_ratio_100", "x", d, 1, NULL, info->hash);
    }
    fprintf(stderr,
            "bench: store after 1: %" PRIu64 " bytes (%" PRIu64 " on disk); after 100: %" PRIu64
            " (%" PRIu64 "); tree %zu bytes\n",
            one_b, one_d, all_b, all_d, total_bytes);
    evolve_checkpoint_info_free(info);
    evolve_store_free(s);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    sh(cmd);
    return 0;
}
