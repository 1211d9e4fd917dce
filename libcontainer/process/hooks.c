#define _GNU_SOURCE
#include "process/hooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

/* Polling interval when no pidfd can wake us at the hook's exit. */
#define WAIT_SLICE_MS 10

/* ---- child side: only async-signal-safe calls between fork and exec ---- */

/* Hooks must not inherit the runtime's descriptors (state dir, sync
 * sockets, the exec fifo...): close everything from `from` up. */
static void close_fds_from(int from)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned) from, ~0U, 0U) == 0)
        return;
#endif
    /* Before Linux 5.9: walk /proc/self/fd with getdents64 (opendir may
     * malloc, which is unsafe after fork in a threaded process). */
    int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        for (int fd = from; fd < 65536; fd++)
            close(fd);
        return;
    }
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *) (buf + off);
            off += d->d_reclen;
            const char *p = d->d_name;
            if (*p < '0' || *p > '9')
                continue;
            int fd = 0;
            for (; *p >= '0' && *p <= '9'; p++)
                fd = fd * 10 + (*p - '0');
            if (fd >= from && fd != dfd)
                close(fd);
        }
    }
    close(dfd);
}

/* The signal mask and ignored signals survive execve(); a hook inherits
 * neither from the runtime (the shim blocks signals for its signalfd). */
static void reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
}

/* Leaves the hook with fds 0-2 (1 and 2 from `out` when given) and, until
 * execve succeeds, the close-on-exec error pipe on fd 3; a failed exec
 * sends its errno through it. */
static __attribute__((noreturn)) void exec_hook(const struct brig_hook *hook, int stdin_fd,
                                                int errfd, const int *out)
{
    /* Its own process group, so a timeout kills whatever it spawned too. */
    setpgid(0, 0);
    reset_signals();
    /* Lift both pipes above 2 first, so neither dup2 below can clobber
     * the other when the runtime was started with 0-2 closed. */
    int err_hi = fcntl(errfd, F_DUPFD_CLOEXEC, 3);
    int in_hi = fcntl(stdin_fd, F_DUPFD_CLOEXEC, 3);
    int out_hi = out ? fcntl(out[0], F_DUPFD_CLOEXEC, 3) : -1;
    int errout_hi = out ? fcntl(out[1], F_DUPFD_CLOEXEC, 3) : -1;
    if (err_hi < 0 || in_hi < 0 || (out && (out_hi < 0 || errout_hi < 0)))
        _exit(127);
    errfd = err_hi;
    if (dup2(in_hi, STDIN_FILENO) < 0)
        goto fail;
    if (out && (dup2(out_hi, STDOUT_FILENO) < 0 || dup2(errout_hi, STDERR_FILENO) < 0))
        goto fail;
    if (errfd != 3) {
        if (dup3(errfd, 3, O_CLOEXEC) < 0)
            goto fail;
        errfd = 3;
    }
    close_fds_from(4);

    char *default_argv[] = { hook->path, NULL };
    char *empty_env[] = { NULL };
    char *const *argv = hook->args.n > 0 ? hook->args.v : default_argv;
    char *const *envp = hook->env.n > 0 ? hook->env.v : empty_env;
    execve(hook->path, argv, envp);
fail:;
    int e = errno;
    ssize_t w = write(errfd, &e, sizeof e);
    (void) w;
    _exit(127);
}

/* ---- parent side -------------------------------------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    /* Race-free: the child is ours and unreaped, so the pid can't be reused. */
    return (int) syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* Feeds the state to the hook's stdin without ever blocking: a hook that
 * doesn't read it must still time out, and one that exits early must not
 * kill the runtime with SIGPIPE. The write end is non-blocking and SIGPIPE
 * is blocked around the write; a SIGPIPE we cause is consumed before the
 * mask is restored so it can't surface later. Returns false once the pipe
 * should be closed (all written, or the reader is gone). */
static bool feed_stdin(int fd, const char *data, size_t len, size_t *off)
{
    sigset_t pipe_set, old_mask, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

    bool more = true;
    while (*off < len) {
        ssize_t n = write(fd, data + *off, len - *off);
        if (n > 0) {
            *off += (size_t) n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        more = false; /* EPIPE: the hook didn't want (all of) its stdin. */
        break;
    }
    if (*off >= len)
        more = false;

    if (!was_pending) {
        static const struct timespec zero = { 0, 0 };
        while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return more;
}

enum hook_end { HOOK_EXITED, HOOK_TIMED_OUT, HOOK_WAIT_FAILED };

/* Waits for the hook while feeding its stdin; the state is written from
 * this loop rather than up front so a hook that never reads a large state
 * can't block us past its timeout. timeout_ms < 0: no timeout. */
static enum hook_end wait_hook(pid_t pid, int stdin_w, const char *state, int timeout_ms,
                               int *status)
{
    cleanup_close int pidfd = open_pidfd(pid);
    cleanup_close int w = stdin_w;
    size_t len = strlen(state), off = 0;
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    if (len == 0) {
        close(w);
        w = -1;
    }
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return HOOK_EXITED;
        if (r < 0 && errno != EINTR)
            return HOOK_WAIT_FAILED;

        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return HOOK_TIMED_OUT;
            wait_ms = left > INT32_MAX ? INT32_MAX : (int) left;
        }
        if (pidfd < 0 && (wait_ms < 0 || wait_ms > WAIT_SLICE_MS))
            wait_ms = WAIT_SLICE_MS;

        struct pollfd fds[2];
        nfds_t nfds = 0;
        if (pidfd >= 0)
            fds[nfds++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
        if (w >= 0)
            fds[nfds++] = (struct pollfd){ .fd = w, .events = POLLOUT };
        if (poll(fds, nfds, wait_ms) < 0 && errno != EINTR)
            return HOOK_WAIT_FAILED;
        /* POLLERR on the write end means the reader is gone: the write
         * then fails with EPIPE, which feed_stdin handles. */
        if (w >= 0 && fds[nfds - 1].revents != 0 && !feed_stdin(w, state, len, &off)) {
            close(w);
            w = -1;
        }
    }
}

static void kill_hook(pid_t pid)
{
    /* The group first (the hook's children too), then the hook alone in
     * case it hadn't reached setpgid() yet. */
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Reads the errno a failed execve() left in the error pipe; 0 when the
 * exec succeeded and the close-on-exec pipe reached EOF. */
static int read_exec_errno(int fd)
{
    int e = 0;
    ssize_t n;
    do
        n = read(fd, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t) sizeof e ? e : 0;
}

static int run_hook(const struct brig_hook *hook, const char *kind, const char *state,
                    const int *out, brig_error_t *err)
{
    if (hook->path == NULL || hook->path[0] == '\0')
        return brig_error_set(err, EINVAL, "hook `%s`: empty path", kind);
    int in_pipe[2], err_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "hook `%s` `%s`: pipe", kind, hook->path);
    cleanup_close int in_r = in_pipe[0];
    cleanup_close int in_w = in_pipe[1];
    if (pipe2(err_pipe, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "hook `%s` `%s`: pipe", kind, hook->path);
    cleanup_close int err_r = err_pipe[0];
    cleanup_close int err_w = err_pipe[1];

    pid_t pid = fork();
    if (pid < 0)
        return brig_error_set(err, errno, "hook `%s` `%s`: fork", kind, hook->path);
    if (pid == 0)
        exec_hook(hook, in_r, err_w, out);

    /* Also set from this side, so a timeout right after fork still finds
     * the group. EACCES (already exec'd) is fine: it did it itself. */
    setpgid(pid, pid);
    close(in_r);
    in_r = -1;
    close(err_w);
    err_w = -1;

    int status = 0;
    int exec_errno = read_exec_errno(err_r);
    if (exec_errno != 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        return brig_error_set(err, exec_errno, "hook `%s` `%s`: exec", kind, hook->path);
    }

    if (fcntl(in_w, F_SETFL, O_NONBLOCK) < 0) {
        kill_hook(pid);
        waitpid(pid, &status, 0);
        return brig_error_set(err, errno, "hook `%s` `%s`: stdin pipe", kind, hook->path);
    }
    int timeout_ms = hook->has_timeout && hook->timeout > 0 ? hook->timeout * 1000 : -1;
    enum hook_end end = wait_hook(pid, brig_steal_fd(in_w), state ? state : "", timeout_ms,
                                  &status);
    if (end != HOOK_EXITED) {
        int saved = errno;
        kill_hook(pid);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (end == HOOK_TIMED_OUT)
            return brig_error_set(err, 0, "hook `%s` `%s`: timed out after %d s", kind, hook->path,
                                  hook->timeout);
        return brig_error_set(err, saved, "hook `%s` `%s`: wait", kind, hook->path);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        return brig_error_set(err, 0, "hook `%s` `%s`: exited with status %d", kind, hook->path,
                              WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return brig_error_set(err, 0, "hook `%s` `%s`: killed by signal %d", kind, hook->path,
                              WTERMSIG(status));
    return 0;
}

int brig_hooks_run_with_output(const struct brig_hook_list *hooks, const char *kind,
                               const char *state_json, const int out[2], brig_error_t *err)
{
    if (hooks == NULL)
        return 0;
    for (size_t i = 0; i < hooks->n; i++)
        if (run_hook(&hooks->items[i], kind, state_json, out, err) < 0)
            return -1;
    return 0;
}

int brig_hooks_run(const struct brig_hook_list *hooks, const char *kind, const char *state_json,
                   brig_error_t *err)
{
    return brig_hooks_run_with_output(hooks, kind, state_json, NULL, err);
}
