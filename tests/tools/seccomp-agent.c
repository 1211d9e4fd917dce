/* seccomp-agent: the other end of `linux.seccomp.listenerPath`, for tests.
 *
 *   seccomp-agent SOCKET STATE_FILE [SYSCALL=ANSWER ...]
 *
 * Listens on the unix socket SOCKET. Each connection is a container process
 * whose filter has SCMP_ACT_NOTIFY rules: the runtime sends the container
 * process state (runtime-spec "seccomp" section: ociVersion, fds, pid,
 * metadata, state) as JSON, with the notify fd attached. The agent appends
 * that JSON, one line per connection, to STATE_FILE, then answers every
 * notified syscall. ANSWER is:
 *   errno:N   the syscall fails with errno N
 *   ok        the syscall "succeeds" (returns 0) without having run
 *   continue  the kernel runs the syscall after all
 * A notified syscall without a rule fails with ENOSYS. Each answer is logged
 * on stdout ("mkdirat errno:13"), so a test can see what the agent saw. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/seccomp.h>

#define MAX_FDS 64
#define MAX_RULES 16

struct rule {
    int nr;
    const char *name;
    const char *answer;
};

static struct rule rules[MAX_RULES];
static int n_rules;

static int die(const char *what)
{
    fprintf(stderr, "seccomp-agent: %s: %s\n", what, strerror(errno));
    return 1;
}

/* The state JSON with the notify fd attached to its first bytes; the rest
 * follows until the runtime closes the connection. */
static int receive_state(int conn, FILE *state_file)
{
    char buf[65536];
    struct iovec iov = { buf, sizeof buf - 1 };
    union {
        char b[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    struct msghdr m = { .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.b,
                        .msg_controllen = sizeof control.b };
    ssize_t n = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
    if (n <= 0)
        return -1;
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
    size_t len = (size_t) n;
    while (len < sizeof buf - 1 && (n = read(conn, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t) n;
    buf[len] = '\0';
    fprintf(state_file, "%s\n", buf);
    fflush(state_file);
    return fd;
}

static const struct rule *rule_for(int nr)
{
    for (int i = 0; i < n_rules; i++)
        if (rules[i].nr == nr)
            return &rules[i];
    return NULL;
}

/* One notification: read it, answer it. Returns -1 when the fd is done. */
static int answer_one(int fd)
{
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof req);
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
        return errno == EINTR || errno == ENOENT ? 0 : -1;
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    const struct rule *r = rule_for(req.data.nr);
    char *name = seccomp_syscall_resolve_num_arch(req.data.arch, req.data.nr);
    const char *answer = r ? r->answer : "errno:38";
    if (strncmp(answer, "errno:", 6) == 0)
        resp.error = -atoi(answer + 6);
    else if (strcmp(answer, "continue") == 0)
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    printf("%s %s\n", name ? name : "?", answer);
    fflush(stdout);
    free(name);
    /* ENOENT: the process died (or was interrupted) meanwhile. */
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: seccomp-agent SOCKET STATE_FILE [SYSCALL=ANSWER ...]\n");
        return 2;
    }
    for (int i = 3; i < argc && n_rules < MAX_RULES; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) {
            fprintf(stderr, "seccomp-agent: `%s`: expected SYSCALL=ANSWER\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        int nr = seccomp_syscall_resolve_name(argv[i]);
        if (nr == __NR_SCMP_ERROR) {
            fprintf(stderr, "seccomp-agent: unknown syscall `%s`\n", argv[i]);
            return 2;
        }
        rules[n_rules++] = (struct rule){ nr, argv[i], eq + 1 };
    }
    FILE *state_file = fopen(argv[2], "ae");
    if (state_file == NULL)
        return die(argv[2]);

    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(argv[1]) >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return die(argv[1]);
    }
    strcpy(addr.sun_path, argv[1]);
    int lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lsock < 0 || bind(lsock, (struct sockaddr *) &addr, sizeof addr) < 0
        || listen(lsock, 16) < 0)
        return die(argv[1]);

    struct pollfd fds[MAX_FDS + 1];
    int n = 0;
    fds[n++] = (struct pollfd){ .fd = lsock, .events = POLLIN };
    for (;;) {
        if (poll(fds, (nfds_t) n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return die("poll");
        }
        for (int i = n - 1; i >= 1; i--) {
            bool done = false;
            if (fds[i].revents & POLLIN)
                done = answer_one(fds[i].fd) < 0;
            if (done || (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))) {
                close(fds[i].fd);
                fds[i] = fds[--n];
            }
        }
        if ((fds[0].revents & POLLIN) && n <= MAX_FDS) {
            int conn = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
            if (conn < 0)
                continue;
            int fd = receive_state(conn, state_file);
            close(conn);
            if (fd >= 0)
                fds[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
        }
    }
}
