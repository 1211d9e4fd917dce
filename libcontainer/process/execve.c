#define _GNU_SOURCE
/* What every container process needs right before execve, init or exec'd:
 * its executable found in the container's PATH, its environment, and no
 * fd of the runtime left open. */
#include "process/process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process/identity.h"
#include "base/cleanup.h"
#include "process/seccomp.h"
#include "process/sync.h"
#include "process/terminal.h"
#include "base/utils.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *env_get(const struct brig_strv *env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], name, len) == 0 && env->v[i][len] == '=')
            return env->v[i] + len + 1;
    return NULL;
}

/* args[0] is looked up in the container's PATH (from process.env), like
 * execvp would do inside the container, so a missing program fails create
 * instead of surfacing only after start. */
int brig_process_find_executable(const struct brig_process *p, char **out, brig_error_t *err)
{
    const char *arg0 = p->args.v[0];
    if (strchr(arg0, '/')) {
        if (!brig_is_executable_file(arg0))
            return brig_exec_failure(arg0, errno, err);
        return (*out = strdup(arg0)) ? 0 : brig_error_set(err, ENOMEM, "exec");
    }
    char candidate[PATH_MAX];
    if (brig_find_in_path(arg0, env_get(&p->env, "PATH"), candidate, sizeof candidate))
        return (*out = strdup(candidate)) ? 0 : brig_error_set(err, ENOMEM, "exec");
    return brig_error_kind(err, ENOENT, "exec `%s`: executable file not found in $PATH", arg0);
}

/* process.env, plus HOME from the container's /etc/passwd when missing
 * (what a login would give and what runc users rely on). */
char **brig_process_build_env(const struct brig_process *p)
{
    bool has_home = env_get(&p->env, "HOME") != NULL;
    char **env = calloc(p->env.n + 4, sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < p->env.n; i++)
        env[i] = p->env.v[i];
    if (has_home)
        return env;
    char home[PATH_MAX];
    if (brig_passwd_lookup("/etc/passwd", p->user.uid, NULL, 0, home, sizeof home) < 0 || !*home)
        strcpy(home, "/");
    if (asprintf(&env[p->env.n], "HOME=%s", home) < 0)
        env[p->env.n] = NULL;
    return env;
}

/* Nothing of the runtime may survive into the container: every fd past
 * the preserved ones is marked close-on-exec. */
void brig_process_cloexec_from(int first)
{
    if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
        return;
    cleanup_dir DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int fd = atoi(de->d_name);
        if (fd >= first && fd != dirfd(d))
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
}

/* CVE-2024-21626: a cwd like /proc/self/fd/N names an fd the runtime still
 * holds, and would put the process in a host directory, outside the
 * container's root, from where `..` walks the host. The kernel marks a
 * directory outside the root "(unreachable)"; the raw getcwd shows it. */
static int check_cwd_inside(const char *cwd, brig_error_t *err)
{
    char buf[PATH_MAX];
    long n = syscall(SYS_getcwd, buf, sizeof buf);
    if (n < 0)
        return brig_error_set(err, errno, "cwd `%s`", cwd);
    if (buf[0] != '/')
        return brig_error_set(err, EPERM, "cwd `%s` is outside the container's root", cwd);
    return 0;
}

static int load_filter(struct brig_seccomp_filter *filter, int sync_fd, brig_error_t *err)
{
    int notify_fd = -1;
    if (brig_seccomp_load(filter, &notify_fd, err) < 0)
        return brig_error_wrap(err, "seccomp");
    if (notify_fd < 0)
        return 0;
    int r = brig_sync_send_fd(sync_fd, BRIG_SYNC_SECCOMP_FD, notify_fd, err);
    close(notify_fd);
    return r;
}

int brig_process_drop_and_filter(const struct brig_process *p, struct brig_seccomp_filter *filter,
                                 int sync_fd, brig_error_t *err)
{
    if (filter && !p->no_new_privileges && load_filter(filter, sync_fd, err) < 0)
        return -1;
    if (brig_process_drop_privileges(p, err) < 0)
        return -1;
    if (filter && p->no_new_privileges && load_filter(filter, sync_fd, err) < 0)
        return -1;
    return 0;
}

int brig_process_become(const struct brig_process *p, struct brig_seccomp_filter *filter,
                        int sync_fd, char **exe, char ***env, brig_error_t *err)
{
    if (p->terminal && brig_terminal_setup_init(p, sync_fd, err) < 0)
        return brig_error_wrap(err, "terminal");
    const char *cwd = p->cwd ? p->cwd : "/";
    /* Checked before the filter is loaded where possible: a spec may
     * refuse getcwd to the process (the runtime-tools suite does). */
    bool cwd_done = chdir(cwd) == 0;
    if (cwd_done && check_cwd_inside(cwd, err) < 0)
        return -1;
    if (brig_process_drop_and_filter(p, filter, sync_fd, err) < 0)
        return -1;
    if (!cwd_done && chdir(cwd) < 0)
        return brig_error_set(err, errno, "chdir to cwd `%s`", cwd);
    if (!cwd_done && check_cwd_inside(cwd, err) < 0)
        return -1;
    if (brig_process_find_executable(p, exe, err) < 0)
        return -1;
    if ((*env = brig_process_build_env(p)) == NULL)
        return brig_error_set(err, ENOMEM, "environment");
    return 0;
}

int brig_process_take_stdio(const int stdio[3], brig_error_t *err)
{
    /* Each moved above 2 first: a given fd numbered 0-2 must not be
     * overwritten by another's dup2 before its own turn. */
    int high[3] = { -1, -1, -1 };
    int r = 0;
    for (int i = 0; i < 3 && r == 0; i++)
        if ((high[i] = fcntl(stdio[i], F_DUPFD_CLOEXEC, 3)) < 0)
            r = brig_error_set(err, errno, "stdio: fd %d", stdio[i]);
    /* dup2 leaves the new 0-2 without close-on-exec: the process keeps them. */
    for (int i = 0; i < 3 && r == 0; i++)
        if (dup2(high[i], i) < 0)
            r = brig_error_set(err, errno, "stdio: fd %d as %d", stdio[i], i);
    for (int i = 0; i < 3; i++)
        if (high[i] >= 0)
            close(high[i]);
    return r;
}
