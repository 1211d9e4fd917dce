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

/* An empty read-only tmpfs: the directory is there and shows nothing. One
 * for them all, the first one's bound on the later ones (empty and
 * read-only, it carries nothing between them): every superblock costs
 * each memory cgroup of the host a slot in its table of shrinkers. */
static int mask_dir(int root_fd, const char *path, const char *at, struct brig_mask_fds *fds,
                    brig_error_t *err)
{
    if (fds->empty_fd >= 0) {
        char empty_at[BRIG_FD_PATH_MAX];
        brig_fd_path(fds->empty_fd, empty_at);
        if (mount(empty_at, at, NULL, MS_BIND, NULL) < 0)
            return brig_error_set(err, errno, "masked path `%s`: bind the empty tmpfs", path);
        return 0;
    }
    if (mount("tmpfs", at, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return brig_error_set(err, errno, "masked path `%s`: mount tmpfs", path);
    /* Reached again by its path: the fd we have is of what it covers. */
    fds->empty_fd = brig_path_open_in_root(root_fd, path, O_PATH | O_DIRECTORY, 0, err);
    return fds->empty_fd < 0 ? brig_error_wrap(err, "masked path `%s`", path) : 0;
}

int brig_rootfs_do_mask_path(int root_fd, const char *path, struct brig_mask_fds *fds,
                             brig_error_t *err)
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
    if (S_ISDIR(st.st_mode))
        return mask_dir(root_fd, path, at, fds, err);
    if (open_dev_null(root_fd, &fds->null_fd, err) < 0)
        return brig_error_wrap(err, "masked path `%s`", path);
    char null_at[BRIG_FD_PATH_MAX];
    brig_fd_path(fds->null_fd, null_at);
    if (mount(null_at, at, NULL, MS_BIND, NULL) < 0)
        return brig_error_set(err, errno, "masked path `%s`: bind /dev/null", path);
    return 0;
}
