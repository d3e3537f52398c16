/* local_daemon.c — starting a local sandbox's evolve-sandboxd (under bubblewrap or as a plain
 * process) and the client side of its protocol (providers/sandboxd_proto.h).
 * Owns: the bubblewrap probe (once per process), the bwrap command line, the daemon's base
 *       environment, spawn/handshake/shutdown, and the EXEC/SIGNAL/PAUSE/RESUME round trips.
 * Does not own: the sandbox directory and owner record (local.c).
 * Threads: any. A box's round trips hold b->mu from send to reply, so replies pair with
 *       requests; start/stop run with b->mu held by the caller (or before the box is shared). */
#include "providers/local_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/log.h"
#include "providers/sandboxd_proto.h"

extern char **environ;

#define HELLO_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS  5000
#define INNER_DAEMON     "/.evolve/sandboxd"
#define INNER_CGROUP     "/.evolve/cgroup"
#define DEFAULT_PATH     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool bwrap_ok; /* written once under probe_once, read after it */
static char bwrap_path[4096];

/* Waits for `pid` up to `timeout_ms`; returns 0 when reaped, -1 on timeout. */
static int wait_child(pid_t pid, int timeout_ms, int *status)
{
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int rc = -1;

    if (pfd >= 0) {
        struct pollfd p = {.fd = pfd, .events = POLLIN};

        while (poll(&p, 1, timeout_ms) < 0 && errno == EINTR)
            ;
        close(pfd);
    }
    /* WNOHANG after the pidfd said "exited" (or when pidfds are missing: block) */
    rc = (int)waitpid(pid, status, pfd < 0 ? 0 : WNOHANG);
    /* ECHILD: the embedder set SIGCHLD to SIG_IGN and the kernel reaped it already */
    return rc == pid || (rc < 0 && errno == ECHILD) ? 0 : -1;
}

static int run_quiet(const char *path, char *const argv[])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = -1, rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    if (wait_child(pid, HELLO_TIMEOUT_MS, &status) < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void probe_bwrap(void)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    char *dir, *save = NULL;

    snprintf(dirs, sizeof(dirs), "%s", path && *path ? path : DEFAULT_PATH);
    for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        snprintf(bwrap_path, sizeof(bwrap_path), "%s/bwrap", dir);
        if (access(bwrap_path, X_OK) == 0)
            break;
        bwrap_path[0] = '\0';
    }
    if (bwrap_path[0]) {
        char *argv[] = {
            bwrap_path,      "--ro-bind",         "/",    "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--die-with-parent", "true", NULL};

        bwrap_ok = run_quiet(bwrap_path, argv) == 0;
    }
    core_log_debug("local provider: bubblewrap %s%s", bwrap_path[0] ? bwrap_path : "not found",
                   bwrap_ok        ? " works"
                   : bwrap_path[0] ? " does not work here"
                                   : "");
}

bool prov_local_bwrap_works(const char **path_out)
{
    pthread_once(&probe_once, probe_bwrap);
    if (path_out)
        *path_out = bwrap_ok ? bwrap_path : NULL;
    return bwrap_ok;
}

/* A NULL-terminated argv/env under construction; strings are owned. */
struct strv {
    char **v;
    size_t n, cap;
    bool oom;
};

static void strv_add(struct strv *s, const char *str)
{
    if (s->oom)
        return;
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        char **nv = realloc(s->v, cap * sizeof(*nv));

        if (!nv) {
            s->oom = true;
            return;
        }
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n] = strdup(str);
    if (!s->v[s->n]) {
        s->oom = true;
        return;
    }
    s->v[++s->n] = NULL;
}

static void strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void strv_addf(struct strv *s, const char *fmt, ...)
{
    char buf[8192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    strv_add(s, buf);
}

static void strv_dispose(struct strv *s)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* System directories bound read-only: what programs need to run, nothing of the host's data. */
static void add_system_binds(struct strv *a)
{
    static const char *const dirs[] = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                       "/lib64", "/libx32", "/etc",  "/opt", NULL};
    size_t i;

    for (i = 0; dirs[i]; i++) {
        char target[4096];
        struct stat st;
        ssize_t n;

        if (lstat(dirs[i], &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            n = readlink(dirs[i], target, sizeof(target) - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            strv_add(a, "--symlink");
            strv_add(a, target);
            strv_add(a, dirs[i]);
        } else if (S_ISDIR(st.st_mode)) {
            strv_add(a, "--ro-bind");
            strv_add(a, dirs[i]);
            strv_add(a, dirs[i]);
        }
    }
}

static void build_env(struct strv *e, const struct prov_local_box *b)
{
    const char *path = getenv("PATH"), *lang = getenv("LANG");
    size_t i;

    strv_addf(e, "PATH=%s", path && *path ? path : DEFAULT_PATH);
    strv_addf(e, "HOME=%s", b->bwrap ? "/home/user" : b->home);
    strv_addf(e, "LANG=%s", lang && *lang ? lang : "C.UTF-8");
    if (b->bwrap) {
        strv_add(e, "USER=user");
        strv_add(e, "TMPDIR=/tmp");
    } else {
        const char *user = getenv("USER");

        if (user)
            strv_addf(e, "USER=%s", user);
    }
    for (i = 0; b->envp && b->envp[i]; i++)
        strv_add(e, b->envp[i]);
}

static void build_argv(struct strv *a, const struct prov_local_box *b, int fd)
{
    if (b->bwrap) {
        strv_add(a, b->pl->bwrap);
        strv_add(a, "--die-with-parent");
        strv_add(a, "--unshare-pid");
        strv_add(a, "--unshare-ipc");
        strv_add(a, "--unshare-uts");
        strv_add(a, "--hostname");
        strv_add(a, "sandbox");
        if (b->no_network)
            strv_add(a, "--unshare-net");
        add_system_binds(a);
        strv_add(a, "--proc");
        strv_add(a, "/proc");
        strv_add(a, "--dev");
        strv_add(a, "/dev");
        strv_add(a, "--tmpfs");
        strv_add(a, "/tmp");
        strv_add(a, "--bind");
        strv_add(a, b->home);
        strv_add(a, "/home/user");
        /* After /tmp and the home: an extra bind under either stays visible. */
        for (size_t i = 0; b->pl->ro_binds && b->pl->ro_binds[i]; i++) {
            strv_add(a, "--ro-bind");
            strv_add(a, b->pl->ro_binds[i]);
            strv_add(a, b->pl->ro_binds[i]);
        }
        strv_add(a, "--ro-bind");
        strv_add(a, b->pl->sandboxd);
        strv_add(a, INNER_DAEMON);
        if (b->cgroup) {
            strv_add(a, "--bind");
            strv_add(a, b->cgroup);
            strv_add(a, INNER_CGROUP);
        }
        strv_add(a, "--chdir");
        strv_add(a, "/home/user/workspace");
        strv_add(a, "--");
        strv_add(a, INNER_DAEMON);
    } else {
        strv_add(a, b->pl->sandboxd);
    }
    strv_add(a, "--fd");
    strv_addf(a, "%d", fd);
    if (b->cgroup) {
        strv_add(a, "--cgroup");
        strv_add(a, b->bwrap ? INNER_CGROUP : b->cgroup);
    }
    if (!b->bwrap)
        strv_add(a, "--subreaper"); /* orphans of commands come back to the daemon */
}

/* The last line of daemon.log, for an error message. */
static void log_tail(const struct prov_local_box *b, char *out, size_t size)
{
    char path[4096], buf[1024];
    ssize_t n;
    int fd;
    char *nl;

    out[0] = '\0';
    snprintf(path, sizeof(path), "%s/daemon.log", b->dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (lseek(fd, -(off_t)(sizeof(buf) - 1), SEEK_END) < 0)
        lseek(fd, 0, SEEK_SET);
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    nl = strrchr(buf, '\n');
    snprintf(out, size, "%.250s", nl ? nl + 1 : buf);
}

/* Receives one reply, waiting at most `timeout_ms` (-1: forever) for its first byte. */
static int recv_reply(struct prov_local_box *b, int timeout_ms, unsigned char **frame, size_t *len,
                      int *fds, int *nfds)
{
    if (timeout_ms >= 0) {
        struct pollfd p = {.fd = b->ctl, .events = POLLIN};
        int r;

        do {
            r = poll(&p, 1, timeout_ms);
        } while (r < 0 && errno == EINTR);
        if (r == 0)
            return -ETIMEDOUT;
    }
    return sbxd_recv(b->ctl, frame, len, fds, nfds);
}

int prov_local_daemon_start(struct prov_local_box *b)
{
    struct strv argv = {0}, envv = {0};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, deflt;
    char logpath[4096], tail[300];
    unsigned char *frame = NULL;
    size_t len;
    int sv[2] = {-1, -1}, child_fd = -1, rc, status;
    pid_t pid = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return core_error_set(EVOLVE_EIO, "sandbox %s: socketpair: %s", b->base.id,
                              strerror(errno));
    /* Above 2 and not 3, so the dup2 to 3 below always makes a fresh, inheritable copy. */
    child_fd = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
    close(sv[1]);
    if (child_fd < 0) {
        close(sv[0]);
        return core_error_set(EVOLVE_EIO, "sandbox %s: dup: %s", b->base.id, strerror(errno));
    }
    build_argv(&argv, b, 3);
    build_env(&envv, b);
    snprintf(logpath, sizeof(logpath), "%s/daemon.log", b->dir);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_adddup2(&fa, child_fd, 3);
    if (!b->bwrap) {
        char ws[4096];

        snprintf(ws, sizeof(ws), "%s/workspace", b->home);
        posix_spawn_file_actions_addchdir_np(&fa, ws);
    }
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGTERM);
    sigaddset(&deflt, SIGCHLD);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &deflt);
    /* Own session: a terminal's Ctrl-C reaches evolve, which decides what to interrupt. */
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
    if (argv.oom || envv.oom) {
        rc = core_error_oom();
        goto out;
    }
    rc = posix_spawn(&pid, argv.v[0], &fa, &attr, argv.v, envv.v);
    if (rc != 0) {
        pid = 0;
        rc = core_error_set(rc == ENOENT ? EVOLVE_ENOTFOUND : EVOLVE_EIO,
                            "sandbox %s: start %s: %s", b->base.id, argv.v[0], strerror(rc));
        goto out;
    }
    close(child_fd);
    child_fd = -1;
    b->ctl = sv[0];
    sv[0] = -1;
    rc = recv_reply(b, HELLO_TIMEOUT_MS, &frame, &len, NULL, NULL);
    if (rc < 0 || len < 13 || frame[0] != SBXD_R_HELLO) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        pid = 0;
        close(b->ctl);
        b->ctl = -1;
        log_tail(b, tail, sizeof(tail));
        rc = core_error_set(EVOLVE_EIO, "sandbox %s: the exec daemon did not start (%s%s%s)",
                            b->base.id, rc == -ETIMEDOUT ? "no hello in 10 s" : "no hello",
                            tail[0] ? ": " : "", tail);
        goto out;
    }
    {
        struct sbxd_cur c;
        uint32_t version;

        sbxd_cur_init(&c, frame + 1, len - 1);
        version = sbxd_cur_u32(&c);
        (void)sbxd_cur_u32(&c); /* the daemon's pid inside the sandbox */
        b->pause_mode = (char)sbxd_cur_u32(&c);
        if (version != SBXD_PROTO_VERSION) {
            rc = core_error_set(EVOLVE_EPROTO,
                                "sandbox %s: evolve-sandboxd speaks protocol %u, "
                                "this library %d (%s)",
                                b->base.id, version, SBXD_PROTO_VERSION, b->pl->sandboxd);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            pid = 0;
            close(b->ctl);
            b->ctl = -1;
            goto out;
        }
    }
    b->child = pid;
    b->child_start = prov_local_pid_start(pid);
    rc = 0;
out:
    free(frame);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    strv_dispose(&argv);
    strv_dispose(&envv);
    if (sv[0] >= 0)
        close(sv[0]);
    if (child_fd >= 0)
        close(child_fd);
    return rc;
}

int prov_local_daemon_stop(struct prov_local_box *b)
{
    struct sbxd_buf q = {0};
    unsigned char *frame = NULL;
    size_t len;
    int status;

    if (b->ctl >= 0) {
        sbxd_buf_start(&q, SBXD_Q_SHUTDOWN);
        if (sbxd_send(b->ctl, &q, NULL, 0) == 0 &&
            recv_reply(b, STOP_TIMEOUT_MS, &frame, &len, NULL, NULL) == 0)
            free(frame);
        sbxd_buf_dispose(&q);
        close(b->ctl);
        b->ctl = -1;
    }
    if (b->child > 0) {
        if (wait_child(b->child, STOP_TIMEOUT_MS, &status) < 0) {
            core_log_warn("sandbox %s: daemon %ld did not stop in %d ms, killing it", b->base.id,
                          (long)b->child, STOP_TIMEOUT_MS);
            kill(b->child, SIGKILL);
            waitpid(b->child, &status, 0);
        }
        b->child = 0;
    }
    return 0;
}

/* Sends `q` and reads the reply; maps SBXD_R_ERR to an evolve error. Holds b->mu. */
static int round_trip(struct prov_local_box *b, struct sbxd_buf *q, const char *what,
                      unsigned char **frame, size_t *len, int *fds, int *nfds)
{
    int rc;

    if (b->killed)
        return core_error_set(EVOLVE_ESHUTDOWN, "%s: sandbox %s was killed", what, b->base.id);
    if (b->ctl < 0)
        return core_error_set(EVOLVE_EIO, "%s: sandbox %s has no exec daemon", what, b->base.id);
    rc = sbxd_send(b->ctl, q, NULL, 0);
    if (rc == -ENOMEM)
        return core_error_set(EVOLVE_EINVAL, "%s: request too large for sandbox %s", what,
                              b->base.id);
    if (rc == 0)
        rc = recv_reply(b, -1, frame, len, fds, nfds);
    if (rc < 0) {
        char tail[300];

        log_tail(b, tail, sizeof(tail));
        return core_error_set(EVOLVE_EIO, "%s: the exec daemon of sandbox %s is gone (%s)%s%s",
                              what, b->base.id, strerror(-rc), tail[0] ? ": " : "", tail);
    }
    if ((*frame)[0] == SBXD_R_ERR) {
        struct sbxd_cur c;
        char msg[400];
        uint32_t err;
        int code;

        sbxd_cur_init(&c, *frame + 1, *len - 1);
        err = sbxd_cur_u32(&c);
        sbxd_cur_copy(&c, msg, sizeof(msg));
        free(*frame);
        *frame = NULL;
        switch (err) {
        case ENOENT:
        case EACCES:
        case ENOEXEC:
        case ENOTDIR:
        case ESRCH:
            code = EVOLVE_ENOTFOUND;
            break;
        case EBUSY:
            code = EVOLVE_EBUSY;
            break;
        case EINVAL:
            code = EVOLVE_EINVAL;
            break;
        default:
            code = EVOLVE_EIO;
        }
        return core_error_set(code, "sandbox %s: %s", b->base.id, msg);
    }
    return 0;
}

/* The cwd a command gets: inside bwrap as given; in mode none, /home/user maps to the home. */
static void map_cwd(char *out, size_t size, const struct prov_local_box *b, const char *cwd)
{
    const char *inner = "/home/user";
    size_t il = strlen(inner);

    if (!cwd || !*cwd)
        cwd = "/home/user/workspace";
    if (!b->bwrap && !strncmp(cwd, inner, il) && (cwd[il] == '\0' || cwd[il] == '/'))
        snprintf(out, size, "%s%s", b->home, cwd + il);
    else if (!b->bwrap && cwd[0] != '/')
        snprintf(out, size, "%s/workspace/%s", b->home, cwd);
    else
        snprintf(out, size, "%s", cwd);
}

int prov_local_daemon_exec(struct prov_proc **out, struct prov_local_box *b,
                           const struct prov_exec_spec *spec)
{
    struct sbxd_buf q = {0};
    struct prov_proc *proc;
    unsigned char *frame = NULL;
    char cwd[4096];
    size_t len, argc = 0, envc = 0, i;
    int fds[SBXD_MAX_FDS], nfds = 0, rc;
    bool no_stdin = spec->flags & (PROV_EXEC_NO_STDIN | PROV_EXEC_BACKGROUND);
    uint32_t id;

    *out = NULL;
    proc = calloc(1, sizeof(*proc));
    if (!proc)
        return core_error_oom();
    while (spec->argv[argc])
        argc++;
    while (spec->envp && spec->envp[envc])
        envc++;
    map_cwd(cwd, sizeof(cwd), b, spec->cwd);
    pthread_mutex_lock(&b->mu);
    id = ++b->next_exec;
    sbxd_buf_start(&q, SBXD_Q_EXEC);
    sbxd_buf_u32(&q, id);
    sbxd_buf_u32(&q, SBXD_EXEC_NEWPGRP | (no_stdin ? SBXD_EXEC_STDIN_NULL : 0));
    sbxd_buf_str(&q, cwd);
    sbxd_buf_u32(&q, (uint32_t)argc);
    for (i = 0; i < argc; i++)
        sbxd_buf_str(&q, spec->argv[i]);
    sbxd_buf_u32(&q, (uint32_t)envc);
    for (i = 0; i < envc; i++)
        sbxd_buf_str(&q, spec->envp[i]);
    rc = round_trip(b, &q, spec->argv[0], &frame, &len, fds, &nfds);
    pthread_mutex_unlock(&b->mu);
    sbxd_buf_dispose(&q);
    if (rc < 0) {
        free(proc);
        return rc;
    }
    if (frame[0] != SBXD_R_EXEC || nfds != (no_stdin ? 3 : 4)) {
        unsigned int type = frame[0];

        for (i = 0; i < (size_t)nfds; i++)
            close(fds[i]);
        free(frame);
        free(proc);
        return core_error_set(EVOLVE_EPROTO, "exec %s: sandbox %s answered type %u with %d fds",
                              spec->argv[0], b->base.id, type, nfds);
    }
    {
        struct sbxd_cur c;

        sbxd_cur_init(&c, frame + 1, len - 1);
        proc->id = sbxd_cur_u32(&c);
        proc->pid = (long)sbxd_cur_u32(&c);
    }
    free(frame);
    i = 0;
    proc->stdin_fd = no_stdin ? -1 : fds[i++];
    proc->stdout_fd = fds[i++];
    proc->stderr_fd = fds[i++];
    proc->status_fd = fds[i++];
    *out = proc;
    return 0;
}

int prov_local_daemon_signal(struct prov_local_box *b, uint32_t proc_id, int signo)
{
    struct sbxd_buf q = {0};
    unsigned char *frame = NULL;
    size_t len;
    char what[64];
    int rc;

    snprintf(what, sizeof(what), "signal %d to command %u", signo, proc_id);
    sbxd_buf_start(&q, SBXD_Q_SIGNAL);
    sbxd_buf_u32(&q, proc_id);
    sbxd_buf_u32(&q, (uint32_t)signo);
    pthread_mutex_lock(&b->mu);
    rc = round_trip(b, &q, what, &frame, &len, NULL, NULL);
    pthread_mutex_unlock(&b->mu);
    sbxd_buf_dispose(&q);
    free(frame);
    return rc;
}

int prov_local_daemon_pause(struct prov_local_box *b, bool pause)
{
    struct sbxd_buf q = {0};
    unsigned char *frame = NULL;
    size_t len;
    int rc;

    sbxd_buf_start(&q, pause ? SBXD_Q_PAUSE : SBXD_Q_RESUME);
    pthread_mutex_lock(&b->mu);
    rc = round_trip(b, &q, pause ? "pause" : "resume", &frame, &len, NULL, NULL);
    if (rc == 0 && len >= 5) {
        struct sbxd_cur c;

        sbxd_cur_init(&c, frame + 1, len - 1);
        b->pause_mode = (char)sbxd_cur_u32(&c);
    }
    pthread_mutex_unlock(&b->mu);
    sbxd_buf_dispose(&q);
    free(frame);
    return rc;
}
