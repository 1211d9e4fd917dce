#define _GNU_SOURCE
/* The pure half of cgroup v2: where the cgroup goes, which controllers it
 * needs, and which files the resources section turns into; with them the
 * pieces the v1 plans share (plan.h). Nothing here touches the kernel, so
 * every conversion is unit-tested without root. */
#include "cgroup/cgroup.h"
#include "cgroup/plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/path.h"

/* ---- path ------------------------------------------------------------------------ */

/* The parent of the caller's cgroup, as a "/"-rooted path: a container is a
 * sibling of the runtime's own cgroup, never a child of it, because a cgroup
 * that holds processes (the caller) cannot hand controllers to children. */
static char *own_parent(const char *own_cgroup)
{
    cleanup_free char *own = NULL;
    if (asprintf(&own, "/%s", own_cgroup ? own_cgroup : "") < 0)
        return NULL;
    cleanup_free char *clean = brig_path_clean(own);
    if (clean == NULL)
        return NULL;
    char *slash = strrchr(clean, '/');
    if (slash == clean)
        return strdup("/");
    *slash = '\0';
    return strdup(clean);
}

int brig_cgroup_path_resolve(const char *cgroups_path, const char *id, const char *own_cgroup,
                             char **out, brig_error_t *err)
{
    cleanup_free char *parent = own_parent(own_cgroup);
    if (parent == NULL)
        return brig_error_set(err, ENOMEM, "cgroup path");
    return brig_cgroup_path_resolve_under(cgroups_path, id, parent, out, err);
}

int brig_cgroup_path_resolve_under(const char *cgroups_path, const char *id, const char *base,
                                   char **out, brig_error_t *err)
{
    cleanup_free char *joined = NULL;
    int r;
    if (cgroups_path && cgroups_path[0] == '/')
        r = asprintf(&joined, "%s", cgroups_path);
    else if (cgroups_path && *cgroups_path)
        r = asprintf(&joined, "/%s/%s", base, cgroups_path);
    else if (id == NULL || *id == '\0' || strchr(id, '/') || strcmp(id, ".") == 0
             || strcmp(id, "..") == 0)
        return brig_error_set(err, 0, "cgroup path: bad container id `%s`", id ? id : "");
    else
        r = asprintf(&joined, "/%s/brig/%s", base, id);
    if (r < 0)
        return brig_error_set(err, ENOMEM, "cgroup path");
    /* Cleaned as an absolute path, ".." stops at the cgroup root: a config
     * can name any cgroup of the hierarchy but nothing outside it. */
    cleanup_free char *clean = brig_path_clean(joined);
    if (clean == NULL)
        return brig_error_set(err, ENOMEM, "cgroup path");
    if (strcmp(clean, "/") == 0)
        return brig_error_set(err, 0, "cgroup path `%s` is the cgroup root",
                              cgroups_path ? cgroups_path : "");
    *out = strdup(clean + 1);
    if (*out == NULL)
        return brig_error_set(err, ENOMEM, "cgroup path");
    return 0;
}

/* ---- the plan ---------------------------------------------------------------------- */

int brig_cgroup_plan_add(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                         const char *fmt, ...)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct brig_cgroup_write *bigger = realloc(p->w, cap * sizeof *bigger);
        if (bigger == NULL)
            return brig_error_set(err, ENOMEM, "cgroup plan");
        p->w = bigger;
        p->cap = cap;
    }
    char *value = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&value, fmt, ap);
    va_end(ap);
    char *name = strdup(file);
    if (r < 0 || name == NULL) {
        free(name);
        if (r >= 0)
            free(value);
        return brig_error_set(err, ENOMEM, "cgroup plan");
    }
    p->w[p->n].file = name;
    p->w[p->n].value = value;
    p->n++;
    return 0;
}

int brig_cgroup_plan_finish(struct brig_cgroup_plan_list *p, int rc, struct brig_cgroup_write **out,
                            size_t *n)
{
    if (rc < 0) {
        brig_cgroup_plan_free(p->w, p->n);
        return rc;
    }
    *out = p->w;
    *n = p->n;
    return rc;
}

int brig_cgroup_plan_limit(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                           const char *field, int64_t v, const char *unlimited)
{
    if (v == -1)
        return brig_cgroup_plan_add(p, err, file, "%s", unlimited);
    if (v < 0)
        return brig_error_set(err, 0,
                              "linux.resources.%s: %" PRId64 " is not a limit (-1 "
                              "means unlimited)",
                              field, v);
    return brig_cgroup_plan_add(p, err, file, "%" PRId64, v);
}

/* memory.* and cpu.* take "max" for "no limit"; the OCI spec says -1. */
static int plan_limit(struct brig_cgroup_plan_list *p, brig_error_t *err, const char *file,
                      const char *field, int64_t v)
{
    return brig_cgroup_plan_limit(p, err, file, field, v, "max");
}

/* The OCI swap value is memory+swap (the v1 memsw file); v2 limits swap
 * alone, so the difference is written. 0 means "not set", like runc. */
static int plan_swap(struct brig_cgroup_plan_list *p, const struct brig_memory *m,
                     brig_error_t *err)
{
    if (!m->has_swap || m->swap == 0)
        return 0;
    if (m->swap == -1)
        return brig_cgroup_plan_add(p, err, "memory.swap.max", "max");
    if (m->swap < 0)
        return brig_error_set(err, 0,
                              "linux.resources.memory.swap: %" PRId64
                              " is not a limit (-1 means unlimited)",
                              m->swap);
    if (!m->has_limit || m->limit == 0 || m->limit == -1)
        return brig_error_set(err, 0,
                              "linux.resources.memory.swap: needs a memory limit "
                              "(swap is memory+swap in the OCI spec)");
    if (m->swap < m->limit)
        return brig_error_set(err, 0,
                              "linux.resources.memory.swap: %" PRId64 " is below "
                              "the memory limit %" PRId64 " (swap is memory+swap)",
                              m->swap, m->limit);
    return brig_cgroup_plan_add(p, err, "memory.swap.max", "%" PRId64, m->swap - m->limit);
}

/* Not written: kernel and kernelTCP (no v2 files, the kernel accounts that
 * memory under memory.max), swappiness (v2 has no per-cgroup knob; runc
 * ignores it too), disableOOMKiller (v2 only has memory.oom.group, which is
 * a different thing; a config can set it through `unified`). */
static int plan_memory(struct brig_cgroup_plan_list *p, const struct brig_memory *m,
                       brig_error_t *err)
{
    if (m->has_reservation && m->reservation != 0
        && plan_limit(p, err, "memory.low", "memory.reservation", m->reservation) < 0)
        return -1;
    if (m->has_limit && m->limit != 0
        && plan_limit(p, err, "memory.max", "memory.limit", m->limit) < 0)
        return -1;
    return plan_swap(p, m, err);
}

/* cpu.shares (2..262144, default 1024) onto cpu.weight (1..10000, default
 * 100), the mapping runc, crun and systemd share. */
static uint64_t shares_to_weight(uint64_t shares)
{
    if (shares < 2)
        shares = 2;
    if (shares > 262144)
        shares = 262144;
    return 1 + ((shares - 2) * 9999) / 262142;
}

static int plan_cpu_max(struct brig_cgroup_plan_list *p, const struct brig_cpu *c,
                        brig_error_t *err)
{
    uint64_t period = c->has_period && c->period > 0 ? c->period : 100000;
    if (c->has_quota && c->quota > 0)
        return brig_cgroup_plan_add(p, err, "cpu.max", "%" PRId64 " %" PRIu64, c->quota, period);
    if (c->has_quota || c->has_period)
        return brig_cgroup_plan_add(p, err, "cpu.max", "max %" PRIu64, period);
    return 0;
}

static int plan_cpu(struct brig_cgroup_plan_list *p, const struct brig_cpu *c, brig_error_t *err)
{
    if ((c->has_realtime_runtime && c->realtime_runtime != 0)
        || (c->has_realtime_period && c->realtime_period != 0))
        return brig_error_set(err, 0,
                              "linux.resources.cpu.realtimeRuntime/realtimePeriod: "
                              "not supported by cgroup v2");
    if (c->has_shares && c->shares != 0
        && brig_cgroup_plan_add(p, err, "cpu.weight", "%" PRIu64, shares_to_weight(c->shares)) < 0)
        return -1;
    if (plan_cpu_max(p, c, err) < 0)
        return -1;
    if (c->has_burst && brig_cgroup_plan_add(p, err, "cpu.max.burst", "%" PRIu64, c->burst) < 0)
        return -1;
    if (c->has_idle && brig_cgroup_plan_add(p, err, "cpu.idle", "%" PRId64, c->idle) < 0)
        return -1;
    return 0;
}

/* Runs first: cpuset.cpus/mems must be in place before any process joins,
 * or the process starts on CPUs it is not allowed. */
int brig_cgroup_plan_cpuset(struct brig_cgroup_plan_list *p, const struct brig_cpu *c,
                            brig_error_t *err)
{
    if (c->cpus && *c->cpus && brig_cgroup_plan_add(p, err, "cpuset.cpus", "%s", c->cpus) < 0)
        return -1;
    if (c->mems && *c->mems && brig_cgroup_plan_add(p, err, "cpuset.mems", "%s", c->mems) < 0)
        return -1;
    return 0;
}

int brig_cgroup_plan_check_weight(uint16_t w, const char *field, brig_error_t *err)
{
    if (w < 10 || w > 1000)
        return brig_error_set(err, 0, "linux.resources.blockIO.%s: %u is outside 10-1000", field,
                              (unsigned) w);
    return 0;
}

/* blkio.weight 10..1000 onto io.weight 1..10000. */
static int blkio_weight(uint16_t w, const char *field, uint64_t *out, brig_error_t *err)
{
    if (brig_cgroup_plan_check_weight(w, field, err) < 0)
        return -1;
    *out = 1 + ((uint64_t) w - 10) * 9999 / 990;
    return 0;
}

int brig_cgroup_plan_check_dev(int64_t major, int64_t minor, const char *field, brig_error_t *err)
{
    if (major < 0 || minor < 0 || major > UINT32_MAX || minor > UINT32_MAX)
        return brig_error_set(err, 0, "linux.resources.blockIO.%s: bad device %" PRId64 ":%" PRId64,
                              field, major, minor);
    return 0;
}

static int plan_throttle(struct brig_cgroup_plan_list *p, const struct brig_throttle_list *l,
                         const char *key, const char *field, brig_error_t *err)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct brig_throttle_device *t = &l->items[i];
        if (brig_cgroup_plan_check_dev(t->major, t->minor, field, err) < 0)
            return -1;
        int r = t->rate == 0
                    ? brig_cgroup_plan_add(p, err, "io.max", "%" PRId64 ":%" PRId64 " %s=max",
                                           t->major, t->minor, key)
                    : brig_cgroup_plan_add(p, err, "io.max", "%" PRId64 ":%" PRId64 " %s=%" PRIu64,
                                           t->major, t->minor, key, t->rate);
        if (r < 0)
            return -1;
    }
    return 0;
}

/* leafWeight has no v2 equivalent and is ignored, like runc. */
static int plan_io(struct brig_cgroup_plan_list *p, const struct brig_block_io *b,
                   brig_error_t *err)
{
    uint64_t w = 0;
    if (b->has_weight && b->weight != 0) {
        if (blkio_weight(b->weight, "weight", &w, err) < 0
            || brig_cgroup_plan_add(p, err, "io.weight", "default %" PRIu64, w) < 0)
            return -1;
    }
    for (size_t i = 0; i < b->n_weight_devices; i++) {
        const struct brig_weight_device *d = &b->weight_devices[i];
        if (!d->has_weight)
            continue;
        if (brig_cgroup_plan_check_dev(d->major, d->minor, "weightDevice", err) < 0
            || blkio_weight(d->weight, "weightDevice.weight", &w, err) < 0
            || brig_cgroup_plan_add(p, err, "io.weight", "%" PRId64 ":%" PRId64 " %" PRIu64,
                                    d->major, d->minor, w)
                   < 0)
            return -1;
    }
    if (plan_throttle(p, &b->throttle_read_bps, "rbps", "throttleReadBpsDevice", err) < 0
        || plan_throttle(p, &b->throttle_write_bps, "wbps", "throttleWriteBpsDevice", err) < 0
        || plan_throttle(p, &b->throttle_read_iops, "riops", "throttleReadIOPSDevice", err) < 0
        || plan_throttle(p, &b->throttle_write_iops, "wiops", "throttleWriteIOPSDevice", err) < 0)
        return -1;
    return 0;
}

int brig_cgroup_plan_hugetlb(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                             const char *suffix, brig_error_t *err)
{
    for (size_t i = 0; i < r->n_hugepage_limits; i++) {
        const struct brig_hugepage_limit *h = &r->hugepage_limits[i];
        const char *s = h->page_size ? h->page_size : "";
        /* The size becomes part of a file name: "2MB", "1GB", "64KB". */
        if (*s == '\0' || s[strspn(s, "0123456789KMGTkmgtB")] != '\0')
            return brig_error_set(err, 0,
                                  "linux.resources.hugepageLimits: bad pageSize "
                                  "`%s`",
                                  s);
        cleanup_free char *file = NULL;
        if (asprintf(&file, "hugetlb.%s.%s", s, suffix) < 0)
            return brig_error_set(err, ENOMEM, "cgroup plan");
        if (brig_cgroup_plan_add(p, err, file, "%" PRIu64, h->limit) < 0)
            return -1;
    }
    return 0;
}

int brig_cgroup_plan_rdma(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                          brig_error_t *err)
{
    for (size_t i = 0; i < r->n_rdma; i++) {
        const struct brig_rdma_limit *l = &r->rdma[i];
        const char *dev = l->device ? l->device : "";
        if (*dev == '\0' || strpbrk(dev, " \t\n=/"))
            return brig_error_set(err, 0, "linux.resources.rdma: bad device name `%s`", dev);
        char handles[32] = "", objects[32] = "";
        if (l->has_hca_handles)
            snprintf(handles, sizeof handles, " hca_handle=%" PRIu32, l->hca_handles);
        if (l->has_hca_objects)
            snprintf(objects, sizeof objects, " hca_object=%" PRIu32, l->hca_objects);
        if ((l->has_hca_handles || l->has_hca_objects)
            && brig_cgroup_plan_add(p, err, "rdma.max", "%s%s%s", dev, handles, objects) < 0)
            return -1;
    }
    return 0;
}

/* Core files a config may set through `unified`; the others move, kill or
 * freeze processes or change the tree's shape, which is the runtime's job. */
static const char *const unified_core_allowed[] = {
    "cgroup.max.depth",
    "cgroup.max.descendants",
    "cgroup.pressure",
    NULL,
};

static bool unified_key_ok(const char *key)
{
    const char *dot = strchr(key, '.');
    if (dot == NULL || dot == key || dot[1] == '\0' || strchr(key, '/')
        || key[strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")]
               != '\0')
        return false;
    if (strncmp(key, "cgroup.", 7) != 0)
        return true;
    for (size_t i = 0; unified_core_allowed[i]; i++)
        if (strcmp(key, unified_core_allowed[i]) == 0)
            return true;
    return false;
}

static int plan_unified(struct brig_cgroup_plan_list *p, const struct brig_kv_list *u,
                        brig_error_t *err)
{
    for (size_t i = 0; i < u->n; i++) {
        const char *key = u->items[i].key ? u->items[i].key : "";
        if (!unified_key_ok(key))
            return brig_error_set(err, 0,
                                  "linux.resources.unified: key `%s` is not a "
                                  "controller file of this cgroup",
                                  key);
        if (brig_cgroup_plan_add(p, err, key, "%s", u->items[i].value ? u->items[i].value : "") < 0)
            return -1;
    }
    return 0;
}

int brig_cgroup_plan_pids(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                          brig_error_t *err)
{
    if (!r->has_pids_limit)
        return 0;
    if (r->pids_limit <= 0)
        return brig_cgroup_plan_add(p, err, "pids.max", "max");
    return brig_cgroup_plan_add(p, err, "pids.max", "%" PRId64, r->pids_limit);
}

/* net_cls/net_prio (linux.resources.network) are v1 controllers; v2 has no
 * files for them. runc drops them there; a limit that can't be applied
 * fails the create instead (on a hybrid host the v1 hierarchies take
 * them, v1_plan.c). */
static int plan_all(struct brig_cgroup_plan_list *p, const struct brig_resources *r,
                    brig_error_t *err)
{
    if (r->has_net_class_id || r->n_net_priorities > 0)
        return brig_error_set(err, 0,
                              "linux.resources.network: cgroup v2 has no net_cls or net_prio "
                              "controller to apply classID or priorities with");
    if (r->cpu && brig_cgroup_plan_cpuset(p, r->cpu, err) < 0)
        return -1;
    if (r->memory && plan_memory(p, r->memory, err) < 0)
        return -1;
    if (brig_cgroup_plan_pids(p, r, err) < 0)
        return -1;
    if (r->cpu && plan_cpu(p, r->cpu, err) < 0)
        return -1;
    if (r->block_io && plan_io(p, r->block_io, err) < 0)
        return -1;
    if (brig_cgroup_plan_hugetlb(p, r, "max", err) < 0 || brig_cgroup_plan_rdma(p, r, err) < 0)
        return -1;
    /* Last, so a unified key overrides what the typed fields wrote. */
    return plan_unified(p, &r->unified, err);
}

int brig_cgroup_plan(const struct brig_resources *r, struct brig_cgroup_write **out, size_t *n,
                     brig_error_t *err)
{
    struct brig_cgroup_plan_list p = { NULL, 0, 0 };
    return brig_cgroup_plan_finish(&p, plan_all(&p, r, err), out, n);
}

void brig_cgroup_plan_free(struct brig_cgroup_write *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(w[i].file);
        free(w[i].value);
    }
    free(w);
}

/* ---- controllers ------------------------------------------------------------------ */

/* In the order they are enabled; the names are the file prefixes. The v1
 * plans' own controllers come last (a v1 hierarchy enables nothing). */
static const char *const known_controllers[] = {
    "cpuset", "cpu",   "io",      "memory",   "hugetlb", "pids", "rdma",
    "misc",   "blkio", "net_cls", "net_prio", "devices", NULL,
};

void brig_cgroup_plan_controllers(const struct brig_cgroup_write *w, size_t n,
                                  const char *out[BRIG_CGROUP_MAX_CONTROLLERS + 1])
{
    size_t k = 0;
    for (size_t c = 0; known_controllers[c] && k < BRIG_CGROUP_MAX_CONTROLLERS; c++) {
        size_t len = strlen(known_controllers[c]);
        for (size_t i = 0; i < n; i++) {
            if (strncmp(w[i].file, known_controllers[c], len) == 0 && w[i].file[len] == '.') {
                out[k++] = known_controllers[c];
                break;
            }
        }
    }
    out[k] = NULL;
}

void brig_cgroup_needed_controllers(const struct brig_resources *r, const char *out[8])
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    brig_error_t ignored = NULL;
    out[0] = NULL;
    /* A section that doesn't translate needs nothing: brig_cgroup_plan()
     * reports why, and create runs it before looking at controllers. */
    if (brig_cgroup_plan(r, &w, &n, &ignored) < 0) {
        brig_error_release(&ignored);
        return;
    }
    const char *all[BRIG_CGROUP_MAX_CONTROLLERS + 1];
    brig_cgroup_plan_controllers(w, n, all);
    size_t k = 0;
    for (; all[k] && k < 7; k++)
        out[k] = all[k];
    out[k] = NULL;
    brig_cgroup_plan_free(w, n);
}

void brig_cgroup_needed_by(const struct brig_resources *r, const char *controller, char *buf,
                           size_t size)
{
    const struct {
        const char *controller, *field;
        bool present;
    } fields[] = {
        { "cpuset", "cpu", r->cpu != NULL },
        { "cpu", "cpu", r->cpu != NULL },
        { "io", "blockIO", r->block_io != NULL },
        { "blkio", "blockIO", r->block_io != NULL },
        { "memory", "memory", r->memory != NULL },
        { "hugetlb", "hugepageLimits", r->n_hugepage_limits > 0 },
        { "pids", "pids", r->has_pids_limit },
        { "rdma", "rdma", r->n_rdma > 0 },
        { "net_cls", "network.classID", r->has_net_class_id },
        { "net_prio", "network.priorities", r->n_net_priorities > 0 },
        { "devices", "devices", r->n_devices > 0 },
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].controller, controller) == 0 && fields[i].present) {
            snprintf(buf, size, "linux.resources.%s", fields[i].field);
            return;
        }
    }
    size_t len = strlen(controller);
    for (size_t i = 0; i < r->unified.n; i++) {
        const char *key = r->unified.items[i].key;
        if (key && strncmp(key, controller, len) == 0 && key[len] == '.') {
            snprintf(buf, size, "linux.resources.unified `%s`", key);
            return;
        }
    }
    /* v1 writes the default devices even when the spec lists none. */
    snprintf(buf, size, "linux.resources%s", strcmp(controller, "devices") == 0 ? ".devices" : "");
}
