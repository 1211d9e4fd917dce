/* Where `brig sandbox` keeps its sandboxes on the host: one dir per
 * sandbox under a home ($BRIG_SANDBOX_DIR, or /var/lib/brig/sandboxes),
 * named by its id, holding its bundle, its data image with the image's
 * mount (dataimage.h) and, after a checkpoint, its images:
 *
 *   HOME/ID/bundle/config.json   the spec the sandbox was created from
 *   HOME/ID/data.img, data/      /mnt/data and where the host mounts it
 *                                (until created; again once stopped)
 *   HOME/ID/init.pid             the init that holds the data's mount
 *   HOME/ID/checkpoint/          criu's images (the default place)
 *
 * The container itself lives in the state root like any other; its id is
 * the sandbox's. */
#ifndef BRIG_SANDBOX_LAYOUT_H
#define BRIG_SANDBOX_LAYOUT_H

#include "base/error.h"

#define BRIG_SANDBOX_HOME_ENV "BRIG_SANDBOX_DIR"
#define BRIG_SANDBOX_HOME_DEFAULT "/var/lib/brig/sandboxes"
#define BRIG_SANDBOX_BUNDLE "bundle"
#define BRIG_SANDBOX_CHECKPOINT "checkpoint"

/* Where a container run with the sandbox profile (not a `brig sandbox`)
 * keeps its data when it has a user namespace: HOME/.containers/HASH, a
 * dir of its own that the sandbox's root can reach (the state root is
 * closed to it), named by a hash of its state dir and removed with it. */
#define BRIG_SANDBOX_PRIVATE ".containers"
int brig_sandbox_private_dir(const char *state_dir, char **out, brig_error_t *err);

/* $BRIG_SANDBOX_DIR when set and not empty, else the default. */
const char *brig_sandbox_home(void);

/* An id must be one name in the home: not empty, no `/`, not starting
 * with `.` (the home's own entries do).
 * Pure; the error is "invalid id `ID`". */
int brig_sandbox_id_validate(const char *id, brig_error_t *err);

/* HOME/ID, the id checked first; errors read "sandbox: ...". */
int brig_sandbox_dir(const char *id, char **out, brig_error_t *err);

/* HOME/ID/NAME (BRIG_SANDBOX_BUNDLE, BRIG_SANDBOX_CHECKPOINT), the id
 * checked first; errors read "sandbox: ...". */
int brig_sandbox_path(const char *id, const char *name, char **out, brig_error_t *err);

#endif
