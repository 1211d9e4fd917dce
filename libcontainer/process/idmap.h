/* Id-mapped mounts (Linux 5.12): a directory bound somewhere else with
 * its owners seen through an id mapping, so a tree owned by the host's
 * root shows as owned by root inside a user namespace that maps 0 to some
 * other host id, with nothing copied or chowned.
 *
 * The kernel takes the mapping from a user namespace. One made only to
 * carry it (brig_userns_for_maps) is held by a short-lived child stopped
 * in it; the fd outlives the child. */
#ifndef BRIG_IDMAP_H
#define BRIG_IDMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "spec/spec.h"

/* An fd of a new user namespace whose uid_map and gid_map are `uids` and
 * `gids`; -1 with *err. The caller must be able to write such maps
 * (CAP_SETUID and CAP_SETGID over the ids named). */
int brig_userns_for_maps(const struct brig_id_mapping *uids, size_t n_uids,
                         const struct brig_id_mapping *gids, size_t n_gids, brig_error_t *err);

/* Binds the directory `source` (not its submounts) on `target`, id-mapped
 * through the user namespace `userns_fd`: a file owned by k on disk is
 * owned by the id k maps to. `readonly` makes the bind read-only (and
 * nosuid, nodev). Where the kernel or the source's file system can't map
 * ids, the error says so and brig_idmap_unsupported(errnum) holds. */
int brig_idmap_bind(const char *source, const char *target, int userns_fd, bool readonly,
                    brig_error_t *err);

/* Whether an id-mapped bind's errnum means the kernel or the file system
 * can't map ids (EINVAL, ENOSYS, EPERM), not that the bind went wrong. */
static inline bool brig_idmap_unsupported(int errnum)
{
    return errnum == EINVAL || errnum == ENOSYS || errnum == EPERM;
}

#endif
