#define _GNU_SOURCE
/* Work that starts processes runs in a child of the server's: the child
 * keeps none of the server's fds (another client's connection would stay
 * open in it, and reach a container through a process it starts) and
 * none of its signal settings (SIGPIPE ignored would be inherited by
 * every process in a sandbox). A container's init started here is
 * adopted by the host's init once the child exits, as under the CLI. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"

void api_child_reset(const int *keep, size_t n_keep)
{
    brig_close_fds_except(3, keep, n_keep);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The child's report: its errnum, then its message. */
static void report(int fd, int r, brig_error_t err)
{
    if (r >= 0)
        return;
    int errnum = err ? err->errnum : 0;
    const char *msg = err ? err->msg : "failed";
    if (brig_write_all(fd, &errnum, sizeof errnum) == 0)
        brig_write_all(fd, msg, strlen(msg));
}

static int read_report(int fd, brig_error_t *err)
{
    int errnum;
    ssize_t n = read(fd, &errnum, sizeof errnum);
    if (n == 0)
        return 0;
    char msg[4096];
    size_t len = 0;
    for (ssize_t m; len < sizeof msg - 1 && (m = read(fd, msg + len, sizeof msg - 1 - len)) > 0;)
        len += (size_t) m;
    msg[len] = '\0';
    if (n != (ssize_t) sizeof errnum)
        return brig_error_set(err, 0, "worker: lost its report");
    return brig_error_kind(err, errnum, "%s", msg);
}

int api_in_child(int (*fn)(void *ctx, brig_error_t *err), void *ctx, const int *keep, size_t n_keep,
                 brig_error_t *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "worker: pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return brig_error_set(err, errno, "worker: fork");
    }
    if (pid == 0) {
        int all[16] = { p[1] };
        size_t n = 1;
        for (size_t i = 0; i < n_keep && n < sizeof all / sizeof all[0]; i++)
            all[n++] = keep[i];
        api_child_reset(all, n);
        brig_error_t child_err = NULL;
        int r = fn(ctx, &child_err);
        report(p[1], r, child_err);
        _exit(r < 0);
    }
    close(p[1]);
    int r = read_report(p[0], err);
    close(p[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        r = brig_error_set(err, 0, "worker: died (status %d)", status);
    return r;
}
