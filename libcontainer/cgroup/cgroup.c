#define _GNU_SOURCE
/* The cgroup interface: which backend drives this host, and each
 * operation handed to the backend of the cgroup it is about. */
#include "cgroup/backend.h"

#include <stdlib.h>
#include <unistd.h>

/* The backend for new cgroups and for paths read back from a state file.
 * Only cgroup v2 today; v1 and hybrid layouts and the systemd driver are
 * chosen here when they come. */
static const struct brig_cgroup_backend *host_backend(void)
{
    return &brig_cgroup_v2;
}

/* A cgroup opened before it knew its backend (a zeroed struct) belongs to
 * the host's. */
static const struct brig_cgroup_backend *backend_of(const struct brig_cgroup *cg)
{
    return cg->backend ? cg->backend : host_backend();
}

int brig_cgroup_create(const char *relative, const struct brig_resources *r,
                       struct brig_cgroup *out, brig_error_t *err)
{
    return host_backend()->create(relative, r, out, err);
}

int brig_cgroup_create_without_devices(const char *relative, const struct brig_resources *r,
                                       struct brig_cgroup *out, brig_error_t *err)
{
    return host_backend()->create_without_devices(relative, r, out, err);
}

int brig_cgroup_open(const char *path, struct brig_cgroup *out, brig_error_t *err)
{
    return host_backend()->open(path, out, err);
}

void brig_cgroup_close(struct brig_cgroup *cg)
{
    if (cg->dir_fd >= 0)
        close(cg->dir_fd);
    cg->dir_fd = -1;
    free(cg->path);
    cg->path = NULL;
    cg->backend = NULL;
}

int brig_cgroup_apply(const struct brig_cgroup *cg, const struct brig_resources *r,
                      brig_error_t *err)
{
    return backend_of(cg)->apply(cg, r, err);
}

int brig_cgroup_devices_attach(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                               brig_error_t *err)
{
    return backend_of(cg)->devices_attach(cg, p, err);
}

int brig_cgroup_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err)
{
    return backend_of(cg)->add_pid(cg, pid, err);
}

int brig_cgroup_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err)
{
    return backend_of(cg)->freeze(cg, frozen, err);
}

bool brig_cgroup_is_frozen(const struct brig_cgroup *cg)
{
    return backend_of(cg)->is_frozen(cg);
}

int brig_cgroup_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err)
{
    return backend_of(cg)->pids(cg, out, n, err);
}

int brig_cgroup_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err)
{
    return backend_of(cg)->signal_all(cg, sig, err);
}

int brig_cgroup_kill_all(const struct brig_cgroup *cg, brig_error_t *err)
{
    return backend_of(cg)->kill_all(cg, err);
}

int brig_cgroup_destroy(const char *path, brig_error_t *err)
{
    return host_backend()->destroy(path, err);
}

int brig_cgroup_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                      brig_error_t *err)
{
    return backend_of(cg)->stats(cg, out, err);
}
