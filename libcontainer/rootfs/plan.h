/* The container's root filesystem as a plan: every step the init takes,
 * in order, decided from config.json by a pure function the runtime calls
 * before anything is cloned. A config error (a refused mount option, a bind
 * without a source, a device of no known type, ...) fails there, with one
 * line naming the field; the init only walks the steps.
 *
 * The init runs the plan in three phases, inside its new mount namespace:
 *
 *   brig_rootfs_prepare()   propagation, rootfs bind, every spec mount, /dev
 *   (createContainer hooks run here, before pivot_root, per the spec)
 *   brig_rootfs_pivot()     pivot_root, or MS_MOVE + chroot with --no-pivot
 *   (sysctl is written here, through the container's own /proc)
 *   brig_rootfs_finish()    read-only paths, masked paths, read-only root,
 *                           the final propagation of "/"
 */
#ifndef BRIG_ROOTFS_PLAN_H
#define BRIG_ROOTFS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "rootfs/mounts.h"
#include "spec/spec.h"

enum brig_rootfs_phase {
    BRIG_ROOTFS_PREPARE,
    BRIG_ROOTFS_PIVOT,
    BRIG_ROOTFS_FINISH,
};

enum brig_rootfs_step_kind {
    /* prepare */
    BRIG_STEP_PROPAGATE_HOST_ROOT, /* "/" of the copied namespace gets `propagation` */
    BRIG_STEP_PRIVATE_PARENT,      /* the mount holding the rootfs, made private if shared */
    BRIG_STEP_BIND_ROOTFS,         /* rootfs bound onto itself, recursively */
    BRIG_STEP_MOUNT,               /* one entry of mounts[] */
    BRIG_STEP_DEVICE,              /* a node in /dev: a default one or linux.devices[] */
    BRIG_STEP_DEV_LINK,            /* /dev/ptmx, /dev/fd, /dev/std* */
    BRIG_STEP_DEV_SHM,             /* /dev/shm, when no mount made it */
    /* pivot */
    BRIG_STEP_PRIVATE_ROOTS, /* old "/" and rootfs private, for a shared propagation */
    BRIG_STEP_PIVOT_ROOT,
    BRIG_STEP_MOVE_ROOT, /* --no-pivot: MS_MOVE onto "/" and chroot */
    /* finish */
    BRIG_STEP_READONLY_PATH,  /* linux.readonlyPaths[] */
    BRIG_STEP_MASK_PATH,      /* linux.maskedPaths[] */
    BRIG_STEP_READONLY_DEV,   /* a read-only /dev mount, made read-only once filled */
    BRIG_STEP_READONLY_ROOT,  /* root.readonly */
    BRIG_STEP_PROPAGATE_ROOT, /* linux.rootfsPropagation, once the mounts are done */
};

/* What a mount step does with the kernel; each kind has its own fallbacks. */
enum brig_rootfs_mount_kind {
    BRIG_MOUNT_BIND,  /* type "bind", or no type / "none" with a bind option */
    BRIG_MOUNT_TMPFS, /* may copy up what it covers (tmpcopyup) */
    BRIG_MOUNT_PROC,
    BRIG_MOUNT_SYSFS, /* the host's /sys bound where a fresh one is refused */
    /* "cgroup" or "cgroup2": cgroup2 on a unified host (the host's bound
       read-only where a fresh one is refused); "cgroup" on a host with v1
       hierarchies is a tmpfs with each of them in it (rootfs/cgroup_view.h) */
    BRIG_MOUNT_CGROUP,
    BRIG_MOUNT_DEVPTS, /* retried without gid= when that gid is not mapped */
    BRIG_MOUNT_MQUEUE,
    BRIG_MOUNT_OTHER, /* any other filesystem type, passed to the kernel as written */
};

struct brig_rootfs_node {
    mode_t type; /* S_IFCHR, S_IFBLK or S_IFIFO */
    unsigned int major, minor;
    mode_t mode; /* permission bits, set-id and sticky included */
    bool has_uid, has_gid;
    uid_t uid;
    gid_t gid;
    /* In a user namespace, where mknod is refused: an empty file with the
     * host's node bound on top (a fifo needs no privilege, so never). */
    bool from_host;
};

/* One step. Which fields mean something depends on the kind. */
struct brig_rootfs_step {
    enum brig_rootfs_phase phase;
    enum brig_rootfs_step_kind kind;
    /* The entry of mounts[], linux.devices[], linux.maskedPaths[] or
     * linux.readonlyPaths[] the step comes from; SIZE_MAX for a default. */
    size_t index;
    /* Where the step acts, inside the container: a mount destination
     * (made absolute), a node, a link, a masked or read-only path. The
     * rootfs for BIND_ROOTFS, PRIVATE_PARENT, PIVOT_ROOT and MOVE_ROOT. */
    char *path;
    /* MOUNT: the source as written (NULL when absent). DEV_LINK: the link's
     * target. PROPAGATE_ROOT: the rootfsPropagation name, for messages. */
    char *source;
    char *fstype;                           /* MOUNT: the type as written, NULL when absent */
    enum brig_rootfs_mount_kind mount_kind; /* MOUNT */
    /* MOUNT: the parsed options. A bind has MS_BIND in flags (and MS_REC
     * for rbind); a filesystem has neither. copy_up only on a tmpfs. */
    struct brig_mount_flags mount;
    /* MOUNT of kind CGROUP: the init has a cgroup namespace (new or
     * joined), entered once it is in its cgroups, so a fresh cgroup mount
     * shows the container's cgroup as its root. */
    bool cgroupns;
    unsigned long propagation;    /* PROPAGATE_HOST_ROOT, PROPAGATE_ROOT */
    struct brig_rootfs_node node; /* DEVICE */
    /* MOUNT of kind BIND: the source opened (O_PATH) by the runtime before
     * the clone (brig_rootfs_open_sources), or -1: the init opens it. */
    int source_fd;
};

struct brig_rootfs_plan {
    char *rootfs; /* absolute, canonical path of the root directory */
    /* No mount namespace of its own: the container shares the runtime's,
     * where nothing may be mounted, so its root is only a chroot into the
     * rootfs and the plan has no steps. */
    bool chroot_only;
    struct brig_rootfs_step *steps;
    size_t n_steps;
};

/* Plans the root filesystem of `spec` at `rootfs` (absolute, canonical).
 * `no_pivot` asks for MS_MOVE + chroot instead of pivot_root. Pure: no
 * system call, no file read. Every error names the field of config.json
 * ("mounts[3].options: mount option `idmap` is not supported"); the caller
 * adds the file. The plan owns copies of every string it holds. */
int brig_rootfs_plan_build(const struct brig_spec *spec, const char *rootfs, bool no_pivot,
                           struct brig_rootfs_plan **out, brig_error_t *err);
void brig_rootfs_plan_free(struct brig_rootfs_plan *plan);

/* Every bind's source opened by the runtime (relative ones in `bundle`),
 * for an init in a user namespace: there it is an unmapped stranger to the
 * host's dirs, and a source only the host's root can reach (a pod's
 * volume under a 0700 dir) would not open, as runc opens them first. The
 * fds stay with the plan (closed by brig_rootfs_plan_free). */
int brig_rootfs_open_sources(struct brig_rootfs_plan *plan, const char *bundle, brig_error_t *err);
/* Those fds, into keep[] (at most plan->n_steps); how many. */
size_t brig_rootfs_source_fds(const struct brig_rootfs_plan *plan, int *keep);

/* Whether a step reads a path relative to the current directory (a bind
 * of a relative source): only then must the init be in the bundle. */
bool brig_rootfs_plan_needs_bundle(const struct brig_rootfs_plan *plan);

static inline void brig_rootfs_plan_freep(struct brig_rootfs_plan **plan)
{
    brig_rootfs_plan_free(*plan);
}
#define cleanup_rootfs_plan __attribute__((cleanup(brig_rootfs_plan_freep)))

/* The steps of one phase, in order; the three wrappers below read as the
 * init's sequence. Relative bind sources are opened from the current
 * directory (the init's is the bundle). */
int brig_rootfs_run(const struct brig_rootfs_plan *plan, enum brig_rootfs_phase phase,
                    brig_error_t *err);
int brig_rootfs_prepare(const struct brig_rootfs_plan *plan, brig_error_t *err);
int brig_rootfs_pivot(const struct brig_rootfs_plan *plan, brig_error_t *err);
int brig_rootfs_finish(const struct brig_rootfs_plan *plan, brig_error_t *err);

/* The init, right before it unshares its cgroup namespace: when the plan
 * has a read-only cgroup v1 view, its /proc/self/cgroup kept, the
 * container's cgroups by their host paths, for a view made of binds
 * (cgroup_mount.c). Nothing read otherwise (a v2 host, no cgroup mount).
 * Best effort: without them the view is made of fresh mounts. */
void brig_rootfs_cgroup_keep_paths(const struct brig_rootfs_plan *plan);

/* Names for tests and debugging: "mount", "pivot_root", ... */
const char *brig_rootfs_step_name(enum brig_rootfs_step_kind kind);

#endif
