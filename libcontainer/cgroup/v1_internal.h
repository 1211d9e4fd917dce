/* Internal to the v1 backend (v1*.c): what its files share. */
#ifndef BRIG_CGROUP_V1_INTERNAL_H
#define BRIG_CGROUP_V1_INTERNAL_H

#include "cgroup/backend.h"

/* The open directory of the hierarchy that binds `controller` ("" for a
 * hybrid host's v2 directory); NULL when there is none. */
const struct brig_cgroup_v1_dir *brig_cgroup_v1_dir(const struct brig_cgroup *cg,
                                                    const char *controller);

/* Writes value to file in the directory dir_fd (dir names it in errors). */
int brig_cgroup_v1_write(int dir_fd, const char *dir, const char *file, const char *value,
                         brig_error_t *err);

/* v1_split.c: a resources section in the part for the v1 hierarchies and
 * the part for a hybrid host's v2 directory (controllers bound by no v1
 * hierarchy but offered by the v2 tree, and the `unified` keys). Shallow:
 * both point into the section split. Devices are in neither. */
struct brig_cgroup_v1_split {
    struct brig_resources v1, v2;
    struct brig_cpu cpu1, cpu2;
};
void brig_cgroup_v1_split(const struct brig_resources *r, struct brig_cgroup_v1_split *s);
bool brig_cgroup_v1_split_has_v2(const struct brig_cgroup_v1_split *s);
/* The v1 hierarchy that binds the controller, NULL when none does. */
const struct brig_cgroup_hierarchy *brig_cgroup_v1_binding(const char *controller);
bool brig_cgroup_v1_bound(const char *controller);

/* v1_apply.c: every check a resources section must pass on this host's
 * hierarchies (a controller missing, `unified` keys without a v2 tree),
 * before anything is made; then the writes to the v1 directories, with
 * the device rules when `devices`; the v2 part (through the v2 backend)
 * when `v2`. */
int brig_cgroup_v1_check(const struct brig_resources *r, brig_error_t *err);
int brig_cgroup_v1_apply_all(const struct brig_cgroup *cg, const struct brig_resources *r,
                             bool devices, bool v2, brig_error_t *err);

/* v1_procs.c */
int brig_cgroup_v1_add_pid(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
int brig_cgroup_v1_add_pid_unfrozen(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
int brig_cgroup_v1_self_join_open(const struct brig_cgroup *cg, bool unfrozen,
                                  struct brig_cgroup_self_join *out, brig_error_t *err);
int brig_cgroup_v1_freeze(const struct brig_cgroup *cg, bool frozen, brig_error_t *err);
bool brig_cgroup_v1_is_frozen(const struct brig_cgroup *cg);
int brig_cgroup_v1_pids(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err);
int brig_cgroup_v1_signal_all(const struct brig_cgroup *cg, int sig, brig_error_t *err);
int brig_cgroup_v1_kill_all(const struct brig_cgroup *cg, brig_error_t *err);
int brig_cgroup_v1_destroy(const char *path, brig_error_t *err);

#endif
