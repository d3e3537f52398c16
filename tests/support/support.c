/* support.c — helpers shared by the Criterion tests. */
#include "support/support.h"

#include <stdio.h>
#include <errno.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void ts_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("test support: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

uint64_t ts_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ts_mkdtemp(char *out, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(out, size, "%s/evolve-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);

    if (n <= 0 || (size_t)n >= size || !mkdtemp(out))
        ts_die("mkdtemp %s: %s", out, strerror(errno));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        return rmdir(path);
    return unlink(path);
}

void ts_rmtree(const char *path)
{
    if (!path || !*path || !strcmp(path, "/"))
        return;
    nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

char *ts_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, len = 0, n;

    if (!f)
        return NULL;
    do {
        if (cap - len < 65536) {
            char *nb = realloc(buf, cap + 65536 + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap += 65536;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

static void mkparents(const char *path)
{
    char tmp[4096];
    char *p;

    snprintf(tmp, sizeof(tmp), "%s", path);
    for (p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
}

void ts_write_file(const char *path, const char *data, size_t len)
{
    FILE *f;

    mkparents(path);
    f = fopen(path, "wb");
    if (!f)
        ts_die("open %s: %s", path, strerror(errno));
    if (fwrite(data, 1, len, f) != len || fclose(f) != 0)
        ts_die("write %s: %s", path, strerror(errno));
}

const char *ts_data_path(char *out, size_t size, const char *rel)
{
    snprintf(out, size, "%s/%s", EVOLVE_TEST_DATA, rel);
    return out;
}
