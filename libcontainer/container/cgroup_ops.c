#define _GNU_SOURCE
/* pause, resume, ps, update, stats: what a live container's cgroup does. */
#include "container/container.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "base/cleanup.h"

/* Opens the container with its cgroup; fails clearly when brig doesn't
 * manage one for it (--cgroup-manager=disabled). */
static int open_with_cgroup(const char *root, const char *id, struct brig_state **out,
                            enum brig_status *status, struct brig_cgroup *cg, brig_error_t *err)
{
    int root_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    cleanup_close int dir_fd = brig_container_open(root, id, &root_fd, &st, err);
    if (root_fd >= 0)
        close(root_fd);
    if (dir_fd < 0)
        return -1;
    if (*st->cgroup_path == '\0')
        return brig_error_set(err, 0, "container `%s` has no cgroup managed by brig", id);
    if (brig_cgroup_open(st->cgroup_path, cg, err) < 0)
        return -1;
    /* The freezer's word from the cgroup opened here, not opened again. */
    *status = brig_state_status_in(dir_fd, st, cg);
    *out = brig_steal_ptr(st);
    return brig_steal_fd(dir_fd);
}

/* Runs fn on the container's cgroup, with the container locked. */
static int with_cgroup(const char *root, const char *id,
                       int (*fn)(const struct brig_state *st, enum brig_status status,
                                 const struct brig_cgroup *cg, void *arg, brig_error_t *err),
                       void *arg, brig_error_t *err)
{
    /* Released in reverse: the cgroup, the state, then the lock. */
    cleanup_close int dir_fd = -1;
    cleanup_state struct brig_state *st = NULL;
    cleanup_cgroup struct brig_cgroup cg = BRIG_CGROUP_INIT;
    enum brig_status status = BRIG_STATUS_STOPPED; /* set by open_with_cgroup */
    dir_fd = open_with_cgroup(root, id, &st, &status, &cg, err);
    if (dir_fd < 0)
        return -1;
    return fn(st, status, &cg, arg, err);
}

static int set_frozen(const struct brig_state *st, enum brig_status status,
                      const struct brig_cgroup *cg, void *arg, brig_error_t *err)
{
    bool frozen = arg != NULL;
    /* A created container can be paused too: its init is frozen before
     * exec, and `start` after `resume` runs it. */
    bool allowed = frozen ? status == BRIG_STATUS_RUNNING || status == BRIG_STATUS_CREATED
                          : status == BRIG_STATUS_PAUSED;
    if (!allowed)
        return brig_error_set(err, 0, "cannot %s container `%s`: it is %s",
                              frozen ? "pause" : "resume", st->id, brig_status_name(status));
    return brig_cgroup_freeze(cg, frozen, err);
}

int brig_container_pause(const char *root, const char *id, brig_error_t *err)
{
    return with_cgroup(root, id, set_frozen, (void *) 1, err);
}

int brig_container_resume(const char *root, const char *id, brig_error_t *err)
{
    return with_cgroup(root, id, set_frozen, NULL, err);
}

struct pid_list {
    pid_t **pids;
    size_t *n;
};

static int list_pids(const struct brig_state *st, enum brig_status status,
                     const struct brig_cgroup *cg, void *arg, brig_error_t *err)
{
    struct pid_list *out = arg;
    return brig_cgroup_pids(cg, out->pids, out->n, err);
}

int brig_container_pids(const char *root, const char *id, pid_t **pids, size_t *n,
                        brig_error_t *err)
{
    struct pid_list out = { pids, n };
    return with_cgroup(root, id, list_pids, &out, err);
}

static int apply_update(const struct brig_state *st, enum brig_status status,
                        const struct brig_cgroup *cg, void *arg, brig_error_t *err)
{
    if (status == BRIG_STATUS_STOPPED)
        return brig_error_set(err, 0, "cannot update container `%s`: it is stopped", st->id);
    return brig_cgroup_apply(cg, arg, err);
}

int brig_container_update(const char *root, const char *id, const struct brig_resources *res,
                          brig_error_t *err)
{
    return with_cgroup(root, id, apply_update, (void *) res, err);
}

static int read_stats(const struct brig_state *st, enum brig_status status,
                      const struct brig_cgroup *cg, void *arg, brig_error_t *err)
{
    if (status == BRIG_STATUS_STOPPED)
        return brig_error_set(err, 0, "container `%s` is stopped", st->id);
    return brig_cgroup_stats(cg, arg, err);
}

int brig_container_stats(const char *root, const char *id, struct brig_cgroup_stats *out,
                         brig_error_t *err)
{
    return with_cgroup(root, id, read_stats, out, err);
}
