/* Internal to cgroup/: what the v2 plan (cgroup_plan.c) and the v1 plans
 * (v1_plan.c, v1_devices_plan.c) share: the list of writes they grow, and
 * the checks and lines both cgroup versions spell the same way. */
#ifndef BRIG_CGROUP_PLAN_H
#define BRIG_CGROUP_PLAN_H

#include "cgroup/cgroup.h"

struct brig_cgroup_plan_list {
    struct brig_cgroup_write *w;
    size_t n, cap;
};

/* Appends the write file ← the formatted value. */
int brig_cgroup_plan_add(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Ends a plan: on rc 0 hands the writes to *out and *n, else frees them.
 * Returns rc. */
int brig_cgroup_plan_finish(struct brig_cgroup_plan_list *p, int rc, struct brig_cgroup_write **out,
                            size_t *n);

/* A limit where the OCI spec says -1 for none: `unlimited` is what the
 * file takes instead ("max" on v2, "-1" on v1); below -1 is an error that
 * names linux.resources.<field>. */
int brig_cgroup_plan_limit(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                           const char *field, int64_t v, const char *unlimited);

/* cpuset.cpus and cpuset.mems, the same files on v1 and v2, when set. */
int brig_cgroup_plan_cpuset(struct brig_cgroup_plan_list *p, const struct brig_cpu *c,
                            brig_error_t *err);
/* pids.max: a limit above 0; 0 or below is none ("max"), on v1 and v2. */
int brig_cgroup_plan_pids(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                          brig_error_t *err);

/* blockIO: a device number (each part 0..2^32-1) and a weight (10..1000);
 * errors name linux.resources.blockIO.<field>. */
int brig_cgroup_plan_check_dev(int64_t major, int64_t minor, const char *field, brig_error_t *err);
int brig_cgroup_plan_check_weight(uint16_t w, const char *field, brig_error_t *err);

/* hugepageLimits as hugetlb.<pageSize>.<suffix> ("max" on v2,
 * "limit_in_bytes" on v1), each page size checked; rdma as rdma.max lines
 * ("mlx5_0 hca_handle=2 hca_object=100"), the same file on both. */
int brig_cgroup_plan_hugetlb(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                             const char *suffix, brig_error_t *err);
int brig_cgroup_plan_rdma(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                          brig_error_t *err);

#endif
