/* proc_io.c — draining sandbox command descriptors and scanning /proc, for the tests. */
#include "support/proc_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/support.h"

static int append(char **buf, size_t *len, const char *src, size_t n)
{
    char *nb = realloc(*buf, *len + n + 1);

    if (!nb)
        return -1;
    memcpy(nb + *len, src, n);
    *len += n;
    nb[*len] = '\0';
    *buf = nb;
    return 0;
}

int ts_proc_collect(struct prov_proc *proc, const char *in, struct ts_run *run, int timeout_ms)
{
    uint64_t deadline = ts_now_ms() + (uint64_t)timeout_ms;
    int *fds[2] = {&proc->stdout_fd, &proc->stderr_fd};
    size_t in_off = 0, in_len = in ? strlen(in) : 0;
    bool got_exit = false;

    memset(run, 0, sizeof(*run));
    run->out = calloc(1, 1);
    run->err = calloc(1, 1);
    if (proc->stdin_fd >= 0 && in_len == 0) {
        close(proc->stdin_fd);
        proc->stdin_fd = -1;
    }
    if (proc->stdin_fd >= 0)
        fcntl(proc->stdin_fd, F_SETFL, O_NONBLOCK);
    while (proc->stdout_fd >= 0 || proc->stderr_fd >= 0 || !got_exit) {
        struct pollfd p[4];
        int n = 0, i, left = (int)(deadline - ts_now_ms());
        char buf[65536];

        if (ts_now_ms() >= deadline) {
            fprintf(stderr, "ts_proc_collect: timed out after %d ms (out=\"%s\" err=\"%s\")\n",
                    timeout_ms, run->out, run->err);
            return -1;
        }
        for (i = 0; i < 2; i++)
            if (*fds[i] >= 0)
                p[n++] = (struct pollfd){.fd = *fds[i], .events = POLLIN};
        if (!got_exit)
            p[n++] = (struct pollfd){.fd = proc->status_fd, .events = POLLIN};
        if (proc->stdin_fd >= 0)
            p[n++] = (struct pollfd){.fd = proc->stdin_fd, .events = POLLOUT};
        if (poll(p, (nfds_t)n, left) < 0 && errno != EINTR)
            return -1;
        for (i = 0; i < n; i++) {
            ssize_t r;

            if (!p[i].revents)
                continue;
            if (p[i].fd == proc->stdin_fd) {
                r = write(proc->stdin_fd, in + in_off, in_len - in_off);
                if (r > 0)
                    in_off += (size_t)r;
                if (r < 0 || in_off == in_len) {
                    close(proc->stdin_fd);
                    proc->stdin_fd = -1;
                }
                continue;
            }
            if (p[i].fd == proc->status_fd) {
                if (prov_exit_read(proc->status_fd, &run->exit) < 0) {
                    fprintf(stderr, "ts_proc_collect: no exit record\n");
                    return -1;
                }
                got_exit = true;
                continue;
            }
            r = read(p[i].fd, buf, sizeof(buf));
            if (r > 0) {
                if (p[i].fd == proc->stdout_fd)
                    append(&run->out, &run->out_len, buf, (size_t)r);
                else
                    append(&run->err, &run->err_len, buf, (size_t)r);
            } else if (r == 0 || errno != EINTR) {
                int *which = p[i].fd == proc->stdout_fd ? &proc->stdout_fd : &proc->stderr_fd;

                close(*which);
                *which = -1;
            }
        }
    }
    return 0;
}

void ts_run_dispose(struct ts_run *run)
{
    free(run->out);
    free(run->err);
    memset(run, 0, sizeof(*run));
}

int ts_count_procs_with_arg(const char *needle)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int count = 0;

    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        char path[300], buf[4096], st[512];
        ssize_t n;
        size_t off;
        int fd;
        char *paren;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        n = read(fd, st, sizeof(st) - 1);
        close(fd);
        if (n <= 0)
            continue;
        st[n] = '\0';
        paren = strrchr(st, ')');
        if (!paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        for (off = 0; off < (size_t)n; off += strlen(buf + off) + 1) {
            if (!strcmp(buf + off, needle)) {
                count++;
                break;
            }
        }
    }
    closedir(d);
    return count;
}

int ts_wait_procs_with_arg(const char *needle, int want, int timeout_ms)
{
    uint64_t deadline = ts_now_ms() + (uint64_t)timeout_ms;
    int n;

    for (;;) {
        struct timespec step = {0, 5000000};

        n = ts_count_procs_with_arg(needle);
        if (n == want || ts_now_ms() >= deadline)
            return n;
        nanosleep(&step, NULL); /* polling /proc: the condition has no event to wait on */
    }
}
