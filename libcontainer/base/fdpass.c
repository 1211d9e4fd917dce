#define _GNU_SOURCE
#include "base/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

/* Room for one fd, aligned as a cmsghdr must be. */
union fd_control {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
};

ssize_t brig_fd_sendmsg(int sock, const struct iovec *iov, size_t iovlen, int fd)
{
    union fd_control control;
    struct msghdr m = { .msg_iov = (struct iovec *) iov, .msg_iovlen = iovlen };
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        m.msg_control = control.buf;
        m.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t r;
    do
        r = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r;
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

ssize_t brig_fd_recvmsg(int sock, struct iovec *iov, size_t iovlen, int *fd)
{
    union fd_control control;
    struct msghdr m = { .msg_iov = iov,
                        .msg_iovlen = iovlen,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf };
    *fd = -1;
    ssize_t r;
    do
        r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(fd, CMSG_DATA(c), sizeof(int));
    return r;
}
