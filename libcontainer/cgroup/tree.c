#define _GNU_SOURCE
/* What both cgroupfs backends do to a tree of cgroup directories: list
 * the processes in it, and remove it from the leaves up, waiting a moment
 * for processes the kernel is still finishing off. */
#include "cgroup/backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"

long long brig_cgroup_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int brig_cgroup_first_byte(int dir_fd, const char *file)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file_at(dir_fd, file, &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    return (unsigned char) text[0];
}

void brig_cgroup_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

struct pid_list {
    pid_t *v;
    size_t n, cap;
};

static int pid_list_add(struct pid_list *l, pid_t pid)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        pid_t *bigger = realloc(l->v, cap * sizeof *bigger);
        if (bigger == NULL)
            return -1;
        l->v = bigger;
        l->cap = cap;
    }
    l->v[l->n++] = pid;
    return 0;
}

/* cgroup.procs of dfd and of every cgroup below it. Consumes dfd. */
static int collect_pids(int dfd, struct pid_list *l, brig_error_t *err)
{
    cleanup_dir DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return brig_error_set(err, errno, "cgroup: list");
    }
    cleanup_free char *procs = NULL;
    if (brig_read_file_at(dirfd(d), "cgroup.procs", &procs, NULL, err) < 0) {
        /* A child cgroup removed while we walk: nothing in it any more. */
        if ((*err)->errnum != ENOENT && (*err)->errnum != ENODEV)
            return -1;
        brig_error_release(err);
        return 0;
    }
    for (char *p = procs; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid_list_add(l, (pid_t) pid) < 0)
            return brig_error_set(err, ENOMEM, "cgroup: list");
        p = end + strspn(end, "\n");
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (child < 0)
            continue;
        if (collect_pids(child, l, err) < 0)
            return -1;
    }
    return 0;
}

int brig_cgroup_tree_pids(int dir_fd, pid_t **out, size_t *n, brig_error_t *err)
{
    struct pid_list l = { NULL, 0, 0 };
    int dfd = dup(dir_fd);
    if (dfd < 0)
        return brig_error_set(err, errno, "cgroup: list");
    if (collect_pids(dfd, &l, err) < 0) {
        free(l.v);
        return -1;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

/* rmdir, retrying while the kernel still finishes off exited processes. */
int brig_cgroup_rmdir_patiently(int parent_fd, const char *name, long long deadline)
{
    for (;;) {
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY || brig_cgroup_now_ms() > deadline)
            return -1;
        brig_cgroup_sleep_ms(10);
    }
}

/* Child cgroups the container made (with its cgroup namespace) go first:
 * a cgroup with children can't be removed. Consumes dfd. */
int brig_cgroup_remove_children(int dfd, const char *path, long long deadline, brig_error_t *err)
{
    cleanup_dir DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return brig_error_set(err, errno, "cgroup: remove `%s`", path);
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (child < 0)
            continue;
        if (brig_cgroup_remove_children(child, path, deadline, err) < 0)
            return -1;
        if (brig_cgroup_rmdir_patiently(dirfd(d), de->d_name, deadline) < 0)
            return brig_error_set(err, errno, "cgroup: remove `%s/%s`", path, de->d_name);
    }
    return 0;
}
