/* A sandbox's /mnt/data: a sparse ext4 image on a loop device, so that the
 * quota is the file system's size (writes past it fail with ENOSPC) and its
 * contents outlive any process in the sandbox.
 *
 * Layout inside `dir`: `data.img` (the image) and `data/` (where it is
 * mounted on the host; the container binds that). The loop device is set
 * to autoclear: unmounting the last mount frees it, so nothing lingers.
 * A running `brig sandbox` holds the only mount of its image, in its own
 * mount namespace: the host's goes once the sandbox is created. */
#ifndef BRIG_DATAIMAGE_H
#define BRIG_DATAIMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define BRIG_DATA_IMAGE "data.img"
#define BRIG_DATA_MOUNT "data"

/* Creates the image (unless one is already there: then it is reused with
 * its contents) and mounts it at dir/data, its root owned by uid:gid. */
int brig_data_image_setup(const char *dir, int64_t size, uid_t uid, gid_t gid, brig_error_t *err);

/* A free loop device bound to the open image, autoclear set (unmounting
 * its last mount frees it), read-only if asked: its fd, its path in
 * `path`. */
int brig_loop_attach(int image_fd, bool read_only, char path[64], brig_error_t *err);

/* The image in dir, which exists, mounted at dir/data again: from the
 * loop device already bound to it where there is one (the same file
 * system as a running sandbox's), else from a device of its own. */
int brig_data_image_mount(const char *dir, brig_error_t *err);

/* 0 when fd is the root of the file system in dir's image (ext4, on a
 * loop device whose backing file is that image); else -1, ENOENT. */
int brig_data_image_verify(int fd, const char *dir, brig_error_t *err);

/* Unmounts dir/data if mounted (which frees the loop device). A missing
 * dir is not an error. */
int brig_data_image_unmount(const char *dir, brig_error_t *err);

/* Bytes used and total of the data file system fd is on. */
int brig_data_image_usage(int fd, uint64_t *used, uint64_t *size, brig_error_t *err);

#endif
