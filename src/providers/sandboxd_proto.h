/* providers/sandboxd_proto.h — the wire protocol between libevolve's local provider and the
 * in-sandbox exec daemon `evolve-sandboxd` (docs/internals/local-provider.md).
 *
 * Transport: one SOCK_STREAM unix socketpair per sandbox. Every message is a frame:
 *   u32 length (little endian, of what follows, at most SBXD_FRAME_MAX) | u8 type | fields
 * Fields are u32 (little endian) and strings (u32 length | bytes, no NUL). File descriptors
 * travel as SCM_RIGHTS attached to the first byte of a frame (only SBXD_R_EXEC carries any).
 * The daemon answers requests strictly in order, one reply per request, so a client that holds
 * a lock across "send request, read reply" needs no request ids.
 *
 * This file is libc-only: it is compiled into both libevolve and the daemon.
 * Ownership: a struct sbxd_buf owns its bytes (sbxd_buf_dispose); a parsed string points into
 * the frame it came from. Threads: no shared state; callers serialise use of one socket. */
#ifndef EVOLVE_PROVIDERS_SANDBOXD_PROTO_H
#define EVOLVE_PROVIDERS_SANDBOXD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SBXD_PROTO_VERSION 1
#define SBXD_FRAME_MAX     (16u << 20) /* argv may carry a long prompt; 16 MiB bounds a bad peer */
#define SBXD_MAX_FDS       4

/* Requests, library -> daemon. */
enum sbxd_request {
    /* u32 exec_id, u32 flags (SBXD_EXEC_*), str cwd ("" = default), u32 argc, argc x str,
     * u32 envc, envc x str ("KEY=VALUE", merged over the daemon's base environment) */
    SBXD_Q_EXEC = 'E',
    SBXD_Q_SIGNAL = 'S',   /* u32 exec_id, u32 signo: kill(-pgid, signo) */
    SBXD_Q_PAUSE = 'P',    /* freeze every command's process tree */
    SBXD_Q_RESUME = 'R',   /* thaw it */
    SBXD_Q_SHUTDOWN = 'Q', /* kill every command, reply, exit */
};

/* Replies, daemon -> library. */
enum sbxd_reply {
    SBXD_R_HELLO = 'H', /* sent once at start: u32 version, u32 daemon pid, u32 pause mode */
    SBXD_R_EXEC = 'e',  /* u32 exec_id, u32 pid; fds: stdin(w), stdout(r), stderr(r), status(r) */
    SBXD_R_OK = 'k',    /* u32 value (PAUSE/RESUME: the pause mode used; else 0) */
    SBXD_R_ERR = 'x',   /* u32 errno, str message */
};

/* EXEC flags. */
#define SBXD_EXEC_NEWPGRP    0x1u /* the command leads a new process group (signals hit it all) */
#define SBXD_EXEC_STDIN_NULL 0x2u /* stdin is /dev/null; no stdin fd is sent (-1 in its place) */

/* How the daemon pauses: a cgroup v1 freezer, or SIGSTOP/SIGCONT of each command's group. */
#define SBXD_PAUSE_CGROUP  'c'
#define SBXD_PAUSE_SIGNALS 's'

/* The fixed-size record the daemon writes on a command's status pipe when it exits, before
 * closing the pipe: `code` is the exit code, or 128 + signal when a signal ended it, in which
 * case `signo` is that signal (else 0). Native byte order: both ends run on one host. */
struct sbxd_exit {
    int32_t code;
    int32_t signo;
};

/* A growable frame being built. */
struct sbxd_buf {
    unsigned char *data;
    size_t len, cap;
    int oom; /* set once an append failed; sbxd_send refuses such a frame */
};

/* A frame being parsed. */
struct sbxd_cur {
    const unsigned char *p;
    size_t left;
    int bad; /* set when a read ran past the end; every later read yields 0 / "" */
};

/* Starts a frame of `type` in `b` (which must be zeroed or disposed). */
void sbxd_buf_start(struct sbxd_buf *b, int type);
void sbxd_buf_u32(struct sbxd_buf *b, uint32_t v);
void sbxd_buf_str(struct sbxd_buf *b, const char *s);
void sbxd_buf_dispose(struct sbxd_buf *b);

/* Sends the frame in `b` on `fd` with `nfds` descriptors (may be 0). Blocks until written.
 * Returns 0, or -errno (-ENOMEM when the frame could not be built). */
int sbxd_send(int fd, struct sbxd_buf *b, const int *fds, int nfds);

/* Receives one frame: `*data_out` gets a malloc'd buffer of `*len_out` bytes (type first), the
 * caller frees it. Up to SBXD_MAX_FDS received descriptors go to `fds` (CLOEXEC), their count to
 * `*nfds_out`; extra ones are closed. Returns 0, -EPIPE at a clean end of stream, -EPROTO on a
 * bad length, or another -errno. */
int sbxd_recv(int fd, unsigned char **data_out, size_t *len_out, int *fds, int *nfds_out);

void sbxd_cur_init(struct sbxd_cur *c, const unsigned char *data, size_t len);
uint32_t sbxd_cur_u32(struct sbxd_cur *c);
/* Returns a pointer into the frame (not NUL-terminated) and its length in `*len`. */
const char *sbxd_cur_str(struct sbxd_cur *c, size_t *len);
/* Like sbxd_cur_str but copies into `out` (NUL-terminated, truncated to `size`). */
void sbxd_cur_copy(struct sbxd_cur *c, char *out, size_t size);

#endif
