/* daytona_fake.c — the Daytona fake (spec/provider-apis.md §3, §7.2): the API under /api
 * (Bearer key, NestJS error bodies, create answering "creating" and flipping to "started" after
 * K GETs, list with a labels JSON filter and cursor, start/stop/delete, autostop answering 201,
 * preview URLs) and the toolbox under /toolbox/{id} (process/execute, sessions with async exec,
 * command status without exitCode until done, logs as JSON {output,stdout,stderr} when
 * X-Daytona-SDK-Version >= 0.167 else text/plain, input, session delete TERM then KILL, files).
 * Threads: MHD connection threads; state under f->mu. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakes/fake_int.h"

static enum MHD_Result nest_error(struct freq *r, unsigned status, const char *msg)
{
    return fake_reply_json(r, status,
                           json_pack("{s:s, s:s, s:i, s:s, s:s}", "path", r->url, "timestamp",
                                     "2026-11-30T00:00:00.000Z", "statusCode", (int)status, "error",
                                     status == 404 ? "Not Found" : "Error", "message", msg));
}

static void iso(char *out, size_t size, uint64_t mono_ms)
{
    time_t t = time(NULL) - (time_t)((fake_now_ms() - mono_ms) / 1000);

    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

static const char *state_of(const struct ts_fake *f, const struct fsbx *sb)
{
    if (sb->state == 2)
        return "destroyed";
    if (sb->state == 1)
        return "stopped";
    return sb->gets >= f->o.started_after ? "started" : "creating";
}

static json_t *sandbox_json(struct ts_fake *f, const struct fsbx *sb)
{
    char tb[128], ts[64];

    snprintf(tb, sizeof(tb), "%s/toolbox", f->data_url);
    iso(ts, sizeof(ts), sb->created_ms);
    return json_pack("{s:s, s:s, s:s, s:s, s:O?, s:O?, s:s, s:i}", "id", sb->id, "name", sb->id,
                     "state", state_of(f, sb), "toolboxProxyUrl", tb, "env", sb->env, "labels",
                     sb->meta, "createdAt", ts, "autoStopInterval", 15);
}

/* ---- API
 * ------------------------------------------------------------------------------------------ */

static bool labels_match(const struct fsbx *sb, const char *filter)
{
    json_t *want = filter ? json_loads(filter, 0, NULL) : NULL, *v;
    const char *k;
    bool ok = true;

    json_object_foreach(want, k, v)
    {
        const char *have = json_string_value(json_object_get(sb->meta, k));

        if (!have || !json_string_value(v) || strcmp(have, json_string_value(v)))
            ok = false;
    }
    json_decref(want);
    return ok;
}

static enum MHD_Result api_create(struct freq *r)
{
    struct ts_fake *f = r->f;
    json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, NULL), *j = NULL;
    struct fsbx *sb;

    if (fake_take_fault(f, TS_FAULT_429_CREATE)) {
        struct MHD_Response *resp;
        const char *m = "{\"statusCode\":429,\"message\":\"ThrottlerException: Too Many "
                        "Requests\",\"error\":\"Too Many Requests\"}";
        enum MHD_Result rc;

        json_decref(body);
        resp = MHD_create_response_from_buffer(strlen(m), (void *)m, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(resp, "Retry-After", "1");
        MHD_add_response_header(resp, "Content-Type", "application/json");
        rc = MHD_queue_response(r->c, 429, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (fake_take_fault(f, TS_FAULT_503_CREATE)) {
        json_decref(body);
        return nest_error(r, 503, "no capacity available in the region");
    }
    if (!json_is_object(body)) {
        json_decref(body);
        return nest_error(r, 400, "body must be a CreateSandbox object");
    }
    if (f->o.create_delay_ms)
        fake_sleep_ms(f->o.create_delay_ms);
    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_new(f, "d");
    if (sb) {
        sb->meta = json_incref(json_object_get(body, "labels"));
        sb->env = json_incref(json_object_get(body, "env"));
        sb->sessions = json_object();
        j = sandbox_json(f, sb);
    }
    pthread_mutex_unlock(&f->mu);
    json_decref(body);
    return sb ? fake_reply_json(r, 200, j) : nest_error(r, 500, "cannot create the sandbox");
}

static enum MHD_Result api_list(struct freq *r)
{
    struct ts_fake *f = r->f;
    const char *lab = fake_query(r, "labels"), *cur = fake_query(r, "cursor");
    const char *lim = fake_query(r, "limit");
    size_t start = cur ? strtoul(cur, NULL, 10) : 0, limit = lim ? strtoul(lim, NULL, 10) : 100;
    json_t *items = json_array(), *next = json_null();
    size_t i, n = 0;

    if (limit == 0 || limit > 200)
        limit = 200;
    pthread_mutex_lock(&f->mu);
    for (i = start; i < f->nsbx; i++) {
        if (f->sbx[i]->state == 2 || !labels_match(f->sbx[i], lab))
            continue;
        if (n == limit) {
            char c[32];

            snprintf(c, sizeof(c), "%zu", i);
            next = json_string(c);
            break;
        }
        json_array_append_new(items, sandbox_json(f, f->sbx[i]));
        n++;
    }
    pthread_mutex_unlock(&f->mu);
    return fake_reply_json(r, 200, json_pack("{s:o, s:o}", "items", items, "nextCursor", next));
}

static enum MHD_Result api_sandbox(struct freq *r, const char *rest)
{
    struct ts_fake *f = r->f;
    size_t n = strcspn(rest, "/");
    const char *op = rest[n] == '/' ? rest + n + 1 : "";
    unsigned status = 200;
    struct fsbx *sb;
    char id[64];
    json_t *j;

    snprintf(id, sizeof(id), "%.*s", (int)(n < 63 ? n : 63), rest);
    pthread_mutex_lock(&f->mu);
    sb = fake_sbx_find(f, id);
    if (!sb || sb->state == 2) {
        pthread_mutex_unlock(&f->mu);
        return nest_error(r, 404, "Sandbox not found");
    }
    if (!strcmp(r->method, "GET") && !*op) {
        sb->gets++;
    } else if (!strcmp(r->method, "DELETE") && !*op) {
        fake_sbx_destroy(f, sb);
    } else if (!strcmp(op, "stop")) {
        fake_sbx_signal_all(sb, SIGKILL);
        sb->state = 1;
    } else if (!strcmp(op, "start")) {
        sb->state = 0;
    } else if (!strncmp(op, "autostop/", 9)) {
        status = 201; /* NestJS without @HttpCode: the client must accept any 2xx */
    } else if (!strncmp(op, "ports/", 6) && strstr(op, "/preview-url")) {
        char url[160];

        snprintf(url, sizeof(url), "%s/preview/%lu/", f->data_url, strtoul(op + 6, NULL, 10));
        j = json_pack("{s:s, s:s, s:s}", "sandboxId", sb->id, "url", url, "token", "preview-tok");
        pthread_mutex_unlock(&f->mu);
        return fake_reply_json(r, 200, j);
    } else {
        pthread_mutex_unlock(&f->mu);
        return nest_error(r, 404, "no such route");
    }
    j = sandbox_json(f, sb);
    pthread_mutex_unlock(&f->mu);
    return fake_reply_json(r, status, j);
}

static enum MHD_Result api_handle(struct freq *r)
{
    const char *auth = fake_header(r, "Authorization");
    const char *url = r->url;

    if (!auth || strcmp(auth, "Bearer dtn_test"))
        return nest_error(r, 401, "Unauthorized");
    if (strncmp(url, "/api/", 5))
        return nest_error(r, 404, "no such route");
    url += 4;
    if (!strcmp(url, "/health"))
        return fake_reply(r, 200, NULL, "{\"status\":\"ok\"}", 15);
    if (fake_take_fault(r->f, TS_FAULT_500))
        return nest_error(r, 500, "Internal server error (injected)");
    if (!strcmp(url, "/sandbox") && !strcmp(r->method, "POST"))
        return api_create(r);
    if (!strcmp(url, "/sandbox") && !strcmp(r->method, "GET"))
        return api_list(r);
    if (!strncmp(url, "/sandbox/", 9))
        return api_sandbox(r, url + 9);
    return nest_error(r, 404, "no such route");
}

/* ---- toolbox -----------------------------------------------------------------------------------
 */

static enum MHD_Result tb_error(struct freq *r, unsigned status, const char *code, const char *msg)
{
    return fake_reply_json(r, status,
                           json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}", "statusCode", (int)status,
                                     "message", msg, "code", code, "timestamp",
                                     "2026-11-30T00:00:00Z", "path", r->url, "method", r->method));
}

/* Waits (under f->mu) until p exits or ms pass. */
static void wait_exit(struct ts_fake *f, struct fproc *p, unsigned ms)
{
    uint64_t deadline = fake_now_ms() + ms;

    while (!p->exited && !f->stopping && fake_now_ms() < deadline) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    }
}

/* The fake's processes see the host's filesystem, not /home/user: sandbox paths in a command's
 * text are rewritten to the sandbox's directory (what a real sandbox gives for free). */
static char *map_command(const struct fsbx *sb, const char *cmd)
{
    size_t cap = strlen(cmd) * 2 + 1024, len = 0;
    char *out = malloc(cap);
    const char *p = cmd, *hit;

    while ((hit = strstr(p, "/home/user"))) {
        size_t n = (size_t)(hit - p), rl = strlen(sb->root);

        if (len + n + rl + 16 >= cap)
            out = realloc(out, cap = (cap + n + rl) * 2);
        memcpy(out + len, p, n);
        len += n;
        memcpy(out + len, sb->root, rl);
        len += rl;
        memcpy(out + len, "/home/user", 10);
        len += 10;
        p = hit + 10;
    }
    if (len + strlen(p) + 1 >= cap)
        out = realloc(out, cap = len + strlen(p) + 1);
    memcpy(out + len, p, strlen(p) + 1);
    return out;
}

static bool json_logs(struct freq *r)
{
    const char *v = fake_header(r, "X-Daytona-SDK-Version");
    unsigned long major, minor;
    char *end;

    if (!v)
        return false;
    if (strstr(v, "dev"))
        return true;
    major = strtoul(v, &end, 10);
    minor = *end == '.' ? strtoul(end + 1, NULL, 10) : 0;
    return major > 0 || minor >= 167;
}

static enum MHD_Result tb_session(struct freq *r, struct fsbx *sb, const char *rest)
{
    struct ts_fake *f = r->f;
    char sid[128], cid[64] = "";
    size_t n = strcspn(rest, "/");
    const char *op = rest[n] == '/' ? rest + n + 1 : "";
    json_t *sess, *body;
    struct fproc *p = NULL;

    snprintf(sid, sizeof(sid), "%.*s", (int)(n < 127 ? n : 127), rest);
    if (!strncmp(op, "command/", 8)) {
        size_t m = strcspn(op + 8, "/");

        snprintf(cid, sizeof(cid), "%.*s", (int)(m < 63 ? m : 63), op + 8);
        op = op[8 + m] == '/' ? op + 9 + m : "";
    }
    pthread_mutex_lock(&f->mu);
    sess = json_object_get(sb->sessions, sid);
    if (!sess) {
        pthread_mutex_unlock(&f->mu);
        return tb_error(r, 404, "NOT_FOUND", "session not found");
    }
    if (!strcmp(r->method, "DELETE") && !*cid && !*op) {
        const char *k;
        json_t *v;
        size_t pass;

        for (pass = 0; pass < 2; pass++) {
            json_object_foreach(sess, k, v)
            {
                p = fake_proc_by_pid(sb, (pid_t)json_integer_value(v));
                if (p && !p->exited) {
                    kill(-p->pid, pass ? SIGKILL : SIGTERM);
                    if (!pass)
                        wait_exit(f, p, 1000);
                }
            }
        }
        json_object_del(sb->sessions, sid);
        pthread_mutex_unlock(&f->mu);
        return fake_reply(r, 204, NULL, NULL, 0);
    }
    if (!strcmp(op, "exec") && !*cid) {
        const char *argv[] = {"sh", "-c", NULL, NULL};

        char *mapped;

        body = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
        mapped = json_string_value(json_object_get(body, "command"))
                     ? map_command(sb, json_string_value(json_object_get(body, "command")))
                     : NULL;
        argv[2] = mapped;
        p = argv[2] ? fake_spawn(f, sb, argv, NULL, "/home/user", true, true) : NULL;
        free(mapped);
        json_decref(body);
        if (!p) {
            pthread_mutex_unlock(&f->mu);
            return tb_error(r, 400, "BAD_REQUEST", "cannot run the command");
        }
        json_object_set_new(sess, p->cmd_id, json_integer(p->pid));
        body = json_pack("{s:s}", "cmdId", p->cmd_id);
        pthread_mutex_unlock(&f->mu);
        return fake_reply_json(r, 202, body);
    }
    if (*cid)
        p = fake_proc_by_pid(sb, (pid_t)json_integer_value(json_object_get(sess, cid)));
    if (!p) {
        pthread_mutex_unlock(&f->mu);
        return tb_error(r, 404, "NOT_FOUND", "command not found");
    }
    if (!*op && !strcmp(r->method, "GET")) {
        body = json_pack("{s:s, s:s}", "id", cid, "command", "sh");
        if (p->exited)
            json_object_set_new(body, "exitCode",
                                json_integer(p->exit_code < 0 ? 128 + p->signo : p->exit_code));
        pthread_mutex_unlock(&f->mu);
        return fake_reply_json(r, 200, body);
    }
    if (!strcmp(op, "logs")) {
        char *out = strdup(p->all[0] ? p->all[0] : ""), *err = strdup(p->all[1] ? p->all[1] : "");
        bool reset, stall;

        pthread_mutex_unlock(&f->mu);
        reset = fake_take_fault(f, TS_FAULT_RESET);
        stall = !reset && fake_take_fault(f, TS_FAULT_STALL);
        if (reset) {
            free(out);
            free(err);
            return MHD_NO; /* connection dropped */
        }
        if (stall)
            fake_sleep_ms(3000);
        if (json_logs(r)) {
            size_t no = strlen(out), ne = strlen(err);
            char *all = malloc(no + ne + 1);

            memcpy(all, out, no);
            memcpy(all + no, err, ne + 1);
            body = json_pack("{s:s, s:s, s:s}", "output", all, "stdout", out, "stderr", err);
            free(all);
            free(out);
            free(err);
            return fake_reply_json(r, 200, body);
        }
        {
            enum MHD_Result rc = fake_reply(r, 200, "text/plain", out, strlen(out));

            free(out);
            free(err);
            return rc;
        }
    }
    if (!strcmp(op, "input") && !strcmp(r->method, "POST")) {
        const char *data;
        int fd = p->in_fd;
        bool gone = p->exited;

        pthread_mutex_unlock(&f->mu);
        if (gone || fd < 0)
            return tb_error(r, 410, "GONE", "command has finished");
        body = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
        data = json_string_value(json_object_get(body, "data"));
        if (data && write(fd, data, strlen(data)) < 0) {
            json_decref(body);
            return tb_error(r, 410, "GONE", "command input closed");
        }
        json_decref(body);
        return fake_reply(r, 204, NULL, NULL, 0);
    }
    pthread_mutex_unlock(&f->mu);
    return tb_error(r, 404, "NOT_FOUND", "no such route");
}

static enum MHD_Result tb_execute(struct freq *r, struct fsbx *sb)
{
    json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, NULL), *j;
    const char *argv[] = {"sh", "-c", NULL, NULL};
    struct fproc *p;
    char *res, *mapped;

    if (!json_string_value(json_object_get(body, "command"))) {
        json_decref(body);
        return tb_error(r, 400, "BAD_REQUEST", "command is required");
    }
    mapped = map_command(sb, json_string_value(json_object_get(body, "command")));
    argv[2] = mapped;
    pthread_mutex_lock(&r->f->mu);
    p = fake_spawn(r->f, sb, argv, json_object_get(body, "envs"), "/home/user", false, true);
    free(mapped);
    json_decref(body);
    if (!p) {
        pthread_mutex_unlock(&r->f->mu);
        return fake_reply_json(r, 200, json_pack("{s:i, s:s}", "exitCode", -1, "result", ""));
    }
    wait_exit(r->f, p, 60000);
    res = malloc(p->all_len[0] + p->all_len[1] + 1);
    memcpy(res, p->all[0] ? p->all[0] : "", p->all_len[0]);
    memcpy(res + p->all_len[0], p->all[1] ? p->all[1] : "", p->all_len[1]);
    res[p->all_len[0] + p->all_len[1]] = '\0';
    j = json_pack("{s:i, s:s}", "exitCode", p->exit_code < 0 ? 128 + p->signo : p->exit_code,
                  "result", res);
    pthread_mutex_unlock(&r->f->mu);
    free(res);
    return fake_reply_json(r, 200, j);
}

static enum MHD_Result tb_files(struct freq *r, struct fsbx *sb, const char *what)
{
    const char *path = fake_query(r, "path");
    char host[1200];
    struct stat st;

    if (!path || fake_map_path(sb, path, host, sizeof(host)) < 0)
        return tb_error(r, 400, "BAD_REQUEST", "invalid path");
    if (!strcmp(what, "/upload") && !strcmp(r->method, "POST")) {
        const char *ct = fake_header(r, "Content-Type"), *b = ct ? strstr(ct, "boundary=") : NULL;
        char delim[200], dir[1200], *slash, *data, *end;
        FILE *fp;

        if (!b || !r->body)
            return tb_error(r, 400, "BAD_REQUEST", "multipart body with part \"file\" expected");
        snprintf(delim, sizeof(delim), "\r\n--%s", b + 9);
        data = memmem(r->body, r->len, "\r\n\r\n", 4);
        end = data ? memmem(data, r->len - (size_t)(data - r->body), delim, strlen(delim)) : NULL;
        if (!data || !end || !memmem(r->body, (size_t)(data - r->body), "name=\"file\"", 11))
            return tb_error(r, 400, "BAD_REQUEST", "no part \"file\"");
        data += 4;
        snprintf(dir, sizeof(dir), "%s", host);
        slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            fake_mkdirs(dir, 0755);
        }
        fp = fopen(host, "wb");
        if (!fp || fwrite(data, 1, (size_t)(end - data), fp) != (size_t)(end - data)) {
            if (fp)
                fclose(fp);
            return tb_error(r, 500, "INTERNAL", "write failed");
        }
        fclose(fp);
        return fake_reply(r, 200, NULL, NULL, 0);
    }
    if (!strcmp(what, "/download")) {
        FILE *fp;
        char *buf;
        enum MHD_Result rc;

        if (stat(host, &st) < 0)
            return tb_error(r, 404, "NOT_FOUND", "file not found");
        if (S_ISDIR(st.st_mode))
            return tb_error(r, 400, "BAD_REQUEST", "path is a directory");
        fp = fopen(host, "rb");
        buf = malloc((size_t)st.st_size + 1);
        if (!fp || fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
            if (fp)
                fclose(fp);
            free(buf);
            return tb_error(r, 500, "INTERNAL", "read failed");
        }
        fclose(fp);
        rc = fake_reply(r, 200, "application/octet-stream", buf, (size_t)st.st_size);
        free(buf);
        return rc;
    }
    if (!*what && !strcmp(r->method, "GET")) {
        DIR *d = opendir(host);
        struct dirent *de;
        json_t *arr = json_array();

        if (!d) {
            json_decref(arr);
            return tb_error(r, 404, "NOT_FOUND", "directory not found");
        }
        while ((de = readdir(d))) {
            char full[1500], ts[64], perm[11] = "----------";
            struct tm tm;
            int i;

            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            snprintf(full, sizeof(full), "%s/%s", host, de->d_name);
            if (lstat(full, &st) < 0)
                continue;
            gmtime_r(&st.st_mtim.tv_sec, &tm);
            strftime(ts, 40, "%Y-%m-%dT%H:%M:%S", &tm);
            snprintf(ts + strlen(ts), sizeof(ts) - strlen(ts), ".%09ldZ", st.st_mtim.tv_nsec);
            if (S_ISDIR(st.st_mode))
                perm[0] = 'd';
            for (i = 0; i < 9; i++)
                if (st.st_mode & (1u << (8 - i)))
                    perm[1 + i] = "rwxrwxrwx"[i];
            json_array_append_new(arr, json_pack("{s:s, s:b, s:I, s:s, s:s, s:s}", "name",
                                                 de->d_name, "isDir", S_ISDIR(st.st_mode), "size",
                                                 (json_int_t)st.st_size, "mode", perm, "modTime",
                                                 ts, "permissions", perm));
        }
        closedir(d);
        return fake_reply_json(r, 200, arr);
    }
    if (!strcmp(what, "/folder") && !strcmp(r->method, "POST"))
        return fake_mkdirs(host, 0755) < 0 ? tb_error(r, 500, "INTERNAL", "mkdir failed")
                                           : fake_reply(r, 201, NULL, NULL, 0);
    return tb_error(r, 404, "NOT_FOUND", "no such route");
}

static enum MHD_Result tb_handle(struct freq *r)
{
    const char *auth = fake_header(r, "Authorization"), *rest;
    struct fsbx *sb;
    char id[64];
    size_t n;
    bool gone;

    if (!auth || strcmp(auth, "Bearer dtn_test"))
        return tb_error(r, 401, "UNAUTHORIZED", "Unauthorized");
    if (strncmp(r->url, "/toolbox/", 9))
        return tb_error(r, 404, "NOT_FOUND", "no such route");
    n = strcspn(r->url + 9, "/");
    snprintf(id, sizeof(id), "%.*s", (int)(n < 63 ? n : 63), r->url + 9);
    rest = r->url + 9 + n;
    pthread_mutex_lock(&r->f->mu);
    sb = fake_sbx_find(r->f, id);
    gone = !sb || sb->state != 0;
    pthread_mutex_unlock(&r->f->mu);
    if (gone)
        return tb_error(r, 404, "NOT_FOUND", "sandbox not found or not started");
    if (!strcmp(rest, "/version"))
        return fake_reply(r, 200, NULL, "{\"version\":\"0.190.0\"}", 21);
    if (!strcmp(rest, "/process/execute") && !strcmp(r->method, "POST"))
        return tb_execute(r, sb);
    if (!strcmp(rest, "/process/session") && !strcmp(r->method, "POST")) {
        json_t *body = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
        const char *sid = json_string_value(json_object_get(body, "sessionId"));
        bool exists;

        if (!sid) {
            json_decref(body);
            return tb_error(r, 400, "BAD_REQUEST", "sessionId is required");
        }
        pthread_mutex_lock(&r->f->mu);
        exists = json_object_get(sb->sessions, sid) != NULL;
        if (!exists)
            json_object_set_new(sb->sessions, sid, json_object());
        pthread_mutex_unlock(&r->f->mu);
        json_decref(body);
        return exists ? tb_error(r, 409, "CONFLICT", "session already exists")
                      : fake_reply(r, 201, NULL, NULL, 0);
    }
    if (!strncmp(rest, "/process/session/", 17))
        return tb_session(r, sb, rest + 17);
    if (!strncmp(rest, "/files", 6))
        return tb_files(r, sb, rest + 6);
    return tb_error(r, 404, "NOT_FOUND", "no such route");
}

enum MHD_Result fake_daytona_handle(struct freq *r)
{
    return r->data_port ? tb_handle(r) : api_handle(r);
}
