/* The pure half of the root filesystem: config.json → the ordered steps the
 * init takes (rootfs/plan.h). Nothing here touches the kernel, so the order
 * of the mounts and every refusal of a bad config are unit-tested without
 * root, and the runtime finds config errors before it clones. */
#define _GNU_SOURCE
#include "rootfs/plan.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/path.h"

#define DEFAULT_INDEX SIZE_MAX

/* ---- building ---- */

struct builder {
    struct brig_rootfs_plan *plan;
    size_t cap;
    bool readonly_dev; /* a read-only /dev mount, mounted writable until finish */
};

static int oom(brig_error_t *err)
{
    return brig_error_set(err, ENOMEM, "rootfs plan");
}

/* A new step at the end, its path copied; NULL (and *err) when out of memory. */
static struct brig_rootfs_step *add_step(struct builder *b, enum brig_rootfs_phase phase,
                                         enum brig_rootfs_step_kind kind, size_t index,
                                         const char *path, brig_error_t *err)
{
    struct brig_rootfs_plan *p = b->plan;
    if (p->n_steps == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        struct brig_rootfs_step *bigger = realloc(p->steps, cap * sizeof *bigger);
        if (bigger == NULL) {
            oom(err);
            return NULL;
        }
        p->steps = bigger;
        b->cap = cap;
    }
    struct brig_rootfs_step *s = &p->steps[p->n_steps];
    *s = (struct brig_rootfs_step){ .phase = phase, .kind = kind, .index = index, .source_fd = -1 };
    if (path != NULL && (s->path = strdup(path)) == NULL) {
        oom(err);
        return NULL;
    }
    p->n_steps++;
    return s;
}

/* A copy of an optional string: 0, or -1 when out of memory. */
static int copy_optional(char **to, const char *from, brig_error_t *err)
{
    *to = NULL;
    if (from != NULL && (*to = strdup(from)) == NULL)
        return oom(err);
    return 0;
}

/* A path of the container as an absolute one. The runtime spec allows a
 * relative destination "for compatibility", meaning relative to "/"; the
 * lookups inside the rootfs treat it so anyway, and every check that
 * compares paths (is this /dev?) must see it the same way. */
static char *container_path(const char *path)
{
    char *out = NULL;
    if (path[0] == '/')
        return strdup(path);
    return asprintf(&out, "/%s", path) < 0 ? NULL : out;
}

/* ---- propagation ---- */

static const char *rootfs_propagation_name(const struct brig_spec *spec)
{
    const char *name = spec->linux_ ? spec->linux_->rootfs_propagation : NULL;
    return name && *name ? name : NULL;
}

/* linux.rootfsPropagation as MS_* | MS_REC, 0 when absent. */
static int plan_propagation(const struct brig_spec *spec, unsigned long *prop, brig_error_t *err)
{
    const char *name = rootfs_propagation_name(spec);
    *prop = 0;
    if (name == NULL)
        return 0;
    brig_error_t ignored = NULL;
    if (brig_propagation_from_name(name, prop, &ignored) < 0) {
        brig_error_release(&ignored);
        return brig_error_set(err, 0, "linux.rootfsPropagation: unknown propagation `%s`", name);
    }
    return 0;
}

/* ---- mounts ---- */

static enum brig_rootfs_mount_kind mount_kind_of(const char *type)
{
    static const struct {
        const char *type;
        enum brig_rootfs_mount_kind kind;
    } kinds[] = {
        { "tmpfs", BRIG_MOUNT_TMPFS },    { "proc", BRIG_MOUNT_PROC },
        { "sysfs", BRIG_MOUNT_SYSFS },    { "cgroup", BRIG_MOUNT_CGROUP },
        { "cgroup2", BRIG_MOUNT_CGROUP }, { "devpts", BRIG_MOUNT_DEVPTS },
        { "mqueue", BRIG_MOUNT_MQUEUE },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(type, kinds[i].type) == 0)
            return kinds[i].kind;
    return BRIG_MOUNT_OTHER;
}

static bool is_bind(const struct brig_mount *m, const struct brig_mount_flags *mf)
{
    if (m->type != NULL && strcmp(m->type, "bind") == 0)
        return true;
    return (m->type == NULL || strcmp(m->type, "none") == 0) && (mf->flags & MS_BIND);
}

/* The checks of one mount that the parser leaves to us: its options, and
 * whether it says what to mount. Fills the step's kind and flags. */
static int classify_mount(size_t i, const struct brig_mount *m, struct brig_rootfs_step *s,
                          brig_error_t *err)
{
    if (brig_mount_parse_options(&m->options, &s->mount, err) < 0)
        return brig_error_wrap(err, "mounts[%zu].options", i);
    if (is_bind(m, &s->mount)) {
        if (m->source == NULL)
            return brig_error_set(err, 0, "mounts[%zu].source: a bind mount needs a source", i);
        s->mount_kind = BRIG_MOUNT_BIND;
        s->mount.flags |= MS_BIND;
        s->mount.copy_up = false;
        return 0;
    }
    if (m->type == NULL)
        return brig_error_set(err, 0, "mounts[%zu].type: missing, and no bind option", i);
    s->mount_kind = mount_kind_of(m->type);
    /* bind/rbind on a filesystem mean nothing: it is mounted afresh. */
    s->mount.flags &= ~(MS_BIND | MS_REC);
    if (s->mount_kind != BRIG_MOUNT_TMPFS)
        s->mount.copy_up = false;
    return 0;
}

static bool is_dev(const char *destination)
{
    cleanup_free char *abs = container_path(destination);
    cleanup_free char *clean = abs ? brig_path_clean(abs) : NULL;
    return clean && strcmp(clean, "/dev") == 0;
}

static int plan_mount(struct builder *b, size_t i, const struct brig_mount *m, bool cgroupns,
                      brig_error_t *err)
{
    if (m->destination == NULL)
        return brig_error_set(err, 0, "missing mounts[%zu].destination", i);
    if (m->destination[0] == '\0')
        return brig_error_set(err, 0, "mounts[%zu].destination: must not be empty", i);
    cleanup_free char *dest = container_path(m->destination);
    if (dest == NULL)
        return oom(err);
    struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_MOUNT, i, dest, err);
    if (s == NULL || copy_optional(&s->source, m->source, err) < 0
        || copy_optional(&s->fstype, m->type, err) < 0 || classify_mount(i, m, s, err) < 0)
        return -1;
    s->cgroupns = s->mount_kind == BRIG_MOUNT_CGROUP && cgroupns;
    /* A read-only /dev still gets its nodes and its pts, shm and mqueue
     * mounts: it is made read-only once they are there, as runc does. */
    if (is_dev(m->destination) && s->mount_kind != BRIG_MOUNT_BIND) {
        b->readonly_dev = (s->mount.flags & MS_RDONLY) != 0;
        s->mount.flags &= ~(unsigned long) MS_RDONLY;
    }
    return 0;
}

/* ---- /dev ---- */

/* The default /dev is built when /dev is the rootfs's own directory or a
 * tmpfs from the spec; never into a bind of the host's /dev or a devtmpfs,
 * where creating a node would create it on the host. */
static bool wants_default_dev(const struct brig_spec *spec)
{
    const struct brig_mount *dev = NULL;
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (spec->mounts[i].destination && is_dev(spec->mounts[i].destination))
            dev = &spec->mounts[i];
    return dev == NULL || (dev->type && strcmp(dev->type, "tmpfs") == 0);
}

static const struct {
    const char *path;
    unsigned int major, minor;
} default_nodes[] = {
    { "/dev/null", 1, 3 },   { "/dev/zero", 1, 5 },    { "/dev/full", 1, 7 },
    { "/dev/random", 1, 8 }, { "/dev/urandom", 1, 9 }, { "/dev/tty", 5, 0 },
};

/* No /dev/core -> /proc/kcore: kcore is masked in every default spec, so
 * the link would only ever point at /dev/null or at kernel memory; crun
 * doesn't make it either, and nothing in a container needs it. */
static const struct {
    const char *path, *target;
} default_links[] = {
    { "/dev/ptmx", "pts/ptmx" },          { "/dev/fd", "/proc/self/fd" },
    { "/dev/stdin", "/proc/self/fd/0" },  { "/dev/stdout", "/proc/self/fd/1" },
    { "/dev/stderr", "/proc/self/fd/2" },
};

static bool spec_has_device(const struct brig_linux *lx, const char *path)
{
    for (size_t i = 0; lx && i < lx->n_devices; i++) {
        const char *dev_path = lx->devices[i].path;
        cleanup_free char *clean = dev_path ? brig_path_clean(dev_path) : NULL;
        if (clean && strcmp(clean, path) == 0)
            return true;
    }
    return false;
}

static int node_type_of(size_t i, const char *type, mode_t *out, brig_error_t *err)
{
    const char *t = type ? type : "";
    if (strcmp(t, "c") == 0 || strcmp(t, "u") == 0)
        *out = S_IFCHR; /* "u", unbuffered, is a character device to the kernel */
    else if (strcmp(t, "b") == 0)
        *out = S_IFBLK;
    else if (strcmp(t, "p") == 0)
        *out = S_IFIFO;
    else
        return brig_error_set(err, 0, "linux.devices[%zu].type: unknown type `%s`", i, t);
    return 0;
}

/* A node must have a name of its own: "/", "/dev/.." name a directory. */
static int check_node_path(size_t i, const char *path, brig_error_t *err)
{
    if (path == NULL)
        return brig_error_set(err, 0, "missing linux.devices[%zu].path", i);
    if (path[0] != '/')
        return brig_error_set(err, 0, "linux.devices[%zu].path: must be an absolute path", i);
    cleanup_free char *clean = brig_path_clean(path);
    if (clean == NULL)
        return oom(err);
    const char *base = strrchr(clean, '/') + 1;
    if (*base == '\0')
        return brig_error_set(err, 0, "linux.devices[%zu].path: `%s` names no file", i, path);
    return 0;
}

static int plan_spec_device(struct builder *b, size_t i, const struct brig_device *d,
                            bool in_userns, brig_error_t *err)
{
    mode_t type = 0;
    if (check_node_path(i, d->path, err) < 0 || node_type_of(i, d->type, &type, err) < 0)
        return -1;
    if (type != S_IFIFO && (d->major < 0 || d->minor < 0 || d->major > 0xfff || d->minor > 0xfffff))
        return brig_error_set(err, 0,
                              "linux.devices[%zu]: device `%s`: bad major/minor "
                              "%lld:%lld",
                              i, d->path, (long long) d->major, (long long) d->minor);
    struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_DEVICE, i, d->path,
                                          err);
    if (s == NULL)
        return -1;
    s->node = (struct brig_rootfs_node){
        .type = type,
        .major = type == S_IFIFO ? 0 : (unsigned int) d->major,
        .minor = type == S_IFIFO ? 0 : (unsigned int) d->minor,
        .mode = d->has_file_mode ? d->file_mode : 0666,
        .has_uid = d->has_uid,
        .uid = d->uid,
        .has_gid = d->has_gid,
        .gid = d->gid,
        .from_host = in_userns && type != S_IFIFO,
    };
    return 0;
}

/* The default nodes (but those linux.devices redefines, with another mode
 * or owner), links and /dev/shm, then linux.devices. */
static int plan_dev(struct builder *b, const struct brig_spec *spec, bool in_userns,
                    brig_error_t *err)
{
    const struct brig_linux *lx = spec->linux_;
    for (size_t i = 0; i < sizeof default_nodes / sizeof default_nodes[0]; i++) {
        if (spec_has_device(lx, default_nodes[i].path))
            continue;
        struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_DEVICE,
                                              DEFAULT_INDEX, default_nodes[i].path, err);
        if (s == NULL)
            return -1;
        s->node = (struct brig_rootfs_node){ .type = S_IFCHR,
                                             .major = default_nodes[i].major,
                                             .minor = default_nodes[i].minor,
                                             .mode = 0666,
                                             .from_host = in_userns };
    }
    for (size_t i = 0; i < sizeof default_links / sizeof default_links[0]; i++) {
        struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_DEV_LINK,
                                              DEFAULT_INDEX, default_links[i].path, err);
        if (s == NULL || copy_optional(&s->source, default_links[i].target, err) < 0)
            return -1;
    }
    if (add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_DEV_SHM, DEFAULT_INDEX, "/dev/shm", err) == NULL)
        return -1;
    for (size_t i = 0; lx && i < lx->n_devices; i++)
        if (plan_spec_device(b, i, &lx->devices[i], in_userns, err) < 0)
            return -1;
    return 0;
}

/* ---- the phases ---- */

static int plan_prepare(struct builder *b, const struct brig_spec *spec, unsigned long prop,
                        brig_error_t *err)
{
    const char *rootfs = b->plan->rootfs;
    /* Default rslave, like runc: host mounts made later (a volume appearing
     * under a bind source) still reach the container, and nothing the
     * container mounts flows back to the host. An unbindable "/" would
     * make the rootfs bind fail; finish makes it unbindable at the end. */
    unsigned long host = prop ? prop : MS_SLAVE | MS_REC;
    if (host & MS_UNBINDABLE)
        host = MS_PRIVATE | MS_REC;
    struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_PROPAGATE_HOST_ROOT,
                                          DEFAULT_INDEX, "/", err);
    if (s == NULL)
        return -1;
    s->propagation = host;
    /* pivot_root and MS_MOVE refuse a new root whose parent mount is shared
     * (it can be, with rootfsPropagation "shared" or a non-recursive one).
     * After a recursive slave or private nothing is shared, and the init
     * need not read mountinfo to find out. */
    bool none_shared = (host & MS_REC) && (host & (MS_SLAVE | MS_PRIVATE));
    if (!none_shared
        && add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_PRIVATE_PARENT, DEFAULT_INDEX, rootfs, err)
               == NULL)
        return -1;
    /* pivot_root needs the new root to be a mount point. */
    if (add_step(b, BRIG_ROOTFS_PREPARE, BRIG_STEP_BIND_ROOTFS, DEFAULT_INDEX, rootfs, err) == NULL)
        return -1;
    bool cgroupns = brig_spec_namespace(spec, BRIG_NS_CGROUP) != NULL;
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (plan_mount(b, i, &spec->mounts[i], cgroupns, err) < 0)
            return -1;
    if (!wants_default_dev(spec))
        return 0;
    return plan_dev(b, spec, brig_spec_namespace(spec, BRIG_NS_USER) != NULL, err);
}

static int plan_pivot(struct builder *b, unsigned long prop, bool no_pivot, brig_error_t *err)
{
    const char *rootfs = b->plan->rootfs;
    /* pivot_root refuses a shared current or new root, and a move onto a
     * shared "/" would propagate to the host: with rootfsPropagation
     * "shared" these two mounts (not their children) become private; finish
     * makes the new "/" shared again. */
    if ((prop & MS_SHARED)
        && add_step(b, BRIG_ROOTFS_PIVOT, BRIG_STEP_PRIVATE_ROOTS, DEFAULT_INDEX, rootfs, err)
               == NULL)
        return -1;
    enum brig_rootfs_step_kind kind = no_pivot ? BRIG_STEP_MOVE_ROOT : BRIG_STEP_PIVOT_ROOT;
    return add_step(b, BRIG_ROOTFS_PIVOT, kind, DEFAULT_INDEX, rootfs, err) ? 0 : -1;
}

static int plan_path_list(struct builder *b, const struct brig_strv *paths, const char *field,
                          enum brig_rootfs_step_kind kind, brig_error_t *err)
{
    for (size_t i = 0; i < paths->n; i++) {
        /* An empty entry would name the root itself. */
        if (paths->v[i][0] == '\0')
            return brig_error_set(err, 0, "linux.%s[%zu]: must not be empty", field, i);
        cleanup_free char *path = container_path(paths->v[i]);
        if (path == NULL || add_step(b, BRIG_ROOTFS_FINISH, kind, i, path, err) == NULL)
            return path == NULL ? oom(err) : -1;
    }
    return 0;
}

static int plan_finish(struct builder *b, const struct brig_spec *spec, unsigned long prop,
                       brig_error_t *err)
{
    const struct brig_linux *lx = spec->linux_;
    /* Read-only first, masks after: a mask inside a read-only path then sits
     * on top and stays visible. */
    if (lx
        && (plan_path_list(b, &lx->readonly_paths, "readonlyPaths", BRIG_STEP_READONLY_PATH, err)
                < 0
            || plan_path_list(b, &lx->masked_paths, "maskedPaths", BRIG_STEP_MASK_PATH, err) < 0))
        return -1;
    if (b->readonly_dev
        && add_step(b, BRIG_ROOTFS_FINISH, BRIG_STEP_READONLY_DEV, DEFAULT_INDEX, "/dev", err)
               == NULL)
        return -1;
    if (spec->root && spec->root->readonly
        && add_step(b, BRIG_ROOTFS_FINISH, BRIG_STEP_READONLY_ROOT, DEFAULT_INDEX, "/", err)
               == NULL)
        return -1;
    /* prepare and pivot made "/" private or slave to keep the host safe while
     * mounting; now it gets what the spec asked for. Private is what it
     * already is. */
    if (!(prop & (MS_SHARED | MS_SLAVE | MS_UNBINDABLE)))
        return 0;
    struct brig_rootfs_step *s = add_step(b, BRIG_ROOTFS_FINISH, BRIG_STEP_PROPAGATE_ROOT,
                                          DEFAULT_INDEX, "/", err);
    if (s == NULL || copy_optional(&s->source, rootfs_propagation_name(spec), err) < 0)
        return -1;
    s->propagation = prop;
    return 0;
}

int brig_rootfs_plan_build(const struct brig_spec *spec, const char *rootfs, bool no_pivot,
                           struct brig_rootfs_plan **out, brig_error_t *err)
{
    *out = NULL;
    cleanup_rootfs_plan struct brig_rootfs_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL || (plan->rootfs = strdup(rootfs)) == NULL)
        return oom(err);
    /* Without a mount namespace of its own (new or joined), the container
     * shares the runtime's, as the spec says: nothing is mounted. */
    if (brig_spec_namespace(spec, BRIG_NS_MOUNT) == NULL) {
        plan->chroot_only = true;
        *out = brig_steal_ptr(plan);
        return 0;
    }
    struct builder b = { .plan = plan };
    unsigned long prop;
    if (plan_propagation(spec, &prop, err) < 0 || plan_prepare(&b, spec, prop, err) < 0
        || plan_pivot(&b, prop, no_pivot, err) < 0 || plan_finish(&b, spec, prop, err) < 0)
        return -1;
    *out = brig_steal_ptr(plan);
    return 0;
}

bool brig_rootfs_plan_needs_bundle(const struct brig_rootfs_plan *plan)
{
    for (size_t i = 0; i < plan->n_steps; i++) {
        const struct brig_rootfs_step *s = &plan->steps[i];
        if (s->kind == BRIG_STEP_MOUNT && s->mount_kind == BRIG_MOUNT_BIND && s->source
            && s->source[0] != '/')
            return true;
    }
    return false;
}

void brig_rootfs_plan_free(struct brig_rootfs_plan *plan)
{
    if (plan == NULL)
        return;
    for (size_t i = 0; i < plan->n_steps; i++) {
        struct brig_rootfs_step *s = &plan->steps[i];
        free(s->path);
        free(s->source);
        free(s->fstype);
        brig_mount_flags_free(&s->mount);
        if (s->source_fd >= 0)
            close(s->source_fd);
    }
    free(plan->steps);
    free(plan->rootfs);
    free(plan);
}

const char *brig_rootfs_step_name(enum brig_rootfs_step_kind kind)
{
    static const char *const names[] = {
        [BRIG_STEP_PROPAGATE_HOST_ROOT] = "propagate-host-root",
        [BRIG_STEP_PRIVATE_PARENT] = "private-parent",
        [BRIG_STEP_BIND_ROOTFS] = "bind-rootfs",
        [BRIG_STEP_MOUNT] = "mount",
        [BRIG_STEP_DEVICE] = "device",
        [BRIG_STEP_DEV_LINK] = "dev-link",
        [BRIG_STEP_DEV_SHM] = "dev-shm",
        [BRIG_STEP_PRIVATE_ROOTS] = "private-roots",
        [BRIG_STEP_PIVOT_ROOT] = "pivot_root",
        [BRIG_STEP_MOVE_ROOT] = "move-root",
        [BRIG_STEP_READONLY_PATH] = "readonly-path",
        [BRIG_STEP_MASK_PATH] = "mask-path",
        [BRIG_STEP_READONLY_DEV] = "readonly-dev",
        [BRIG_STEP_READONLY_ROOT] = "readonly-root",
        [BRIG_STEP_PROPAGATE_ROOT] = "propagate-root",
    };
    if ((size_t) kind >= sizeof names / sizeof names[0] || names[kind] == NULL)
        return "?";
    return names[kind];
}
