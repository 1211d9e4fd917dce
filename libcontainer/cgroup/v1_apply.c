#define _GNU_SOURCE
/* A resources section on v1 hierarchies: checked against what this host
 * mounts before anything is made, then written, each file in the
 * hierarchy that binds its controller. */
#include "cgroup/v1_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "cgroup/devices_bpf.h"

int brig_cgroup_v1_write(int dir_fd, const char *dir, const char *file, const char *value,
                         brig_error_t *err)
{
    cleanup_close int fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT)
        return brig_error_set(err, ENOENT, "cgroup `%s`: no `%s` on this host", dir, file);
    if (fd < 0 || brig_write_all(fd, value, strlen(value)) < 0)
        return brig_error_set(err, errno, "cgroup `%s`: write `%s` = `%s`", dir, file, value);
    return 0;
}

/* "memory.memsw.limit_in_bytes" → "memory". */
static void controller_of(const char *file, char *out, size_t size)
{
    snprintf(out, size, "%.*s", (int) strcspn(file, "."), file);
}

static int missing(const struct brig_resources *r, const char *controller, brig_error_t *err)
{
    char by[256];
    brig_cgroup_needed_by(r, controller, by, sizeof by);
    return brig_error_set(err, 0,
                          "cgroup: controller `%s` is not available: no cgroup v1 hierarchy "
                          "on this host binds it (needed by %s)",
                          controller, by);
}

/* Swap limits need swap accounting, which a kernel may have off. */
static int check_memsw(const struct brig_cgroup_hierarchy *h, brig_error_t *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/memory.memsw.limit_in_bytes", h->mountpoint);
    if (access(path, F_OK) == 0)
        return 0;
    return brig_error_set(err, 0,
                          "linux.resources.memory.swap: this host's kernel has swap accounting "
                          "off (no memory.memsw.limit_in_bytes; it needs swapaccount=1)");
}

/* `part` is what goes to v1 hierarchies; `r` the whole, for messages. */
static int check_writes(const struct brig_resources *r, const struct brig_resources *part,
                        brig_error_t *err)
{
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_plan(part, &w, &n, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char controller[64];
        controller_of(w[i].file, controller, sizeof controller);
        const struct brig_cgroup_hierarchy *h = brig_cgroup_v1_binding(controller);
        if (h == NULL)
            rc = missing(r, controller, err);
        else if (strncmp(w[i].file, "memory.memsw.", 13) == 0)
            rc = check_memsw(h, err);
    }
    brig_cgroup_plan_free(w, n);
    return rc;
}

int brig_cgroup_v1_check(const struct brig_resources *r, brig_error_t *err)
{
    if (brig_cgroup_v1_hierarchies(err) == NULL)
        return -1;
    if (r->unified.n && brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_HYBRID)
        return brig_error_set(err, 0,
                              "linux.resources.unified: this host has no cgroup v2 hierarchy "
                              "(its layout is %s)",
                              brig_cgroup_layout_name(brig_cgroup_layout()));
    struct brig_cgroup_v1_split split;
    brig_cgroup_v1_split(r, &split);
    if (check_writes(r, &split.v1, err) < 0)
        return -1;
    /* The v2 part is checked as the v2 backend will write it. */
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_plan(&split.v2, &w, &n, err) < 0)
        return -1;
    brig_cgroup_plan_free(w, n);
    /* Without a devices hierarchy, a hybrid host's v2 tree takes the eBPF
     * program; a host with neither can't hold the container to its devices. */
    if (brig_cgroup_v1_binding("devices") == NULL
        && brig_cgroup_layout() != BRIG_CGROUP_LAYOUT_HYBRID)
        return missing(r, "devices", err);
    if (brig_cgroup_v1_devices_plan(r->devices, r->n_devices, &w, &n, err) < 0)
        return -1;
    brig_cgroup_plan_free(w, n);
    return 0;
}

/* Block I/O weights are the I/O scheduler's: CFQ named them blkio.weight,
 * BFQ names them blkio.bfq.weight. */
static const char *bfq_name(const char *file)
{
    if (strcmp(file, "blkio.weight") == 0)
        return "blkio.bfq.weight";
    if (strcmp(file, "blkio.weight_device") == 0)
        return "blkio.bfq.weight_device";
    return NULL;
}

static int write_one(const struct brig_cgroup *cg, const struct brig_cgroup_write *w,
                     brig_error_t *err)
{
    char controller[64];
    controller_of(w->file, controller, sizeof controller);
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, controller);
    if (d == NULL || d->fd < 0)
        return brig_error_set(err, ENOENT, "cgroup: no `%s` directory for `%s`", controller,
                              w->file);
    int rc = brig_cgroup_v1_write(d->fd, d->path, w->file, w->value, err);
    const char *bfq = bfq_name(w->file);
    if (rc == 0 || bfq == NULL || (*err)->errnum != ENOENT || faccessat(d->fd, bfq, F_OK, 0) < 0)
        return rc;
    brig_error_release(err);
    return brig_cgroup_v1_write(d->fd, d->path, bfq, w->value, err);
}

/* A memory limit lifted (-1) with no word on swap lifts the swap limit
 * too, where the kernel accounts swap: the old memsw limit would
 * otherwise stay below the new memory limit, and the kernel refuse it. */
static int lift_swap(const struct brig_cgroup *cg, const struct brig_resources *r,
                     brig_error_t *err)
{
    const struct brig_memory *m = r->memory;
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, "memory");
    if (m == NULL || !m->has_limit || m->limit != -1 || m->has_swap || d == NULL || d->fd < 0
        || faccessat(d->fd, "memory.memsw.limit_in_bytes", F_OK, 0) < 0)
        return 0;
    return brig_cgroup_v1_write(d->fd, d->path, "memory.memsw.limit_in_bytes", "-1", err);
}

/* In order; a write refused with EINVAL (a memsw limit below the memory
 * limit still in place, a quota against the old period) is tried again
 * once every other is done. */
static int write_plan(const struct brig_cgroup *cg, const struct brig_cgroup_write *w, size_t n,
                      brig_error_t *err)
{
    cleanup_free bool *again = calloc(n ? n : 1, sizeof *again);
    if (again == NULL)
        return brig_error_set(err, ENOMEM, "cgroup");
    for (size_t i = 0; i < n; i++) {
        if (write_one(cg, &w[i], err) == 0)
            continue;
        if ((*err)->errnum != EINVAL)
            return -1;
        brig_error_release(err);
        again[i] = true;
    }
    for (size_t i = 0; i < n; i++)
        if (again[i] && write_one(cg, &w[i], err) < 0)
            return -1;
    return 0;
}

static int apply_devices(const struct brig_cgroup *cg, const struct brig_resources *r,
                         brig_error_t *err)
{
    const struct brig_cgroup_v1_dir *d = brig_cgroup_v1_dir(cg, "devices");
    if (d == NULL) {
        /* A hybrid host without a devices hierarchy: the v2 tree's program. */
        const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(cg, "");
        struct brig_devices_program p;
        if (u == NULL)
            return missing(r, "devices", err);
        if (brig_cgroup_devices_compile(r, &p, err) < 0)
            return -1;
        int rc = brig_ebpf_devices_attach(u->fd, p.insns, p.len, err);
        free(p.insns);
        return rc < 0 ? brig_error_wrap(err, "cgroup `%s`: device rules", u->path) : 0;
    }
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_devices_plan(r->devices, r->n_devices, &w, &n, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = brig_cgroup_v1_write(d->fd, d->path, w[i].file, w[i].value, err);
    brig_cgroup_plan_free(w, n);
    return rc < 0 ? brig_error_wrap(err, "device rules") : 0;
}

/* The v2 directory's part, through the v2 backend (which enables the
 * controllers down the v2 tree and writes the v2 files). */
static int apply_v2(const struct brig_cgroup *cg, const struct brig_resources *part,
                    brig_error_t *err)
{
    const struct brig_cgroup_v1_dir *u = brig_cgroup_v1_dir(cg, "");
    if (u == NULL)
        return 0;
    struct brig_cgroup view = { .path = u->path, .dir_fd = u->fd, .backend = &brig_cgroup_v2 };
    return brig_cgroup_v2.apply(&view, part, err);
}

int brig_cgroup_v1_apply_all(const struct brig_cgroup *cg, const struct brig_resources *r,
                             bool devices, bool v2, brig_error_t *err)
{
    struct brig_cgroup_v1_split split;
    brig_cgroup_v1_split(r, &split);
    struct brig_cgroup_write *w = NULL;
    size_t n = 0;
    if (brig_cgroup_v1_plan(&split.v1, &w, &n, err) < 0)
        return -1;
    /* Unlimited swap first: memsw may never be below the memory limit. */
    int rc = lift_swap(cg, &split.v1, err);
    if (rc == 0)
        rc = write_plan(cg, w, n, err);
    brig_cgroup_plan_free(w, n);
    if (rc == 0 && v2 && brig_cgroup_v1_split_has_v2(&split))
        rc = apply_v2(cg, &split.v2, err);
    if (rc == 0 && devices)
        rc = apply_devices(cg, r, err);
    return rc;
}
