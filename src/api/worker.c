#define _GNU_SOURCE
/* Work that starts processes runs as a job: brig-api itself, started
 * anew (posix_spawn of its own file, `brig-api --job KIND ARGS...`),
 * single-threaded from its first instruction. A fork of the threaded
 * server would inherit whatever lock another thread held at that moment
 * (an allocator's, a library's) and could wait on it for ever; it would
 * also inherit every client's connection and the server's signal
 * settings (SIGPIPE ignored, which every process in a sandbox would
 * inherit). A job gets fds 0-2 (given, or /dev/null) and its report pipe
 * as fd 3, and signals at their defaults. A container's init started by
 * a job is adopted by the host's init once the job exits, as under the
 * CLI. jobs.c is the job's side. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api.h"
#include "base/cleanup.h"
#include "base/utils.h"

extern char **environ;

int api_argv_add(struct api_argv *a, const char *fmt, ...)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        char **bigger = realloc(a->v, cap * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        a->v = bigger;
        a->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&a->v[a->n], fmt, ap);
    va_end(ap);
    if (r < 0)
        return -1;
    a->v[++a->n] = NULL;
    return 0;
}

void api_argv_free(struct api_argv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    *a = (struct api_argv){ 0 };
}

static int file_actions(posix_spawn_file_actions_t *fa, const int *stdio, int null_fd,
                        int report_fd)
{
    for (int i = 0; i < 3; i++)
        if (posix_spawn_file_actions_adddup2(fa, stdio ? stdio[i] : null_fd, i) != 0)
            return -1;
    return posix_spawn_file_actions_adddup2(fa, report_fd, 3) == 0 ? 0 : -1;
}

int api_job_spawn(const struct api_argv *a, const int *stdio, pid_t *pid, int *report,
                  brig_error_t *err)
{
    int p[2];
    cleanup_close int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || pipe2(p, O_CLOEXEC) < 0)
        return brig_error_set(err, errno, "job: pipe");
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    int e = file_actions(&fa, stdio, null_fd, p[1]) < 0
                ? ENOMEM
                : posix_spawn(pid, "/proc/self/exe", &fa, &attr, a->v, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(p[1]);
    if (e != 0) {
        close(p[0]);
        return brig_error_set(err, e, "job: spawn brig-api");
    }
    *report = p[0];
    return 0;
}

/* A job's report: 'O' and what it said, or 'E', its errnum and message. */
static int read_report(int fd, char **said, brig_error_t *err)
{
    size_t len = 0, cap = 4096;
    cleanup_free char *buf = malloc(cap);
    for (ssize_t n; buf && (n = read(fd, buf + len, cap - len - 1)) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t) n;
        if (len + 1 == cap)
            break;
    }
    if (buf == NULL || len == 0)
        return brig_error_set(err, 0, "job: it died without a word");
    buf[len] = '\0';
    if (buf[0] == 'O') {
        if (said)
            *said = strdup(buf + 1);
        return 0;
    }
    int errnum = 0;
    if (buf[0] != 'E' || len < 1 + sizeof errnum)
        return brig_error_set(err, 0, "job: a report not understood");
    memcpy(&errnum, buf + 1, sizeof errnum);
    return brig_error_kind(err, errnum, "%s", buf + 1 + sizeof errnum);
}

int api_job_run(const struct api_argv *a, char **said, brig_error_t *err)
{
    pid_t pid;
    int report;
    if (api_job_spawn(a, NULL, &pid, &report, err) < 0)
        return -1;
    int r = read_report(report, said, err);
    close(report);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return r;
}
