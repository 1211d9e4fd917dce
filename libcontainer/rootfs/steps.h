/* What each kind of step of a rootfs plan does to the kernel, one function
 * per kind; rootfs/execute.c walks a plan and calls them. Internal to
 * libcontainer/rootfs/. */
#ifndef BRIG_ROOTFS_STEPS_H
#define BRIG_ROOTFS_STEPS_H

#include "base/error.h"
#include "rootfs/plan.h"

/* mounts.c: one entry of mounts[], resolved inside the rootfs at root_fd. */
int brig_rootfs_do_mount(int root_fd, const struct brig_rootfs_step *s, brig_error_t *err);
/* mounts.c: the mount holding `rootfs` made private, when it is shared. */
int brig_rootfs_do_private_parent(const char *rootfs, brig_error_t *err);

/* cgroup_mount.c: a mount of type "cgroup" on a host with v1 hierarchies,
 * at `to` (the destination, resolved): a tmpfs with the container's cgroup
 * of every hierarchy in it (rootfs/cgroup_view.h), and of the v2 tree as
 * "unified" when with_unified (a hybrid host). */
int brig_rootfs_do_cgroup_v1(int root_fd, const struct brig_rootfs_step *s, const char *to,
                             bool with_unified, brig_error_t *err);

/* devices.c: `path` as the directory a node or link goes in and its last
 * component, both cleaned (caller frees). Pure. */
int brig_rootfs_split_node_path(const char *path, char **dir, char **name, brig_error_t *err);
/* devices.c: a node, a link or /dev/shm named `name` in dir_fd. The umask
 * is expected to be 0 (modes are exactly as planned). */
int brig_rootfs_do_device(int dir_fd, const char *name, const struct brig_rootfs_step *s,
                          brig_error_t *err);
int brig_rootfs_do_dev_link(int dir_fd, const char *name, const struct brig_rootfs_step *s,
                            brig_error_t *err);
int brig_rootfs_do_dev_shm(int dir_fd, const char *name, const struct brig_rootfs_step *s,
                           brig_error_t *err);

/* masked_paths.c: after pivot_root, with root_fd the container's "/".
 * A path that does not exist is skipped (the lists name paths only some
 * kernels have). */
int brig_rootfs_do_readonly_path(int root_fd, const char *path, brig_error_t *err);
/* What masking keeps from one path to the next (-1 until found): the
 * container's /dev/null, and the empty tmpfs of the first masked
 * directory, which every later one binds. */
struct brig_mask_fds {
    int null_fd;
    int empty_fd;
};
int brig_rootfs_do_mask_path(int root_fd, const char *path, struct brig_mask_fds *fds,
                             brig_error_t *err);

#endif
