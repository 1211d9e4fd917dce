/* The READONLY_PATH and MASK_PATH steps of a rootfs plan, after
 * pivot_root. Paths are the container's own, resolved inside the new "/". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "rootfs/steps.h"
#include "base/path.h"

/* An O_PATH fd of `path`, 0 when it does not exist (the spec's lists name
 * paths that only some kernels have), -1 on a real error. */
static int open_if_exists(int root_fd, const char *path, int *fd, brig_error_t *err)
{
    *fd = brig_path_try_open_in_root(root_fd, path, O_PATH, 0);
    if (*fd >= 0)
        return 1;
    if (errno == ENOENT)
        return 0;
    return brig_error_set(err, errno, "open `%s` in the container root", path);
}

int brig_rootfs_do_readonly_path(int root_fd, const char *path, brig_error_t *err)
{
    cleanup_close int fd = -1;
    int r = open_if_exists(root_fd, path, &fd, err);
    if (r <= 0)
        return r < 0 ? brig_error_wrap(err, "read-only path `%s`", path) : 0;
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    /* A bind onto itself gives the path a mount of its own to remount. */
    if (mount(at, at, NULL, MS_BIND | MS_REC, NULL) < 0)
        return brig_error_set(err, errno, "read-only path `%s`: bind", path);
    cleanup_close int top = brig_path_open_in_root(root_fd, path, O_PATH, 0, err);
    if (top < 0)
        return brig_error_wrap(err, "read-only path `%s`", path);
    brig_fd_path(top, at);
    if (brig_remount_bind_keeping(at, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, 0) < 0)
        return brig_error_set(err, errno, "read-only path `%s`: remount read-only", path);
    return 0;
}

/* The container's /dev/null, checked: masking a file with whatever the image
 * put at /dev/null could show its content instead of nothing. */
static int open_dev_null(int root_fd, int *null_fd, brig_error_t *err)
{
    if (*null_fd >= 0)
        return 0;
    int fd = brig_path_open_in_root(root_fd, "/dev/null", O_PATH, 0, err);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
        close(fd);
        return brig_error_set(err, 0, "`/dev/null` is not the null device");
    }
    *null_fd = fd;
    return 0;
}

int brig_rootfs_do_mask_path(int root_fd, const char *path, int *null_fd, brig_error_t *err)
{
    cleanup_close int fd = -1;
    int r = open_if_exists(root_fd, path, &fd, err);
    if (r <= 0)
        return r < 0 ? brig_error_wrap(err, "masked path `%s`", path) : 0;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return brig_error_set(err, errno, "masked path `%s`", path);
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    if (S_ISDIR(st.st_mode)) {
        /* An empty read-only tmpfs: the directory is there and shows nothing. */
        if (mount("tmpfs", at, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            return brig_error_set(err, errno, "masked path `%s`: mount tmpfs", path);
        return 0;
    }
    if (open_dev_null(root_fd, null_fd, err) < 0)
        return brig_error_wrap(err, "masked path `%s`", path);
    char null_at[BRIG_FD_PATH_MAX];
    brig_fd_path(*null_fd, null_at);
    if (mount(null_at, at, NULL, MS_BIND, NULL) < 0)
        return brig_error_set(err, errno, "masked path `%s`: bind /dev/null", path);
    return 0;
}
