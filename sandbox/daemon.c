/* A host daemon started detached (daemon.h). */
#define _GNU_SOURCE
#include "sandbox/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"

/* In the grandchild: everything of the caller's let go, then the program. */
static void exec_detached(const char *path, char *const argv[], char *const env[])
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    close_range(3, ~0U, 0);
    execve(path, argv, env);
    _exit(127);
}

int brig_sandbox_daemon_spawn(const char *what, const char *path, char *const argv[],
                              bool (*passed_on)(const char *var), brig_error_t *err)
{
    size_t n = 0;
    while (environ[n])
        n++;
    cleanup_free char **env = calloc(n + 1, sizeof *env);
    if (env == NULL)
        return brig_error_set(err, ENOMEM, "%s", what);
    for (size_t i = 0, j = 0; i < n; i++)
        if (passed_on(environ[i]))
            env[j++] = environ[i];
    pid_t pid = fork();
    if (pid < 0)
        return brig_error_set(err, errno, "%s: fork", what);
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        exec_detached(path, argv, env);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return 0;
}
