/* pump.c — reading a sandbox command's descriptors on the reactor.
 * Owns: the stdout/stderr/status descriptors once started, their watches, the end-of-command
 * rule (both pipes at EOF and the exit record in, or 2 s of grace past the exit for pipes a
 * grandchild keeps open). Does not own: what the chunks mean (the session actor parses them).
 * Threads: start/pause/resume/release from any thread (posted); everything else on the reactor.
 * Refcount: the caller's reference plus one held while the pump is live on the reactor. */
#include "core/pump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"

#define PUMP_CHUNK           65536
#define PUMP_READS_PER_EVENT 4 /* fairness between sandboxes: epoll is level-triggered */
#define PUMP_LINGER_MS       2000

struct stream {
    int fd;
    struct io_watch *w;
    bool eof;
};

struct core_pump {
    atomic_int refs;
    struct io_reactor *r;
    struct core_pump_cbs cbs;
    void *payload;
    struct stream out, err, status;
    struct prov_exit exit;
    size_t exit_got; /* bytes of the exit record read so far */
    bool exit_done, lost, ended, paused;
    struct io_timer *linger;
};

static void pump_unref(struct core_pump *p)
{
    /* acq_rel: the last unref sees every write of the other holder before freeing. */
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        free(p);
}

static void stream_close(struct core_pump *p, struct stream *s)
{
    if (s->w) {
        io_reactor_unwatch(p->r, s->w);
        s->w = NULL;
    }
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    s->eof = true;
}

static void finish(struct core_pump *p)
{
    if (p->ended)
        return;
    p->ended = true;
    if (p->linger) {
        io_reactor_timer_cancel(p->r, p->linger);
        p->linger = NULL;
    }
    stream_close(p, &p->out);
    stream_close(p, &p->err);
    stream_close(p, &p->status);
    core_log_debug("pump: end (exit %d, signal %d, lost %d)", (int)p->exit.code, (int)p->exit.signo,
                   (int)p->lost);
    p->cbs.on_end(p->payload, &p->exit, p->lost);
    pump_unref(p);
}

static void linger_expired(struct io_reactor *r, void *arg)
{
    struct core_pump *p = arg;

    (void)r;
    p->linger = NULL;
    finish(p);
}

static void maybe_finish(struct core_pump *p)
{
    if (!p->exit_done || p->ended)
        return;
    if (p->out.eof && p->err.eof) {
        finish(p);
        return;
    }
    /* Never while paused: the unread output is the subscriber's, not a grandchild's noise. */
    if (!p->linger && !p->paused)
        p->linger = io_reactor_timer(p->r, PUMP_LINGER_MS, linger_expired, p);
}

static void on_pipe(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct core_pump *p = arg;
    struct stream *s = io_watch_fd(w) == p->out.fd ? &p->out : &p->err;
    int stream = s == &p->out ? 1 : 2, i;

    (void)r;
    (void)revents;
    for (i = 0; i < PUMP_READS_PER_EVENT && !s->eof; i++) {
        char *buf = malloc(PUMP_CHUNK);
        ssize_t n;

        if (!buf)
            return; /* level-triggered: we come back when memory may be available */
        n = read(s->fd, buf, PUMP_CHUNK);
        if (n > 0) {
            char *shrunk = n < PUMP_CHUNK / 2 ? realloc(buf, (size_t)n) : buf;

            p->cbs.on_chunk(p->payload, stream, shrunk ? shrunk : buf, (size_t)n);
            if (p->paused && s == &p->out)
                break;
            continue;
        }
        free(buf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        stream_close(p, s); /* EOF or a hard error: either way nothing more comes */
    }
    maybe_finish(p);
}

static void on_status(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct core_pump *p = arg;
    ssize_t n;

    (void)r;
    (void)w;
    (void)revents;
    n = read(p->status.fd, (char *)&p->exit + p->exit_got, sizeof(p->exit) - p->exit_got);
    core_log_debug("pump: status fd %d read %zd", p->status.fd, n);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n > 0) {
        p->exit_got += (size_t)n;
        if (p->exit_got < sizeof(p->exit))
            return;
    } else {
        /* EOF before a whole record: the daemon or the sandbox died under the command. */
        memset(&p->exit, 0, sizeof(p->exit));
        p->lost = true;
    }
    stream_close(p, &p->status);
    p->exit_done = true;
    maybe_finish(p);
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void attach(struct io_reactor *r, void *arg)
{
    struct core_pump *p = arg;

    if (io_reactor_stopping(r)) {
        p->lost = true;
        p->exit_done = true;
        finish(p);
        return;
    }
    if (p->out.fd >= 0)
        p->out.w = io_reactor_watch(r, p->out.fd, EPOLLIN, IO_STAGE_PROC, on_pipe, p);
    if (p->err.fd >= 0)
        p->err.w = io_reactor_watch(r, p->err.fd, EPOLLIN, IO_STAGE_PROC, on_pipe, p);
    p->status.w = io_reactor_watch(r, p->status.fd, EPOLLIN, IO_STAGE_PROC, on_status, p);
    core_log_debug("pump: watching out %d err %d status %d", p->out.fd, p->err.fd, p->status.fd);
    if ((p->out.fd >= 0 && !p->out.w) || (p->err.fd >= 0 && !p->err.w) || !p->status.w) {
        p->lost = true;
        p->exit_done = true;
        finish(p);
    }
}

int core_pump_start(struct core_pump **out, struct io_reactor *r, struct prov_proc *proc,
                    const struct core_pump_cbs *cbs, void *payload)
{
    struct core_pump *p = calloc(1, sizeof(*p));
    int rc;

    if (!p)
        return core_error_oom();
    atomic_init(&p->refs, 2);
    p->r = r;
    p->cbs = *cbs;
    p->payload = payload;
    p->out.fd = proc->stdout_fd;
    p->err.fd = proc->stderr_fd;
    p->status.fd = proc->status_fd;
    proc->stdout_fd = proc->stderr_fd = proc->status_fd = -1;
    p->out.eof = p->out.fd < 0;
    p->err.eof = p->err.fd < 0;
    if ((p->out.fd >= 0 && nonblock(p->out.fd) < 0) ||
        (p->err.fd >= 0 && nonblock(p->err.fd) < 0) || p->status.fd < 0 ||
        nonblock(p->status.fd) < 0) {
        rc = core_error_set(EVOLVE_EIO, "command output descriptors: %s", strerror(errno));
        goto fail;
    }
    rc = io_reactor_post(r, attach, p);
    if (rc < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    if (p->out.fd >= 0)
        close(p->out.fd);
    if (p->err.fd >= 0)
        close(p->err.fd);
    if (p->status.fd >= 0)
        close(p->status.fd);
    free(p);
    return rc;
}

static void do_pause(struct io_reactor *r, void *arg)
{
    struct core_pump *p = arg;

    p->paused = true;
    if (p->out.w)
        io_reactor_watch_set(r, p->out.w, 0);
    if (p->linger) {
        io_reactor_timer_cancel(r, p->linger);
        p->linger = NULL;
    }
    pump_unref(p);
}

static void do_resume(struct io_reactor *r, void *arg)
{
    struct core_pump *p = arg;

    p->paused = false;
    if (p->out.w)
        io_reactor_watch_set(r, p->out.w, EPOLLIN);
    maybe_finish(p);
    pump_unref(p);
}

static int post_ref(struct core_pump *p, io_post_fn fn)
{
    int rc;

    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    rc = io_reactor_post(p->r, fn, p);
    if (rc < 0)
        pump_unref(p);
    return rc;
}

int core_pump_pause(struct core_pump *p)
{
    return post_ref(p, do_pause);
}

int core_pump_resume(struct core_pump *p)
{
    return post_ref(p, do_resume);
}

void core_pump_release(struct core_pump *p)
{
    if (p)
        pump_unref(p);
}
