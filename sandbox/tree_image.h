/* A sandbox tree shipped as a squashfs image (`make rootfs-image` writes
 * DIR.squashfs beside DIR): where DIR is wanted and DIR.squashfs exists,
 * the image is mounted read-only at DIR, once for the host, and every
 * sandbox shares that mount; it stays mounted until the host unmounts it
 * (`umount DIR` frees its loop device). */
#ifndef BRIG_SANDBOX_TREE_IMAGE_H
#define BRIG_SANDBOX_TREE_IMAGE_H

#include <stdbool.h>

#include "base/error.h"

/* A tree at DIR: 1 when DIR holds one (it has /usr), built there or
 * DIR.squashfs mounted there now or before; 0 when it holds none and
 * there is no DIR.squashfs (nothing done). */
int brig_tree_ensure(const char *dir, brig_error_t *err);

/* PATH.squashfs → PATH in *dir (1); 0 with NULL for another name. */
int brig_tree_image_strip(const char *path, char **dir, brig_error_t *err);

#endif
