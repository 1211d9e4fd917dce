#define _GNU_SOURCE
/* What every container process needs right before execve, init or exec'd:
 * its executable found in the container's PATH, its environment, and no
 * fd of the runtime left open. */
#include "process.h"

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

#include "caps.h"
#include "cleanup.h"
#include "seccomp.h"
#include "sync.h"
#include "terminal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *env_get(const struct brig_strv *env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], name, len) == 0 && env->v[i][len] == '=')
            return env->v[i] + len + 1;
    return NULL;
}

static bool is_executable(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return false;
    if (!S_ISREG(st.st_mode)) {
        errno = EACCES;
        return false;
    }
    return access(path, X_OK) == 0;
}

/* args[0] is looked up in the container's PATH (from process.env), like
 * execvp would do inside the container, so a missing program fails create
 * instead of surfacing only after start. */
int brig_process_find_executable(const struct brig_process *p, char **out, brig_error_t *err)
{
    const char *arg0 = p->args.v[0];
    if (strchr(arg0, '/')) {
        if (!is_executable(arg0))
            return brig_error_set(err, errno, "exec `%s`", arg0);
        return (*out = strdup(arg0)) ? 0 : brig_error_set(err, ENOMEM, "exec");
    }
    const char *path = env_get(&p->env, "PATH");
    cleanup_free char *dirs = strdup(path ? path : DEFAULT_PATH);
    if (dirs == NULL)
        return brig_error_set(err, ENOMEM, "exec");
    char *save = NULL;
    for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char candidate[PATH_MAX];
        if (snprintf(candidate, sizeof candidate, "%s/%s", *dir ? dir : ".", arg0)
            >= (int) sizeof candidate)
            continue;
        if (is_executable(candidate))
            return (*out = strdup(candidate)) ? 0 : brig_error_set(err, ENOMEM, "exec");
    }
    return brig_error_set(err, 0, "exec `%s`: executable file not found in $PATH", arg0);
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
    const char *home = "/";
    char line[1024], *found = NULL;
    cleanup_file FILE *f = fopen("/etc/passwd", "re");
    while (f && fgets(line, sizeof line, f)) {
        char *fields[7] = { 0 }, *save = NULL, *s = line;
        int n = 0;
        for (char *tok; n < 7 && (tok = strsep(&s, ":")); n++)
            fields[n] = tok;
        (void) save;
        if (n >= 6 && (uint32_t) strtoul(fields[2], NULL, 10) == p->user.uid) {
            found = fields[5];
            break;
        }
    }
    if (found && *found)
        home = found;
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
    bool cwd_done = chdir(cwd) == 0;
    if (brig_process_drop_and_filter(p, filter, sync_fd, err) < 0)
        return -1;
    if (!cwd_done && chdir(cwd) < 0)
        return brig_error_set(err, errno, "chdir to cwd `%s`", cwd);
    if (brig_process_find_executable(p, exe, err) < 0)
        return -1;
    if ((*env = brig_process_build_env(p)) == NULL)
        return brig_error_set(err, ENOMEM, "environment");
    return 0;
}
