/* Internal to cgroup/: a cgroup backend, the table of operations the
 * interface in cgroup.h dispatches to. A new backend (v1 hierarchies, a
 * systemd driver) is one more table and a case in the choice in
 * cgroup.c; nothing above cgroup/ changes. Every operation has the
 * meaning of the cgroup.h function of the same name. */
#ifndef BRIG_CGROUP_BACKEND_H
#define BRIG_CGROUP_BACKEND_H

#include "cgroup/cgroup.h"

struct brig_cgroup_backend {
    const char *name;
    int (*create)(const char *relative, const struct brig_resources *r, struct brig_cgroup *out,
                  brig_error_t *err);
    int (*create_without_devices)(const char *relative, const struct brig_resources *r,
                                  struct brig_cgroup *out, brig_error_t *err);
    int (*open)(const char *path, struct brig_cgroup *out, brig_error_t *err);
    int (*apply)(const struct brig_cgroup *cg, const struct brig_resources *r, brig_error_t *err);
    int (*devices_attach)(const struct brig_cgroup *cg, const struct brig_devices_program *p,
                          brig_error_t *err);
    int (*add_pid)(const struct brig_cgroup *cg, pid_t pid, brig_error_t *err);
    int (*freeze)(const struct brig_cgroup *cg, bool frozen, brig_error_t *err);
    bool (*is_frozen)(const struct brig_cgroup *cg);
    int (*pids)(const struct brig_cgroup *cg, pid_t **out, size_t *n, brig_error_t *err);
    int (*signal_all)(const struct brig_cgroup *cg, int sig, brig_error_t *err);
    int (*kill_all)(const struct brig_cgroup *cg, brig_error_t *err);
    int (*destroy)(const char *path, brig_error_t *err);
    int (*stats)(const struct brig_cgroup *cg, struct brig_cgroup_stats *out, brig_error_t *err);
};

/* cgroup v2 through cgroupfs (v2.c; its statistics in v2_stats.c). */
extern const struct brig_cgroup_backend brig_cgroup_v2;
int brig_cgroup_v2_stats(const struct brig_cgroup *cg, struct brig_cgroup_stats *out,
                         brig_error_t *err);

#endif
