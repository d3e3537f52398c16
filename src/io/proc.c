/* proc.c — child processes on the reactor: posix_spawn into a new process group, stdout/stderr
 * pipes read on the reactor, stdin fed from a queue, the exit taken from a pidfd.
 *
 * Owns: the child's pipes and pidfd, the stdin queue, reaping the child.
 * Does not own: the reactor loop (io/reactor.c); what callers do with the output.
 * Threads: io_proc_spawn runs posix_spawn on the caller's thread (so a worker, not the reactor,
 *       pays for it and gets spawn errors synchronously); every other operation is posted to the
 *       reactor, where all reading, writing, reaping and every callback happen.
 * Ordering: per stream, chunks in write order; on_exit last (see io/proc.h). Operations posted
 *       from one thread apply in the order posted (write, write, close_stdin writes both first). */
#include "io/proc.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "evolve/common.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define READ_CHUNK      65536
#define READS_PER_EVENT 4 /* fairness: other pipes get a turn; epoll is level-triggered */
#define DRAIN_READS_MAX                                                                            \
    256 /* after the exit: read at most this many chunks of a pipe that a                          \
           grandchild keeps feeding, then report the exit anyway */

extern char **environ;

enum op_kind { OP_ATTACH, OP_SIGNAL, OP_WRITE, OP_CLOSE_STDIN, OP_PAUSE, OP_RESUME };

struct proc_op {
    struct io_proc *p;
    enum op_kind kind;
    int sig;
    struct proc_op *next; /* in the stdin queue */
    size_t len, off;
    char data[];
};

struct pipe_end {
    struct io_proc *p;
    int fd;
    struct io_watch *w;
    bool is_stderr;
};

struct io_proc {
    atomic_int refs; /* the caller's (if it took a handle) + the reactor's + pending ops */
    struct io_reactor *r;
    pid_t pid;
    bool own_group, has_stdin;
    struct io_proc_callbacks cbs;
    void *payload;

    /* Reactor thread only (before OP_ATTACH: only the spawning thread). */
    int pidfd, in_fd;
    struct io_watch *pidw, *inw;
    struct pipe_end out, err;
    struct proc_op *inq, *inq_tail;
    bool close_stdin_requested, reaped, paused, done;
    int exit_code;
    uint64_t out_bytes, err_bytes;
    struct io_proc *prev, *next;
};

struct proc_ctx {
    struct io_proc *all;
};

static void proc_free(struct io_proc *p)
{
    while (p->inq) {
        struct proc_op *next = p->inq->next;

        free(p->inq);
        p->inq = next;
    }
    free(p);
}

static void unref(struct io_proc *p)
{
    /* acq_rel: the last owner must see every write the others made before dropping theirs. */
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        proc_free(p);
}

void io_proc_release(struct io_proc *p)
{
    if (p)
        unref(p);
}

pid_t io_proc_pid(const struct io_proc *p)
{
    return p->pid;
}

/* ---- reactor side ---------------------------------------------------------------------------- */

static void close_pipe(struct io_reactor *r, struct pipe_end *pe)
{
    if (pe->fd < 0)
        return;
    io_reactor_unwatch(r, pe->w);
    pe->w = NULL;
    close(pe->fd);
    pe->fd = -1;
}

static void close_stdin_now(struct io_reactor *r, struct io_proc *p)
{
    if (p->in_fd < 0)
        return;
    io_reactor_unwatch(r, p->inw);
    p->inw = NULL;
    close(p->in_fd);
    p->in_fd = -1;
    while (p->inq) {
        struct proc_op *next = p->inq->next;

        free(p->inq);
        p->inq = next;
    }
    p->inq_tail = NULL;
}

/* Reads up to max chunks; returns true when the pipe is at EOF (closed) or has nothing more to
 * read right now. */
static bool read_pipe(struct io_reactor *r, struct pipe_end *pe, int max)
{
    char buf[READ_CHUNK]; /* the reactor thread's stack is the default 8 MiB */
    struct io_proc *p = pe->p;
    int i;

    for (i = 0; i < max && pe->fd >= 0; i++) {
        ssize_t n = read(pe->fd, buf, sizeof(buf));

        if (n > 0) {
            void (*cb)(const char *, size_t, void *) =
                pe->is_stderr ? p->cbs.on_stderr : p->cbs.on_stdout;

            *(pe->is_stderr ? &p->err_bytes : &p->out_bytes) += (uint64_t)n;
            if (cb)
                cb(buf, (size_t)n, p->payload);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        close_pipe(r, pe); /* EOF, or an error we treat as EOF */
        return true;
    }
    return pe->fd < 0;
}

static void unlink_proc(struct proc_ctx *ctx, struct io_proc *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else if (ctx->all == p)
        ctx->all = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
}

static void deliver_exit(struct io_reactor *r, struct io_proc *p, int error)
{
    struct proc_ctx *ctx = *io_reactor_slot(r, IO_SLOT_PROC);
    struct io_proc_exit ex = {0};

    p->done = true;
    close_pipe(r, &p->out);
    close_pipe(r, &p->err);
    close_stdin_now(r, p);
    if (ctx)
        unlink_proc(ctx, p);
    ex.error = error;
    ex.exit_code = p->exit_code;
    ex.pid = p->pid;
    ex.stdout_bytes = p->out_bytes;
    ex.stderr_bytes = p->err_bytes;
    core_log_debug("proc %d: exit %d (error %d)", (int)p->pid, p->exit_code, error);
    p->cbs.on_exit(&ex, p->payload);
    unref(p); /* the reactor's reference */
}

/* The exit is reported once the child is reaped and, unless output is paused, both pipes are at
 * EOF or drained of what the child left in them. */
static void maybe_finish(struct io_reactor *r, struct io_proc *p)
{
    if (p->done || !p->reaped || p->paused)
        return;
    read_pipe(r, &p->out, DRAIN_READS_MAX);
    read_pipe(r, &p->err, DRAIN_READS_MAX);
    deliver_exit(r, p, 0);
}

static void on_pipe_ready(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct pipe_end *pe = arg;

    (void)w;
    (void)revents;
    read_pipe(r, pe, READS_PER_EVENT);
}

/* Records the status of a reaped child; returns false when it has not exited yet. */
static bool reap(struct io_proc *p, int flags)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    if (syscall(SYS_waitid, P_PIDFD, p->pidfd, &si, WEXITED | flags, NULL) < 0 || !si.si_pid)
        return false;
    p->reaped = true;
    p->exit_code = si.si_code == CLD_EXITED ? si.si_status : -si.si_status;
    return true;
}

static void close_pidfd(struct io_reactor *r, struct io_proc *p)
{
    io_reactor_unwatch(r, p->pidw);
    p->pidw = NULL;
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
}

static void on_pidfd_ready(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    struct io_proc *p = arg;

    (void)w;
    (void)revents;
    if (!reap(p, WNOHANG))
        return;
    close_pidfd(r, p);
    maybe_finish(r, p);
}

static void flush_stdin(struct io_reactor *r, struct io_proc *p)
{
    while (p->inq && p->in_fd >= 0) {
        struct proc_op *op = p->inq;
        ssize_t n = write(p->in_fd, op->data + op->off, op->len - op->off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            io_reactor_watch_set(r, p->inw, EPOLLOUT);
            return;
        }
        if (n < 0) { /* EPIPE: the child closed stdin; drop the rest */
            if (errno == EPIPE) {
                sigset_t pipe_set;
                struct timespec zero = {0, 0};

                /* The reactor blocks SIGPIPE; consume the one this write left pending. */
                sigemptyset(&pipe_set);
                sigaddset(&pipe_set, SIGPIPE);
                sigtimedwait(&pipe_set, NULL, &zero);
            }
            close_stdin_now(r, p);
            return;
        }
        op->off += (size_t)n;
        if (op->off == op->len) {
            p->inq = op->next;
            if (!p->inq)
                p->inq_tail = NULL;
            free(op);
        }
    }
    if (p->in_fd >= 0) {
        io_reactor_watch_set(r, p->inw, 0);
        if (p->close_stdin_requested)
            close_stdin_now(r, p);
    }
}

static void on_stdin_ready(struct io_reactor *r, struct io_watch *w, uint32_t revents, void *arg)
{
    (void)w;
    if (revents & (EPOLLERR | EPOLLHUP) && !(revents & EPOLLOUT))
        close_stdin_now(r, arg);
    else
        flush_stdin(r, arg);
}

/* The stop hook: kill every group still running, reap it (blocking: SIGKILL cannot be ignored),
 * drain what it wrote, report the exit with EVOLVE_ESHUTDOWN. */
static void proc_stop(struct io_reactor *r, void *arg)
{
    struct proc_ctx *ctx = arg;

    while (ctx->all) {
        struct io_proc *p = ctx->all;

        if (!p->reaped) {
            if (p->own_group)
                kill(-p->pid, SIGKILL);
            else
                kill(p->pid, SIGKILL);
            reap(p, 0);
            close_pidfd(r, p);
        }
        read_pipe(r, &p->out, DRAIN_READS_MAX);
        read_pipe(r, &p->err, DRAIN_READS_MAX);
        deliver_exit(r, p, EVOLVE_ESHUTDOWN);
    }
    *io_reactor_slot(r, IO_SLOT_PROC) = NULL;
    free(ctx);
}

static struct proc_ctx *get_ctx(struct io_reactor *r)
{
    void **slot = io_reactor_slot(r, IO_SLOT_PROC);

    if (!*slot) {
        struct proc_ctx *ctx = calloc(1, sizeof(*ctx));

        if (!ctx || io_reactor_on_stop(r, proc_stop, ctx) < 0) {
            free(ctx);
            return NULL;
        }
        *slot = ctx;
    }
    return *slot;
}

static void attach(struct io_reactor *r, struct io_proc *p)
{
    struct proc_ctx *ctx = io_reactor_stopping(r) ? NULL : get_ctx(r);

    if (ctx) {
        p->next = ctx->all;
        if (ctx->all)
            ctx->all->prev = p;
        ctx->all = p;
        p->pidw = io_reactor_watch(r, p->pidfd, EPOLLIN, IO_STAGE_PROC, on_pidfd_ready, p);
        p->out.w = io_reactor_watch(r, p->out.fd, EPOLLIN, IO_STAGE_PROC, on_pipe_ready, &p->out);
        p->err.w = io_reactor_watch(r, p->err.fd, EPOLLIN, IO_STAGE_PROC, on_pipe_ready, &p->err);
        if (p->in_fd >= 0)
            p->inw = io_reactor_watch(r, p->in_fd, 0, IO_STAGE_PROC, on_stdin_ready, p);
        if (p->pidw && p->out.w && p->err.w && (p->in_fd < 0 || p->inw))
            return;
        core_log_warn("proc %d: cannot watch its descriptors; killing it", (int)p->pid);
    }
    /* Stopping, or out of resources: the child cannot be supervised, so it is killed. */
    kill(p->own_group ? -p->pid : p->pid, SIGKILL);
    reap(p, 0);
    close_pidfd(r, p);
    read_pipe(r, &p->out, DRAIN_READS_MAX);
    read_pipe(r, &p->err, DRAIN_READS_MAX);
    deliver_exit(r, p, ctx ? EVOLVE_ENOMEM : EVOLVE_ESHUTDOWN);
}

static void op_on_reactor(struct io_reactor *r, void *arg)
{
    struct proc_op *op = arg;
    struct io_proc *p = op->p;

    switch (op->kind) {
    case OP_ATTACH:
        free(op);
        attach(r, p); /* consumes no reference: the reactor's was taken at spawn */
        return;
    case OP_SIGNAL:
        if (!p->reaped && !p->done && kill(p->own_group ? -p->pid : p->pid, op->sig) < 0)
            core_log_debug("proc %d: kill %d: %s", (int)p->pid, op->sig, strerror(errno));
        break;
    case OP_WRITE:
        if (p->done || p->in_fd < 0 || p->close_stdin_requested)
            break;
        op->next = NULL;
        if (p->inq_tail)
            p->inq_tail->next = op;
        else
            p->inq = op;
        p->inq_tail = op;
        op = NULL; /* now owned by the queue */
        flush_stdin(r, p);
        break;
    case OP_CLOSE_STDIN:
        if (!p->done && p->in_fd >= 0) {
            p->close_stdin_requested = true;
            if (!p->inq)
                close_stdin_now(r, p);
        }
        break;
    case OP_PAUSE:
    case OP_RESUME:
        if (p->done)
            break;
        p->paused = op->kind == OP_PAUSE;
        if (p->out.fd >= 0)
            io_reactor_watch_set(r, p->out.w, p->paused ? 0 : EPOLLIN);
        if (p->err.fd >= 0)
            io_reactor_watch_set(r, p->err.w, p->paused ? 0 : EPOLLIN);
        maybe_finish(r, p);
        break;
    }
    free(op);
    unref(p); /* the op's reference */
}

/* ---- caller side ----------------------------------------------------------------------------- */

static int post_op(struct io_proc *p, enum op_kind kind, int sig, const void *data, size_t len)
{
    struct proc_op *op = malloc(sizeof(*op) + len);
    int rc;

    if (!op)
        return core_error_oom();
    op->p = p;
    op->kind = kind;
    op->sig = sig;
    op->next = NULL;
    op->len = len;
    op->off = 0;
    if (len)
        memcpy(op->data, data, len);
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed); /* the caller holds one */
    rc = io_reactor_post(p->r, op_on_reactor, op);
    if (rc < 0) {
        unref(p);
        free(op);
    }
    return rc;
}

int io_proc_signal(struct io_proc *p, int sig)
{
    return post_op(p, OP_SIGNAL, sig, NULL, 0);
}

int io_proc_write_stdin(struct io_proc *p, const void *data, size_t len)
{
    if (!p->has_stdin)
        return core_error_set(EVOLVE_EINVAL, "proc %d: spawned without a stdin pipe", (int)p->pid);
    return post_op(p, OP_WRITE, 0, data, len);
}

int io_proc_close_stdin(struct io_proc *p)
{
    return post_op(p, OP_CLOSE_STDIN, 0, NULL, 0);
}

int io_proc_pause_output(struct io_proc *p)
{
    return post_op(p, OP_PAUSE, 0, NULL, 0);
}

int io_proc_resume_output(struct io_proc *p)
{
    return post_op(p, OP_RESUME, 0, NULL, 0);
}

static int make_pipe(int fds[2], int parent_end)
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    return fcntl(fds[parent_end], F_SETFL, O_NONBLOCK);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int io_proc_spawn(struct io_proc **out, struct io_reactor *r, const struct io_proc_spec *spec,
                  const struct io_proc_callbacks *cbs, void *payload)
{
    int in[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1}, err, rc = 0, sig;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    struct io_proc *p;
    struct proc_op *attach_op;
    pid_t pid;

    if (out)
        *out = NULL;
    if (!spec || !spec->argv || !spec->argv[0] || !cbs || !cbs->on_exit)
        return core_error_set(EVOLVE_EINVAL, "io_proc_spawn: argv[0] and on_exit are required");
    p = calloc(1, sizeof(*p));
    attach_op = calloc(1, sizeof(*attach_op));
    if (!p || !attach_op) {
        free(p);
        free(attach_op);
        return core_error_oom();
    }
    p->r = r;
    p->cbs = *cbs;
    p->payload = payload;
    p->own_group = !spec->same_process_group;
    p->has_stdin = spec->stdin_pipe;
    p->pidfd = p->in_fd = p->out.fd = p->err.fd = -1;
    p->out.p = p->err.p = p;
    p->err.is_stderr = true;
    if ((spec->stdin_pipe && make_pipe(in, 1) < 0) || make_pipe(po, 0) < 0 ||
        make_pipe(pe, 0) < 0) {
        rc = core_error_set(EVOLVE_ERROR, "io_proc_spawn %s: pipe: %s", spec->argv[0],
                            strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    if (spec->stdin_pipe)
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    if (spec->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* belt and braces over O_CLOEXEC */
    /* The child starts with no signal blocked and every disposition at its default, whatever
     * the spawning thread had. */
    sigemptyset(&none);
    sigemptyset(&dfl);
    for (sig = 1; sig < SIGRTMIN; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaddset(&dfl, sig);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    if (p->own_group)
        posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      (p->own_group ? POSIX_SPAWN_SETPGROUP : 0));
    err = posix_spawnp(&pid, spec->argv[0], &fa, &at, (char *const *)spec->argv,
                       (char *const *)(spec->envp ? spec->envp : (const char *const *)environ));
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (err) {
        rc = core_error_set(err == ENOENT ? EVOLVE_ENOTFOUND : EVOLVE_ERROR,
                            "io_proc_spawn %s%s%s: %s", spec->argv[0], spec->cwd ? " in " : "",
                            spec->cwd ? spec->cwd : "", strerror(err));
        goto fail;
    }
    p->pid = pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* pidfds are close-on-exec */
    if (p->pidfd < 0) {
        rc = core_error_set(EVOLVE_EUNSUPPORTED, "io_proc_spawn %s: pidfd_open: %s", spec->argv[0],
                            strerror(errno));
        kill(p->own_group ? -pid : pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto fail;
    }
    close_fd(&in[0]);
    close_fd(&po[1]);
    close_fd(&pe[1]);
    p->in_fd = in[1];
    p->out.fd = po[0];
    p->err.fd = pe[0];
    atomic_init(&p->refs, out ? 2 : 1);
    attach_op->p = p;
    attach_op->kind = OP_ATTACH;
    rc = io_reactor_post(r, op_on_reactor, attach_op);
    if (rc < 0) {
        kill(p->own_group ? -pid : pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close_fd(&p->pidfd);
        close_fd(&p->in_fd);
        close_fd(&p->out.fd);
        close_fd(&p->err.fd);
        free(attach_op);
        free(p);
        return rc;
    }
    core_log_debug("proc %d: spawned %s", (int)pid, spec->argv[0]);
    if (out)
        *out = p;
    return 0;
fail:
    close_fd(&in[0]);
    close_fd(&in[1]);
    close_fd(&po[0]);
    close_fd(&po[1]);
    close_fd(&pe[0]);
    close_fd(&pe[1]);
    close_fd(&p->pidfd);
    free(attach_op);
    free(p);
    return rc;
}
