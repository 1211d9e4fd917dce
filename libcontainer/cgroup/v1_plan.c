#define _GNU_SOURCE
/* The pure half of cgroup v1's resources: which file of which hierarchy
 * each field of linux.resources becomes, named "<controller>.<file>" so
 * the writer finds the hierarchy by the prefix. Nothing here touches the
 * kernel. Zero means "not set" where it does in the v2 plan (limits,
 * shares, weights), as in runc; -1 is "unlimited" and v1's files take it
 * as it is. The devices are v1_devices_plan.c's. */
#include "cgroup/cgroup.h"

#include <ctype.h>
#include <inttypes.h>

#include "cgroup/plan.h"

static int v1_limit(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                    const char *field, int64_t v)
{
    return brig_cgroup_plan_limit(p, err, file, field, v, "-1");
}

/* On v1 the OCI swap value is what memsw takes as it is: memory+swap, so
 * never below the memory limit, and limited only under a limited memory
 * (the kernel refuses both). Alone it is fine: `update` may raise swap
 * under the limit already there. */
static int v1_swap(struct brig_cgroup_plan_list *p, const struct brig_memory *m, brig_error_t *err)
{
    if (!m->has_swap || m->swap == 0)
        return 0;
    bool limited = m->has_limit && m->limit != 0;
    if (limited && m->swap != -1 && m->limit == -1)
        return brig_error_set(err, 0,
                              "linux.resources.memory.swap: %" PRId64 " limits memory+swap, "
                              "but memory.limit is -1 (unlimited)",
                              m->swap);
    if (limited && m->swap != -1 && m->swap < m->limit)
        return brig_error_set(err, 0,
                              "linux.resources.memory.swap: %" PRId64 " is below the memory "
                              "limit %" PRId64 " (swap is memory+swap)",
                              m->swap, m->limit);
    return v1_limit(p, err, "memory.memsw.limit_in_bytes", "memory.swap", m->swap);
}

/* The limit before memsw: lowering both, memsw then fits under the limit
 * just written; raising both, the limit's write fails until memsw is up,
 * and the writer tries it again after the rest. Not written: kernel and
 * kernelTCP (deprecated by the kernel, which since 6.x accepts and ignores
 * kmem.limit_in_bytes; runc 1.1 leaves them out too), useHierarchy (recent
 * kernels keep it on and refuse 0),
 * checkBeforeUpdate (a check of usage for the writer, not a file). */
static int v1_memory(struct brig_cgroup_plan_list *p, const struct brig_memory *m,
                     brig_error_t *err)
{
    if (m->has_limit && m->limit != 0
        && v1_limit(p, err, "memory.limit_in_bytes", "memory.limit", m->limit) < 0)
        return -1;
    if (v1_swap(p, m, err) < 0)
        return -1;
    if (m->has_reservation && m->reservation != 0
        && v1_limit(p, err, "memory.soft_limit_in_bytes", "memory.reservation", m->reservation) < 0)
        return -1;
    if (m->has_swappiness) {
        if (m->swappiness > 100)
            return brig_error_set(err, 0,
                                  "linux.resources.memory.swappiness: %" PRIu64 " is outside 0-100",
                                  m->swappiness);
        if (brig_cgroup_plan_add(p, err, "memory.swappiness", "%" PRIu64, m->swappiness) < 0)
            return -1;
    }
    if (m->has_disable_oom_killer
        && brig_cgroup_plan_add(p, err, "memory.oom_control", "%d", m->disable_oom_killer) < 0)
        return -1;
    return 0;
}

/* A value written only when set (for most fields: set and not 0). */
static int v1_value(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file, bool set,
                    uint64_t v)
{
    return set ? brig_cgroup_plan_add(p, err, file, "%" PRIu64, v) : 0;
}

/* The CFS period before the quota measured in it, the real-time period
 * before the runtime measured in it (-1 is no limit for both); the writer
 * retries whichever the kernel refused against the old value. */
static int v1_cpu(struct brig_cgroup_plan_list *p, const struct brig_cpu *c, brig_error_t *err)
{
    if (v1_value(p, err, "cpu.shares", c->has_shares && c->shares != 0, c->shares) < 0
        || v1_value(p, err, "cpu.cfs_period_us", c->has_period && c->period != 0, c->period) < 0
        || (c->has_quota && c->quota != 0
            && v1_limit(p, err, "cpu.cfs_quota_us", "cpu.quota", c->quota) < 0)
        || v1_value(p, err, "cpu.cfs_burst_us", c->has_burst, c->burst) < 0
        || v1_value(p, err, "cpu.rt_period_us", c->has_realtime_period && c->realtime_period != 0,
                    c->realtime_period)
               < 0
        || (c->has_realtime_runtime && c->realtime_runtime != 0
            && v1_limit(p, err, "cpu.rt_runtime_us", "cpu.realtimeRuntime", c->realtime_runtime)
                   < 0))
        return -1;
    if (c->has_idle && brig_cgroup_plan_add(p, err, "cpu.idle", "%" PRId64, c->idle) < 0)
        return -1;
    return 0;
}

/* A weight for the whole cgroup or for one device ("8:0 500"). */
static int v1_weight(struct brig_cgroup_plan_list *p, const char *file, const char *field,
                     const struct brig_weight_device *d, uint16_t w, brig_error_t *err)
{
    if (w == 0 && d == NULL)
        return 0;
    if (brig_cgroup_plan_check_weight(w, field, err) < 0)
        return -1;
    if (d == NULL)
        return brig_cgroup_plan_add(p, err, file, "%u", (unsigned) w);
    return brig_cgroup_plan_add(p, err, file, "%" PRId64 ":%" PRId64 " %u", d->major, d->minor,
                                (unsigned) w);
}

static int v1_blkio_weights(struct brig_cgroup_plan_list *p, const struct brig_block_io *b,
                            brig_error_t *err)
{
    if ((b->has_weight && v1_weight(p, "blkio.weight", "weight", NULL, b->weight, err) < 0)
        || (b->has_leaf_weight
            && v1_weight(p, "blkio.leaf_weight", "leafWeight", NULL, b->leaf_weight, err) < 0))
        return -1;
    for (size_t i = 0; i < b->n_weight_devices; i++) {
        const struct brig_weight_device *d = &b->weight_devices[i];
        if (brig_cgroup_plan_check_dev(d->major, d->minor, "weightDevice", err) < 0)
            return -1;
        if (d->has_weight
            && v1_weight(p, "blkio.weight_device", "weightDevice.weight", d, d->weight, err) < 0)
            return -1;
        if (d->has_leaf_weight
            && v1_weight(p, "blkio.leaf_weight_device", "weightDevice.leafWeight", d,
                         d->leaf_weight, err)
                   < 0)
            return -1;
    }
    return 0;
}

/* "MAJ:MIN RATE"; a rate of 0 lifts the device's limit on v1. */
static int v1_blkio(struct brig_cgroup_plan_list *p, const struct brig_block_io *b,
                    brig_error_t *err)
{
    const struct {
        const struct brig_throttle_list *list;
        const char *file, *field;
    } throttles[] = {
        { &b->throttle_read_bps, "blkio.throttle.read_bps_device", "throttleReadBpsDevice" },
        { &b->throttle_write_bps, "blkio.throttle.write_bps_device", "throttleWriteBpsDevice" },
        { &b->throttle_read_iops, "blkio.throttle.read_iops_device", "throttleReadIOPSDevice" },
        { &b->throttle_write_iops, "blkio.throttle.write_iops_device", "throttleWriteIOPSDevice" },
    };
    if (v1_blkio_weights(p, b, err) < 0)
        return -1;
    for (size_t k = 0; k < sizeof throttles / sizeof throttles[0]; k++) {
        for (size_t i = 0; i < throttles[k].list->n; i++) {
            const struct brig_throttle_device *t = &throttles[k].list->items[i];
            if (brig_cgroup_plan_check_dev(t->major, t->minor, throttles[k].field, err) < 0
                || brig_cgroup_plan_add(p, err, throttles[k].file,
                                        "%" PRId64 ":%" PRId64 " %" PRIu64, t->major, t->minor,
                                        t->rate)
                       < 0)
                return -1;
        }
    }
    return 0;
}

/* net_cls tags the packets' class; net_prio a priority per interface, one
 * "IFNAME PRIO" line per write (the kernel reads a name up to the space). */
static int v1_network(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                      brig_error_t *err)
{
    if (r->has_net_class_id
        && brig_cgroup_plan_add(p, err, "net_cls.classid", "%" PRIu32, r->net_class_id) < 0)
        return -1;
    for (size_t i = 0; i < r->n_net_priorities; i++) {
        const char *name = r->net_priorities[i].name ? r->net_priorities[i].name : "";
        bool bad = *name == '\0';
        for (const char *c = name; *c && !bad; c++)
            bad = isspace((unsigned char) *c);
        if (bad)
            return brig_error_set(err, 0,
                                  "linux.resources.network.priorities[%zu]: bad interface "
                                  "name `%s`",
                                  i, name);
        if (brig_cgroup_plan_add(p, err, "net_prio.ifpriomap", "%s %" PRIu32, name,
                                 r->net_priorities[i].priority)
            < 0)
            return -1;
    }
    return 0;
}

/* cpuset first: a v1 cpuset cgroup takes no process until both are set. */
static int v1_all(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                  brig_error_t *err)
{
    if ((r->cpu && brig_cgroup_plan_cpuset(p, r->cpu, err) < 0)
        || (r->memory && v1_memory(p, r->memory, err) < 0) || brig_cgroup_plan_pids(p, r, err) < 0
        || (r->cpu && v1_cpu(p, r->cpu, err) < 0)
        || (r->block_io && v1_blkio(p, r->block_io, err) < 0)
        || brig_cgroup_plan_hugetlb(p, r, "limit_in_bytes", err) < 0 || v1_network(p, r, err) < 0)
        return -1;
    return brig_cgroup_plan_rdma(p, r, err);
}

int brig_cgroup_v1_plan(const struct brig_resources *r, struct brig_cgroup_write **out, size_t *n,
                        brig_error_t *err)
{
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    return brig_cgroup_plan_finish(&p, v1_all(&p, r, err), out, n);
}
