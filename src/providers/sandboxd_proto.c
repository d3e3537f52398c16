/* sandboxd_proto.c — framing, field encoding and descriptor passing for the sandboxd protocol.
 * Owns: building and parsing frames, sendmsg/recvmsg with SCM_RIGHTS.
 * Does not own: the meaning of messages (sandboxd/main.c, providers/local_daemon.c).
 * Threads: any; no shared state. libc only (linked into evolve-sandboxd too). */
#include "providers/sandboxd_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)((v >> 8) & 0xff);
    p[2] = (unsigned char)((v >> 16) & 0xff);
    p[3] = (unsigned char)((v >> 24) & 0xff);
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void buf_append(struct sbxd_buf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > SBXD_FRAME_MAX + 4) {
        b->oom = 1;
        return;
    }
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        unsigned char *nd;

        while (cap - b->len < n)
            cap *= 2;
        nd = realloc(b->data, cap);
        if (!nd) {
            b->oom = 1;
            return;
        }
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

void sbxd_buf_start(struct sbxd_buf *b, int type)
{
    unsigned char hdr[5] = {0, 0, 0, 0, (unsigned char)type};

    b->len = 0;
    b->oom = 0;
    buf_append(b, hdr, sizeof(hdr));
}

void sbxd_buf_u32(struct sbxd_buf *b, uint32_t v)
{
    unsigned char p[4];

    put_le32(p, v);
    buf_append(b, p, 4);
}

void sbxd_buf_str(struct sbxd_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n > SBXD_FRAME_MAX) {
        b->oom = 1;
        return;
    }
    sbxd_buf_u32(b, (uint32_t)n);
    buf_append(b, s, n);
}

void sbxd_buf_dispose(struct sbxd_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

int sbxd_send(int fd, struct sbxd_buf *b, const int *fds, int nfds)
{
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int) * SBXD_MAX_FDS)];
    } ctl;
    struct msghdr msg;
    struct iovec iov;
    size_t off = 0;

    if (b->oom || b->len < 5)
        return -ENOMEM;
    if (nfds < 0 || nfds > SBXD_MAX_FDS)
        return -EINVAL;
    put_le32(b->data, (uint32_t)(b->len - 4));
    while (off < b->len) {
        ssize_t n;

        memset(&msg, 0, sizeof(msg));
        iov.iov_base = b->data + off;
        iov.iov_len = b->len - off;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (off == 0 && nfds > 0) {
            struct cmsghdr *cm;

            memset(&ctl, 0, sizeof(ctl));
            msg.msg_control = ctl.space;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
            cm = CMSG_FIRSTHDR(&msg);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
            memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
        }
        n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        off += (size_t)n;
    }
    return 0;
}

/* Reads exactly n bytes; the first read collects descriptors when `fds` is given. */
static int read_full(int fd, unsigned char *p, size_t n, int *fds, int *nfds)
{
    size_t off = 0;

    while (off < n) {
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(sizeof(int) * 16)];
        } ctl;
        struct msghdr msg;
        struct iovec iov;
        struct cmsghdr *cm;
        ssize_t r;

        memset(&msg, 0, sizeof(msg));
        iov.iov_base = p + off;
        iov.iov_len = n - off;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctl.space;
        msg.msg_controllen = sizeof(ctl.space);
        r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            size_t cnt, i;

            if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                continue;
            cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (i = 0; i < cnt; i++) {
                int got;

                memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (fds && *nfds < SBXD_MAX_FDS)
                    fds[(*nfds)++] = got;
                else
                    close(got);
            }
        }
        if (r == 0)
            return off == 0 ? -EPIPE : -EPROTO;
        off += (size_t)r;
    }
    return 0;
}

int sbxd_recv(int fd, unsigned char **data_out, size_t *len_out, int *fds, int *nfds_out)
{
    unsigned char hdr[4];
    unsigned char *data;
    uint32_t len;
    int nfds = 0, rc, i;

    *data_out = NULL;
    *len_out = 0;
    rc = read_full(fd, hdr, 4, fds, &nfds);
    if (rc < 0)
        goto fail;
    len = get_le32(hdr);
    if (len < 1 || len > SBXD_FRAME_MAX) {
        rc = -EPROTO;
        goto fail;
    }
    data = malloc(len);
    if (!data) {
        rc = -ENOMEM;
        goto fail;
    }
    rc = read_full(fd, data, len, fds, &nfds);
    if (rc < 0) {
        free(data);
        goto fail;
    }
    *data_out = data;
    *len_out = len;
    if (nfds_out)
        *nfds_out = nfds;
    return 0;
fail:
    for (i = 0; i < nfds; i++)
        close(fds[i]);
    if (nfds_out)
        *nfds_out = 0;
    return rc;
}

void sbxd_cur_init(struct sbxd_cur *c, const unsigned char *data, size_t len)
{
    c->p = data;
    c->left = len;
    c->bad = 0;
}

uint32_t sbxd_cur_u32(struct sbxd_cur *c)
{
    uint32_t v;

    if (c->bad || c->left < 4) {
        c->bad = 1;
        return 0;
    }
    v = get_le32(c->p);
    c->p += 4;
    c->left -= 4;
    return v;
}

const char *sbxd_cur_str(struct sbxd_cur *c, size_t *len)
{
    uint32_t n = sbxd_cur_u32(c);
    const char *s;

    if (c->bad || c->left < n) {
        c->bad = 1;
        *len = 0;
        return "";
    }
    s = (const char *)c->p;
    c->p += n;
    c->left -= n;
    *len = n;
    return s;
}

void sbxd_cur_copy(struct sbxd_cur *c, char *out, size_t size)
{
    size_t n;
    const char *s = sbxd_cur_str(c, &n);

    if (size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}
