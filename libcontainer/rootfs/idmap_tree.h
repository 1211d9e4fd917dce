/* An id-mapped view of a container's root, whatever holds it. A directory
 * of a file system that maps ids (ext4, xfs, btrfs, tmpfs on 6.3+) is bound
 * id-mapped (process/idmap.h). An overlayfs mount, as containerd's
 * snapshotters make one, can't be id-mapped itself, but its layers can: a
 * new overlay is mounted from id-mapped binds of them, read-only, its
 * upper layer as the topmost lower one. */
#ifndef BRIG_ROOTFS_IDMAP_TREE_H
#define BRIG_ROOTFS_IDMAP_TREE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* The layers of the overlay mounted at `mountpoint` (absolute, canonical),
 * topmost first: upperdir, then lowerdir's (both `lowerdir=a:b` and
 * `lowerdir+=` forms), from the super options of its mountinfo line.
 * Pure. 0 and n == 0 when `options` has no layer; -1 for a relative layer
 * path (the mounter's working directory is not known) or ENOMEM. */
int brig_overlay_layers(const char *options, char ***layers, size_t *n, brig_error_t *err);

/* Where `path` (absolute, canonical) is a mount point of type overlay: its
 * super options (caller frees) and 1; 0 when it is not. */
int brig_overlay_options_at(const char *path, char **options, brig_error_t *err);

/* `source` (a directory, or an overlay's mount point) on `target`,
 * read-only and id-mapped through `userns_fd`. `scratch` is a directory
 * the overlay's layers are bound in while the overlay is mounted (left
 * empty after). Where a layer's file system can't map ids the error says
 * so, errnum EINVAL, ENOSYS or EPERM. */
int brig_idmap_tree(const char *source, const char *target, const char *scratch, int userns_fd,
                    brig_error_t *err);

#endif
