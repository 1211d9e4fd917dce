#define _GNU_SOURCE
#include "sandbox/locate.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"

#include "selfexe/selfexe.h"

/* Where `make install` puts each (Makefile.am defines them for this
 * layer); none in a build without them. */
#ifndef BRIG_INIT_PATH
#define BRIG_INIT_PATH NULL
#endif
#ifndef BRIG_EGRESS_PATH
#define BRIG_EGRESS_PATH NULL
#endif
#ifndef BRIG_FETCH_PATH
#define BRIG_FETCH_PATH NULL
#endif
#ifndef BRIG_REAPER_PATH
#define BRIG_REAPER_PATH NULL
#endif
#ifndef BRIG_API_PATH
#define BRIG_API_PATH NULL
#endif
#ifndef BRIG_UNPACK_PATH
#define BRIG_UNPACK_PATH NULL
#endif

static const struct {
    const char *name, *env, *installed;
} helpers[] = {
    { "brig-init", "BRIG_INIT", BRIG_INIT_PATH },
    { "brig-egress", "BRIG_EGRESS", BRIG_EGRESS_PATH },
    { "brig-fetch", "BRIG_FETCH", BRIG_FETCH_PATH },
    { "brig-reaper", "BRIG_REAPER", BRIG_REAPER_PATH },
    { "brig-api", "BRIG_API", BRIG_API_PATH },
    { "brig-unpack", "BRIG_UNPACK", BRIG_UNPACK_PATH },
};

int brig_sandbox_locate_helper(const char *name, char **out, brig_error_t *err)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
        if (strcmp(name, helpers[i].name) == 0)
            return brig_locate_program(name, helpers[i].env, helpers[i].installed, out, err);
    return brig_error_set(err, 0, "no helper program `%s`", name);
}

void brig_sandbox_pin_helpers(void)
{
    for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++) {
        char *path = NULL;
        brig_error_t err = NULL;
        if (brig_locate_program(helpers[i].name, helpers[i].env, helpers[i].installed, &path, &err)
            == 0)
            setenv(helpers[i].env, path, 0);
        brig_error_release(&err);
        free(path);
    }
}

/* The child: out_fd as stdout, the pipe as stderr, nothing else of
 * ours; signals as they come (brig blocks some around its children);
 * killed when the thread that forked it ends (it waits for it), so a
 * killed caller leaves no helper running. */
static void exec_helper(const char *prog, char *const *argv, int out_fd, int err_fd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    close_range(3, ~0U, 0);
    execv(prog, argv);
    _exit(127);
}

/* The first line of what the child wrote on `fd`, until it closes it. */
static void read_line(int fd, char *line, size_t size)
{
    size_t len = 0;
    char drop[256];
    for (;;) {
        ssize_t n = len < size - 1 ? read(fd, line + len, size - 1 - len)
                                   : read(fd, drop, sizeof drop);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (len < size - 1)
            len += (size_t) n;
    }
    line[len] = '\0';
    line[strcspn(line, "\n")] = '\0';
}

int brig_sandbox_run_helper(const char *name, char *const *argv, int out_fd, char *line,
                            size_t size, int *status, brig_error_t *err)
{
    cleanup_free char *prog = NULL;
    if (brig_sandbox_locate_helper(name, &prog, err) < 0)
        return -1;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "pipe");
    cleanup_close int rd = fds[0];
    pid_t pid = fork();
    if (pid == 0)
        exec_helper(prog, argv, out_fd, fds[1]);
    int saved = errno;
    close(fds[1]);
    if (pid < 0)
        return brig_error_set(err, saved, "fork");
    read_line(rd, line, size);
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return brig_error_set(err, errno, "wait for %s", name);
    return 0;
}
