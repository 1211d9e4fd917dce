/* A sandbox's user namespace (`--userns auto`, the default): its ids
 * 0-65535 map to a host range of its own (idrange.h), and the shared tree
 * is seen through an id-mapped bind at DATA_DIR/tree, so its root-owned
 * files are root-owned inside without a copy or a chown. The host holds
 * that bind while the sandbox is made (manage.c drops it after). The range and
 * the bind belong to the sandbox's data dir, as its /mnt/data image does:
 * the image's files are owned by the range's ids on the host. */
#ifndef BRIG_SANDBOX_USERNS_H
#define BRIG_SANDBOX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "sandbox/profile.h"

/* The range of the settings' data dir into s->userns_uid/gid: the one the
 * settings or the dir record (claimed again), else a new one. */
int brig_sandbox_userns_acquire(struct brig_profile_settings *s, brig_error_t *err);

/* Removes the private data dir of a container (layout.h), once its data
 * and tree are unmounted. A missing dir is not an error. */
int brig_sandbox_private_remove(const char *dir, brig_error_t *err);

/* The data dir and its missing parents made, each searchable by others:
 * the sandbox's root is an unmapped stranger to the host's dirs, and must
 * still reach its tree and its data through them. Nothing in it is
 * readable by others but the tree. */
int brig_sandbox_make_reachable(const char *dir, brig_error_t *err);

/* Every dir above `path` searchable by others, else an error naming the
 * first that is not and `--userns host`. */
int brig_sandbox_check_reachable(const char *path, brig_error_t *err);

/* A private data dir (layout.h) left by a container that died: its data
 * and tree unmounted, its range freed, the dir removed. None: nothing. */
int brig_sandbox_private_reset(const char *dir, brig_error_t *err);

/* The mounted data's root made 0700 (its owner is the sandbox user). */
int brig_sandbox_data_close(const char *data_dir, brig_error_t *err);

/* A checkpoint's images, readable (not writable) by the group the
 * sandbox's root is on the host: criu reads some of them (tty-info)
 * from inside the restored user namespace. Others still get nothing. The
 * dir must be root's and closed to others' writes; a link, or a file
 * with another owner or another name, is refused. Call it once the range
 * is claimed. */
int brig_sandbox_images_share(int image_fd, const struct brig_profile_settings *s,
                              brig_error_t *err);

/* The host uid and gid the sandbox user (1000 inside, or its
 * template's) is. */
void brig_sandbox_user_on_host(const struct brig_profile_settings *s, uint32_t *uid, uint32_t *gid);

/* The shared tree bound at DATA_DIR/tree through the settings' range
 * (a bind left there before is replaced). The error, where the kernel or
 * the tree's file system can't map ids, names `--userns host`. */
int brig_sandbox_tree_mount(const struct brig_profile_settings *s, brig_error_t *err);

/* Every mount stacked on `path` detached; none, or no such path, is not
 * an error. */
int brig_sandbox_unmount_all(const char *path, brig_error_t *err);

/* DATA_DIR/tree unmounted if mounted; a missing dir is not an error. */
int brig_sandbox_tree_unmount(const char *data_dir, brig_error_t *err);

#endif
