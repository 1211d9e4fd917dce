/* /dev inside the container: the default devices every container gets
 * (null zero full random urandom tty, ptmx, /dev/fd and std* links, shm) and
 * linux.devices. Called by brig_rootfs_prepare() with the rootfs dir fd. */
#ifndef BRIG_DEVICES_H
#define BRIG_DEVICES_H

#include <stdbool.h>

#include "base/error.h"
#include "spec/spec.h"

int brig_devices_create(int rootfs_fd, const struct brig_spec *spec, bool in_userns,
                        brig_error_t *err);

#endif
