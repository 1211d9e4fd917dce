#define _GNU_SOURCE
/* The host's side of the exec port (exec_port.h): the request, the
 * answers checked, the kill. */
#include "sandbox/exec_port.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "base/utils.h"
#include "container/container.h"
#include "container/state.h"
#include "sandbox/exec.h"

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1U << 2) /* Linux 6.9 */
#endif

#define WHAT "sandbox exec"

/* The request's bytes: header, argv, env, cwd; NULL when it would be
 * bigger than an init takes (*len 0) or memory ran out. */
static char *pack_request(char *const *argv, char *const *env, const char *cwd, size_t *len)
{
    struct brig_port_request h = { BRIG_PORT_MAGIC, BRIG_PORT_VERSION, 0, 0 };
    size_t n = sizeof h + strlen(cwd) + 1;
    for (; argv[h.n_argv]; h.n_argv++)
        n += strlen(argv[h.n_argv]) + 1;
    for (; env && env[h.n_env]; h.n_env++)
        n += strlen(env[h.n_env]) + 1;
    *len = n > BRIG_PORT_REQUEST_MAX ? 0 : n; /* 0: too big, else out of memory */
    if (n > BRIG_PORT_REQUEST_MAX)
        return NULL;
    char *buf = malloc(n), *p = buf;
    if (buf == NULL)
        return NULL;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    for (uint32_t i = 0; i < h.n_argv; i++)
        p = stpcpy(p, argv[i]) + 1;
    for (uint32_t i = 0; i < h.n_env; i++)
        p = stpcpy(p, env[i]) + 1;
    stpcpy(p, cwd);
    *len = n;
    return buf;
}

/* The init's end of the port, copied out of it; -1 when it has none
 * that is a seqpacket socket (an init started without --exec-port). */
static int take_port(int init_pidfd)
{
    int fd = (int) syscall(SYS_pidfd_getfd, init_pidfd, BRIG_PORT_FD, 0);
    if (fd < 0)
        return -1;
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET
        || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &(socklen_t){ sizeof domain }) < 0
        || domain != AF_UNIX) {
        close(fd);
        return -1;
    }
    /* A wedged init must not hold the host forever: the queue is the
     * kernel's, the wait for it ours. */
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

/* The host's pid of the process behind `pidfd`, from its fdinfo, whose
 * NSpid line must end in the init's view of it (`ns_pid`): > 0; 0 when
 * the process is gone already (reaped: the line says -1); -1 when the
 * fd is no such pidfd. */
static pid_t pidfd_host_pid(int pidfd, pid_t ns_pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : brig_read_all(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *line = strstr(buf, "\nNSpid:");
    if (line == NULL)
        return -1;
    line += 7;
    line[strcspn(line, "\n")] = '\0';
    /* The host's pid first, the innermost namespace's last. */
    char *end;
    long host = strtol(line, &end, 10);
    if (host == -1 && *end == '\0')
        return 0;
    const char *last = strrchr(line, '\t');
    if (host <= 0 || last == NULL || last < end || strtol(last + 1, NULL, 10) != ns_pid)
        return -1;
    return (pid_t) host;
}

/* A process of the sandbox: in the pid namespace the init is 1 of. */
static bool in_init_pid_ns(pid_t pid, pid_t init)
{
    char path[64];
    struct stat a, b;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int) pid);
    if (stat(path, &a) < 0)
        return false;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int) init);
    return stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The first answer: started (the pidfd checked) or failed. */
static int read_started(int sock, pid_t init, const char *arg0, const char *cwd,
                        struct brig_sandbox_exec *ex, brig_error_t *err)
{
    struct brig_port_answer a;
    struct iovec iov = { &a, sizeof a };
    cleanup_close int pidfd = -1;
    /* An init that takes the request and never answers holds no one past
     * the exec's own time limit. */
    struct pollfd p = { .fd = sock, .events = POLLIN };
    int r;
    while ((r = poll(&p, 1, ex->timeout_ms > 0 ? ex->timeout_ms : -1)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return brig_error_set(err, ETIMEDOUT, WHAT ": the sandbox's init did not answer");
    ssize_t n = brig_fd_recvmsg(sock, &iov, 1, &pidfd);
    if (n < 0)
        return brig_error_set(err, errno, WHAT ": the sandbox's init");
    if (n != (ssize_t) sizeof a || a.magic != BRIG_PORT_MAGIC)
        return brig_error_set(err, EPROTO, WHAT ": the sandbox's init did not answer");
    if (a.kind == BRIG_PORT_FAILED && a.error == EAGAIN && a.stage == BRIG_PORT_AT_START)
        return 1;
    if (a.kind == BRIG_PORT_FAILED) {
        int e = a.error > 0 ? a.error : EIO;
        if (a.stage == BRIG_PORT_AT_PATH)
            return brig_error_kind(err, BRIG_E_INPUT,
                                   "exec `%s`: executable file not found in $PATH", arg0);
        if (a.stage == BRIG_PORT_AT_CWD)
            return brig_error_set(err, e, "chdir to cwd `%s`", cwd);
        if (a.stage == BRIG_PORT_AT_EXEC)
            return brig_exec_failure(arg0, e, err);
        return brig_error_set(err, e, "the sandbox's init could not start it");
    }
    /* A process that is gone already (`true`, reaped before this look)
     * can't be signalled through its pidfd: nothing to check. */
    pid_t host = a.kind == BRIG_PORT_STARTED && pidfd >= 0 ? pidfd_host_pid(pidfd, a.pid) : -1;
    if (host > 0 && !in_init_pid_ns(host, init))
        host = pidfd_host_pid(pidfd, a.pid) == 0 ? 0 : -1; /* gone while we looked */
    if (host < 0)
        return brig_error_set(err, EPROTO, WHAT ": the sandbox's init answered with no process");
    ex->pid = host;
    ex->pidfd = brig_steal_fd(pidfd);
    return 0;
}

static int send_request(int port, const char *buf, size_t len, int answer_end, const int *stdio,
                        brig_error_t *err)
{
    int fds[4] = { answer_end, stdio ? stdio[0] : 0, stdio ? stdio[1] : 1, stdio ? stdio[2] : 2 };
    struct iovec iov = { (void *) buf, len };
    ssize_t n = brig_fds_sendmsg(port, &iov, 1, fds, 4);
    if (n == (ssize_t) len)
        return 0;
    if (n < 0 && (errno == EAGAIN || errno == EMSGSIZE))
        return 1; /* a wedged or busy init: the classic way */
    return brig_error_set(err, n < 0 ? errno : EIO, WHAT ": the sandbox's init");
}

int brig_sandbox_port_start(const struct brig_opened_container *c, const char *id,
                            char *const *argv, char *const *env, const char *cwd, const int *stdio,
                            struct brig_sandbox_exec *ex, brig_error_t *err)
{
    size_t len;
    cleanup_free char *req = pack_request(argv, env, cwd ? cwd : "", &len);
    if (req == NULL)
        return len == 0 ? 1 : brig_error_set(err, ENOMEM, WHAT);
    cleanup_close int init = brig_container_init_pidfd(c, id, err);
    if (init < 0)
        return init == -2 ? 1 : -1;
    cleanup_close int port = take_port(init);
    if (port < 0)
        return 1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return brig_error_set(err, errno, WHAT ": socketpair");
    cleanup_close int mine = sv[0];
    int r = send_request(port, req, len, sv[1], stdio, err);
    close(sv[1]);
    if (r == 0)
        r = read_started(mine, c->state->pid, argv[0], cwd ? cwd : "", ex, err);
    if (r == 0)
        ex->port = brig_steal_fd(mine);
    return r;
}

int brig_sandbox_port_status(const struct brig_sandbox_exec *ex, brig_error_t *err)
{
    struct brig_port_answer a;
    ssize_t n;
    do
        n = recv(ex->port, &a, sizeof a, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t) sizeof a || a.magic != BRIG_PORT_MAGIC || a.kind != BRIG_PORT_EXITED)
        return brig_error_set(err, n < 0 ? errno : EPROTO,
                              WHAT ": the sandbox's init went away before the process ended");
    if (WIFEXITED(a.status))
        return WEXITSTATUS(a.status);
    return WIFSIGNALED(a.status) ? 128 + WTERMSIG(a.status) : 255;
}

void brig_sandbox_port_kill_group(const struct brig_sandbox_exec *ex)
{
    if (syscall(SYS_pidfd_send_signal, ex->pidfd, SIGKILL, NULL, PIDFD_SIGNAL_PROCESS_GROUP) == 0)
        return;
    /* An older kernel: the group by the init, which sees it, asked
     * first, so the leader's death can't come before the word; then the
     * leader from here, whatever the init does. */
    struct brig_port_answer k = { .magic = BRIG_PORT_MAGIC, .kind = BRIG_PORT_KILL };
    send(ex->port, &k, sizeof k, MSG_NOSIGNAL | MSG_DONTWAIT);
    syscall(SYS_pidfd_send_signal, ex->pidfd, SIGKILL, NULL, 0);
}
