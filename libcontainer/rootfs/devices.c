/* /dev inside the container: the DEVICE, DEV_LINK and DEV_SHM steps of a
 * rootfs plan. Runs before pivot_root, so the host's /proc and /dev are
 * still reachable: /proc/self/fd/N gives chmod a path that can't be
 * swapped, and in a user namespace, where mknod is refused, the host's
 * device nodes are bind-mounted onto empty files. */
#define _GNU_SOURCE
#include "rootfs/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"

int brig_rootfs_split_node_path(const char *path, char **dir, char **name, brig_error_t *err)
{
    *dir = *name = NULL;
    cleanup_free char *clean = brig_path_clean(path);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, "device `%s`", path);
    char *slash = strrchr(clean, '/');
    const char *base = slash ? slash + 1 : clean;
    /* The plan refuses such a path; checked again rather than trusted. */
    if (*base == '\0' || strcmp(base, ".") == 0)
        return brig_error_set(err, EINVAL, "device `%s`: not a file name", path);
    cleanup_free char *last = strdup(base);
    if (last == NULL)
        return brig_error_set(err, ENOMEM, "device `%s`", path);
    if (slash != NULL)
        *(slash == clean ? slash + 1 : slash) = '\0';
    else
        strcpy(clean, ".");
    *dir = brig_steal_ptr(clean);
    *name = brig_steal_ptr(last);
    return 0;
}

static int set_owner_and_mode(int fd, const struct stat *st, const struct brig_rootfs_node *n)
{
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    /* The executor cleared the umask, so mknod gave most modes exactly;
     * only set-id and sticky bits are left to chmod. */
    if ((st->st_mode & 07777) != (n->mode & 07777) && chmod(at, n->mode & 07777) < 0)
        return -1;
    if ((n->has_uid || n->has_gid)
        && fchownat(fd, "", n->has_uid ? n->uid : (uid_t) -1, n->has_gid ? n->gid : (gid_t) -1,
                    AT_EMPTY_PATH)
               < 0)
        return -1;
    return 0;
}

/* A user namespace may not mknod: an empty file with the host's node bound
 * on top gives the same device (ownership and mode are the host's). */
static int open_host_node(const struct brig_rootfs_node *n, const char *path)
{
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == n->type
        && st.st_rdev == makedev(n->major, n->minor))
        return fd;
    close(fd);
    errno = ENODEV;
    return -1;
}

/* The host's node: at the same path, or else under udev's /dev/char/M:m
 * and /dev/block/M:m links. */
static int find_host_node(const char *path, const struct brig_rootfs_node *n)
{
    char alt[48];
    int fd = open_host_node(n, path);
    if (fd >= 0)
        return fd;
    int saved = errno;
    snprintf(alt, sizeof alt, "/dev/%s/%u:%u", n->type == S_IFBLK ? "block" : "char", n->major,
             n->minor);
    fd = open_host_node(n, alt);
    errno = fd < 0 ? saved : errno;
    return fd;
}

static int bind_host_node(int parent, const char *name, const char *path,
                          const struct brig_rootfs_node *n, brig_error_t *err)
{
    cleanup_close int src = find_host_node(path, n);
    if (src < 0)
        return brig_error_set(err, errno, "device `%s` (%u:%u): no such node on the host to bind",
                              path, n->major, n->minor);
    cleanup_close int file = openat(parent, name,
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (file < 0)
        return brig_error_set(err, errno, "device `%s`: create", path);
    cleanup_close int dst = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (dst < 0)
        return brig_error_set(err, errno, "device `%s`: open", path);
    char from[BRIG_FD_PATH_MAX], to[BRIG_FD_PATH_MAX];
    brig_fd_path(src, from);
    brig_fd_path(dst, to);
    if (mount(from, to, NULL, MS_BIND, NULL) < 0)
        return brig_error_set(err, errno, "device `%s`: bind mount from the host", path);
    return 0;
}

int brig_rootfs_do_device(int parent, const char *name, const struct brig_rootfs_step *s,
                          brig_error_t *err)
{
    const struct brig_rootfs_node *n = &s->node;
    if (n->from_host) {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return 0;
        return bind_host_node(parent, name, s->path, n, err);
    }
    /* Already there (the image's own /dev, or an earlier mount): leave it,
     * as runc does. EEXIST says so for any kind of entry, a dangling
     * symlink included. */
    if (mknodat(parent, name, n->type | (n->mode & 0777), makedev(n->major, n->minor)) < 0)
        return errno == EEXIST ? 0 : brig_error_set(err, errno, "device `%s`: mknod", s->path);
    /* With the umask cleared, mknod made the node as asked unless an owner
     * or set-id and sticky bits are wanted: then nothing is left to change,
     * and nothing is looked up again. */
    if ((n->mode & 07000) == 0 && !n->has_uid && !n->has_gid)
        return 0;
    struct stat st;
    cleanup_close int fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return brig_error_set(err, errno, "device `%s`: open", s->path);
    if ((st.st_mode & S_IFMT) != n->type)
        return brig_error_set(err, EEXIST, "device `%s`: replaced while being created", s->path);
    if (set_owner_and_mode(fd, &st, n) < 0)
        return brig_error_set(err, errno, "device `%s`: set owner and mode", s->path);
    return 0;
}

int brig_rootfs_do_dev_link(int parent, const char *name, const struct brig_rootfs_step *s,
                            brig_error_t *err)
{
    if (symlinkat(s->source, parent, name) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "symlink `%s` -> `%s`", s->path, s->source);
    return 0;
}

/* /dev/shm for POSIX shared memory, world-writable and sticky like /tmp,
 * when no mount put one there. */
int brig_rootfs_do_dev_shm(int parent, const char *name, const struct brig_rootfs_step *s,
                           brig_error_t *err)
{
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    if (mkdirat(parent, name, 0755) < 0)
        return errno == EEXIST ? 0 : brig_error_set(err, errno, "create `%s`", s->path);
    cleanup_close int fd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    if (fd < 0 || chmod(at, 01777) < 0)
        return brig_error_set(err, errno, "chmod `%s`", s->path);
    return 0;
}
