/* fake.c — the common part of the provider fakes (fakes.h): two libmicrohttpd daemons on
 * loopback (control plane, data plane), request bodies, faults, sandboxes as directories under a
 * temp dir, commands as local process groups each drained by a pump thread.
 * Threads: MHD's connection threads, one pump thread per command, the test's thread; all shared
 * state under f->mu, changes broadcast on f->cv. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakes/fake_int.h"
#include "support/support.h"

extern char **environ;

uint64_t fake_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Injected latency only: the fake plays a slow network, nothing waits on a condition here. */
void fake_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    while (ms && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- replies --------------------------------------------------------------------------------- */

enum MHD_Result fake_reply(struct freq *r, unsigned status, const char *ctype, const void *body,
                           size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (!resp)
        return MHD_NO;
    if (len || ctype)
        MHD_add_response_header(resp, "Content-Type", ctype ? ctype : "application/json");
    rc = MHD_queue_response(r->c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result fake_reply_json(struct freq *r, unsigned status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    enum MHD_Result rc = fake_reply(r, status, NULL, s ? s : "{}", s ? strlen(s) : 2);

    free(s);
    json_decref(j);
    return rc;
}

const char *fake_header(struct freq *r, const char *name)
{
    return MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
}

const char *fake_query(struct freq *r, const char *name)
{
    return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
}

bool fake_take_fault(struct ts_fake *f, enum ts_fault fault)
{
    bool armed;

    pthread_mutex_lock(&f->mu);
    armed = f->faults[fault] > 0;
    if (armed)
        f->faults[fault]--;
    pthread_mutex_unlock(&f->mu);
    return armed;
}

void ts_fake_fault(struct ts_fake *f, enum ts_fault fault, unsigned count)
{
    pthread_mutex_lock(&f->mu);
    f->faults[fault] = count;
    pthread_mutex_unlock(&f->mu);
}

/* ---- the request cycle ------------------------------------------------------------------------
 */

struct port {
    struct ts_fake *f;
    bool data;
};

static struct port ports[64][2];
static pthread_mutex_t ports_mu = PTHREAD_MUTEX_INITIALIZER;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls)
{
    struct port *pt = cls;
    struct freq *r = *con_cls;

    (void)version;
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->f = pt->f;
        r->c = c;
        r->data_port = pt->data;
        *con_cls = r;
        pthread_mutex_lock(&pt->f->mu);
        pt->f->st.requests++;
        pthread_mutex_unlock(&pt->f->mu);
        return MHD_YES;
    }
    if (*upload_size) {
        if (r->len + *upload_size + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;

            while (cap < r->len + *upload_size + 1)
                cap *= 2;
            r->body = realloc(r->body, cap);
            if (!r->body)
                return MHD_NO;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload, *upload_size);
        r->len += *upload_size;
        r->body[r->len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }
    r->method = method;
    r->url = url;
    if (pt->f->o.latency_ms)
        fake_sleep_ms(pt->f->o.latency_ms);
    return pt->f->kind == TS_FAKE_E2B ? fake_e2b_handle(r) : fake_daytona_handle(r);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct freq *r = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (r) {
        free(r->body);
        free(r);
    }
    *con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct port *pt = cls;

    (void)c;
    (void)socket_context;
    pthread_mutex_lock(&pt->f->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        pt->f->st.connections++;
        pt->f->st.open_connections++;
    } else {
        pt->f->st.open_connections--;
    }
    pthread_cond_broadcast(&pt->f->cv);
    pthread_mutex_unlock(&pt->f->mu);
}

static struct MHD_Daemon *start_daemon(struct port *pt, unsigned *port_out)
{
    struct sockaddr_in sa;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL,
        NULL, handler, pt, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, completed, pt, MHD_OPTION_NOTIFY_CONNECTION, on_connection, pt,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)2048,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(256 * 1024), MHD_OPTION_END);
    if (!d)
        ts_die("fake: MHD_start_daemon failed");
    info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (!info || !info->port)
        ts_die("fake: no bound port");
    *port_out = info->port;
    return d;
}

struct ts_fake *ts_fake_start(enum ts_fake_kind kind, const struct ts_fake_opts *opts)
{
    struct ts_fake *f = calloc(1, sizeof(*f));
    struct port *pt = NULL;
    size_t i;

    if (!f)
        ts_die("fake: out of memory");
    signal(SIGPIPE, SIG_IGN);
    f->kind = kind;
    if (opts)
        f->o = *opts;
    else if (kind == TS_FAKE_DAYTONA)
        f->o.started_after = 2; /* creates poll: "creating" twice, then "started" */
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    ts_mkdtemp(f->dir, sizeof(f->dir), kind == TS_FAKE_E2B ? "fake-e2b" : "fake-daytona");
    pthread_mutex_lock(&ports_mu);
    for (i = 0; i < 64; i++)
        if (!ports[i][0].f) {
            pt = ports[i];
            break;
        }
    if (!pt)
        ts_die("fake: too many fakes");
    pt[0].f = pt[1].f = f;
    pt[0].data = false;
    pt[1].data = true;
    pthread_mutex_unlock(&ports_mu);
    f->api = start_daemon(&pt[0], &f->api_port);
    f->data = start_daemon(&pt[1], &f->data_port);
    snprintf(f->api_url, sizeof(f->api_url), "http://127.0.0.1:%u", f->api_port);
    snprintf(f->data_url, sizeof(f->data_url), "http://127.0.0.1:%u", f->data_port);
    return f;
}

static void proc_free(struct fproc *p)
{
    if (p->in_fd >= 0)
        close(p->in_fd);
    free(p->q);
    free(p->all[0]);
    free(p->all[1]);
    free(p);
}

void ts_fake_stop(struct ts_fake *f)
{
    size_t i, k;

    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stopping = true;
    for (i = 0; i < f->nsbx; i++)
        if (f->sbx[i]->state != 2)
            fake_sbx_destroy(f, f->sbx[i]);
    pthread_cond_broadcast(&f->cv);
    /* Pump threads are detached: wait until each has recorded its command's end (its last
     * touch of the process record) before freeing. */
    for (i = 0; i < f->nsbx; i++)
        for (k = 0; k < f->sbx[i]->nprocs; k++)
            while (!f->sbx[i]->procs[k]->exited)
                pthread_cond_wait(&f->cv, &f->mu);
    pthread_mutex_unlock(&f->mu);
    MHD_stop_daemon(f->api);
    MHD_stop_daemon(f->data);
    for (i = 0; i < f->nsbx; i++) {
        for (k = 0; k < f->sbx[i]->nprocs; k++)
            proc_free(f->sbx[i]->procs[k]);
        free(f->sbx[i]->procs);
        json_decref(f->sbx[i]->meta);
        json_decref(f->sbx[i]->env);
        json_decref(f->sbx[i]->sessions);
        free(f->sbx[i]);
    }
    pthread_mutex_lock(&ports_mu);
    for (i = 0; i < 64; i++)
        if (ports[i][0].f == f)
            ports[i][0].f = ports[i][1].f = NULL;
    pthread_mutex_unlock(&ports_mu);
    ts_rmtree(f->dir);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

void ts_fake_setenv(const struct ts_fake *f)
{
    if (f->kind == TS_FAKE_E2B) {
        setenv("E2B_API_KEY", "e2b_test", 1);
        setenv("E2B_API_URL", f->api_url, 1);
        setenv("E2B_SANDBOX_URL", f->data_url, 1);
        setenv("E2B_DOMAIN", "e2b.test", 1);
        unsetenv("DAYTONA_API_KEY");
    } else {
        setenv("DAYTONA_API_KEY", "dtn_test", 1);
        char url[96];

        snprintf(url, sizeof(url), "%s/api", f->api_url);
        setenv("DAYTONA_API_URL", url, 1);
        unsetenv("E2B_API_KEY");
    }
}

const char *ts_fake_api_url(const struct ts_fake *f)
{
    return f->api_url;
}

const char *ts_fake_data_url(const struct ts_fake *f)
{
    return f->data_url;
}

void ts_fake_stats(struct ts_fake *f, struct ts_fake_stats *out)
{
    size_t i, k;

    pthread_mutex_lock(&f->mu);
    *out = f->st;
    out->sandboxes = 0;
    out->processes = 0;
    for (i = 0; i < f->nsbx; i++) {
        if (f->sbx[i]->state != 2)
            out->sandboxes++;
        for (k = 0; k < f->sbx[i]->nprocs; k++)
            if (!f->sbx[i]->procs[k]->exited)
                out->processes++;
    }
    pthread_mutex_unlock(&f->mu);
}

bool ts_fake_quiesce(struct ts_fake *f, unsigned timeout_ms)
{
    uint64_t deadline = fake_now_ms() + timeout_ms;
    struct ts_fake_stats st;

    for (;;) {
        ts_fake_stats(f, &st);
        if (st.processes == 0 && st.open_connections == 0)
            return true;
        if (fake_now_ms() >= deadline)
            return false;
        pthread_mutex_lock(&f->mu);
        {
            struct timespec ts;

            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&f->cv, &f->mu, &ts);
        }
        pthread_mutex_unlock(&f->mu);
    }
}

/* ---- sandboxes --------------------------------------------------------------------------------
 */

int fake_mkdirs(const char *path, mode_t mode)
{
    char tmp[1024];
    size_t i;

    snprintf(tmp, sizeof(tmp), "%s", path);
    for (i = 1; tmp[i]; i++) {
        if (tmp[i] != '/')
            continue;
        tmp[i] = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return -1;
        tmp[i] = '/';
    }
    if (mkdir(tmp, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

struct fsbx *fake_sbx_new(struct ts_fake *f, const char *prefix)
{
    struct fsbx *sb;
    char home[800];

    if (f->nsbx >= FAKE_MAX_SBX)
        return NULL;
    sb = calloc(1, sizeof(*sb));
    if (!sb)
        return NULL;
    f->seq++;
    snprintf(sb->id, sizeof(sb->id), "%s%06llx%04x", prefix, (unsigned long long)f->seq,
             (unsigned)(fake_now_ms() & 0xffff));
    snprintf(sb->token, sizeof(sb->token), "tok-%llx", (unsigned long long)f->seq * 7919);
    snprintf(sb->root, sizeof(sb->root), "%s/%s", f->dir, sb->id);
    snprintf(home, sizeof(home), "%s/home/user", sb->root);
    if (fake_mkdirs(home, 0755) < 0) {
        free(sb);
        return NULL;
    }
    sb->created_ms = fake_now_ms();
    f->sbx[f->nsbx++] = sb;
    f->st.creates++;
    return sb;
}

struct fsbx *fake_sbx_find(struct ts_fake *f, const char *id)
{
    size_t i;

    for (i = 0; id && i < f->nsbx; i++)
        if (!strcmp(f->sbx[i]->id, id))
            return f->sbx[i];
    return NULL;
}

void fake_sbx_signal_all(struct fsbx *sb, int sig)
{
    size_t k;

    for (k = 0; k < sb->nprocs; k++)
        if (!sb->procs[k]->exited)
            kill(-sb->procs[k]->pid, sig);
}

void fake_sbx_destroy(struct ts_fake *f, struct fsbx *sb)
{
    if (sb->state == 1)
        fake_sbx_signal_all(sb, SIGCONT);
    fake_sbx_signal_all(sb, SIGKILL);
    sb->state = 2;
    f->st.kills++;
    ts_rmtree(sb->root);
    pthread_cond_broadcast(&f->cv);
}

int ts_fake_vanish(struct ts_fake *f, const char *id)
{
    struct fsbx *sb;
    int rc = -1;

    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_find(f, id);
    if (sb && sb->state != 2) {
        fake_sbx_destroy(f, sb);
        f->st.kills--; /* not a client's kill */
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int ts_fake_home(struct ts_fake *f, const char *id, char *out, size_t size)
{
    struct fsbx *sb;
    int rc = -1;

    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_find(f, id);
    if (sb) {
        snprintf(out, size, "%s/home/user", sb->root);
        rc = 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

int fake_map_path(const struct fsbx *sb, const char *path, char *out, size_t size)
{
    const char *rel = path;

    if (!path)
        return -1;
    if (path[0] == '/') {
        if (strncmp(path, "/home/user", 10) || (path[10] && path[10] != '/'))
            return -1;
        rel = path + 10;
    }
    if (strstr(rel, ".."))
        return -1;
    snprintf(out, size, "%s/home/user%s%s", sb->root, rel[0] && rel[0] != '/' ? "/" : "", rel);
    return 0;
}

/* ---- processes --------------------------------------------------------------------------------
 */

static void queue_out(struct fproc *p, int stream, const char *data, size_t n)
{
    if (p->retain) {
        size_t need = p->all_len[stream] + n + 1;

        if (need > p->all_cap[stream]) {
            size_t cap = p->all_cap[stream] ? p->all_cap[stream] : 4096;
            char *nb;

            while (cap < need)
                cap *= 2;
            nb = realloc(p->all[stream], cap);
            if (!nb)
                return;
            p->all[stream] = nb;
            p->all_cap[stream] = cap;
        }
        memcpy(p->all[stream] + p->all_len[stream], data, n);
        p->all_len[stream] += n;
        p->all[stream][p->all_len[stream]] = '\0';
    }
    if (p->subscribers == 0)
        return;
    if (p->qlen + n + 5 > p->qcap) {
        size_t cap = p->qcap ? p->qcap : 4096;
        char *nb;

        while (cap < p->qlen + n + 5)
            cap *= 2;
        nb = realloc(p->q, cap);
        if (!nb)
            return;
        p->q = nb;
        p->qcap = cap;
    }
    p->q[p->qlen] = (char)stream;
    p->q[p->qlen + 1] = (char)(n >> 24);
    p->q[p->qlen + 2] = (char)(n >> 16);
    p->q[p->qlen + 3] = (char)(n >> 8);
    p->q[p->qlen + 4] = (char)n;
    memcpy(p->q + p->qlen + 5, data, n);
    p->qlen += n + 5;
}

static void *pump(void *arg)
{
    struct fproc *p = arg;
    struct ts_fake *f = p->f;
    struct pollfd pfd[2] = {{.fd = p->out_fd, .events = POLLIN},
                            {.fd = p->err_fd, .events = POLLIN}};
    char buf[16384];
    int open = 2, status = 0;

    while (open > 0) {
        int k, timeout = 200; /* re-reads the deadline, which Start sets after the spawn */
        uint64_t deadline;

        pthread_mutex_lock(&f->mu);
        deadline = p->deadline_ms;
        if (deadline && fake_now_ms() >= deadline) {
            kill(-p->pid, SIGKILL);
            p->deadline_ms = deadline = 0;
        }
        pthread_mutex_unlock(&f->mu);
        if (deadline) {
            uint64_t now = fake_now_ms();

            timeout = deadline <= now ? 0 : deadline - now < 200 ? (int)(deadline - now) : 200;
        }
        if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
            break;
        for (k = 0; k < 2; k++) {
            ssize_t n;

            if (pfd[k].fd < 0 || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(pfd[k].fd, buf, sizeof(buf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(pfd[k].fd);
                pfd[k].fd = -1;
                open--;
                continue;
            }
            pthread_mutex_lock(&f->mu);
            queue_out(p, k, buf, (size_t)n);
            pthread_cond_broadcast(&f->cv);
            pthread_mutex_unlock(&f->mu);
        }
    }
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&f->mu);
    p->exited = true;
    p->end_ms = fake_now_ms();
    if (WIFSIGNALED(status)) {
        p->exit_code = -1;
        p->signo = WTERMSIG(status);
    } else {
        p->exit_code = WEXITSTATUS(status);
    }
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

struct fproc *fake_spawn(struct ts_fake *f, struct fsbx *sb, const char *const *argv, json_t *envs,
                         const char *cwd, bool want_stdin, bool retain)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int out[2], err[2], in[2] = {-1, -1};
    char home[800], wd[1200], **env, path_env[] = "PATH=/usr/local/bin:/usr/bin:/bin";
    struct fproc *p, **procs;
    size_t ne = 0, i;
    const char *k;
    json_t *v;
    int rc;

    if (fake_map_path(sb, cwd ? cwd : "/home/user", wd, sizeof(wd)) < 0) {
        errno = EINVAL;
        return NULL;
    }
    procs = realloc(sb->procs, (sb->nprocs + 1) * sizeof(*procs));
    p = calloc(1, sizeof(*p));
    env = calloc(4 + json_object_size(sb->env) + json_object_size(envs), sizeof(char *));
    if (!procs || !p || !env) {
        free(p);
        free(env);
        errno = ENOMEM;
        return NULL;
    }
    sb->procs = procs;
    snprintf(home, sizeof(home), "HOME=%s/home/user", sb->root);
    env[ne++] = strdup(path_env);
    env[ne++] = strdup(home);
    json_object_foreach(sb->env, k, v)
    {
        char kv[4096];

        snprintf(kv, sizeof(kv), "%s=%s", k, json_string_value(v) ? json_string_value(v) : "");
        env[ne++] = strdup(kv);
    }
    json_object_foreach(envs, k, v)
    {
        char kv[4096];

        snprintf(kv, sizeof(kv), "%s=%s", k, json_string_value(v) ? json_string_value(v) : "");
        env[ne++] = strdup(kv);
    }
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        (want_stdin && pipe2(in, O_CLOEXEC) < 0))
        ts_die("fake: pipe: %s", strerror(errno));
    posix_spawn_file_actions_init(&fa);
    if (want_stdin)
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addchdir_np(&fa, wd);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    {
        sigset_t none;

        sigemptyset(&none);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                          POSIX_SPAWN_SETSIGDEF);
        sigaddset(&none, SIGPIPE);
        posix_spawnattr_setsigdefault(&at, &none);
    }
    rc = posix_spawnp(&p->pid, argv[0], &fa, &at, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    for (i = 0; i < ne; i++)
        free(env[i]);
    free(env);
    close(out[1]);
    close(err[1]);
    if (want_stdin)
        close(in[0]);
    if (rc != 0) {
        close(out[0]);
        close(err[0]);
        if (want_stdin)
            close(in[1]);
        free(p);
        errno = rc;
        return NULL;
    }
    p->f = f;
    p->sb = sb;
    p->out_fd = out[0];
    p->err_fd = err[0];
    p->in_fd = want_stdin ? in[1] : -1;
    p->retain = retain;
    snprintf(p->cmd_id, sizeof(p->cmd_id), "cmd-%d", (int)p->pid);
    if (pthread_create(&p->pump, NULL, pump, p) != 0)
        ts_die("fake: pthread_create");
    pthread_detach(p->pump);
    sb->procs[sb->nprocs++] = p;
    return p;
}

struct fproc *fake_proc_by_pid(struct fsbx *sb, pid_t pid)
{
    size_t k;

    for (k = 0; sb && k < sb->nprocs; k++)
        if (sb->procs[k]->pid == pid)
            return sb->procs[k];
    return NULL;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *fake_b64(const void *data, size_t len)
{
    const unsigned char *d = data;
    char *o = malloc((len + 2) / 3 * 4 + 1);
    size_t i, n = 0;

    if (!o)
        return NULL;
    for (i = 0; i < len; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < len ? (unsigned)d[i + 1] << 8 : 0) |
                     (i + 2 < len ? d[i + 2] : 0);

        o[n++] = b64c[v >> 18];
        o[n++] = b64c[(v >> 12) & 63];
        o[n++] = i + 1 < len ? b64c[(v >> 6) & 63] : '=';
        o[n++] = i + 2 < len ? b64c[v & 63] : '=';
    }
    o[n] = '\0';
    return o;
}

long fake_unb64(const char *in, unsigned char *out)
{
    unsigned acc = 0;
    int bits = 0;
    long n = 0;

    for (; *in && *in != '='; in++) {
        const char *c = strchr(b64c, *in);

        if (!c)
            return -1;
        acc = (acc << 6) | (unsigned)(c - b64c);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return n;
}
