#define _GNU_SOURCE
/* A process run in a sandbox, as exec.h tells: the front ends' options
 * checked and completed with the sandbox's defaults, the handler imposing
 * its rules in brig_container_exec, and the plain wait the API's workers
 * use. */
#include "sandbox/exec.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "container/container.h"
#include "sandbox/exec_port.h"
#include "sandbox/lifetime.h"
#include "sandbox/profile.h"
#include "sandbox/sandbox.h"
#include "spec/spec.h"

#define WHAT "sandbox exec"

static int check_options(const struct brig_sandbox_exec_options *o, brig_error_t *err)
{
    if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0')
        return brig_error_kind(err, BRIG_E_INPUT, WHAT ": missing the command to run");
    if (o->cwd && o->cwd[0] != '/')
        return brig_error_kind(err, BRIG_E_INPUT, WHAT ": cwd `%s` is not an absolute path",
                               o->cwd);
    if (o->tty && o->pty_master == NULL)
        return brig_error_kind(err, BRIG_E_INPUT,
                               WHAT ": a terminal needs somewhere to put its master");
    return 0;
}

static size_t count(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* Every process in a sandbox runs as its user (1000:1000 `sandbox`, or
 * its template's), whoever asks: `user` may only name it. */
static int check_user(const char *user, const struct brig_process *init, brig_error_t *err)
{
    if (user == NULL)
        return 0;
    static const struct brig_process none;
    const struct brig_process *p = init ? init : &none;
    uint32_t uid = init ? p->user.uid : BRIG_SANDBOX_UID;
    uint32_t gid = init ? p->user.gid : BRIG_SANDBOX_GID;
    char id[24], ids[48];
    snprintf(id, sizeof id, "%u", uid);
    snprintf(ids, sizeof ids, "%u:%u", uid, gid);
    const char *name = NULL;
    for (size_t i = 0; i < p->env.n && name == NULL; i++)
        if (strncmp(p->env.v[i], "USER=", 5) == 0)
            name = p->env.v[i] + 5;
    if (strcmp(user, id) == 0 || strcmp(user, ids) == 0
        || strcmp(user, name ? name : "sandbox") == 0)
        return 0;
    return brig_error_kind(err, BRIG_E_INPUT,
                           "user `%s`: a sandbox runs every process as its user %s (%s)", user,
                           name ? name : "sandbox", ids);
}

/* The container's process with the caller's argv, env, cwd and terminal;
 * the rest (user, capabilities, limits) the handler imposes. The cwd is
 * the init's (/mnt/data, or the template's WorkingDir) unless asked. */
static int start(const struct brig_sandbox_exec_options *o, struct brig_opened_container *opened,
                 const struct brig_spec *spec, pid_t *pid, brig_error_t *err)
{
    static const struct brig_process none;
    struct brig_process p = spec && spec->process ? *spec->process : none;
    p.args.v = (char **) o->argv;
    p.args.n = count(o->argv);
    p.terminal = o->tty;
    p.terminal_raw_newlines = o->tty && o->pty_raw_newlines;
    p.has_console_size = o->tty && o->pty_rows > 0;
    p.console_height = o->pty_rows;
    p.console_width = o->pty_columns;
    if (check_user(o->user, spec ? spec->process : NULL, err) < 0)
        return -1;
    p.cwd = (char *) (o->cwd ? o->cwd : p.cwd && p.cwd[0] ? p.cwd : BRIG_SANDBOX_DATA);
    cleanup_free char **env = brig_env_overlay(&p.env, o->env, count(o->env), &p.env.n);
    if (env == NULL)
        return brig_error_set(err, ENOMEM, WHAT);
    p.env.v = env;
    struct brig_exec_options eo = {
        .root = o->root,
        .id = o->id,
        .process = &p,
        .pty_master = o->tty ? o->pty_master : NULL,
        .stdio = o->stdio,
        .spec = spec,
        .spec_from_state = true, /* brig_sandbox_exec_start's brig_container_load_spec */
        .opened = opened,
    };
    return brig_container_exec(&eo, pid, err);
}

/* Through the init's port when the sandbox has one and the exec needs
 * nothing the init can't give (a terminal, a user to check): 1 when it
 * can't, and the caller goes the classic way. */
static int start_at_port(const struct brig_sandbox_exec_options *o,
                         const struct brig_opened_container *c, struct brig_sandbox_exec *ex,
                         brig_error_t *err)
{
    if (o->tty || o->user)
        return 1;
    struct brig_strv forced = { 0 };
    int r = brig_sandbox_port_prepare(c->dir_fd, &forced, err);
    /* The caller's variables, then those it can't change over them. */
    size_t n = count(o->env);
    cleanup_free char **env = r > 0 ? calloc(n + forced.n + 1, sizeof *env) : NULL;
    if (r > 0 && env == NULL)
        r = brig_error_set(err, ENOMEM, WHAT);
    if (r > 0) {
        for (size_t i = 0; i < n; i++)
            env[i] = o->env[i];
        for (size_t i = 0; i < forced.n; i++)
            env[n + i] = forced.v[i];
        r = brig_sandbox_port_start(c, o->id, o->argv, env, o->cwd, o->stdio, ex, err);
    }
    brig_strv_free(&forced);
    return r;
}

int brig_sandbox_exec_start(const struct brig_sandbox_exec_options *o, struct brig_sandbox_exec *ex,
                            brig_error_t *err)
{
    if (check_options(o, err) < 0)
        return -1;
    *ex = (struct brig_sandbox_exec){ .pid = -1, .pidfd = -1, .port = -1 };
    ex->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
    /* The sandbox's own default, from its lifetime record (none for a
     * sandbox made without one). */
    struct brig_sandbox_lifetime l = { 0 };
    brig_error_t ignored = NULL;
    if (o->timeout_ms == 0 && brig_sandbox_lifetime_read(o->id, &l, &ignored) == 0)
        ex->timeout_ms = l.exec_timeout_ms > INT32_MAX ? INT32_MAX : (int) l.exec_timeout_ms;
    brig_sandbox_lifetime_clear(&l);
    brig_error_release(&ignored);
    brig_sandbox_mark_active(o->id);
    struct brig_opened_container opened = { -1, NULL };
    cleanup_close int root_fd = -1;
    struct brig_spec *spec = NULL;
    opened.dir_fd = brig_container_open(o->root, o->id, &root_fd, &opened.state, err);
    int r = opened.dir_fd < 0 ? -1 : start_at_port(o, &opened, ex, err);
    if (r > 0)
        r = brig_container_load_spec(opened.dir_fd, &spec, err);
    if (r == 0 && ex->port < 0)
        r = start(o, &opened, spec, &ex->pid, err);
    if (r < 0 && opened.dir_fd >= 0) {
        /* The sandbox is there: a command or a cwd it hasn't is what the
         * caller asked for. */
        int e = (*err)->errnum;
        if (e == ENOENT || e == ENOTDIR || e == EACCES || e == ELOOP)
            (*err)->errnum = BRIG_E_INPUT;
    }
    if (opened.dir_fd >= 0)
        close(opened.dir_fd);
    brig_state_free(opened.state);
    brig_spec_free(spec);
    if (r < 0 && (*err)->errnum == ENOENT && opened.dir_fd < 0)
        return brig_error_kind(err, ENOENT, WHAT ": no sandbox `%s`", o->id);
    if (r < 0)
        return brig_error_wrap(err, WHAT), -1;
    return 0;
}

void brig_sandbox_exec_kill_group(const struct brig_sandbox_exec *ex)
{
    if (ex->port >= 0) {
        brig_sandbox_port_kill_group(ex);
        return;
    }
    kill(-ex->pid, SIGKILL);
    kill(ex->pid, SIGKILL);
}

void brig_sandbox_exec_signal(const struct brig_sandbox_exec *ex, int sig)
{
    if (ex->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, ex->pidfd, sig, NULL, 0);
    else
        kill(ex->pid, sig);
}

int brig_sandbox_exec_port_status(const struct brig_sandbox_exec *ex, brig_error_t *err)
{
    return brig_sandbox_port_status(ex, err);
}

void brig_sandbox_exec_release(struct brig_sandbox_exec *ex)
{
    if (ex->pidfd >= 0)
        close(ex->pidfd);
    if (ex->port >= 0)
        close(ex->port);
    ex->pidfd = ex->port = -1;
}

/* Polls until the process exits (its pidfd, or the init's port says
 * so), the time is up (timeout_ms 0: never) or hangup_fd (-1: none)
 * reports an error or a hangup. */
static int wait_exit_or_end(const struct brig_sandbox_exec *ex, int timeout_ms, int hangup_fd,
                            bool *timed_out, brig_error_t *err)
{
    cleanup_close int pfd = ex->port >= 0 ? -1 : (int) syscall(SYS_pidfd_open, ex->pid, 0);
    if (ex->port < 0 && pfd < 0)
        return brig_error_set(err, errno, WHAT ": pidfd_open");
    struct timespec deadline;
    brig_deadline_in(&deadline, timeout_ms);
    for (;;) {
        struct pollfd p[2] = { { .fd = ex->port >= 0 ? ex->port : pfd, .events = POLLIN },
                               { .fd = hangup_fd } };
        int r = poll(p, hangup_fd >= 0 ? 2 : 1, timeout_ms > 0 ? brig_ms_until(&deadline) : -1);
        if (r < 0 && errno != EINTR)
            return brig_error_set(err, errno, WHAT ": poll");
        if (r > 0 && p[0].revents)
            return 0;
        if (r > 0 && (p[1].revents & (POLLERR | POLLHUP | POLLNVAL))) {
            brig_sandbox_exec_kill_group(ex);
            return 0;
        }
        if (r == 0) {
            brig_sandbox_exec_kill_group(ex);
            *timed_out = true;
            return 0;
        }
    }
}

int brig_sandbox_exec_wait(const struct brig_sandbox_exec *ex, int hangup_fd, bool *timed_out,
                           brig_error_t *err)
{
    *timed_out = false;
    if ((ex->timeout_ms > 0 || hangup_fd >= 0)
        && wait_exit_or_end(ex, ex->timeout_ms, hangup_fd, timed_out, err) < 0)
        return -1;
    int status;
    if (ex->port >= 0) {
        if ((status = brig_sandbox_port_status(ex, err)) < 0)
            return -1;
    } else {
        int w;
        while (waitpid(ex->pid, &w, 0) < 0)
            if (errno != EINTR)
                return brig_error_set(err, errno, WHAT ": wait for %d", (int) ex->pid);
        status = WIFEXITED(w) ? WEXITSTATUS(w) : 128 + WTERMSIG(w);
    }
    return *timed_out ? 124 : status;
}
