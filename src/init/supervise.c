#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervise.h"

void init_reset_signals(void)
{
    sigset_t all;
    sigfillset(&all);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
}

const char *init_describe_status(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    return buf;
}

int service_prepare(struct service *svc, const struct init_program *prog, char *err, size_t errlen)
{
    memset(svc, 0, sizeof *svc);
    svc->prog = prog;
    svc->out_pipe = svc->err_pipe = -1;
    svc->out_log.fd = svc->err_log.fd = -1;
    svc->argv = init_command_argv(prog->command);
    if (!svc->argv) {
        snprintf(err, errlen, "[program:%s]: bad command `%s`", prog->name, prog->command);
        return -1;
    }
    if (prog->user) {
        char why[512];
        if (init_user_lookup(prog->user, "/etc/passwd", "/etc/group", &svc->user, why, sizeof why)
            < 0) {
            snprintf(err, errlen, "[program:%s]: %s", prog->name, why);
            return -1;
        }
        svc->has_user = 1;
    }
    if (prog->out.path) {
        if (init_log_open(&svc->out_log, prog->out.path, prog->out.maxbytes, prog->out.backups)
            < 0) {
            snprintf(err, errlen, "[program:%s]: open %s: %s", prog->name, prog->out.path,
                     strerror(errno));
            return -1;
        }
        svc->out = &svc->out_log;
    }
    if (prog->err.path && prog->out.path && strcmp(prog->err.path, prog->out.path) == 0) {
        /* One file for both streams: one writer, or rotation would race. */
        svc->err = svc->out;
    } else if (prog->err.path) {
        if (init_log_open(&svc->err_log, prog->err.path, prog->err.maxbytes, prog->err.backups)
            < 0) {
            snprintf(err, errlen, "[program:%s]: open %s: %s", prog->name, prog->err.path,
                     strerror(errno));
            return -1;
        }
        svc->err = &svc->err_log;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Runs in the child; never returns. */
__attribute__((noreturn)) static void exec_service(struct service *svc, int out_w, int err_w)
{
    const struct init_program *prog = svc->prog;
    init_reset_signals();
    /* Its own process group, so stopping it reaches what it spawned. */
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    if (out_w >= 0)
        dup2(out_w, STDOUT_FILENO);
    if (err_w >= 0)
        dup2(err_w, STDERR_FILENO);
    for (char **e = prog->environment; e && *e; e++)
        putenv(*e);
    if (svc->has_user) {
        if (setgroups(svc->user.n_groups, svc->user.groups) < 0 || setgid(svc->user.gid) < 0
            || setuid(svc->user.uid) < 0) {
            dprintf(STDERR_FILENO, "brig-init: %s: switch to user %s: %s\n", prog->name, prog->user,
                    strerror(errno));
            _exit(126);
        }
        setenv("HOME", svc->user.home, 1);
        if (svc->user.name[0]) {
            setenv("USER", svc->user.name, 1);
            setenv("LOGNAME", svc->user.name, 1);
        }
    }
    if (prog->directory && chdir(prog->directory) < 0) {
        dprintf(STDERR_FILENO, "brig-init: %s: chdir %s: %s\n", prog->name, prog->directory,
                strerror(errno));
        _exit(126);
    }
    execvp(svc->argv[0], svc->argv);
    int e = errno;
    dprintf(STDERR_FILENO, "brig-init: %s: exec %s: %s\n", prog->name, svc->argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

void service_start(struct service *svc, int64_t now)
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 };
    svc->started_ms = now;
    if ((svc->out && pipe2(out, O_CLOEXEC) < 0) || (svc->err && pipe2(err, O_CLOEXEC) < 0)) {
        fprintf(stderr, "brig-init: %s: pipe: %s\n", svc->prog->name, strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "brig-init: %s: fork: %s\n", svc->prog->name, strerror(errno));
        goto fail;
    }
    if (pid == 0)
        exec_service(svc, out[1], svc->err == svc->out ? out[1] : err[1]);
    /* Both sides set the group, so a signal sent right after fork reaches it. */
    setpgid(pid, pid);
    svc->pid = pid;
    svc->state = SERVICE_RUNNING;
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&svc->out_pipe);
    close_fd(&svc->err_pipe);
    svc->out_pipe = out[0];
    svc->err_pipe = err[0];
    return;
fail:
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&err[0]);
    close_fd(&err[1]);
    service_exited(svc, 127 << 8, 0, now);
}

int64_t service_backoff_ms(unsigned failures)
{
    int64_t ms = 1000;
    for (unsigned i = 1; i < failures && ms < INIT_BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < INIT_BACKOFF_MAX_MS ? ms : INIT_BACKOFF_MAX_MS;
}

void service_exited(struct service *svc, int status, int stopping, int64_t now)
{
    const struct init_program *prog = svc->prog;
    char what[128];
    svc->pid = 0;
    if (stopping) {
        svc->state = SERVICE_STOPPED;
        return;
    }
    fprintf(stderr, "brig-init: %s: %s\n", prog->name,
            init_describe_status(status, what, sizeof what));

    int expected = WIFEXITED(status) && prog->exitcodes[WEXITSTATUS(status)];
    int restart = prog->autorestart == INIT_RESTART_TRUE
                  || (prog->autorestart == INIT_RESTART_UNEXPECTED && !expected);
    if (!restart) {
        svc->state = SERVICE_STOPPED;
        return;
    }
    if (now - svc->started_ms < (int64_t) prog->startsecs * 1000) {
        svc->failures++;
        if (svc->failures > prog->startretries) {
            fprintf(stderr, "brig-init: %s: exited within %us %u times in a row, not restarted\n",
                    prog->name, prog->startsecs, svc->failures);
            svc->state = SERVICE_FATAL;
            return;
        }
    } else {
        svc->failures = 0;
    }
    svc->state = SERVICE_BACKOFF;
    svc->restart_at_ms = now + service_backoff_ms(svc->failures);
}

void service_pump(struct service *svc, int fd)
{
    struct init_log *log = fd == svc->out_pipe ? svc->out : svc->err;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close_fd(fd == svc->out_pipe ? &svc->out_pipe : &svc->err_pipe);
        return;
    }
    if (init_log_write(log, buf, n) < 0)
        fprintf(stderr, "brig-init: %s: write %s: %s\n", svc->prog->name, log->path,
                strerror(errno));
}

void service_signal(struct service *svc, int sig)
{
    if (svc->pid > 0 && kill(-svc->pid, sig) < 0 && errno == ESRCH)
        kill(svc->pid, sig);
}

void service_release(struct service *svc)
{
    close_fd(&svc->out_pipe);
    close_fd(&svc->err_pipe);
    init_log_close(&svc->out_log);
    init_log_close(&svc->err_log);
    init_strv_free(svc->argv);
    svc->argv = NULL;
}
