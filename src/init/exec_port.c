#define _GNU_SOURCE
/* The exec port, brig-init's side (exec_port.h). Requests come from the
 * host only (the port's other end is ours, close-on-exec), but they are
 * checked all the same: a malformed one is refused, never half-run. */
#include "exec_port.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "base/utils.h"
#include "sandbox/exec_port.h"

struct started {
    pid_t pid;
    int answer; /* -1 once the host hung up */
};

static int port = -1;
static struct started procs[BRIG_PORT_PROCESSES_MAX];
static size_t n_procs;
/* One byte more than a request may have: a longer one is refused. */
static char request[BRIG_PORT_REQUEST_MAX + 1];

/* The signals whose disposition the init did not leave at SIG_DFL (what
 * it inherited ignored): execve keeps an ignored one so, where a caught
 * one goes back to the default by itself. Taken once, at the port's
 * opening: the init changes none of its own after that. */
static sigset_t undefault;

int exec_port_open(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "brig-init: exec port: %s\n", strerror(errno));
        return -1;
    }
    /* Either end will do for the host's: the one at BRIG_PORT_FD. */
    port = sv[0] == BRIG_PORT_FD ? sv[1] : sv[0];
    int host = sv[0] == BRIG_PORT_FD ? sv[0] : sv[1];
    if (host != BRIG_PORT_FD) {
        if (dup3(host, BRIG_PORT_FD, O_CLOEXEC) < 0) {
            fprintf(stderr, "brig-init: exec port: %s\n", strerror(errno));
            return -1;
        }
        close(host);
    }
    fcntl(port, F_SETFL, O_NONBLOCK);
    sigemptyset(&undefault);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL)
            sigaddset(&undefault, sig);
    }
    return 0;
}

void exec_port_close(void)
{
    if (port >= 0)
        close(port);
    port = -1;
}

size_t exec_port_max_pollfds(void)
{
    return 1 + BRIG_PORT_PROCESSES_MAX;
}

static void answer(int fd, enum brig_port_kind kind, int stage, int error, pid_t pid, int status,
                   int pidfd)
{
    struct brig_port_answer a = { BRIG_PORT_MAGIC, kind, (uint32_t) stage, error, pid, status };
    struct iovec iov = { &a, sizeof a };
    brig_fd_sendmsg(fd, &iov, 1, pidfd);
}

/* The strings after the header, each ending in NUL within n bytes:
 * pointers into the request, NULL when it is malformed. */
static char **split(char *p, size_t n, size_t count)
{
    char **v = calloc(count + 1, sizeof *v);
    char *end = p + n;
    for (size_t i = 0; v && i < count; i++) {
        char *nul = p < end ? memchr(p, '\0', (size_t) (end - p)) : NULL;
        if (nul == NULL) {
            free(v);
            return NULL;
        }
        v[i] = p;
        p = nul + 1;
    }
    if (v && p != end) {
        free(v);
        return NULL;
    }
    return v;
}

/* The init's environment with `extra` over it, name by name. */
static char **overlay(char **extra)
{
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    while (extra[k])
        k++;
    char **env = calloc(n + k + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    memcpy(env, environ, n * sizeof *env);
    for (size_t i = 0; i < k; i++) {
        size_t len = strcspn(extra[i], "=");
        if (extra[i][len] != '=')
            continue;
        size_t j = 0;
        while (j < n && !(strncmp(env[j], extra[i], len + 1) == 0))
            j++;
        env[j] = extra[i];
        if (j == n)
            n++;
    }
    return env;
}

/* argv[0] in the new environment's PATH, as the classic exec finds it;
 * NULL when it is in none of it. */
static char *find(const char *arg0, char **env, char *buf, size_t size)
{
    if (strchr(arg0, '/'))
        return (char *) arg0;
    const char *path = NULL;
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], "PATH=", 5) == 0)
            path = env[i] + 5;
    return brig_find_in_path(arg0, path, buf, size) ? buf : NULL;
}

struct failure {
    int stage, error;
};

/* What the child needs, in the memory it shares with us until it execs. */
struct spawn {
    const char *path;
    char **argv, **env;
    const char *cwd;
    const int *stdio;
    struct failure f;
};

/* The child, on its own stack in the init's memory (CLONE_VM|CLONE_VFORK:
 * the init waits, neither copying its page tables nor faulting them back
 * in): a session of its own, the signals as a new process has them, the
 * host's stdio, the cwd, then the program; what failed is left in
 * sp->f. Only system calls here: the init's memory is not ours to
 * change beyond sp->f. */
static int child(void *arg)
{
    struct spawn *sp = arg;
    sigset_t none;
    sigemptyset(&none);
    setsid();
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&undefault, sig) == 1)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    sp->f = (struct failure){ BRIG_PORT_AT_EXEC, 0 };
    for (int i = 0; i < 3; i++)
        if (dup2(sp->stdio[i], i) < 0)
            sp->f.error = errno;
    if (sp->f.error == 0 && *sp->cwd && chdir(sp->cwd) < 0)
        sp->f = (struct failure){ BRIG_PORT_AT_CWD, errno };
    if (sp->f.error == 0) {
        execve(sp->path, sp->argv, sp->env);
        sp->f.error = errno;
    }
    _exit(sp->f.error == ENOENT ? 127 : 126);
}

/* Starts the child and returns once it has exec'd (its pid) or failed
 * (-1, sp->f set; it is reaped with the orphans). */
static pid_t spawn(struct spawn *sp)
{
    /* The child's stack: one at a time, the init waiting meanwhile. */
    static char stack[64 * 1024] __attribute__((aligned(16)));
    sp->f = (struct failure){ BRIG_PORT_AT_START, 0 };
    pid_t pid = clone(child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, sp);
    if (pid < 0)
        sp->f.error = errno;
    return pid > 0 && sp->f.error == 0 ? pid : -1;
}

/* One request: checked, started, answered; its answer socket kept
 * (fds[0] set to -1) for the process's end. */
static void serve(size_t n, int *fds)
{
    struct brig_port_request h;
    int ans = fds[0];
    if (n < sizeof h || n > BRIG_PORT_REQUEST_MAX) {
        answer(ans, BRIG_PORT_FAILED, BRIG_PORT_AT_START, EINVAL, 0, 0, -1);
        return;
    }
    memcpy(&h, request, sizeof h);
    char **strs = NULL;
    if (h.magic == BRIG_PORT_MAGIC && h.version == BRIG_PORT_VERSION && h.n_argv > 0
        && h.n_argv < BRIG_PORT_REQUEST_MAX && h.n_env < BRIG_PORT_REQUEST_MAX)
        strs = split(request + sizeof h, n - sizeof h, h.n_argv + h.n_env + 1);
    if (strs == NULL) {
        answer(ans, BRIG_PORT_FAILED, BRIG_PORT_AT_START, EINVAL, 0, 0, -1);
        return;
    }
    const char *cwd = strs[h.n_argv + h.n_env];
    strs[h.n_argv + h.n_env] = NULL;
    char **argv = calloc(h.n_argv + 1, sizeof *argv);
    char **env = overlay(strs + h.n_argv);
    char buf[4096];
    char *path = argv && env ? find(strs[0], env, buf, sizeof buf) : NULL;
    struct failure f = { BRIG_PORT_AT_START, argv && env ? 0 : ENOMEM };
    pid_t pid = -1;
    if (path == NULL && f.error == 0)
        f = (struct failure){ BRIG_PORT_AT_PATH, ENOENT };
    if (path) {
        memcpy(argv, strs, h.n_argv * sizeof *argv);
        struct spawn sp = { .path = path, .argv = argv, .env = env, .cwd = cwd, .stdio = fds + 1 };
        pid = spawn(&sp);
        f = sp.f;
    }
    int pidfd = pid > 0 ? (int) syscall(SYS_pidfd_open, pid, 0) : -1;
    if (pid > 0 && pidfd < 0) {
        f = (struct failure){ BRIG_PORT_AT_START, errno };
        kill(pid, SIGKILL);
    }
    if (pidfd >= 0) {
        answer(ans, BRIG_PORT_STARTED, 0, 0, pid, 0, pidfd);
        close(pidfd);
        procs[n_procs++] = (struct started){ pid, ans };
        fds[0] = -1;
    } else {
        answer(ans, BRIG_PORT_FAILED, f.stage, f.error, 0, 0, -1);
    }
    free(argv);
    free(env);
    free(strs);
}

/* Every request waiting on the port. */
static void take_requests(void)
{
    for (;;) {
        int fds[4];
        size_t n_fds;
        struct iovec iov = { request, sizeof request };
        ssize_t n = brig_fds_recvmsg(port, &iov, 1, MSG_DONTWAIT, fds, 4, &n_fds);
        if (n < 0)
            return;
        if (n_fds > 0 && n_procs == BRIG_PORT_PROCESSES_MAX)
            answer(fds[0], BRIG_PORT_FAILED, BRIG_PORT_AT_START, EAGAIN, 0, 0, -1);
        else if (n_fds == 4)
            serve((size_t) n, fds);
        else if (n_fds > 0)
            answer(fds[0], BRIG_PORT_FAILED, BRIG_PORT_AT_START, EINVAL, 0, 0, -1);
        for (size_t i = 0; i < n_fds; i++)
            if (fds[i] >= 0)
                close(fds[i]);
    }
}

size_t exec_port_pollfds(struct pollfd *fds)
{
    size_t n = 0;
    if (port >= 0)
        fds[n++] = (struct pollfd){ .fd = port, .events = POLLIN };
    for (size_t i = 0; i < n_procs; i++)
        if (procs[i].answer >= 0)
            fds[n++] = (struct pollfd){ .fd = procs[i].answer, .events = POLLIN };
    return n;
}

/* The host's word on a process's answer socket: a kill of its group,
 * or a hangup (the process goes on, as an orphan of the host would). */
static void heard(struct started *s)
{
    struct brig_port_answer k;
    ssize_t n = recv(s->answer, &k, sizeof k, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n == (ssize_t) sizeof k && k.magic == BRIG_PORT_MAGIC && k.kind == BRIG_PORT_KILL) {
        kill(-s->pid, SIGKILL);
        kill(s->pid, SIGKILL);
        return;
    }
    close(s->answer);
    s->answer = -1;
}

void exec_port_handle(const struct pollfd *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!fds[i].revents)
            continue;
        if (fds[i].fd == port) {
            take_requests();
            continue;
        }
        for (size_t j = 0; j < n_procs; j++)
            if (procs[j].answer == fds[i].fd)
                heard(&procs[j]);
    }
}

bool exec_port_reaped(pid_t pid, int status)
{
    for (size_t i = 0; i < n_procs; i++) {
        if (procs[i].pid != pid)
            continue;
        /* A kill the host asked for as the leader died: its group, which
         * outlives it, still goes. */
        if (procs[i].answer >= 0)
            heard(&procs[i]);
        if (procs[i].answer >= 0) {
            answer(procs[i].answer, BRIG_PORT_EXITED, 0, 0, pid, status, -1);
            close(procs[i].answer);
        }
        procs[i] = procs[--n_procs];
        return true;
    }
    return false;
}
