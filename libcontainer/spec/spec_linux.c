/* The `linux` object of config.json: namespaces, devices, resources,
 * seccomp and the rest of the Linux-only settings; its parser, its
 * lookups (namespace names) and its freeing. spec.c's top-level parser
 * calls this file, and this file calls only spec_json.c: the arrows go
 * one way. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "spec/spec.h"
#include "spec/spec_json.h"

/* Optional scalars with a has_* flag; return 0 or -1. */
static int opt_i64(struct brig_json_ctx *c, yajl_val v, const char *key, bool *has, int64_t *out)
{
    int r = brig_json_i64(c, v, key, INT64_MIN, INT64_MAX, out);
    *has = *has || r > 0;
    return r < 0 ? -1 : 0;
}

static int opt_u64(struct brig_json_ctx *c, yajl_val v, const char *key, bool *has, uint64_t *out)
{
    int r = brig_json_u64(c, v, key, UINT64_MAX, out);
    *has = *has || r > 0;
    return r < 0 ? -1 : 0;
}

static int opt_u32(struct brig_json_ctx *c, yajl_val v, const char *key, bool *has, uint32_t *out)
{
    int r = brig_json_u32(c, v, key, out);
    *has = *has || r > 0;
    return r < 0 ? -1 : 0;
}

static int opt_u16(struct brig_json_ctx *c, yajl_val v, const char *key, bool *has, uint16_t *out)
{
    int r = brig_json_u16(c, v, key, out);
    *has = *has || r > 0;
    return r < 0 ? -1 : 0;
}

static int opt_bool(struct brig_json_ctx *c, yajl_val v, const char *key, bool *has, bool *out)
{
    int r = brig_json_bool(c, v, key, out);
    *has = *has || r > 0;
    return r < 0 ? -1 : 0;
}

/* A required int64 (device numbers). */
static int req_i64(struct brig_json_ctx *c, yajl_val v, const char *key, int64_t *out)
{
    int r = brig_json_i64(c, v, key, INT64_MIN, INT64_MAX, out);
    if (r == 0)
        return brig_json_missing(c, key);
    return r < 0 ? -1 : 0;
}

static int req_string(struct brig_json_ctx *c, yajl_val v, const char *key, char **out)
{
    int r = brig_json_string(c, v, key, out);
    if (r == 0)
        return brig_json_missing(c, key);
    return r < 0 ? -1 : 0;
}

static bool one_of(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(s, *set) == 0)
            return true;
    return false;
}

/* ---- namespace names and lookups ------------------------------------------------- */

static const char *const ns_names[BRIG_NS_COUNT] = {
    [BRIG_NS_PID] = "pid",       [BRIG_NS_NETWORK] = "network", [BRIG_NS_MOUNT] = "mount",
    [BRIG_NS_IPC] = "ipc",       [BRIG_NS_UTS] = "uts",         [BRIG_NS_USER] = "user",
    [BRIG_NS_CGROUP] = "cgroup", [BRIG_NS_TIME] = "time",
};

/* NULL for a value outside the enum, so a bad caller fails loudly. */
const char *brig_ns_type_name(enum brig_ns_type type)
{
    if ((unsigned) type >= BRIG_NS_COUNT)
        return NULL;
    return ns_names[type];
}

const struct brig_namespace *brig_spec_namespace(const struct brig_spec *spec,
                                                 enum brig_ns_type type)
{
    if (spec == NULL || spec->linux_ == NULL)
        return NULL;
    for (size_t i = 0; i < spec->linux_->n_namespaces; i++)
        if (spec->linux_->namespaces[i].type == type)
            return &spec->linux_->namespaces[i];
    return NULL;
}

/* ---- namespaces, devices, time --------------------------------------------------- */

static int parse_namespace(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_namespace *ns = item;
    cleanup_free char *type = NULL;
    if (req_string(c, v, "type", &type) < 0)
        return -1;
    size_t t = 0;
    while (t < BRIG_NS_COUNT && strcmp(brig_ns_type_name((enum brig_ns_type) t), type) != 0)
        t++;
    if (t == BRIG_NS_COUNT)
        return brig_json_fail(c, "type", "unknown namespace type `%s`", type);
    ns->type = (enum brig_ns_type) t;
    int r = brig_json_string(c, v, "path", &ns->path);
    if (r < 0)
        return -1;
    if (r > 0 && ns->path[0] != '/')
        return brig_json_fail(c, "path", "must be an absolute path");
    return 0;
}

static bool same_path(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* A type listed twice is one namespace when both entries say the same (as
 * runc takes it); the later entry goes. Two different ones are an error. */
static int parse_namespaces(struct brig_json_ctx *c, yajl_val v, struct brig_linux *l)
{
    if (BRIG_JSON_OBJECTS(c, v, "namespaces", l->namespaces, l->n_namespaces, parse_namespace) < 0)
        return -1;
    size_t kept = 0;
    for (size_t i = 0; i < l->n_namespaces; i++) {
        struct brig_namespace *ns = &l->namespaces[i];
        size_t j = 0;
        while (j < kept && l->namespaces[j].type != ns->type)
            j++;
        if (j == kept) {
            l->namespaces[kept++] = *ns;
            continue;
        }
        if (!same_path(l->namespaces[j].path, ns->path)) {
            brig_json_push_key(c, "namespaces");
            brig_json_push_index(c, i);
            l->n_namespaces = kept + (l->n_namespaces - i);
            memmove(l->namespaces + kept, ns, (l->n_namespaces - kept) * sizeof *ns);
            return brig_json_fail(c, "type",
                                  "namespace type `%s` listed twice, with different paths",
                                  brig_ns_type_name(ns->type));
        }
        free(ns->path);
    }
    l->n_namespaces = kept;
    return 0;
}

static int parse_device(struct brig_json_ctx *c, yajl_val v, void *item)
{
    static const char *const types[] = { "c", "b", "u", "p", NULL };
    struct brig_device *d = item;
    if (req_string(c, v, "type", &d->type) < 0 || req_string(c, v, "path", &d->path) < 0)
        return -1;
    if (!one_of(d->type, types))
        return brig_json_fail(c, "type", "must be one of c, b, u, p");
    if (d->path[0] != '/')
        return brig_json_fail(c, "path", "must be an absolute path");
    /* A fifo has no device numbers; every other node needs both. */
    if (strcmp(d->type, "p") != 0) {
        if (req_i64(c, v, "major", &d->major) < 0 || req_i64(c, v, "minor", &d->minor) < 0)
            return -1;
    } else if (brig_json_i64(c, v, "major", INT64_MIN, INT64_MAX, &d->major) < 0
               || brig_json_i64(c, v, "minor", INT64_MIN, INT64_MAX, &d->minor) < 0) {
        return -1;
    }
    if (opt_u32(c, v, "fileMode", &d->has_file_mode, &d->file_mode) < 0
        || opt_u32(c, v, "uid", &d->has_uid, &d->uid) < 0
        || opt_u32(c, v, "gid", &d->has_gid, &d->gid) < 0)
        return -1;
    return 0;
}

static int parse_time_offset(struct brig_json_ctx *c, yajl_val offsets, const char *key,
                             struct brig_time_offset *t)
{
    yajl_val v;
    int r = brig_json_object(c, offsets, key, &v);
    if (r <= 0)
        return r;
    size_t mark = brig_json_push_key(c, key);
    if (brig_json_i64(c, v, "secs", INT64_MIN, INT64_MAX, &t->secs) < 0)
        return -1;
    /* The kernel rejects a nanosecond part of a full second or more. */
    uint64_t ns = 0;
    if (brig_json_u64(c, v, "nanosecs", 999999999, &ns) < 0)
        return -1;
    t->nanosecs = (uint32_t) ns;
    t->set = true;
    brig_json_pop(c, mark);
    return 1;
}

static int parse_time_offsets(struct brig_json_ctx *c, yajl_val v, struct brig_linux *l)
{
    yajl_val offsets;
    int r = brig_json_object(c, v, "timeOffsets", &offsets);
    if (r <= 0)
        return r;
    size_t mark = brig_json_push_key(c, "timeOffsets");
    if (parse_time_offset(c, offsets, "monotonic", &l->time_monotonic) < 0
        || parse_time_offset(c, offsets, "boottime", &l->time_boottime) < 0)
        return -1;
    brig_json_pop(c, mark);
    return 0;
}

/* ---- resources -------------------------------------------------------------------- */

static int parse_device_rule(struct brig_json_ctx *c, yajl_val v, void *item)
{
    static const char *const types[] = { "a", "c", "b", NULL };
    struct brig_device_rule *d = item;
    int r = brig_json_bool(c, v, "allow", &d->allow);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "allow");
    if (brig_json_string(c, v, "type", &d->type) < 0)
        return -1;
    if (d->type && !one_of(d->type, types))
        return brig_json_fail(c, "type", "must be one of a, c, b");
    if (opt_i64(c, v, "major", &d->has_major, &d->major) < 0
        || opt_i64(c, v, "minor", &d->has_minor, &d->minor) < 0
        || brig_json_string(c, v, "access", &d->access) < 0)
        return -1;
    if (d->access && d->access[strspn(d->access, "rwm")] != '\0')
        return brig_json_fail(c, "access", "must be a combination of r, w and m");
    return 0;
}

static int parse_memory(struct brig_json_ctx *c, yajl_val v, struct brig_memory *m)
{
    int r = brig_json_u64(c, v, "swappiness", 100, &m->swappiness);
    if (r < 0)
        return -1;
    m->has_swappiness = r > 0;
    if (opt_i64(c, v, "limit", &m->has_limit, &m->limit) < 0
        || opt_i64(c, v, "reservation", &m->has_reservation, &m->reservation) < 0
        || opt_i64(c, v, "swap", &m->has_swap, &m->swap) < 0
        || opt_i64(c, v, "kernel", &m->has_kernel, &m->kernel) < 0
        || opt_i64(c, v, "kernelTCP", &m->has_kernel_tcp, &m->kernel_tcp) < 0
        || opt_bool(c, v, "disableOOMKiller", &m->has_disable_oom_killer, &m->disable_oom_killer)
               < 0
        || opt_bool(c, v, "useHierarchy", &m->has_use_hierarchy, &m->use_hierarchy) < 0
        || opt_bool(c, v, "checkBeforeUpdate", &m->has_check_before_update, &m->check_before_update)
               < 0)
        return -1;
    return 0;
}

static int parse_cpu(struct brig_json_ctx *c, yajl_val v, struct brig_cpu *cpu)
{
    if (opt_u64(c, v, "shares", &cpu->has_shares, &cpu->shares) < 0
        || opt_i64(c, v, "quota", &cpu->has_quota, &cpu->quota) < 0
        || opt_u64(c, v, "burst", &cpu->has_burst, &cpu->burst) < 0
        || opt_u64(c, v, "period", &cpu->has_period, &cpu->period) < 0
        || opt_i64(c, v, "realtimeRuntime", &cpu->has_realtime_runtime, &cpu->realtime_runtime) < 0
        || opt_u64(c, v, "realtimePeriod", &cpu->has_realtime_period, &cpu->realtime_period) < 0
        || brig_json_string(c, v, "cpus", &cpu->cpus) < 0
        || brig_json_string(c, v, "mems", &cpu->mems) < 0
        || opt_i64(c, v, "idle", &cpu->has_idle, &cpu->idle) < 0)
        return -1;
    return 0;
}

static int parse_weight_device(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_weight_device *w = item;
    if (req_i64(c, v, "major", &w->major) < 0 || req_i64(c, v, "minor", &w->minor) < 0
        || opt_u16(c, v, "weight", &w->has_weight, &w->weight) < 0
        || opt_u16(c, v, "leafWeight", &w->has_leaf_weight, &w->leaf_weight) < 0)
        return -1;
    return 0;
}

static int parse_throttle_device(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_throttle_device *t = item;
    if (req_i64(c, v, "major", &t->major) < 0 || req_i64(c, v, "minor", &t->minor) < 0)
        return -1;
    int r = brig_json_u64(c, v, "rate", UINT64_MAX, &t->rate);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "rate");
    return 0;
}

static int parse_block_io(struct brig_json_ctx *c, yajl_val v, struct brig_block_io *b)
{
    struct {
        const char *key;
        struct brig_throttle_list *list;
    } throttles[] = {
        { "throttleReadBpsDevice", &b->throttle_read_bps },
        { "throttleWriteBpsDevice", &b->throttle_write_bps },
        { "throttleReadIOPSDevice", &b->throttle_read_iops },
        { "throttleWriteIOPSDevice", &b->throttle_write_iops },
    };
    if (opt_u16(c, v, "weight", &b->has_weight, &b->weight) < 0
        || opt_u16(c, v, "leafWeight", &b->has_leaf_weight, &b->leaf_weight) < 0
        || BRIG_JSON_OBJECTS(c, v, "weightDevice", b->weight_devices, b->n_weight_devices,
                             parse_weight_device)
               < 0)
        return -1;
    for (size_t i = 0; i < sizeof throttles / sizeof throttles[0]; i++) {
        struct brig_throttle_list *l = throttles[i].list;
        if (BRIG_JSON_OBJECTS(c, v, throttles[i].key, l->items, l->n, parse_throttle_device) < 0)
            return -1;
    }
    return 0;
}

static int parse_hugepage_limit(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_hugepage_limit *h = item;
    if (req_string(c, v, "pageSize", &h->page_size) < 0)
        return -1;
    int r = brig_json_u64(c, v, "limit", UINT64_MAX, &h->limit);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "limit");
    return 0;
}

static int parse_net_priority(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_net_priority *p = item;
    if (req_string(c, v, "name", &p->name) < 0)
        return -1;
    int r = brig_json_u32(c, v, "priority", &p->priority);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "priority");
    return 0;
}

static int parse_network(struct brig_json_ctx *c, yajl_val res, struct brig_resources *r)
{
    yajl_val v;
    int got = brig_json_object(c, res, "network", &v);
    if (got <= 0)
        return got;
    size_t mark = brig_json_push_key(c, "network");
    if (opt_u32(c, v, "classID", &r->has_net_class_id, &r->net_class_id) < 0
        || BRIG_JSON_OBJECTS(c, v, "priorities", r->net_priorities, r->n_net_priorities,
                             parse_net_priority)
               < 0)
        return -1;
    brig_json_pop(c, mark);
    return 0;
}

/* rdma is keyed by device name rather than an array. */
static int parse_rdma(struct brig_json_ctx *c, yajl_val res, struct brig_resources *r)
{
    yajl_val map;
    int got = brig_json_object(c, res, "rdma", &map);
    if (got <= 0 || map->u.object.len == 0)
        return got;
    size_t n = map->u.object.len;
    r->rdma = calloc(n, sizeof *r->rdma);
    if (r->rdma == NULL)
        return brig_json_oom(c);
    r->n_rdma = n;
    size_t mark = brig_json_push_key(c, "rdma");
    for (size_t i = 0; i < n; i++) {
        struct brig_rdma_limit *l = &r->rdma[i];
        const char *dev = map->u.object.keys[i];
        l->device = strdup(dev);
        if (l->device == NULL)
            return brig_json_oom(c);
        yajl_val v;
        if (brig_json_object(c, map, dev, &v) < 0)
            return -1;
        size_t at = brig_json_push_key(c, dev);
        if (opt_u32(c, v, "hcaHandles", &l->has_hca_handles, &l->hca_handles) < 0
            || opt_u32(c, v, "hcaObjects", &l->has_hca_objects, &l->hca_objects) < 0)
            return -1;
        brig_json_pop(c, at);
    }
    brig_json_pop(c, mark);
    return 0;
}

static int parse_pids(struct brig_json_ctx *c, yajl_val res, struct brig_resources *r)
{
    yajl_val v;
    int got = brig_json_object(c, res, "pids", &v);
    if (got <= 0)
        return got;
    size_t mark = brig_json_push_key(c, "pids");
    if (req_i64(c, v, "limit", &r->pids_limit) < 0)
        return -1;
    r->has_pids_limit = true;
    brig_json_pop(c, mark);
    return 0;
}

int brig_spec_parse_resources(struct brig_json_ctx *c, yajl_val v, struct brig_resources *r)
{
    if (BRIG_JSON_OBJECTS(c, v, "devices", r->devices, r->n_devices, parse_device_rule) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "memory", r->memory, parse_memory) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "cpu", r->cpu, parse_cpu) < 0 || parse_pids(c, v, r) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "blockIO", r->block_io, parse_block_io) < 0
        || BRIG_JSON_OBJECTS(c, v, "hugepageLimits", r->hugepage_limits, r->n_hugepage_limits,
                             parse_hugepage_limit)
               < 0
        || parse_network(c, v, r) < 0 || parse_rdma(c, v, r) < 0
        || brig_json_kv(c, v, "unified", &r->unified) < 0)
        return -1;
    return 0;
}

/* ---- seccomp ------------------------------------------------------------------------ */

static int parse_seccomp_arg(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_seccomp_arg *a = item;
    int r = brig_json_u32(c, v, "index", &a->index);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "index");
    r = brig_json_u64(c, v, "value", UINT64_MAX, &a->value);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "value");
    if (brig_json_u64(c, v, "valueTwo", UINT64_MAX, &a->value_two) < 0)
        return -1;
    return req_string(c, v, "op", &a->op);
}

static int parse_seccomp_syscall(struct brig_json_ctx *c, yajl_val v, void *item)
{
    struct brig_seccomp_syscall *s = item;
    int r = brig_json_strv(c, v, "names", &s->names);
    if (r <= 0)
        return r < 0 ? -1 : brig_json_missing(c, "names");
    if (s->names.n == 0)
        return brig_json_fail(c, "names", "must not be empty");
    if (req_string(c, v, "action", &s->action) < 0
        || opt_u32(c, v, "errnoRet", &s->has_errno_ret, &s->errno_ret) < 0
        || BRIG_JSON_OBJECTS(c, v, "args", s->args, s->n_args, parse_seccomp_arg) < 0)
        return -1;
    return 0;
}

static int parse_seccomp(struct brig_json_ctx *c, yajl_val v, struct brig_seccomp *s)
{
    if (req_string(c, v, "defaultAction", &s->default_action) < 0
        || opt_u32(c, v, "defaultErrnoRet", &s->has_default_errno_ret, &s->default_errno_ret) < 0
        || brig_json_strv(c, v, "architectures", &s->architectures) < 0
        || brig_json_strv(c, v, "flags", &s->flags) < 0
        || brig_json_string(c, v, "listenerPath", &s->listener_path) < 0
        || brig_json_string(c, v, "listenerMetadata", &s->listener_metadata) < 0
        || BRIG_JSON_OBJECTS(c, v, "syscalls", s->syscalls, s->n_syscalls, parse_seccomp_syscall)
               < 0)
        return -1;
    return 0;
}

/* ---- the linux object ------------------------------------------------------------------ */

static int parse_personality(struct brig_json_ctx *c, yajl_val v, struct brig_personality *p)
{
    static const char *const domains[] = { "LINUX", "LINUX32", NULL };
    if (req_string(c, v, "domain", &p->domain) < 0)
        return -1;
    if (!one_of(p->domain, domains))
        return brig_json_fail(c, "domain", "must be LINUX or LINUX32");
    return brig_json_strv(c, v, "flags", &p->flags) < 0 ? -1 : 0;
}

static int parse_intel_rdt(struct brig_json_ctx *c, yajl_val v, struct brig_intel_rdt *rdt)
{
    if (brig_json_string(c, v, "closID", &rdt->clos_id) < 0
        || brig_json_string(c, v, "l3CacheSchema", &rdt->l3_cache_schema) < 0
        || brig_json_string(c, v, "memBwSchema", &rdt->mem_bw_schema) < 0)
        return -1;
    return 0;
}

static int parse_rootfs_propagation(struct brig_json_ctx *c, yajl_val v, struct brig_linux *l)
{
    static const char *const modes[] = { "shared",     "slave",       "private",
                                         "unbindable", "rshared",     "rslave",
                                         "rprivate",   "runbindable", NULL };
    int r = brig_json_string(c, v, "rootfsPropagation", &l->rootfs_propagation);
    if (r > 0 && !one_of(l->rootfs_propagation, modes))
        return brig_json_fail(c, "rootfsPropagation", "unknown propagation `%s`",
                              l->rootfs_propagation);
    return r < 0 ? -1 : 0;
}

int brig_spec_parse_linux(struct brig_json_ctx *c, yajl_val v, struct brig_linux *l)
{
    if (parse_namespaces(c, v, l) < 0
        || brig_json_id_mappings(c, v, "uidMappings", &l->uid_mappings, &l->n_uid_mappings) < 0
        || brig_json_id_mappings(c, v, "gidMappings", &l->gid_mappings, &l->n_gid_mappings) < 0
        || parse_time_offsets(c, v, l) < 0
        || BRIG_JSON_OBJECTS(c, v, "devices", l->devices, l->n_devices, parse_device) < 0
        || brig_json_string(c, v, "cgroupsPath", &l->cgroups_path) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "resources", l->resources, brig_spec_parse_resources) < 0
        || brig_json_kv(c, v, "sysctl", &l->sysctl) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "seccomp", l->seccomp, parse_seccomp) < 0
        || parse_rootfs_propagation(c, v, l) < 0
        || brig_json_strv(c, v, "maskedPaths", &l->masked_paths) < 0
        || brig_json_strv(c, v, "readonlyPaths", &l->readonly_paths) < 0
        || brig_json_string(c, v, "mountLabel", &l->mount_label) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "personality", l->personality, parse_personality) < 0
        || BRIG_JSON_SUBOBJECT(c, v, "intelRdt", l->intel_rdt, parse_intel_rdt) < 0)
        return -1;
    return 0;
}

/* ---- freeing ---------------------------------------------------------------------------- */

void brig_resources_free(struct brig_resources *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_devices; i++) {
        free(r->devices[i].type);
        free(r->devices[i].access);
    }
    free(r->devices);
    free(r->memory);
    if (r->cpu) {
        free(r->cpu->cpus);
        free(r->cpu->mems);
        free(r->cpu);
    }
    if (r->block_io) {
        free(r->block_io->weight_devices);
        free(r->block_io->throttle_read_bps.items);
        free(r->block_io->throttle_write_bps.items);
        free(r->block_io->throttle_read_iops.items);
        free(r->block_io->throttle_write_iops.items);
        free(r->block_io);
    }
    for (size_t i = 0; i < r->n_hugepage_limits; i++)
        free(r->hugepage_limits[i].page_size);
    free(r->hugepage_limits);
    for (size_t i = 0; i < r->n_net_priorities; i++)
        free(r->net_priorities[i].name);
    free(r->net_priorities);
    for (size_t i = 0; i < r->n_rdma; i++)
        free(r->rdma[i].device);
    free(r->rdma);
    brig_kv_list_free(&r->unified);
    free(r);
}

static void free_seccomp(struct brig_seccomp *s)
{
    if (s == NULL)
        return;
    free(s->default_action);
    brig_strv_free(&s->architectures);
    brig_strv_free(&s->flags);
    free(s->listener_path);
    free(s->listener_metadata);
    for (size_t i = 0; i < s->n_syscalls; i++) {
        struct brig_seccomp_syscall *sc = &s->syscalls[i];
        brig_strv_free(&sc->names);
        free(sc->action);
        for (size_t j = 0; j < sc->n_args; j++)
            free(sc->args[j].op);
        free(sc->args);
    }
    free(s->syscalls);
    free(s);
}

void brig_spec_free_linux(struct brig_linux *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n_namespaces; i++)
        free(l->namespaces[i].path);
    free(l->namespaces);
    free(l->uid_mappings);
    free(l->gid_mappings);
    for (size_t i = 0; i < l->n_devices; i++) {
        free(l->devices[i].type);
        free(l->devices[i].path);
    }
    free(l->devices);
    free(l->cgroups_path);
    brig_resources_free(l->resources);
    brig_kv_list_free(&l->sysctl);
    free_seccomp(l->seccomp);
    free(l->rootfs_propagation);
    brig_strv_free(&l->masked_paths);
    brig_strv_free(&l->readonly_paths);
    free(l->mount_label);
    if (l->personality) {
        free(l->personality->domain);
        brig_strv_free(&l->personality->flags);
        free(l->personality);
    }
    if (l->intel_rdt) {
        free(l->intel_rdt->clos_id);
        free(l->intel_rdt->l3_cache_schema);
        free(l->intel_rdt->mem_bw_schema);
        free(l->intel_rdt);
    }
    free(l);
}

/* A bare seccomp profile (the shape of linux.seccomp): exposed for
 * brig_seccomp_parse() in spec.c. */
int brig_spec_parse_seccomp(struct brig_json_ctx *c, yajl_val v, struct brig_seccomp *s)
{
    return parse_seccomp(c, v, s);
}

void brig_seccomp_free_spec(struct brig_seccomp *s)
{
    free_seccomp(s);
}
