#define _GNU_SOURCE
#include "base/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/* Room for BRIG_FDS_MAX fds, aligned as a cmsghdr must be. */
union fd_control {
    char buf[CMSG_SPACE(BRIG_FDS_MAX * sizeof(int))];
    struct cmsghdr align;
};

ssize_t brig_fds_sendmsg(int sock, const struct iovec *iov, size_t iovlen, const int *fds,
                         size_t n_fds)
{
    union fd_control control;
    struct msghdr m = { .msg_iov = (struct iovec *) iov, .msg_iovlen = iovlen };
    if (n_fds > BRIG_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    if (n_fds > 0) {
        memset(&control, 0, sizeof control);
        m.msg_control = control.buf;
        m.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }
    ssize_t r;
    do
        r = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r;
}

ssize_t brig_fd_sendmsg(int sock, const struct iovec *iov, size_t iovlen, int fd)
{
    return brig_fds_sendmsg(sock, iov, iovlen, &fd, fd >= 0 ? 1 : 0);
}

int brig_fd_send(int sock, const void *data, size_t len, int fd)
{
    const char *p = data;
    do {
        struct iovec iov = { (void *) p, len };
        ssize_t n = brig_fd_sendmsg(sock, &iov, 1, fd);
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t) n;
        fd = -1; /* it went with the first byte */
    } while (len > 0);
    return 0;
}

ssize_t brig_fds_recvmsg(int sock, struct iovec *iov, size_t iovlen, int flags, int *fds,
                         size_t max_fds, size_t *n_fds)
{
    union fd_control control;
    struct msghdr m = { .msg_iov = iov,
                        .msg_iovlen = iovlen,
                        .msg_control = control.buf,
                        .msg_controllen = CMSG_SPACE(max_fds * sizeof(int)) };
    *n_fds = 0;
    if (max_fds > BRIG_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    ssize_t r;
    do
        r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | flags);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    /* Every fd that came is the caller's, whatever else the message says;
     * ones beyond max_fds the kernel has closed (MSG_CTRUNC). */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n && *n_fds < max_fds; i++)
            memcpy(&fds[(*n_fds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    return r;
}

ssize_t brig_fd_recvmsg(int sock, struct iovec *iov, size_t iovlen, int *fd)
{
    size_t n;
    *fd = -1;
    ssize_t r = brig_fds_recvmsg(sock, iov, iovlen, 0, fd, 1, &n);
    if (r < 0 || n == 0)
        *fd = -1;
    return r;
}
