#define _GNU_SOURCE
/* cgroup v1 hierarchies (hybrid and legacy hosts). Work in progress: the
 * operations arrive in the commits that follow. */
#include "cgroup/backend.h"

#include <errno.h>

static int v1_unsupported(brig_error_t *err)
{
    return brig_error_set(err, ENOSYS, "cgroup v1: not yet");
}

static int v1_create(const char *relative, const struct brig_resources *r, struct brig_cgroup *out,
                     brig_error_t *err)
{
    (void) relative, (void) r, (void) out;
    return v1_unsupported(err);
}

static int v1_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    (void) path, (void) out;
    return v1_unsupported(err);
}

static int v1_clone_fd(const struct brig_cgroup *cg)
{
    (void) cg;
    return -1;
}

const struct brig_cgroup_backend brig_cgroup_v1 = {
    .name = "v1",
    .create = v1_create,
    .create_without_devices = v1_create,
    .open = v1_open,
    .clone_fd = v1_clone_fd,
};
