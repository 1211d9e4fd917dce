/* Internal to the v1 backend (v1*.c): what its files share. */
#ifndef BRIG_CGROUP_V1_INTERNAL_H
#define BRIG_CGROUP_V1_INTERNAL_H

#include "cgroup/backend.h"

/* Writes value to file in the directory dir_fd (dir names it in errors). */
int brig_cgroup_v1_write(int dir_fd, const char *dir, const char *file, const char *value,
                         brig_error_t *err);

/* v1_apply.c: every check a resources section must pass on this host's
 * hierarchies (a controller missing, `unified` keys without a v2 tree),
 * before anything is made; then the writes, with the device lists when
 * `devices`. */
int brig_cgroup_v1_check(const struct brig_resources *r, brig_error_t *err);
int brig_cgroup_v1_apply_all(const struct brig_cgroup *cg, const struct brig_resources *r,
                             bool devices, brig_error_t *err);

/* v1_procs.c */
int brig_cgroup_v1_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
int brig_cgroup_v1_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err);
bool brig_cgroup_v1_is_frozen(const struct brig_cgroup *cg);
int brig_cgroup_v1_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err);
int brig_cgroup_v1_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err);
int brig_cgroup_v1_kill_all(const struct brig_cgroup *cg, brig_error_t *err);
int brig_cgroup_v1_destroy(const char *path, brig_error_t *err);

#endif
