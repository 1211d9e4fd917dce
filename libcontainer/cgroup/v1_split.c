#define _GNU_SOURCE
/* Which hierarchy takes each part of a resources section on a host of v1
 * hierarchies: a controller is used where it is bound. On a hybrid host a
 * controller that no v1 hierarchy binds but the v2 tree offers (hugetlb,
 * often) goes to the v2 directory, through the v2 backend, as do the
 * `unified` keys. */
#include "cgroup/v1_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/utils.h"

const struct brig_cgroup_hierarchy *brig_cgroup_v1_binding(const char *controller)
{
    brig_error_t ignored = NULL;
    const struct brig_cgroup_hierarchy *const *all = brig_cgroup_v1_hierarchies(&ignored);
    brig_error_release(&ignored);
    for (size_t i = 0; all && all[i]; i++)
        if (!all[i]->v2 && brig_cgroup_hierarchy_has(all[i], controller))
            return all[i];
    return NULL;
}

bool brig_cgroup_v1_bound(const char *controller)
{
    return brig_cgroup_v1_binding(controller) != NULL;
}

/* The controllers the v2 tree's root offers, read once. */
static bool v2_offers(const char *controller)
{
    static char *offered;
    if (brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_HYBRID)
        return false;
    if (offered == NULL) {
        brig_error_t ignored = NULL;
        const char *root = brig_cgroup_root(&ignored);
        char path[256];
        snprintf(path, sizeof path, "%s/cgroup.controllers", root ? root : "/nonexistent");
        if (brig_read_file(path, &offered, NULL, &ignored) < 0) {
            brig_error_release(&ignored);
            offered = strdup("");
            if (offered == NULL)
                return false;
        }
    }
    size_t len = strlen(controller);
    for (const char *p = offered; *p;) {
        size_t n = strcspn(p, " \n");
        if (n == len && strncmp(p, controller, len) == 0)
            return true;
        p += n + (p[n] != '\0');
    }
    return false;
}

/* To the v2 directory: bound by no v1 hierarchy, offered by the v2 tree
 * (under its v2 name: blkio is io there). */
static bool to_v2(const char *v1_name, const char *v2_name)
{
    return !brig_cgroup_v1_bound(v1_name) && v2_offers(v2_name);
}

static void split_cpu(const struct brig_cpu *c, struct brig_cgroup_v1_split *s)
{
    bool cpu_v2 = to_v2("cpu", "cpu"), cpuset_v2 = to_v2("cpuset", "cpuset");
    s->cpu1 = *c;
    s->cpu2 = *c;
    /* cpus and mems are cpuset's; the rest is cpu's. */
    struct brig_cpu *cpuset_side = cpuset_v2 ? &s->cpu1 : &s->cpu2;
    cpuset_side->cpus = cpuset_side->mems = NULL;
    struct brig_cpu *cpu_side = cpu_v2 ? &s->cpu1 : &s->cpu2;
    char *cpus = cpu_side->cpus, *mems = cpu_side->mems;
    *cpu_side = (struct brig_cpu){ .cpus = cpus, .mems = mems };
    s->v1.cpu = &s->cpu1;
    s->v2.cpu = &s->cpu2;
}

void brig_cgroup_v1_split(const struct brig_resources *r, struct brig_cgroup_v1_split *s)
{
    *s = (struct brig_cgroup_v1_split){ .v1 = *r };
    s->v1.unified = (struct brig_kv_list){ 0 };
    s->v1.devices = NULL, s->v1.n_devices = 0;
    s->v2.unified = r->unified;
    if (r->memory && to_v2("memory", "memory"))
        s->v2.memory = r->memory, s->v1.memory = NULL;
    if (r->cpu)
        split_cpu(r->cpu, s);
    if (r->has_pids_limit && to_v2("pids", "pids")) {
        s->v2.has_pids_limit = true, s->v2.pids_limit = r->pids_limit;
        s->v1.has_pids_limit = false;
    }
    if (r->block_io && to_v2("blkio", "io"))
        s->v2.block_io = r->block_io, s->v1.block_io = NULL;
    if (r->n_hugepage_limits && to_v2("hugetlb", "hugetlb")) {
        s->v2.hugepage_limits = r->hugepage_limits, s->v2.n_hugepage_limits = r->n_hugepage_limits;
        s->v1.hugepage_limits = NULL, s->v1.n_hugepage_limits = 0;
    }
    if (r->n_rdma && to_v2("rdma", "rdma")) {
        s->v2.rdma = r->rdma, s->v2.n_rdma = r->n_rdma;
        s->v1.rdma = NULL, s->v1.n_rdma = 0;
    }
}

bool brig_cgroup_v1_split_has_v2(const struct brig_cgroup_v1_split *s)
{
    const struct brig_resources *v = &s->v2;
    const struct brig_cpu *c = v->cpu;
    bool cpu = c
               && (c->has_shares || c->has_quota || c->has_period || c->has_burst || c->cpus
                   || c->mems || c->has_realtime_period || c->has_realtime_runtime || c->has_idle);
    return v->memory || cpu || v->has_pids_limit || v->block_io || v->n_hugepage_limits || v->n_rdma
           || v->unified.n;
}
