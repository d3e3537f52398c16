/* provsync.c — waiting on a provider op's completion from a test thread (fakes.h).
 * Threads: ts_wait_done on the provider's completion thread, the rest on the test's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakes/fakes.h"
#include "support/support.h"

void ts_wait_init(struct ts_wait *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

void ts_wait_done(void *payload, const struct prov_status *st, void *result)
{
    struct ts_wait *w = payload;

    pthread_mutex_lock(&w->mu);
    if (w->done)
        ts_die("provider op completed twice (%s)", st->message);
    w->done = true;
    w->st = *st;
    w->result = result;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int ts_wait_for(struct ts_wait *w, unsigned timeout_ms, void **result_out)
{
    struct timespec ts;
    int code;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
            ts_die("provider op did not complete within %u ms", timeout_ms);
    code = w->st.code;
    if (result_out)
        *result_out = w->result;
    w->done = false;
    w->result = NULL;
    pthread_mutex_unlock(&w->mu);
    return code;
}

char *ts_read_fd(int fd, size_t *len_out)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);

    for (;;) {
        ssize_t n;

        if (len + 1 >= cap)
            buf = realloc(buf, cap *= 2);
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}
