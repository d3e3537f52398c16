/* The sandboxd wire format and the daemon's handling of bad requests: frames round-trip with
 * descriptors attached, a parser never reads past a frame, bad lengths are refused, and the
 * daemon answers malformed or unknown requests with an error instead of dying, and exits (having
 * killed its commands) when its control socket closes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "providers/sandboxd_proto.h"
#include "support/proc_io.h"

extern char **environ;

TestSuite(prov_sandboxd, .timeout = 30);

Test(prov_sandboxd, frames_round_trip_with_descriptors)
{
    int sv[2], p[2], fds[SBXD_MAX_FDS], nfds = -1;
    struct sbxd_buf b = {0};
    struct sbxd_cur c;
    unsigned char *frame;
    size_t len, slen;
    const char *s;
    char copy[4];

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cr_assert_eq(pipe(p), 0);
    sbxd_buf_start(&b, SBXD_R_EXEC);
    sbxd_buf_u32(&b, 7);
    sbxd_buf_str(&b, "hello");
    sbxd_buf_str(&b, "");
    cr_assert_eq(sbxd_send(sv[0], &b, p, 2), 0);
    /* a second frame right behind, without descriptors */
    sbxd_buf_start(&b, SBXD_R_OK);
    sbxd_buf_u32(&b, 0xdeadbeef);
    cr_assert_eq(sbxd_send(sv[0], &b, NULL, 0), 0);
    sbxd_buf_dispose(&b);
    close(p[0]);
    close(p[1]);

    cr_assert_eq(sbxd_recv(sv[1], &frame, &len, fds, &nfds), 0);
    cr_assert_eq(frame[0], SBXD_R_EXEC);
    cr_assert_eq(nfds, 2);
    sbxd_cur_init(&c, frame + 1, len - 1);
    cr_assert_eq(sbxd_cur_u32(&c), 7);
    s = sbxd_cur_str(&c, &slen);
    cr_assert_eq(slen, 5);
    cr_assert_eq(memcmp(s, "hello", 5), 0);
    sbxd_cur_copy(&c, copy, sizeof(copy));
    cr_assert_str_eq(copy, "");
    cr_assert_eq(c.bad, 0);
    /* reading past the end yields zeros and marks the cursor */
    cr_assert_eq(sbxd_cur_u32(&c), 0);
    cr_assert_eq(c.bad, 1);
    free(frame);
    /* the descriptors work: write into the received write end, read from the read end */
    cr_assert_eq(write(fds[1], "x", 1), 1);
    cr_assert_eq(read(fds[0], copy, 1), 1);
    cr_assert_eq(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(fds[0]);
    close(fds[1]);

    cr_assert_eq(sbxd_recv(sv[1], &frame, &len, fds, &nfds), 0);
    cr_assert_eq(nfds, 0);
    sbxd_cur_init(&c, frame + 1, len - 1);
    cr_assert_eq(sbxd_cur_u32(&c), 0xdeadbeefu);
    free(frame);
    close(sv[0]);
    cr_assert_eq(sbxd_recv(sv[1], &frame, &len, fds, &nfds), -EPIPE);
    close(sv[1]);
}

Test(prov_sandboxd, a_bad_length_is_refused)
{
    int sv[2], nfds;
    unsigned char hdr[5] = {0xff, 0xff, 0xff, 0x7f, 'x'};
    unsigned char *frame;
    size_t len;

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    cr_assert_eq(sbxd_recv(sv[1], &frame, &len, NULL, &nfds), -EPROTO);
    close(sv[0]);
    close(sv[1]);
}

/* Starts the daemon (mode none, no cgroup) on a socketpair; returns its pid. */
static pid_t start_daemon(int *ctl)
{
    char path[4096];
    int sv[2];
    pid_t pid;
    posix_spawn_file_actions_t fa;
    char *argv[] = {path, "--fd", "3", NULL};
    unsigned char *frame;
    size_t len;

    snprintf(path, sizeof(path), "%s/evolve-sandboxd", EVOLVE_BINARY_DIR);
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    cr_assert_eq(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    cr_assert_eq(sbxd_recv(sv[0], &frame, &len, NULL, NULL), 0);
    cr_assert_eq(frame[0], SBXD_R_HELLO);
    free(frame);
    *ctl = sv[0];
    return pid;
}

static uint32_t expect_err(int ctl)
{
    unsigned char *frame;
    size_t len;
    struct sbxd_cur c;
    uint32_t err;

    cr_assert_eq(sbxd_recv(ctl, &frame, &len, NULL, NULL), 0);
    cr_assert_eq(frame[0], SBXD_R_ERR, "reply type %c", frame[0]);
    sbxd_cur_init(&c, frame + 1, len - 1);
    err = sbxd_cur_u32(&c);
    free(frame);
    return err;
}

Test(prov_sandboxd, malformed_requests_get_errors_and_eof_ends_the_daemon)
{
    struct sbxd_buf b = {0};
    int ctl, status, fds[SBXD_MAX_FDS], nfds;
    unsigned char *frame;
    size_t len;
    pid_t pid = start_daemon(&ctl);
    char arg[64];

    snprintf(arg, sizeof(arg), "604.%ld", (long)getpid());
    sbxd_buf_start(&b, 'Z');
    cr_assert_eq(sbxd_send(ctl, &b, NULL, 0), 0);
    cr_assert_eq(expect_err(ctl), EPROTO);
    /* EXEC claiming a huge argc */
    sbxd_buf_start(&b, SBXD_Q_EXEC);
    sbxd_buf_u32(&b, 1);
    sbxd_buf_u32(&b, SBXD_EXEC_NEWPGRP);
    sbxd_buf_str(&b, "");
    sbxd_buf_u32(&b, 1000000);
    cr_assert_eq(sbxd_send(ctl, &b, NULL, 0), 0);
    cr_assert_eq(expect_err(ctl), EINVAL);
    /* SIGNAL for an exec that never existed */
    sbxd_buf_start(&b, SBXD_Q_SIGNAL);
    sbxd_buf_u32(&b, 99);
    sbxd_buf_u32(&b, SIGTERM);
    cr_assert_eq(sbxd_send(ctl, &b, NULL, 0), 0);
    cr_assert_eq(expect_err(ctl), ESRCH);
    /* still serving: a real command, left running */
    sbxd_buf_start(&b, SBXD_Q_EXEC);
    sbxd_buf_u32(&b, 2);
    sbxd_buf_u32(&b, SBXD_EXEC_NEWPGRP | SBXD_EXEC_STDIN_NULL);
    sbxd_buf_str(&b, "/");
    sbxd_buf_u32(&b, 2);
    sbxd_buf_str(&b, "sleep");
    sbxd_buf_str(&b, arg);
    sbxd_buf_u32(&b, 0);
    cr_assert_eq(sbxd_send(ctl, &b, NULL, 0), 0);
    sbxd_buf_dispose(&b);
    cr_assert_eq(sbxd_recv(ctl, &frame, &len, fds, &nfds), 0);
    cr_assert_eq(frame[0], SBXD_R_EXEC);
    cr_assert_eq(nfds, 3);
    free(frame);
    cr_assert_eq(ts_wait_procs_with_arg(arg, 1, 5000), 1);
    /* the library goes away: the daemon kills the command and exits */
    close(ctl);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "daemon status %d", status);
    cr_assert_eq(ts_count_procs_with_arg(arg), 0, "the command outlived its daemon");
    {
        struct prov_exit ex;

        cr_assert_eq(prov_exit_read(fds[2], &ex), 0);
        cr_assert_eq(ex.code, 128 + SIGKILL);
        cr_assert_eq(ex.signo, SIGKILL);
    }
    close(fds[0]);
    close(fds[1]);
    close(fds[2]);
}
