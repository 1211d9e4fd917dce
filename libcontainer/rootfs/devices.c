/* /dev inside the container. Runs before pivot_root, so the host's /proc
 * and /dev are still reachable: /proc/self/fd/N gives chmod a path that
 * can't be swapped, and in a user namespace, where mknod is refused, the
 * host's device nodes are bind-mounted onto empty files. */
#define _GNU_SOURCE
#include "rootfs/devices.h"

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

struct node {
    const char *path;
    mode_t type; /* S_IFCHR, S_IFBLK, S_IFIFO */
    unsigned int major, minor;
    mode_t mode;
    bool has_uid, has_gid;
    uid_t uid;
    gid_t gid;
};

static const struct node default_nodes[] = {
    { "/dev/null", S_IFCHR, 1, 3, 0666, false, false, 0, 0 },
    { "/dev/zero", S_IFCHR, 1, 5, 0666, false, false, 0, 0 },
    { "/dev/full", S_IFCHR, 1, 7, 0666, false, false, 0, 0 },
    { "/dev/random", S_IFCHR, 1, 8, 0666, false, false, 0, 0 },
    { "/dev/urandom", S_IFCHR, 1, 9, 0666, false, false, 0, 0 },
    { "/dev/tty", S_IFCHR, 5, 0, 0666, false, false, 0, 0 },
};

/* No /dev/core -> /proc/kcore: kcore is masked in every default spec, so
 * the link would only ever point at /dev/null or at kernel memory; crun
 * doesn't make it either, and nothing in a container needs it. */
static const struct {
    const char *path, *target;
} default_links[] = {
    { "/dev/ptmx", "pts/ptmx" },
    { "/dev/fd", "/proc/self/fd" },
    { "/dev/stdin", "/proc/self/fd/0" },
    { "/dev/stdout", "/proc/self/fd/1" },
    { "/dev/stderr", "/proc/self/fd/2" },
};

/* Resolves the parent directory of `path` inside the root (creating it) and
 * returns the last component in *name. */
static int open_parent(int root_fd, const char *path, char **name, brig_error_t *err)
{
    cleanup_free char *clean = brig_path_clean(path);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, "device `%s`", path);
    char *slash = strrchr(clean, '/');
    const char *base = slash ? slash + 1 : clean;
    if (*base == '\0' || strcmp(base, ".") == 0)
        return brig_error_set(err, EINVAL, "device `%s`: not a file name", path);
    *name = strdup(base);
    if (*name == NULL)
        return brig_error_set(err, ENOMEM, "device `%s`", path);
    if (slash != NULL)
        *(slash == clean ? slash + 1 : slash) = '\0';
    else
        strcpy(clean, ".");
    int fd = brig_path_mkdir_in_root(root_fd, clean, 0755, err);
    if (fd < 0) {
        free(brig_steal_ptr(*name));
        return brig_error_wrap(err, "device `%s`", path);
    }
    return fd;
}

static int set_owner_and_mode(int fd, const struct stat *st, const struct node *n)
{
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    /* brig_devices_create clears the umask, so mknod gave most modes
     * exactly; only set-id and sticky bits are left to chmod. */
    if ((st->st_mode & 07777) != (n->mode & 07777) && chmod(at, n->mode & 07777) < 0)
        return -1;
    if ((n->has_uid || n->has_gid) &&
        fchownat(fd, "", n->has_uid ? n->uid : (uid_t) -1, n->has_gid ? n->gid : (gid_t) -1,
                 AT_EMPTY_PATH) < 0)
        return -1;
    return 0;
}

/* A user namespace may not mknod: an empty file with the host's node bound
 * on top gives the same device (ownership and mode are the host's). */
static int open_host_node(const struct node *n, const char *path)
{
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == n->type &&
        st.st_rdev == makedev(n->major, n->minor))
        return fd;
    close(fd);
    errno = ENODEV;
    return -1;
}

/* The host's node for n: at the same path, or else under udev's
 * /dev/char/M:m and /dev/block/M:m links. */
static int find_host_node(const struct node *n)
{
    char alt[48];
    int fd = open_host_node(n, n->path);
    if (fd >= 0)
        return fd;
    int saved = errno;
    snprintf(alt, sizeof alt, "/dev/%s/%u:%u", n->type == S_IFBLK ? "block" : "char", n->major,
             n->minor);
    fd = open_host_node(n, alt);
    errno = fd < 0 ? saved : errno;
    return fd;
}

static int bind_host_node(int parent, const char *name, const struct node *n, brig_error_t *err)
{
    cleanup_close int src = find_host_node(n);
    if (src < 0)
        return brig_error_set(err, errno, "device `%s` (%u:%u): no such node on the host to bind",
                              n->path, n->major, n->minor);
    cleanup_close int file =
        openat(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (file < 0)
        return brig_error_set(err, errno, "device `%s`: create", n->path);
    cleanup_close int dst = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (dst < 0)
        return brig_error_set(err, errno, "device `%s`: open", n->path);
    char from[BRIG_FD_PATH_MAX], to[BRIG_FD_PATH_MAX];
    brig_fd_path(src, from);
    brig_fd_path(dst, to);
    if (mount(from, to, NULL, MS_BIND, NULL) < 0)
        return brig_error_set(err, errno, "device `%s`: bind mount from the host", n->path);
    return 0;
}

static int create_node_in(int parent, const char *name, const struct node *n, bool in_userns,
                          brig_error_t *err)
{
    /* FIFOs need no privilege, even in a user namespace. */
    if (in_userns && n->type != S_IFIFO) {
        struct stat st;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return 0;
        return bind_host_node(parent, name, n, err);
    }
    /* Already there (the image's own /dev, or an earlier mount): leave it,
     * as runc does. EEXIST says so for any kind of entry, a dangling
     * symlink included. */
    if (mknodat(parent, name, n->type | (n->mode & 0777), makedev(n->major, n->minor)) < 0)
        return errno == EEXIST ? 0 : brig_error_set(err, errno, "device `%s`: mknod", n->path);
    /* With the umask cleared (brig_devices_create), mknod made the node as
     * asked unless an owner or set-id and sticky bits are wanted: then
     * nothing is left to change, and nothing is looked up again. */
    if ((n->mode & 07000) == 0 && !n->has_uid && !n->has_gid)
        return 0;
    struct stat st;
    cleanup_close int fd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return brig_error_set(err, errno, "device `%s`: open", n->path);
    if ((st.st_mode & S_IFMT) != n->type)
        return brig_error_set(err, EEXIST, "device `%s`: replaced while being created", n->path);
    if (set_owner_and_mode(fd, &st, n) < 0)
        return brig_error_set(err, errno, "device `%s`: set owner and mode", n->path);
    return 0;
}

static int create_node(int root_fd, const struct node *n, bool in_userns, brig_error_t *err)
{
    cleanup_free char *name = NULL;
    cleanup_close int parent = open_parent(root_fd, n->path, &name, err);
    if (parent < 0)
        return -1;
    return create_node_in(parent, name, n, in_userns, err);
}

/* /dev/shm for POSIX shared memory, world-writable and sticky like /tmp,
 * when no mount put one there. */
static int create_shm_dir(int dev_fd, brig_error_t *err)
{
    const char *name = "shm";
    struct stat st;
    if (fstatat(dev_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    if (mkdirat(dev_fd, name, 0755) < 0)
        return errno == EEXIST ? 0 : brig_error_set(err, errno, "create `/dev/shm`");
    cleanup_close int fd = openat(dev_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char at[BRIG_FD_PATH_MAX];
    brig_fd_path(fd, at);
    if (fd < 0 || chmod(at, 01777) < 0)
        return brig_error_set(err, errno, "chmod `/dev/shm`");
    return 0;
}

static int node_from_spec(const struct brig_device *d, struct node *n, brig_error_t *err)
{
    const char *t = d->type ? d->type : "";
    *n = (struct node) {
        .path = d->path,
        .mode = d->has_file_mode ? d->file_mode : 0666,
        .has_uid = d->has_uid, .uid = d->uid,
        .has_gid = d->has_gid, .gid = d->gid,
    };
    if (strcmp(t, "c") == 0 || strcmp(t, "u") == 0)
        n->type = S_IFCHR;
    else if (strcmp(t, "b") == 0)
        n->type = S_IFBLK;
    else if (strcmp(t, "p") == 0)
        n->type = S_IFIFO;
    else
        return brig_error_set(err, EINVAL, "device `%s`: unknown type `%s`", d->path, t);
    if (n->type != S_IFIFO && (d->major < 0 || d->minor < 0 || d->major > 0xfff ||
                               d->minor > 0xfffff))
        return brig_error_set(err, EINVAL, "device `%s`: bad major/minor %lld:%lld", d->path,
                              (long long) d->major, (long long) d->minor);
    n->major = n->type == S_IFIFO ? 0 : (unsigned int) d->major;
    n->minor = n->type == S_IFIFO ? 0 : (unsigned int) d->minor;
    return 0;
}

static bool spec_has_device(const struct brig_linux *lx, const char *path)
{
    for (size_t i = 0; lx && i < lx->n_devices; i++) {
        const char *dev_path = lx->devices[i].path;
        cleanup_free char *clean = dev_path ? brig_path_clean(dev_path) : NULL;
        if (clean && strcmp(clean, path) == 0)
            return true;
    }
    return false;
}

/* The default nodes, links and /dev/shm, all in the one /dev resolved once. */
static int create_defaults(int rootfs_fd, const struct brig_linux *lx, bool in_userns,
                           brig_error_t *err)
{
    cleanup_free char *first = NULL;
    cleanup_close int dev_fd = open_parent(rootfs_fd, default_nodes[0].path, &first, err);
    if (dev_fd < 0)
        return -1;
    for (size_t i = 0; i < sizeof default_nodes / sizeof default_nodes[0]; i++) {
        const struct node *n = &default_nodes[i];
        /* linux.devices may redefine a default (another mode or owner). */
        if (spec_has_device(lx, n->path))
            continue;
        if (create_node_in(dev_fd, n->path + strlen("/dev/"), n, in_userns, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < sizeof default_links / sizeof default_links[0]; i++) {
        const char *path = default_links[i].path, *target = default_links[i].target;
        if (symlinkat(target, dev_fd, path + strlen("/dev/")) < 0 && errno != EEXIST)
            return brig_error_set(err, errno, "symlink `%s` -> `%s`", path, target);
    }
    return create_shm_dir(dev_fd, err);
}

int brig_devices_create(int rootfs_fd, const struct brig_spec *spec, bool in_userns,
                        brig_error_t *err)
{
    const struct brig_linux *lx = spec->linux_;
    /* Modes exactly as given (the process gets its own umask later). */
    mode_t saved_umask = umask(0);
    int r = create_defaults(rootfs_fd, lx, in_userns, err);
    for (size_t i = 0; r == 0 && lx && i < lx->n_devices; i++) {
        struct node n;
        if (lx->devices[i].path == NULL)
            r = brig_error_set(err, EINVAL, "linux.devices[%zu]: no path", i);
        else if (node_from_spec(&lx->devices[i], &n, err) < 0 ||
                 create_node(rootfs_fd, &n, in_userns, err) < 0)
            r = -1;
    }
    umask(saved_umask);
    return r;
}
