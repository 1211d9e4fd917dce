/* recvtty: the other end of `brig create --console-socket`, for tests.
 *
 *   recvtty SOCKET [INPUT]
 *
 * Listens on the unix socket SOCKET, takes one connection, receives the pty
 * master sent with SCM_RIGHTS, writes INPUT (if given) to it, then copies
 * everything the container writes to stdout until the pty closes. Prints
 * "recvtty: got master" on stderr once the fd has arrived, so a test can
 * wait for it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int die(const char *what)
{
    fprintf(stderr, "recvtty: %s: %s\n", what, strerror(errno));
    return 1;
}

static int receive_fd(int conn)
{
    char name[256];
    struct iovec iov = { name, sizeof name };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr m = { .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf };
    if (recvmsg(conn, &m, 0) < 0)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS) {
        errno = EPROTO;
        return -1;
    }
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: recvtty SOCKET [INPUT]\n");
        return 2;
    }
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(argv[1]) >= sizeof addr.sun_path)
        return die("socket path too long");
    strcpy(addr.sun_path, argv[1]);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || bind(s, (struct sockaddr *) &addr, sizeof addr) < 0 || listen(s, 1) < 0)
        return die("listen");
    int conn = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0)
        return die("accept");
    int master = receive_fd(conn);
    if (master < 0)
        return die("receive the master");
    fprintf(stderr, "recvtty: got master\n");
    close(conn);
    close(s);
    unlink(argv[1]);
    if (argc == 3) {
        size_t len = strlen(argv[2]);
        if (write(master, argv[2], len) != (ssize_t) len)
            return die("write input");
    }
    char buf[4096];
    ssize_t n;
    /* EIO: every slave fd is closed, i.e. the container's process is gone. */
    while ((n = read(master, buf, sizeof buf)) > 0)
        if (write(STDOUT_FILENO, buf, (size_t) n) != n)
            return die("write output");
    return 0;
}
