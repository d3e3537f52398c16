/* sandboxd/main.c — evolve-sandboxd, the exec daemon that runs inside one local sandbox.
 * Owns: forking each requested command (its own process group, pipes for stdin/stdout/stderr,
 *       a status pipe), handing the caller's pipe ends back over the control socket, reaping
 *       children and writing their exit record, signalling, pausing (cgroup v1 freezer or
 *       SIGSTOP/SIGCONT) and killing every command at shutdown or when the control socket or
 *       the parent goes away.
 * Does not own: the sandbox directory or the namespace (the library and bubblewrap do).
 * Threads: one. Everything runs in a poll loop over the control socket and a signalfd, so
 *       forked children may safely call malloc before exec.
 * Usage: evolve-sandboxd --fd N [--cgroup DIR] [--subreaper]
 * libc only, on purpose: it starts in ~1 ms and is bound read-only into the sandbox. */
#include "providers/sandboxd_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct cmd {
    uint32_t id;
    pid_t pid;
    int status_w; /* write end of the status pipe, -1 once reported */
    struct cmd *next;
};

static struct cmd *cmds;       /* live commands */
static int ctl_fd = -1;        /* control socket */
static const char *cgroup_dir; /* cgroup v1 freezer dir for commands, or NULL */
static int paused;
static sigset_t handled; /* blocked in the daemon, read from the signalfd */

static int reply_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int reply_err(int err, const char *fmt, ...)
{
    struct sbxd_buf b = {0};
    char msg[512];
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    sbxd_buf_start(&b, SBXD_R_ERR);
    sbxd_buf_u32(&b, (uint32_t)err);
    sbxd_buf_str(&b, msg);
    rc = sbxd_send(ctl_fd, &b, NULL, 0);
    sbxd_buf_dispose(&b);
    return rc;
}

static int reply_ok(uint32_t value)
{
    struct sbxd_buf b = {0};
    int rc;

    sbxd_buf_start(&b, SBXD_R_OK);
    sbxd_buf_u32(&b, value);
    rc = sbxd_send(ctl_fd, &b, NULL, 0);
    sbxd_buf_dispose(&b);
    return rc;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    int fd, rc = 0;
    size_t n = strlen(text);

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, text, n) != (ssize_t)n)
        rc = -errno;
    close(fd);
    return rc;
}

static int read_small(const char *dir, const char *name, char *out, size_t size)
{
    char path[4096];
    int fd;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = read(fd, out, size - 1);
    close(fd);
    if (n < 0)
        return -errno;
    out[n] = '\0';
    return (int)n;
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes FROZEN or THAWED and waits (up to 5 s) until the freezer reports that state: v1 may
 * sit in FREEZING while a task is in an uninterruptible sleep. */
static int freezer_set(const char *state)
{
    long long deadline = now_ms() + 5000;
    char cur[64];
    int rc = write_file(cgroup_dir, "freezer.state", state);

    if (rc < 0)
        return rc;
    for (;;) {
        struct timespec pause_ts = {0, 1000000};

        if (read_small(cgroup_dir, "freezer.state", cur, sizeof(cur)) > 0 &&
            !strncmp(cur, state, strlen(state)))
            return 0;
        if (now_ms() > deadline)
            return -ETIMEDOUT;
        write_file(cgroup_dir, "freezer.state", state);
        nanosleep(&pause_ts, NULL); /* polling the kernel's state file; no event exists */
    }
}

/* SIGKILLs every task in the freezer cgroup (frozen first, so nothing forks meanwhile). */
static void cgroup_kill_all(void)
{
    char buf[65536];
    char *p, *end;

    if (!cgroup_dir)
        return;
    freezer_set("FROZEN");
    if (read_small(cgroup_dir, "cgroup.procs", buf, sizeof(buf)) > 0) {
        for (p = buf; *p; p = end) {
            long pid = strtol(p, &end, 10);

            if (end == p)
                break;
            if (pid > 0)
                kill((pid_t)pid, SIGKILL);
            while (*end == '\n')
                end++;
        }
    }
    freezer_set("THAWED");
}

static void report_exit(struct cmd *c, int status)
{
    struct sbxd_exit rec = {0, 0};

    if (WIFEXITED(status)) {
        rec.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        rec.signo = WTERMSIG(status);
        rec.code = 128 + rec.signo;
    }
    if (c->status_w >= 0) {
        /* A reader that went away is fine: nobody wants the status any more. */
        if (write(c->status_w, &rec, sizeof(rec)) < 0) {
            /* ignored: EPIPE when the caller closed its end */
        }
        close(c->status_w);
        c->status_w = -1;
    }
}

static void reap_children(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        struct cmd **pp;

        if (pid <= 0)
            return;
        for (pp = &cmds; *pp; pp = &(*pp)->next) {
            if ((*pp)->pid == pid) {
                struct cmd *c = *pp;

                report_exit(c, status);
                *pp = c->next;
                free(c);
                break;
            }
        }
    }
}

/* The child side of EXEC: never returns. Reports a failure on err_w (CLOEXEC, so a successful
 * exec closes it and the daemon reads EOF). */
static void child_exec(uint32_t flags, const char *cwd, char **argv, char **envp, int in_r,
                       int out_w, int err_w2, int err_w)
{
    int e;
    size_t i;

    sigprocmask(SIG_UNBLOCK, &handled, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (flags & SBXD_EXEC_NEWPGRP)
        setpgid(0, 0);
    if (cgroup_dir) {
        char pid[32];

        snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
        write_file(cgroup_dir, "cgroup.procs", pid);
    }
    if (in_r < 0)
        in_r = open("/dev/null", O_RDONLY);
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w2, 2) < 0)
        goto fail;
    if (*cwd && chdir(cwd) < 0)
        goto fail;
    for (i = 0; envp[i]; i++)
        putenv(envp[i]);
    execvp(argv[0], argv);
fail:
    e = errno;
    if (write(err_w, &e, sizeof(e)) < 0) {
        /* nothing more to do */
    }
    _exit(127);
}

static void handle_exec(struct sbxd_cur *c)
{
    uint32_t id = sbxd_cur_u32(c), flags = sbxd_cur_u32(c), argc, envc, i;
    char cwd[4096];
    char **argv = NULL, **envp = NULL;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1}, ep[2] = {-1, -1};
    struct cmd *cmd = NULL;
    pid_t pid;
    int child_errno = 0;
    ssize_t n;

    sbxd_cur_copy(c, cwd, sizeof(cwd));
    argc = sbxd_cur_u32(c);
    if (c->bad || argc == 0 || argc > c->left / 4) {
        reply_err(EINVAL, "exec %u: empty or malformed argv", id);
        return;
    }
    argv = calloc((size_t)argc + 1, sizeof(*argv));
    for (i = 0; argv && i < argc; i++) {
        size_t len;
        const char *s = sbxd_cur_str(c, &len);

        argv[i] = strndup(s, len);
    }
    envc = sbxd_cur_u32(c);
    if (!c->bad && envc <= c->left / 4)
        envp = calloc((size_t)envc + 1, sizeof(*envp));
    for (i = 0; envp && i < envc; i++) {
        size_t len;
        const char *s = sbxd_cur_str(c, &len);

        envp[i] = strndup(s, len);
    }
    if (c->bad || !argv || !envp) {
        reply_err(EINVAL, "exec %u: malformed request", id);
        goto out;
    }
    if (paused) {
        reply_err(EBUSY, "exec %u: the sandbox is paused", id);
        goto out;
    }
    cmd = calloc(1, sizeof(*cmd));
    if (!cmd || (!(flags & SBXD_EXEC_STDIN_NULL) && pipe2(in, O_CLOEXEC) < 0) ||
        pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0 ||
        pipe2(ep, O_CLOEXEC) < 0) {
        reply_err(errno ? errno : ENOMEM, "exec %u: %s", id, strerror(errno ? errno : ENOMEM));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        reply_err(errno, "exec %u: fork: %s", id, strerror(errno));
        goto out;
    }
    if (pid == 0)
        child_exec(flags, cwd, argv, envp, in[0], out[1], err[1], ep[1]);
    close(ep[1]);
    ep[1] = -1;
    do {
        n = read(ep[0], &child_errno, sizeof(child_errno));
    } while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(child_errno)) {
        int status;

        waitpid(pid, &status, 0);
        reply_err(child_errno, "exec %u: %s: %s", id, argv[0], strerror(child_errno));
        goto out;
    }
    cmd->id = id;
    cmd->pid = pid;
    cmd->status_w = st[1];
    st[1] = -1;
    cmd->next = cmds;
    cmds = cmd;
    cmd = NULL;
    {
        struct sbxd_buf b = {0};
        int fds[4] = {in[1], out[0], err[0], st[0]};
        int nfds = 4;

        if (in[1] < 0) {
            /* no stdin: send the other three, the client fills -1 */
            fds[0] = out[0];
            fds[1] = err[0];
            fds[2] = st[0];
            nfds = 3;
        }
        sbxd_buf_start(&b, SBXD_R_EXEC);
        sbxd_buf_u32(&b, id);
        sbxd_buf_u32(&b, (uint32_t)pid);
        sbxd_send(ctl_fd, &b, fds, nfds);
        sbxd_buf_dispose(&b);
    }
out:
    free(cmd);
    {
        int *all[] = {in, out, err, st, ep};

        for (i = 0; i < 5; i++) {
            if (all[i][0] >= 0)
                close(all[i][0]);
            if (all[i][1] >= 0)
                close(all[i][1]);
        }
    }
    for (i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
    /* envp strings were not handed to putenv in this process, so they are ours to free */
    for (i = 0; envp && envp[i]; i++)
        free(envp[i]);
    free(envp);
}

static struct cmd *find_cmd(uint32_t id)
{
    struct cmd *c;

    for (c = cmds; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static void handle_signal(struct sbxd_cur *c)
{
    uint32_t id = sbxd_cur_u32(c), signo = sbxd_cur_u32(c);
    struct cmd *cmd = find_cmd(id);

    if (c->bad || signo == 0 || signo >= 65) {
        reply_err(EINVAL, "signal: malformed request for exec %u", id);
        return;
    }
    if (!cmd) {
        reply_err(ESRCH, "exec %u is not running", id);
        return;
    }
    /* The group first; a command that left its group (setsid) still gets the signal itself. */
    if (kill(-cmd->pid, (int)signo) < 0 && kill(cmd->pid, (int)signo) < 0) {
        reply_err(errno, "signal %u to exec %u: %s", signo, id, strerror(errno));
        return;
    }
    reply_ok(0);
}

static void pause_resume(int pause)
{
    struct cmd *c;
    int rc;

    if (cgroup_dir) {
        rc = freezer_set(pause ? "FROZEN" : "THAWED");
        if (rc < 0) {
            reply_err(-rc, "%s: freezer %s: %s", pause ? "pause" : "resume", cgroup_dir,
                      strerror(-rc));
            return;
        }
        paused = pause;
        reply_ok(SBXD_PAUSE_CGROUP);
        return;
    }
    for (c = cmds; c; c = c->next)
        if (kill(-c->pid, pause ? SIGSTOP : SIGCONT) < 0)
            kill(c->pid, pause ? SIGSTOP : SIGCONT);
    paused = pause;
    reply_ok(SBXD_PAUSE_SIGNALS);
}

/* Kills every command (and, with a cgroup, every process any of them left behind), reaps them
 * and reports their exits, so readers of the status pipes see an end. */
static void kill_everything(void)
{
    struct cmd *c;

    for (c = cmds; c; c = c->next) {
        kill(-c->pid, SIGKILL);
        kill(c->pid, SIGKILL);
    }
    cgroup_kill_all();
    if (paused && !cgroup_dir)
        for (c = cmds; c; c = c->next)
            kill(-c->pid, SIGCONT);
    while (cmds) {
        int status;
        struct cmd *next = cmds->next;

        if (waitpid(cmds->pid, &status, 0) == cmds->pid)
            report_exit(cmds, status);
        else if (cmds->status_w >= 0)
            close(cmds->status_w);
        free(cmds);
        cmds = next;
    }
}

static int parse_args(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fd") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);

            if (*end || v < 0 || v > 65535)
                return -1;
            ctl_fd = (int)v;
        } else if (!strcmp(argv[i], "--cgroup") && i + 1 < argc) {
            cgroup_dir = argv[++i];
        } else if (!strcmp(argv[i], "--subreaper")) {
            prctl(PR_SET_CHILD_SUBREAPER, 1);
        } else {
            return -1;
        }
    }
    return ctl_fd >= 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct pollfd pfd[2];
    struct sbxd_buf b = {0};
    int sfd;

    if (parse_args(argc, argv) < 0) {
        fprintf(stderr, "usage: evolve-sandboxd --fd N [--cgroup DIR] [--subreaper]\n");
        return 2;
    }
    /* Dies with the thread that started it; the control socket's EOF covers everything else. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    fcntl(ctl_fd, F_SETFD, FD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&handled);
    sigaddset(&handled, SIGCHLD);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGHUP);
    sigprocmask(SIG_BLOCK, &handled, NULL);
    sfd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        perror("evolve-sandboxd: signalfd");
        return 1;
    }
    if (cgroup_dir && access(cgroup_dir, W_OK) < 0)
        cgroup_dir = NULL; /* not writable here: pause falls back to signals */
    sbxd_buf_start(&b, SBXD_R_HELLO);
    sbxd_buf_u32(&b, SBXD_PROTO_VERSION);
    sbxd_buf_u32(&b, (uint32_t)getpid());
    sbxd_buf_u32(&b, cgroup_dir ? SBXD_PAUSE_CGROUP : SBXD_PAUSE_SIGNALS);
    if (sbxd_send(ctl_fd, &b, NULL, 0) < 0)
        return 1;
    for (;;) {
        unsigned char *frame;
        size_t len;
        struct sbxd_cur cur;
        int rc;

        pfd[0].fd = ctl_fd;
        pfd[0].events = POLLIN;
        pfd[1].fd = sfd;
        pfd[1].events = POLLIN;
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            int stop = 0;

            while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                if (si.ssi_signo != SIGCHLD)
                    stop = 1;
            reap_children();
            if (stop)
                break;
            continue; /* re-poll: a SIGCHLD before the control frame keeps exits ordered */
        }
        if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        rc = sbxd_recv(ctl_fd, &frame, &len, NULL, NULL);
        if (rc < 0)
            break; /* the library went away: kill everything */
        sbxd_cur_init(&cur, frame + 1, len - 1);
        switch (frame[0]) {
        case SBXD_Q_EXEC:
            handle_exec(&cur);
            break;
        case SBXD_Q_SIGNAL:
            handle_signal(&cur);
            break;
        case SBXD_Q_PAUSE:
        case SBXD_Q_RESUME:
            pause_resume(frame[0] == SBXD_Q_PAUSE);
            break;
        case SBXD_Q_SHUTDOWN:
            free(frame);
            kill_everything();
            reply_ok(0);
            goto done;
        default:
            reply_err(EPROTO, "unknown request type %u", frame[0]);
            break;
        }
        free(frame);
    }
    kill_everything();
done:
    sbxd_buf_dispose(&b);
    return 0;
}
